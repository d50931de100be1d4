//! One feature value -> one element of the target type.
//!
//! Text (a CSV field, a JSON number) takes two paths. The fast one reads a
//! number in JSON syntax straight from the input with the crate's JSON
//! number parser and gives up (`None`) on anything unusual; the slow one
//! takes the complete field and accepts every spelling Python writes:
//! `repr` and `str` of floats and numpy scalars, `%g`, `1.`, `.5`, a leading
//! `+`, and `nan` / `inf` / `infinity` in any case with a sign. Both round a
//! float literal once to the nearest double, then to the target type (what
//! numpy does), so they always agree.
//!
//! Range rules, the same for every format:
//! - a float literal that overflows the target (`1e39` for FP32, `1e400`
//!   for FP64) is an error; only `inf` / `infinity` spell infinity.
//!   Underflow rounds to zero or a subnormal, as numpy does;
//! - integer targets take integer literals, and float literals whose value
//!   is a whole number (`1.0`, `1e3`: SageMaker clients often send floats);
//!   `1.5` is "not an integer", `300` for UINT8 "out of range".

use bytes::BytesMut;
use half::{bf16, f16};

use super::error::{Location, RecordError};
use crate::codec::v2::number;
use crate::tensor::DataType;

/// Why a value was refused; the caller says where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ValueFail {
    NotNumber,
    NotInteger,
    OutOfRange,
}

/// An element type records can be decoded into.
pub(super) trait Elem: Copy {
    const DTYPE: DataType;
    const SIZE: usize;
    /// A JSON-syntax number at the start of `s`, and its length; `None` for
    /// anything else (the caller then delimits the field and calls
    /// [`Elem::slow`], which says what is wrong).
    fn fast(s: &[u8]) -> Option<(Self, usize)>;
    /// The complete text of one value.
    fn slow(text: &[u8]) -> Result<Self, ValueFail>;
    fn from_f64(v: f64) -> Result<Self, ValueFail>;
    fn from_i64(v: i64) -> Result<Self, ValueFail>;
    fn put(self, out: &mut BytesMut);
}

/// The element types [`Elem`] is implemented for: the subset of
/// [`DataType`] records can become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    F16,
    BF16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
}

impl Kind {
    pub(super) fn of(dtype: DataType) -> Option<Kind> {
        Some(match dtype {
            DataType::F16 => Kind::F16,
            DataType::BF16 => Kind::BF16,
            DataType::F32 => Kind::F32,
            DataType::F64 => Kind::F64,
            DataType::I8 => Kind::I8,
            DataType::I16 => Kind::I16,
            DataType::I32 => Kind::I32,
            DataType::I64 => Kind::I64,
            DataType::U8 => Kind::U8,
            DataType::U16 => Kind::U16,
            DataType::U32 => Kind::U32,
            DataType::U64 => Kind::U64,
            DataType::Bool | DataType::Bytes => return None,
        })
    }
}

/// Runs `$body` with `$T` the element type of `$kind`.
macro_rules! by_kind {
    ($kind:expr, $T:ident => $body:expr) => {
        match $kind {
            Kind::F16 => {
                type $T = half::f16;
                $body
            }
            Kind::BF16 => {
                type $T = half::bf16;
                $body
            }
            Kind::F32 => {
                type $T = f32;
                $body
            }
            Kind::F64 => {
                type $T = f64;
                $body
            }
            Kind::I8 => {
                type $T = i8;
                $body
            }
            Kind::I16 => {
                type $T = i16;
                $body
            }
            Kind::I32 => {
                type $T = i32;
                $body
            }
            Kind::I64 => {
                type $T = i64;
                $body
            }
            Kind::U8 => {
                type $T = u8;
                $body
            }
            Kind::U16 => {
                type $T = u16;
                $body
            }
            Kind::U32 => {
                type $T = u32;
                $body
            }
            Kind::U64 => {
                type $T = u64;
                $body
            }
        }
    };
}
pub(super) use by_kind;

