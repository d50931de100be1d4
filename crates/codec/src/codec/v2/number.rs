//! JSON number scanning for tensor data: the hot loop of JSON -> binary.
//!
//! Numbers are parsed straight from the input bytes, never through a
//! `serde_json::Value`. Floats follow the semantics Triton and numpy use for
//! JSON input: the literal is rounded once to the nearest double, then to the
//! target type (FP32 / FP16 / BF16) with round-to-nearest-even.

/// Why a number could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumError {
    /// Not a JSON number (`01`, `1.`, `-`, `.5`, `1e`).
    Syntax,
    /// A float literal (`1.5`, `1e3`) where an integer is required.
    NotInteger,
    /// An integer literal too large for 64 bits.
    Overflow,
    /// Longer than any number this parser will buffer.
    TooLong,
}

/// Longest number token accepted. Anything longer is either malicious or a
/// mistake; rejecting it bounds the bytes kept while waiting for the rest of
/// a token split across chunks.
pub const MAX_NUMBER_LEN: usize = 512;

const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A number literal as scanned: its decimal digits, not yet converted.
#[derive(Clone, Copy, Debug)]
struct Decimal {
    negative: bool,
    /// The significant digits as an integer; exact when `digits <= 19`.
    mantissa: u64,
    /// Digits accumulated into `mantissa` (leading fraction zeros count).
    digits: usize,
    exp10: i64,
    len: usize,
}

impl Decimal {
    /// Clinger's fast path: an exact mantissa and an exact power of ten give
    /// a correctly rounded result in one IEEE operation.
    #[inline]
    fn fast_f64(&self) -> Option<f64> {
        if self.digits <= 19 && self.mantissa <= (1 << 53) && (-22..=22).contains(&self.exp10) {
            let v = scale(self.mantissa as f64, self.exp10);
            return Some(f64::from_bits(v.to_bits() | u64::from(self.negative) << 63));
        }
        None
    }

    /// The value rounded to a double, then to f32, without the exact double
    /// when that is not needed. The estimate `mantissa × 10^exp10` with a
    /// rounded mantissa and a rounded power of ten takes three roundings, so
    /// it is within 3.5 units in the last place (ulp) of the correctly
    /// rounded double. Unless it lies within 8 ulp of a point halfway between
    /// two floats, both round to the same float; otherwise `None`, and the
    /// caller computes the exact double. (A multiplication: a division would
    /// cost more than all the rest.)
    #[inline]
    fn fast_f32(&self) -> Option<f32> {
        if self.mantissa == 0 {
            return Some(f32::from_bits(u32::from(self.negative) << 31));
        }
        let at = usize::try_from(self.exp10 - POW10_F32_MIN).ok()?;
        if self.digits > 19 || at >= POW10_F32.len() {
            return None;
        }
        let m = if self.mantissa <= i64::MAX as u64 {
            self.mantissa as i64 as f64
        } else {
            self.mantissa as f64
        };
        let v = m * POW10_F32[at];
        let bits = v.to_bits();
        // Only the normal f32 range [2^-126, 2^127), where a float keeps
        // the top 23 of a double's 52 fraction bits.
        let exp = (bits >> 52) as i64 - 1023;
        const DROPPED: u64 = (1 << 29) - 1;
        const HALF: u64 = 1 << 28;
        if !(-126..127).contains(&exp) || (bits & DROPPED).abs_diff(HALF) <= 8 {
            return None;
        }
        // The sign as a bit, not a branch: signs of data are random.
        let f = v as f32;
        Some(f32::from_bits(f.to_bits() | u32::from(self.negative) << 31))
    }
}

#[inline]
fn scale(m: f64, exp10: i64) -> f64 {
    if exp10 >= 0 {
        m * POW10[exp10 as usize]
    } else {
        m / POW10[(-exp10) as usize]
    }
}

