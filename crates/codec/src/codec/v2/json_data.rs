//! Streaming conversion of a V2 JSON `"data"` value into the V2 binary
//! layout, without building a DOM.
//!
//! [`DataParser`] is fed the bytes of the value in any chunking and writes
//! each element straight into its output buffer: little-endian fixed-size
//! elements, or length-prefixed BYTES elements. Nested and flat arrays are
//! both accepted (row-major, as Triton flattens them). A token cut by a chunk
//! boundary is reported as [`Progress::NeedMore`]: the caller keeps the
//! unconsumed tail and passes it again with the next chunk.

use half::{bf16, f16};

use super::number::{self, NumError};
use super::strings::{self, StringScan};
use crate::tensor::DataType;

/// How far a call to [`DataParser::parse`] got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The value is complete after this many bytes of the input.
    Done(usize),
    /// This many bytes were consumed; the rest is an incomplete token that
    /// must be passed again, followed by more input.
    NeedMore(usize),
}

/// What was wrong with the data. Element indices count from zero in
/// row-major order.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DataError {
    #[error("element {index}: expected a {dtype} value, found {found}")]
    WrongType {
        index: u64,
        dtype: DataType,
        found: &'static str,
    },
    #[error("element {index}: {value} is out of range for {dtype}")]
    OutOfRange {
        index: u64,
        dtype: DataType,
        value: String,
    },
    #[error("element {index}: {dtype} needs an integer, found {value}")]
    NotInteger {
        index: u64,
        dtype: DataType,
        value: String,
    },
    #[error("malformed JSON at element {index}: {what}")]
    Syntax { index: u64, what: &'static str },
    #[error("element {index}: {what}")]
    BadString { index: u64, what: &'static str },
    #[error("data nests deeper than {max} levels")]
    TooDeep { max: u32 },
    #[error("data has more than {max} elements, the limit")]
    TooManyElements { max: u64 },
    #[error("data has more elements than the {expected} its shape holds")]
    MoreThanShape { expected: u64 },
}

impl DataError {
    /// The same error with its element index moved on by `by`.
    fn shifted(mut self, by: u64) -> DataError {
        use DataError::*;
        match &mut self {
            WrongType { index, .. }
            | OutOfRange { index, .. }
            | NotInteger { index, .. }
            | Syntax { index, .. }
            | BadString { index, .. } => *index += by,
            TooDeep { .. } | TooManyElements { .. } | MoreThanShape { .. } => {}
        }
        self
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// After `,`: a value must follow.
    Value,
    /// At the start or after `[`: a value or `]`.
    ValueOrClose,
    /// After a value: `,` or `]`.
    CommaOrClose,
}

/// Most bytes reserved from a declared shape before any data has arrived;
/// larger tensors grow as their data comes in.
pub const MAX_RESERVE: usize = 16 << 20;

/// Converts one JSON `data` value into binary tensor data.
#[derive(Debug)]
pub struct DataParser {
    dtype: DataType,
    out: Vec<u8>,
    count: u64,
    /// Elements allowed: the shape's product when known, else the limit.
    max_elements: u64,
    expected: Option<u64>,
    depth: u32,
    max_depth: u32,
    expect: Expect,
    string: StringScan,
    /// A buffer for the next [`DataParser::tail`]: the last absorbed tail's,
    /// so that a tensor cut chunk after chunk does not allocate (and fault
    /// in) a fresh one each time.
    spare: Vec<u8>,
}

impl DataParser {
    /// A parser for `dtype` elements. `expected` is the shape's element count
    /// when the shape is already known: the output is allocated up front (at
    /// most [`MAX_RESERVE`] bytes, so a declared shape alone cannot claim
    /// memory the data never fills) and a longer array is refused as soon as
    /// it overflows.
    pub fn new(dtype: DataType, expected: Option<u64>, max_elements: u64, max_depth: u32) -> Self {
        let max = expected.map_or(max_elements, |e| e.min(max_elements));
        let capacity = match (expected, dtype.fixed_size()) {
            (Some(e), Some(size)) if e <= max_elements => {
                (e as usize).saturating_mul(size).min(MAX_RESERVE)
            }
            _ => 0,
        };
        DataParser {
            dtype,
            out: Vec::with_capacity(capacity),
            count: 0,
            max_elements: max,
            expected,
            depth: 0,
            max_depth,
            expect: Expect::ValueOrClose,
            string: StringScan::default(),
            spare: Vec::new(),
        }
    }

    /// Elements converted so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// What is converted so far, in the V2 binary layout.
    pub fn converted(&self) -> &[u8] {
        &self.out
    }

    /// The converted data; call after [`Progress::Done`].
    pub fn into_data(self) -> (Vec<u8>, u64) {
        (self.out, self.count)
    }

    /// Where `input`, the next bytes of this value, can be cut so that a
    /// [`DataParser::tail`] converts what follows the cut (on another
    /// thread, say) while this parser converts what precedes it: just after
    /// the first comma past four sevenths. Only for fixed-size elements inside
    /// an array; BYTES elements may hold commas.
    ///
    /// The cut is a guess until this parser has consumed everything before
    /// it: it is sound when this parser then ends at the tail's starting
    /// point ([`DataParser::at_cut`]), that is, the comma was a separator
    /// between elements at the same nesting depth.
    pub fn cut(&self, input: &[u8]) -> Option<usize> {
        // A little past the middle: the tail starts a thread wake-up later,
        // on a core whose cache does not hold the input (4/7 chosen over
        // 1/2 and 3/5 with `cargo bench --bench two_threads`).
        self.cut_after(input, input.len() * 4 / 7)
    }

    /// [`DataParser::cut`] just after the first comma at or past `at`.
    pub fn cut_after(&self, input: &[u8], at: usize) -> Option<usize> {
        if self.depth == 0 || self.dtype.fixed_size().is_none() {
            return None;
        }
        let rest = input.get(at..)?;
        memchr::memchr(b',', rest).map(|k| at + k + 1)
    }

    /// A parser for the `len` bytes that follow a cut: the same type and
    /// depth, just after a comma, counting its elements from zero. Its
    /// element limit is what is left of this parser's now;
    /// [`DataParser::absorb`] checks the total. Its output buffer is
    /// allocated here, with room for the most `len` bytes can hold (an
    /// element and its comma take at least two), so that the thread that
    /// runs it never reallocates it: memory goes back to the thread that
    /// allocated it (see `frontend/v2/json_stream.rs`).
    pub fn tail(&mut self, len: usize) -> DataParser {
        let size = self.dtype.fixed_size().unwrap_or(1);
        let mut out = std::mem::take(&mut self.spare);
        out.reserve((len / 2 + 1).saturating_mul(size));
        DataParser {
            dtype: self.dtype,
            out,
            count: 0,
            max_elements: self.max_elements - self.count,
            expected: self.expected,
            depth: self.depth,
            max_depth: self.max_depth,
            expect: Expect::Value,
            string: StringScan::default(),
            spare: Vec::new(),
        }
    }

    /// Whether this parser stands where a tail made at `depth` started:
    /// after a comma, at that depth. Only then does the tail's work follow
    /// on from this parser's.
    pub fn at_cut(&self, depth: u32) -> bool {
        self.expect == Expect::Value && self.depth == depth
    }

    /// The depth a tail made now would start at.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Takes over a tail's elements and position; call when
    /// [`DataParser::at_cut`] holds. Fails as this parser would have had it
    /// converted the tail's elements itself: too many elements in all.
    pub fn absorb(&mut self, tail: DataParser) -> Result<(), DataError> {
        if tail.count > self.max_elements - self.count {
            return Err(self.overflow());
        }
        self.out.extend_from_slice(&tail.out);
        self.count += tail.count;
        self.depth = tail.depth;
        self.expect = tail.expect;
        self.string = tail.string;
        self.spare = tail.out;
        self.spare.clear();
        Ok(())
    }

    /// A tail's error as this parser would have reported it converting the
    /// tail's input itself: element indices count on from this parser's,
    /// and too many elements in all comes first.
    pub fn tail_error(&self, tail: &DataParser, error: DataError) -> DataError {
        let overflowed = tail.count > self.max_elements - self.count;
        match error {
            DataError::MoreThanShape { .. } | DataError::TooManyElements { .. } => self.overflow(),
            _ if overflowed => self.overflow(),
            error => error.shifted(self.count),
        }
    }

    /// Feeds input. `eof` says no more input follows `input`.
    pub fn parse(&mut self, input: &[u8], eof: bool) -> Result<Progress, DataError> {
        if self.dtype == DataType::Bytes {
            // Elements take about as many bytes here as in the JSON: one
            // reservation instead of a doubling series of copies.
            self.out.reserve(input.len() + input.len() / 4);
        }
        match self.dtype {
            DataType::Bool => self.run::<BoolSink>(input, eof),
            DataType::U8 => self.run::<IntSink<u8>>(input, eof),
            DataType::U16 => self.run::<IntSink<u16>>(input, eof),
            DataType::U32 => self.run::<IntSink<u32>>(input, eof),
            DataType::U64 => self.run::<IntSink<u64>>(input, eof),
            DataType::I8 => self.run::<IntSink<i8>>(input, eof),
            DataType::I16 => self.run::<IntSink<i16>>(input, eof),
            DataType::I32 => self.run::<IntSink<i32>>(input, eof),
            DataType::I64 => self.run::<IntSink<i64>>(input, eof),
            DataType::F16 => self.run::<FloatSink<f16>>(input, eof),
            DataType::BF16 => self.run::<FloatSink<bf16>>(input, eof),
            DataType::F32 => self.run::<FloatSink<f32>>(input, eof),
            DataType::F64 => self.run::<FloatSink<f64>>(input, eof),
            DataType::Bytes => self.run::<BytesSink>(input, eof),
        }
    }

    fn syntax(&self, what: &'static str) -> DataError {
        DataError::Syntax {
            index: self.count,
            what,
        }
    }

    #[inline]
    fn counted(&mut self) -> Result<(), DataError> {
        if self.count >= self.max_elements {
            return Err(self.overflow());
        }
        self.count += 1;
        Ok(())
    }

    #[cold]
    fn overflow(&self) -> DataError {
        match self.expected {
            Some(expected) if expected <= self.max_elements => {
                DataError::MoreThanShape { expected }
            }
            _ => DataError::TooManyElements {
                max: self.max_elements,
            },
        }
    }

    fn run<S: Sink>(&mut self, input: &[u8], eof: bool) -> Result<Progress, DataError> {
        let n = input.len();
        let mut i = 0;
        loop {
            while i < n && is_ws(input[i]) {
                i += 1;
            }
            let Some(&c) = input.get(i) else {
                return if eof {
                    Err(self.syntax("unexpected end of input"))
                } else {
                    Ok(Progress::NeedMore(i))
                };
            };
            if self.expect == Expect::CommaOrClose {
                match c {
                    b',' if self.depth > 0 => {
                        self.expect = Expect::Value;
                        i += 1;
                        continue;
                    }
                    b']' if self.depth > 0 => {
                        self.depth -= 1;
                        i += 1;
                        if self.depth == 0 {
                            return Ok(Progress::Done(i));
                        }
                        continue;
                    }
                    _ => return Err(self.syntax("expected ',' or ']'")),
                }
            }
            match c {
                b'[' => {
                    if self.depth >= self.max_depth {
                        return Err(DataError::TooDeep {
                            max: self.max_depth,
                        });
                    }
                    self.depth += 1;
                    self.expect = Expect::ValueOrClose;
                    i += 1;
                }
                b']' if self.expect == Expect::ValueOrClose && self.depth > 0 => {
                    self.depth -= 1;
                    self.expect = Expect::CommaOrClose;
                    i += 1;
                    if self.depth == 0 {
                        return Ok(Progress::Done(i));
                    }
                }
                _ => {
                    // The hot loop: elements separated by bare commas.
                    loop {
                        let Some(len) = self.element::<S>(&input[i..], eof)? else {
                            return Ok(Progress::NeedMore(i));
                        };
                        i += len;
                        self.expect = Expect::CommaOrClose;
                        if self.depth == 0 {
                            return Ok(Progress::Done(i));
                        }
                        // `,` and the next value's first byte, allowing the
                        // one space Python's json.dumps writes after commas.
                        let next = match input.get(i..i + 3) {
                            Some([b',', b' ', c]) => Some((2, c)),
                            Some([b',', c, _]) => Some((1, c)),
                            _ => None,
                        };
                        match next {
                            Some((skip, &c)) if VALUE_START[usize::from(c)] => {
                                i += skip;
                                self.expect = Expect::Value;
                            }
                            _ => break,
                        }
                    }
                }
            }
        }
    }

    /// Parses one scalar element at the start of `s`.
    #[inline(always)]
    fn element<S: Sink>(&mut self, s: &[u8], eof: bool) -> Result<Option<usize>, DataError> {
        // One well-predicted branch for numbers of either sign (data of
        // random sign would mispredict a branch on '-').
        if NUMBER_START[usize::from(s[0])] {
            return self.number::<S>(s, eof);
        }
        self.other_element::<S>(s, eof)
    }

    #[inline(always)]
    fn number<S: Sink>(&mut self, s: &[u8], eof: bool) -> Result<Option<usize>, DataError> {
        match S::number(s, eof, &mut self.out) {
            Ok(Some(len)) => {
                self.counted()?;
                Ok(Some(len))
            }
            Ok(None) if s.len() > number::MAX_NUMBER_LEN => Err(DataError::Syntax {
                index: self.count,
                what: "number too long",
            }),
            Ok(None) => Ok(None),
            Err(e) => self.not_a_number::<S>(e, s, eof),
        }
    }

    /// A number that failed: `-Infinity`, or an error.
    #[cold]
    #[inline(never)]
    fn not_a_number<S: Sink>(
        &mut self,
        e: SinkError,
        s: &[u8],
        eof: bool,
    ) -> Result<Option<usize>, DataError> {
        if s.starts_with(b"-I") {
            return self.literal::<S>(s, eof);
        }
        // Messages that quote the number wait until the text they quote is
        // all here, so that they do not depend on where the input was split
        // (`1.5+88|88` and `1.5+8888` must say the same).
        let quotes = matches!(
            e,
            SinkError::Num(NumError::NotInteger | NumError::Overflow) | SinkError::Range
        );
        if quotes && !eof && token_text_len(s) == s.len() && s.len() < TOKEN_TEXT_MAX {
            return Ok(None);
        }
        Err(self.number_error(e, s))
    }

    #[cold]
    #[inline(never)]
    fn number_error(&self, e: SinkError, s: &[u8]) -> DataError {
        let index = self.count;
        let dtype = self.dtype;
        match e {
            SinkError::Num(NumError::NotInteger) => DataError::NotInteger {
                index,
                dtype,
                value: token_text(s),
            },
            SinkError::Num(NumError::Overflow) | SinkError::Range => DataError::OutOfRange {
                index,
                dtype,
                value: token_text(s),
            },
            SinkError::Num(NumError::TooLong) => DataError::Syntax {
                index,
                what: "number too long",
            },
            SinkError::Num(NumError::Syntax) => DataError::Syntax {
                index,
                what: "invalid number",
            },
            SinkError::Type(found) => DataError::WrongType {
                index,
                dtype,
                found,
            },
            SinkError::BadString(what) => DataError::BadString { index, what },
        }
    }

    /// Strings, literals, and what cannot start an element.
    #[inline]
    fn other_element<S: Sink>(&mut self, s: &[u8], eof: bool) -> Result<Option<usize>, DataError> {
        let index = self.count;
        let dtype = self.dtype;
        let wrong = |found| DataError::WrongType {
            index,
            dtype,
            found,
        };
        match s[0] {
            b'"' => {
                let Some(token) = self
                    .string
                    .scan(s, eof)
                    .map_err(|what| DataError::BadString { index, what })?
                else {
                    return Ok(None);
                };
                S::string(token.content(s), token.escaped, &mut self.out).map_err(|e| match e {
                    SinkError::Type(found) => wrong(found),
                    SinkError::BadString(what) => DataError::BadString { index, what },
                    SinkError::Num(_) => DataError::BadString {
                        index,
                        what: "invalid string",
                    },
                    SinkError::Range => DataError::BadString {
                        index,
                        what: "string longer than 4 GiB",
                    },
                })?;
                self.counted()?;
                Ok(Some(token.len))
            }
            b't' | b'f' | b'n' | b'N' | b'I' | b'-' => self.literal::<S>(s, eof),
            b'{' => Err(wrong("an object")),
            _ => Err(self.syntax("unexpected character")),
        }
    }
}

impl DataParser {
    /// `true`, `false`, `null`, and the non-finite literals `NaN`,
    /// `Infinity`, `-Infinity` that Triton and Python's `json` module write.
    fn literal<S: Sink>(&mut self, s: &[u8], eof: bool) -> Result<Option<usize>, DataError> {
        let (lit, value): (&[u8], Literal) = match s[0] {
            b't' => (b"true", Literal::Bool(true)),
            b'f' => (b"false", Literal::Bool(false)),
            b'n' => (b"null", Literal::Null),
            b'N' => (b"NaN", Literal::Float(f64::NAN)),
            b'I' => (b"Infinity", Literal::Float(f64::INFINITY)),
            _ => (b"-Infinity", Literal::Float(f64::NEG_INFINITY)),
        };
        if s.len() < lit.len() + usize::from(!eof) {
            return if !eof && lit.starts_with(s) {
                Ok(None)
            } else {
                Err(self.syntax("invalid literal"))
            };
        }
        if !s.starts_with(lit) || s.get(lit.len()).is_some_and(u8::is_ascii_alphanumeric) {
            return Err(self.syntax("invalid literal"));
        }
        let index = self.count;
        let dtype = self.dtype;
        let wrong = |found| DataError::WrongType {
            index,
            dtype,
            found,
        };
        match value {
            Literal::Bool(b) => S::boolean(b, &mut self.out).map_err(|_| wrong("a boolean"))?,
            Literal::Float(v) => {
                S::special(v, &mut self.out).map_err(|_| wrong("a non-finite number"))?
            }
            Literal::Null => return Err(wrong("null")),
        }
        self.counted()?;
        Ok(Some(lit.len()))
    }
}

/// `-` and the digits.
const NUMBER_START: [bool; 256] = byte_set(b"-0123456789");

/// What the hot loop takes as the start of the next element: a number or
/// a string. A table, not a `match`: a branch on the sign of random data
/// mispredicts half the time.
const VALUE_START: [bool; 256] = byte_set(b"-0123456789\"");

const fn byte_set(bytes: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        t[bytes[i] as usize] = true;
        i += 1;
    }
    t
}

enum Literal {
    Bool(bool),
    Float(f64),
    Null,
}

/// Longest number text an error message quotes.
const TOKEN_TEXT_MAX: usize = 40;

/// The number text an error message quotes: the run of number characters
/// at the start of `s`, at most [`TOKEN_TEXT_MAX`] bytes.
fn token_text(s: &[u8]) -> String {
    String::from_utf8_lossy(&s[..token_text_len(s)]).into_owned()
}

fn token_text_len(s: &[u8]) -> usize {
    s.iter()
        .position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
        .unwrap_or(s.len())
        .min(TOKEN_TEXT_MAX)
}

#[inline]
fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t')
}