/// Python's `float()` on `text`, and whether the text spelled an infinity
/// (rather than overflowing to one).
fn text_f64(text: &[u8]) -> Result<(f64, bool), ValueFail> {
    let s = std::str::from_utf8(text).map_err(|_| ValueFail::NotNumber)?;
    // Rust's parser takes what Python's does (`1.`, `.5`, `+1`, `inf`,
    // `Infinity`, `nan` in any case) except surrounding blanks, which the
    // callers strip.
    let v: f64 = s.parse().map_err(|_| ValueFail::NotNumber)?;
    let spelled = s
        .trim_start_matches(['+', '-'])
        .starts_with(|c: char| c.is_ascii_alphabetic());
    Ok((v, spelled))
}

/// A float type narrowed from the double a literal rounds to.
trait Narrow: Copy {
    fn narrow(v: f64) -> Self;
    fn is_inf(self) -> bool;
}

impl Narrow for f32 {
    fn narrow(v: f64) -> Self {
        v as f32
    }
    fn is_inf(self) -> bool {
        self.is_infinite()
    }
}

impl Narrow for f64 {
    fn narrow(v: f64) -> Self {
        v
    }
    fn is_inf(self) -> bool {
        self.is_infinite()
    }
}

impl Narrow for f16 {
    fn narrow(v: f64) -> Self {
        f16::from_f64(v)
    }
    fn is_inf(self) -> bool {
        self.is_infinite()
    }
}

impl Narrow for bf16 {
    fn narrow(v: f64) -> Self {
        bf16::from_f64(v)
    }
    fn is_inf(self) -> bool {
        self.is_infinite()
    }
}

/// `v` narrowed; a finite value that overflows is out of range.
#[inline]
fn narrow_checked<T: Narrow>(v: f64) -> Result<T, ValueFail> {
    let f = T::narrow(v);
    if f.is_inf() && v.is_finite() {
        return Err(ValueFail::OutOfRange);
    }
    Ok(f)
}

fn float_slow<T: Narrow>(text: &[u8]) -> Result<T, ValueFail> {
    let (v, spelled) = text_f64(text)?;
    if v.is_infinite() && !spelled {
        return Err(ValueFail::OutOfRange);
    }
    narrow_checked(v)
}