/// The value of eight digit values, one per byte, first digit lowest.
#[inline(always)]
fn eight_digit_value(b: u64) -> u64 {
    // Pairs, then quads, then all eight.
    let v = b.wrapping_mul(10).wrapping_add(b >> 8);
    const MASK: u64 = 0x0000_00ff_0000_00ff;
    const MUL1: u64 = 0x000f_4240_0000_0064;
    const MUL2: u64 = 0x0000_2710_0000_0001;
    (v & MASK)
        .wrapping_mul(MUL1)
        .wrapping_add(((v >> 16) & MASK).wrapping_mul(MUL2))
        >> 32
}

/// The eight bytes at `s[i..]` as digit values (byte minus `'0'`) and a
/// mask with the top bit set in every byte that is not a digit. A byte
/// above '9' sets its top bit in `a`, one below '0' in `b`; a carry or
/// borrow only ever moves upward from a byte that is itself flagged.
#[inline(always)]
fn eight_bytes(s: &[u8], i: usize) -> Option<(u64, u64)> {
    let chunk: [u8; 8] = s.get(i..i + 8)?.try_into().ok()?;
    let v = u64::from_le_bytes(chunk);
    let a = v.wrapping_add(0x4646_4646_4646_4646);
    let b = v.wrapping_sub(0x3030_3030_3030_3030);
    Some((b, (a | b) & 0x8080_8080_8080_8080))
}

/// If the 8 bytes at `s[i..]` are all ASCII digits, their value.
#[cfg(test)]
fn eight_digits(s: &[u8], i: usize) -> Option<u64> {
    let (b, non_digit) = eight_bytes(s, i)?;
    (non_digit == 0).then(|| eight_digit_value(b))
}

const POW10_U64: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// Accumulates the run of digits at `s[*i..]` into `mantissa` (wrapping
/// past 19 digits); returns how many there were. Eight bytes at a time,
/// the last partial group too, so a run costs no branch per digit.
#[inline(always)]
fn digit_run(s: &[u8], i: &mut usize, mantissa: &mut u64) -> usize {
    let start = *i;
    while let Some((b, non_digit)) = eight_bytes(s, *i) {
        if non_digit == 0 {
            *mantissa = mantissa
                .wrapping_mul(100_000_000)
                .wrapping_add(eight_digit_value(b));
            *i += 8;
            // Runs of exactly eight digits (`%.8f`) are common: when the
            // first group is all there is, one byte says so. (Not after
            // later groups: Python's 16 or 17 digits would mispredict.)
            if *i - start == 8 && !s.get(*i).is_some_and(u8::is_ascii_digit) {
                return 8;
            }
            continue;
        }
        // The digits before the first non-digit, moved to the top bytes:
        // the zero bytes below them are leading zeros.
        let n = (non_digit.trailing_zeros() / 8) as usize;
        let top = b.checked_shl(64 - 8 * n as u32).unwrap_or(0);
        *mantissa = mantissa
            .wrapping_mul(POW10_U64[n])
            .wrapping_add(eight_digit_value(top));
        *i += n;
        return *i - start;
    }
    // Fewer than eight bytes left.
    while let Some(&c) = s.get(*i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        *mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(d));
        *i += 1;
    }
    *i - start
}

/// Bytes that cannot directly follow a number: letters, digits and `.`
/// (`1x`, `01`, `1.2.3`). One load instead of four range checks.
const CANNOT_FOLLOW: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'.';
        c += 1;
    }
    t
};