enum SinkError {
    Num(NumError),
    Range,
    Type(&'static str),
    BadString(&'static str),
}

impl From<NumError> for SinkError {
    fn from(e: NumError) -> Self {
        SinkError::Num(e)
    }
}

/// Writes elements of one data type.
trait Sink {
    fn number(s: &[u8], eof: bool, out: &mut Vec<u8>) -> Result<Option<usize>, SinkError>;
    fn string(_content: &[u8], _escaped: bool, _out: &mut Vec<u8>) -> Result<(), SinkError> {
        Err(SinkError::Type("a string"))
    }
    fn boolean(_b: bool, _out: &mut Vec<u8>) -> Result<(), SinkError> {
        Err(SinkError::Type("a boolean"))
    }
    fn special(_v: f64, _out: &mut Vec<u8>) -> Result<(), SinkError> {
        Err(SinkError::Type("a non-finite number"))
    }
}

struct BoolSink;

impl Sink for BoolSink {
    fn number(_: &[u8], _: bool, _: &mut Vec<u8>) -> Result<Option<usize>, SinkError> {
        Err(SinkError::Type("a number"))
    }
    fn boolean(b: bool, out: &mut Vec<u8>) -> Result<(), SinkError> {
        out.push(u8::from(b));
        Ok(())
    }
}

struct BytesSink;

impl Sink for BytesSink {
    fn number(_: &[u8], _: bool, _: &mut Vec<u8>) -> Result<Option<usize>, SinkError> {
        Err(SinkError::Type("a number"))
    }
    #[inline]
    fn string(content: &[u8], escaped: bool, out: &mut Vec<u8>) -> Result<(), SinkError> {
        if !escaped && strings::is_plain_ascii(content) {
            // Most text: ASCII needs no UTF-8 check (and has no controls).
            let len = u32::try_from(content.len()).map_err(|_| SinkError::Range)?;
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(content);
            return Ok(());
        }
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        if escaped {
            strings::unescape(content, out).map_err(SinkError::BadString)?;
        } else {
            strings::check_plain(content).map_err(SinkError::BadString)?;
            out.extend_from_slice(content);
        }
        let len = u32::try_from(out.len() - at - 4).map_err(|_| SinkError::Range)?;
        out[at..at + 4].copy_from_slice(&len.to_le_bytes());
        Ok(())
    }
}

struct IntSink<T>(std::marker::PhantomData<T>);

macro_rules! int_sink {
    ($($t:ty => $conv:ident),*) => {$(
        impl Sink for IntSink<$t> {
            #[inline]
            fn number(s: &[u8], eof: bool, out: &mut Vec<u8>) -> Result<Option<usize>, SinkError> {
                let Some((v, len)) = number::parse_int(s, eof)? else {
                    return Ok(None);
                };
                let v = v.$conv().and_then(|v| <$t>::try_from(v).ok()).ok_or(SinkError::Range)?;
                out.extend_from_slice(&v.to_le_bytes());
                Ok(Some(len))
            }
        }
    )*};
}

int_sink!(u8 => to_u64, u16 => to_u64, u32 => to_u64, u64 => to_u64,
          i8 => to_i64, i16 => to_i64, i32 => to_i64, i64 => to_i64);

/// Narrowing from the parsed double, round-to-nearest-even. A finite value
/// that overflows the target is refused rather than turned into infinity.
trait Float: Copy {
    fn narrow(v: f64) -> Result<Self, SinkError>;
    fn write(self, out: &mut Vec<u8>);

    /// Parses a number literal: nearest double, then [`Float::narrow`].
    /// Infinite doubles (`1e400`) are out of range.
    #[inline]
    fn parse(s: &[u8], eof: bool) -> Result<Option<(Self, usize)>, SinkError> {
        let Some((v, len)) = number::parse_f64(s, eof)? else {
            return Ok(None);
        };
        if v.is_infinite() {
            return Err(SinkError::Range);
        }
        Ok(Some((Self::narrow(v)?, len)))
    }
}

impl Float for f64 {
    #[inline]
    fn narrow(v: f64) -> Result<Self, SinkError> {
        Ok(v)
    }
    #[inline]
    fn write(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

impl Float for f32 {
    #[inline]
    fn narrow(v: f64) -> Result<Self, SinkError> {
        let f = v as f32;
        if f.is_infinite() && v.is_finite() {
            return Err(SinkError::Range);
        }
        Ok(f)
    }
    #[inline]
    fn write(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    /// The same result as the default, mostly without the exact double:
    /// any literal whose float is infinite overflowed either as a double or
    /// when narrowed.
    #[inline]
    fn parse(s: &[u8], eof: bool) -> Result<Option<(Self, usize)>, SinkError> {
        let Some((v, len)) = number::parse_f32(s, eof)? else {
            return Ok(None);
        };
        if v.is_infinite() {
            return Err(SinkError::Range);
        }
        Ok(Some((v, len)))
    }
}

/// FP16 and BF16: rounded once from the double (`half` rounds to nearest
/// even).
macro_rules! half_float {
    ($($t:ty),*) => {$(
        impl Float for $t {
            fn narrow(v: f64) -> Result<Self, SinkError> {
                let f = <$t>::from_f64(v);
                if f.is_infinite() && v.is_finite() {
                    return Err(SinkError::Range);
                }
                Ok(f)
            }
            fn write(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}

half_float!(f16, bf16);

struct FloatSink<T>(std::marker::PhantomData<T>);

impl<T: Float> Sink for FloatSink<T> {
    #[inline]
    fn number(s: &[u8], eof: bool, out: &mut Vec<u8>) -> Result<Option<usize>, SinkError> {
        let Some((v, len)) = T::parse(s, eof)? else {
            return Ok(None);
        };
        v.write(out);
        Ok(Some(len))
    }

    /// JSON has no NaN or infinities; the strings `"NaN"`, `"Infinity"` and
    /// `"-Infinity"` stand for them, the same spelling the writer uses.
    fn string(content: &[u8], escaped: bool, out: &mut Vec<u8>) -> Result<(), SinkError> {
        let v = match (content, escaped) {
            (b"NaN", false) => f64::NAN,
            (b"Infinity", false) => f64::INFINITY,
            (b"-Infinity", false) => f64::NEG_INFINITY,
            _ => return Err(SinkError::Type("a string")),
        };
        Self::special(v, out)
    }

    fn special(v: f64, out: &mut Vec<u8>) -> Result<(), SinkError> {
        T::narrow(v)?.write(out);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