/// `f32` and `f64`: parsed by the fast float parser, spelled-out
/// infinities and NaN through [`float_slow`], narrowed with a range check.
macro_rules! float_elem {
    ($t:ty, $dtype:expr, $parse:path) => {
        impl Elem for $t {
            const DTYPE: DataType = $dtype;
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn fast(s: &[u8]) -> Option<(Self, usize)> {
                match $parse(s, true) {
                    Ok(Some((v, len))) if v.is_finite() => Some((v, len)),
                    _ => None,
                }
            }
            fn slow(text: &[u8]) -> Result<Self, ValueFail> {
                float_slow(text)
            }
            fn from_f64(v: f64) -> Result<Self, ValueFail> {
                narrow_checked(v)
            }
            fn from_i64(v: i64) -> Result<Self, ValueFail> {
                Ok(v as $t)
            }
            #[inline(always)]
            fn put(self, out: &mut BytesMut) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    };
}

float_elem!(f32, DataType::F32, number::parse_f32);
float_elem!(f64, DataType::F64, number::parse_f64);

macro_rules! half_elem {
    ($($t:ty => $dtype:expr),*) => {$(
        impl Elem for $t {
            const DTYPE: DataType = $dtype;
            const SIZE: usize = 2;
            fn fast(s: &[u8]) -> Option<(Self, usize)> {
                match number::parse_f64(s, true) {
                    Ok(Some((v, len))) if v.is_finite() => {
                        narrow_checked(v).ok().map(|f| (f, len))
                    }
                    _ => None,
                }
            }
            fn slow(text: &[u8]) -> Result<Self, ValueFail> {
                float_slow(text)
            }
            fn from_f64(v: f64) -> Result<Self, ValueFail> {
                narrow_checked(v)
            }
            fn from_i64(v: i64) -> Result<Self, ValueFail> {
                narrow_checked(v as f64)
            }
            fn put(self, out: &mut BytesMut) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}

half_elem!(f16 => DataType::F16, bf16 => DataType::BF16);

/// A whole-number double as `T`: NaN and fractions are not integers,
/// infinities and values past `T`'s range are out of range.
fn integral<T: TryFrom<i128>>(v: f64) -> Result<T, ValueFail> {
    if v.is_nan() || (v.is_finite() && v.fract() != 0.0) {
        return Err(ValueFail::NotInteger);
    }
    // Saturates at the i128 range, past every T's.
    T::try_from(v as i128).map_err(|_| ValueFail::OutOfRange)
}

fn int_slow<T: TryFrom<i128>>(text: &[u8]) -> Result<T, ValueFail> {
    let s = std::str::from_utf8(text).map_err(|_| ValueFail::NotNumber)?;
    if let Ok(i) = s.parse::<i128>() {
        return T::try_from(i).map_err(|_| ValueFail::OutOfRange);
    }
    // Digits past i128 are still a number, just out of range.
    if s.len() > 1
        && s.trim_start_matches(['+', '-'])
            .bytes()
            .all(|c| c.is_ascii_digit())
    {
        return Err(ValueFail::OutOfRange);
    }
    let (v, _) = text_f64(text)?;
    integral(v)
}

macro_rules! int_elem {
    ($($t:ty => $dtype:expr, $conv:ident),*) => {$(
        impl Elem for $t {
            const DTYPE: DataType = $dtype;
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn fast(s: &[u8]) -> Option<(Self, usize)> {
                let (v, len) = number::parse_int(s, true).ok()??;
                Some((<$t>::try_from(v.$conv()?).ok()?, len))
            }
            fn slow(text: &[u8]) -> Result<Self, ValueFail> {
                int_slow(text)
            }
            fn from_f64(v: f64) -> Result<Self, ValueFail> {
                integral(v)
            }
            fn from_i64(v: i64) -> Result<Self, ValueFail> {
                <$t>::try_from(v).map_err(|_| ValueFail::OutOfRange)
            }
            #[inline(always)]
            fn put(self, out: &mut BytesMut) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}

int_elem!(
    i8 => DataType::I8, to_i64,
    i16 => DataType::I16, to_i64,
    i32 => DataType::I32, to_i64,
    i64 => DataType::I64, to_i64,
    u8 => DataType::U8, to_u64,
    u16 => DataType::U16, to_u64,
    u32 => DataType::U32, to_u64,
    u64 => DataType::U64, to_u64
);

/// Longest value text an error message quotes.
const QUOTE_MAX: usize = 40;

/// The text an error message quotes: at most [`QUOTE_MAX`] bytes.
pub(super) fn quote(text: &[u8]) -> String {
    let cut = text.len().min(QUOTE_MAX);
    let mut s = String::from_utf8_lossy(&text[..cut]).into_owned();
    if cut < text.len() {
        s.push_str("...");
    }
    s
}

/// The error for a value `text` refused with `fail`.
pub(super) fn value_error<T: Elem>(
    fail: ValueFail,
    at: Location,
    feature: usize,
    text: &[u8],
) -> RecordError {
    let text = quote(text);
    let dtype = T::DTYPE;
    match fail {
        ValueFail::NotNumber => RecordError::NotNumber { at, feature, text },
        ValueFail::NotInteger => RecordError::NotInteger {
            at,
            feature,
            dtype,
            text,
        },
        ValueFail::OutOfRange => RecordError::OutOfRange {
            at,
            feature,
            dtype,
            text,
        },
    }
}

#[cfg(test)]
mod tests;