/// Scans a JSON number at the start of `s`: `Ok(None)` when it may continue
/// past the end of `s` and `eof` is false.
#[inline(always)]
fn scan(s: &[u8], eof: bool) -> Result<Option<Decimal>, NumError> {
    let mut i = 0;
    let negative = s.first() == Some(&b'-');
    i += usize::from(negative);
    let mut mantissa: u64 = 0;
    let mut digits = 0usize;
    // Integer part.
    match s.get(i) {
        Some(b'0') => {
            i += 1;
        }
        Some(b'1'..=b'9') => {
            digits = digit_run(s, &mut i, &mut mantissa);
        }
        Some(_) => return Err(NumError::Syntax),
        None => return need_more(eof),
    }
    let mut exp10: i64 = 0;
    // Fraction.
    if s.get(i) == Some(&b'.') {
        i += 1;
        let n = digit_run(s, &mut i, &mut mantissa);
        if n == 0 {
            return if i == s.len() {
                need_more(eof)
            } else {
                Err(NumError::Syntax)
            };
        }
        digits += n;
        exp10 -= n as i64;
    }
    // Exponent.
    if let Some(b'e' | b'E') = s.get(i) {
        i += 1;
        let mut eneg = false;
        if let Some(&c @ (b'+' | b'-')) = s.get(i) {
            eneg = c == b'-';
            i += 1;
        }
        let start = i;
        let mut e: i64 = 0;
        while let Some(&c) = s.get(i) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            e = (e * 10 + i64::from(d)).min(1 << 20);
            i += 1;
        }
        if i == start {
            return if i == s.len() {
                need_more(eof)
            } else {
                Err(NumError::Syntax)
            };
        }
        exp10 += if eneg { -e } else { e };
    }
    match s.get(i) {
        None if !eof => return need_more(false),
        Some(&c) if CANNOT_FOLLOW[usize::from(c)] => return Err(NumError::Syntax),
        _ => {}
    }
    if i > MAX_NUMBER_LEN {
        return Err(NumError::TooLong);
    }
    Ok(Some(Decimal {
        negative,
        mantissa,
        digits,
        exp10,
        len: i,
    }))
}

/// Smallest power of ten in [`POW10_F32`]. The table covers every
/// exponent that can give a normal f32 from at most 19 digits.
const POW10_F32_MIN: i64 = -64;

/// `10^k` for k in -64..=40, each the nearest double.
#[rustfmt::skip]
const POW10_F32: [f64; 105] = [
    1e-64, 1e-63, 1e-62, 1e-61, 1e-60, 1e-59, 1e-58, 1e-57, 1e-56, 1e-55, 1e-54, 1e-53, 1e-52,
    1e-51, 1e-50, 1e-49, 1e-48, 1e-47, 1e-46, 1e-45, 1e-44, 1e-43, 1e-42, 1e-41, 1e-40, 1e-39,
    1e-38, 1e-37, 1e-36, 1e-35, 1e-34, 1e-33, 1e-32, 1e-31, 1e-30, 1e-29, 1e-28, 1e-27, 1e-26,
    1e-25, 1e-24, 1e-23, 1e-22, 1e-21, 1e-20, 1e-19, 1e-18, 1e-17, 1e-16, 1e-15, 1e-14, 1e-13,
    1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2,
    1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
    1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31, 1e32, 1e33,
    1e34, 1e35, 1e36, 1e37, 1e38, 1e39, 1e40,
];

/// Parses a JSON number at the start of `s` as a double.
///
/// `Ok(None)`: the number may continue past the end of `s` and `eof` is
/// false; call again with more input. `Ok(Some((value, len)))` otherwise.
#[inline]
pub fn parse_f64(s: &[u8], eof: bool) -> Result<Option<(f64, usize)>, NumError> {
    let Some(d) = scan(s, eof)? else {
        return Ok(None);
    };
    match d.fast_f64() {
        Some(v) => Ok(Some((v, d.len))),
        None => slow_f64(&s[..d.len]).map(|v| Some((v, d.len))),
    }
}

/// Parses a JSON number at the start of `s` and rounds it to f32 exactly as
/// `parse_f64(s, eof)` followed by `as f32` does (nearest double, then
/// nearest float: the semantics of Triton and numpy), but mostly without
/// computing the exact double. Out-of-range values become infinities.
#[inline(always)]
pub fn parse_f32(s: &[u8], eof: bool) -> Result<Option<(f32, usize)>, NumError> {
    let Some(d) = scan(s, eof)? else {
        return Ok(None);
    };
    match d.fast_f32() {
        Some(v) => Ok(Some((v, d.len))),
        None => slow_f64(&s[..d.len]).map(|v| Some((v as f32, d.len))),
    }
}

#[cold]
fn slow_f64(token: &[u8]) -> Result<f64, NumError> {
    std::str::from_utf8(token)
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
        .ok_or(NumError::Syntax)
}

#[inline]
fn need_more<T>(eof: bool) -> Result<Option<T>, NumError> {
    if eof { Err(NumError::Syntax) } else { Ok(None) }
}

/// An integer literal: its sign and magnitude.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Int {
    pub negative: bool,
    pub magnitude: u64,
}

impl Int {
    /// The value as `i64`, if it fits.
    #[inline]
    pub fn to_i64(self) -> Option<i64> {
        // Without a branch on the sign, which is random in data.
        let limit = i64::MAX as u64 + u64::from(self.negative);
        let negate = -i64::from(self.negative);
        (self.magnitude <= limit).then(|| ((self.magnitude as i64) ^ negate).wrapping_sub(negate))
    }

    /// The value as `u64`, if it is not negative (`-0` is zero).
    #[inline]
    pub fn to_u64(self) -> Option<u64> {
        (!self.negative || self.magnitude == 0).then_some(self.magnitude)
    }
}

impl std::fmt::Display for Int {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        write!(f, "{}", self.magnitude)
    }
}

/// Parses a JSON integer literal at the start of `s`. A fraction or an
/// exponent is [`NumError::NotInteger`], as Triton refuses `1.0` for INT32.
#[inline(always)]
pub fn parse_int(s: &[u8], eof: bool) -> Result<Option<(Int, usize)>, NumError> {
    if let Some(short) = short_int(s) {
        return Ok(Some(short));
    }
    let mut i = 0;
    let negative = s.first() == Some(&b'-');
    i += usize::from(negative);
    let mut magnitude: u64 = 0;
    match s.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            let start = i;
            // Nineteen digits always fit in 64 bits; past that, redo them
            // with overflow checks.
            if digit_run(s, &mut i, &mut magnitude) > 19 {
                magnitude = checked_magnitude(&s[start..i])?;
            }
        }
        Some(_) => return Err(NumError::Syntax),
        None => return need_more(eof),
    }
    match s.get(i) {
        Some(&c) if CANNOT_FOLLOW[usize::from(c)] => {
            if !matches!(c, b'.' | b'e' | b'E') {
                return Err(NumError::Syntax);
            }
            // Validate the whole literal so the error says the right thing.
            return match parse_f64(s, eof)? {
                Some(_) => Err(NumError::NotInteger),
                None => Ok(None),
            };
        }
        None if !eof => return Ok(None),
        _ => {}
    }
    Ok(Some((
        Int {
            negative,
            magnitude,
        },
        i,
    )))
}

/// The common case of [`parse_int`]: a literal of at most seven digits
/// (eight bytes with its sign) ended, within the same eight bytes, by a byte
/// that may follow a number. One load at the start of `s` serves the sign,
/// the digits and the end, so the next element's position does not wait on
/// a chain of loads. Anything else (`None`) takes the general path, which
/// also words the errors.
#[inline(always)]
fn short_int(s: &[u8]) -> Option<(Int, usize)> {
    let chunk: [u8; 8] = s.get(..8)?.try_into().ok()?;
    let negative = chunk[0] == b'-';
    // A leading '-' (0x2d) reads as a leading '0', which adds nothing.
    let v = u64::from_le_bytes(chunk) + 3 * u64::from(negative);
    let a = v.wrapping_add(0x4646_4646_4646_4646);
    let b = v.wrapping_sub(0x3030_3030_3030_3030);
    let len = ((a | b) & 0x8080_8080_8080_8080).trailing_zeros() as usize / 8;
    let first = usize::from(negative);
    if len == 8 || len <= first || CANNOT_FOLLOW[usize::from(chunk[len])] {
        return None;
    }
    if chunk[first] == b'0' && len > first + 1 {
        return None;
    }
    let digits = b << (64 - 8 * len as u32);
    Some((
        Int {
            negative,
            magnitude: eight_digit_value(digits),
        },
        len,
    ))
}

#[cold]
fn checked_magnitude(digits: &[u8]) -> Result<u64, NumError> {
    digits.iter().try_fold(0u64, |m, &c| {
        m.checked_mul(10)
            .and_then(|m| m.checked_add(u64::from(c - b'0')))
            .ok_or(NumError::Overflow)
    })
}

#[cfg(test)]
mod tests;
