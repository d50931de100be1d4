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

/// Parses a JSON number at the start of `s` as a double.
///
/// `Ok(None)`: the number may continue past the end of `s` and `eof` is
/// false; call again with more input. `Ok(Some((value, len)))` otherwise.
#[inline]
pub fn parse_f64(s: &[u8], eof: bool) -> Result<Option<(f64, usize)>, NumError> {
    let mut i = 0;
    let neg = s.first() == Some(&b'-');
    i += usize::from(neg);
    let mut mantissa: u64 = 0;
    let mut digits = 0usize;
    // Integer part.
    match s.get(i) {
        Some(b'0') => {
            i += 1;
        }
        Some(b'1'..=b'9') => {
            while let Some(&c) = s.get(i) {
                let d = c.wrapping_sub(b'0');
                if d > 9 {
                    break;
                }
                mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(d));
                digits += 1;
                i += 1;
            }
        }
        Some(_) => return Err(NumError::Syntax),
        None => return need_more(eof),
    }
    let mut exp10: i64 = 0;
    // Fraction.
    if s.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while let Some(&c) = s.get(i) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(d));
            digits += 1;
            i += 1;
        }
        if i == start {
            return if i == s.len() {
                need_more(eof)
            } else {
                Err(NumError::Syntax)
            };
        }
        exp10 -= (i - start) as i64;
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
        Some(c) if c.is_ascii_alphanumeric() || *c == b'.' => return Err(NumError::Syntax),
        _ => {}
    }
    if i > MAX_NUMBER_LEN {
        return Err(NumError::TooLong);
    }
    // Clinger's fast path: an exact mantissa and an exact power of ten give
    // a correctly rounded result in one IEEE operation.
    if digits <= 19 && mantissa <= (1 << 53) && (-22..=22).contains(&exp10) {
        let m = mantissa as f64;
        let v = if exp10 >= 0 {
            m * POW10[exp10 as usize]
        } else {
            m / POW10[(-exp10) as usize]
        };
        return Ok(Some((if neg { -v } else { v }, i)));
    }
    slow_f64(&s[..i]).map(|v| Some((v, i)))
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
        if self.negative {
            0i64.checked_sub_unsigned(self.magnitude)
        } else {
            i64::try_from(self.magnitude).ok()
        }
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
#[inline]
pub fn parse_int(s: &[u8], eof: bool) -> Result<Option<(Int, usize)>, NumError> {
    let mut i = 0;
    let negative = s.first() == Some(&b'-');
    i += usize::from(negative);
    let mut magnitude: u64 = 0;
    match s.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            let start = i;
            while let Some(&c) = s.get(i) {
                let d = c.wrapping_sub(b'0');
                if d > 9 {
                    break;
                }
                if i - start >= 19 {
                    magnitude = magnitude
                        .checked_mul(10)
                        .and_then(|m| m.checked_add(u64::from(d)))
                        .ok_or(NumError::Overflow)?;
                } else {
                    magnitude = magnitude * 10 + u64::from(d);
                }
                i += 1;
            }
        }
        Some(_) => return Err(NumError::Syntax),
        None => return need_more(eof),
    }
    match s.get(i) {
        Some(b'.' | b'e' | b'E') => {
            // Validate the whole literal so the error says the right thing.
            return match parse_f64(s, eof)? {
                Some(_) => Err(NumError::NotInteger),
                None => Ok(None),
            };
        }
        Some(c) if c.is_ascii_alphanumeric() => return Err(NumError::Syntax),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn f(s: &str) -> Result<Option<(f64, usize)>, NumError> {
        parse_f64(s.as_bytes(), true)
    }

    #[test]
    fn floats_agree_with_std() {
        for s in [
            "0",
            "-0",
            "1",
            "1.5",
            "-2.25",
            "0.1",
            "3.4028235e38",
            "1e-45",
            "123456789012345678901",
            "0.7213459014892578",
            "9007199254740993",
            "1E+2",
            "2.5e-3",
            "1e400",
            "-1e-400",
            "0.30000000000000004",
            "4.9e-324",
            "17976931348623157e292",
        ] {
            let (v, n) = f(s).unwrap().unwrap();
            assert_eq!(n, s.len(), "{s}");
            let expect: f64 = s.parse().unwrap();
            assert_eq!(v.to_bits(), expect.to_bits(), "{s}");
        }
    }

    #[test]
    fn float_syntax_errors() {
        for s in [
            "01", "1.", "-", ".5", "1e", "1e+", "+1", "--1", "1.e5", "0x10",
        ] {
            assert_eq!(f(s), Err(NumError::Syntax), "{s:?}");
        }
        assert_eq!(f(&"1".repeat(600)), Err(NumError::TooLong));
    }

    #[test]
    fn stops_at_delimiter_and_waits_at_end() {
        assert_eq!(parse_f64(b"1.25,", false), Ok(Some((1.25, 4))));
        assert_eq!(parse_f64(b"1.25]", false), Ok(Some((1.25, 4))));
        assert_eq!(parse_f64(b"1.25", false), Ok(None));
        assert_eq!(parse_f64(b"1.", false), Ok(None));
        assert_eq!(parse_f64(b"1e", false), Ok(None));
        assert_eq!(parse_f64(b"-", false), Ok(None));
        assert_eq!(parse_f64(b"", false), Ok(None));
    }

    #[test]
    fn integers() {
        let i = |s: &str| parse_int(s.as_bytes(), true);
        assert_eq!(i("0").unwrap().unwrap().0.to_i64(), Some(0));
        assert_eq!(
            i("-9223372036854775808").unwrap().unwrap().0.to_i64(),
            Some(i64::MIN)
        );
        assert_eq!(i("-9223372036854775809").unwrap().unwrap().0.to_i64(), None);
        assert_eq!(
            i("18446744073709551615").unwrap().unwrap().0.to_u64(),
            Some(u64::MAX)
        );
        assert_eq!(i("18446744073709551616"), Err(NumError::Overflow));
        assert_eq!(i("-1").unwrap().unwrap().0.to_u64(), None);
        assert_eq!(i("-0").unwrap().unwrap().0.to_u64(), Some(0));
        assert_eq!(i("1.0"), Err(NumError::NotInteger));
        assert_eq!(i("1e2"), Err(NumError::NotInteger));
        assert_eq!(i("1.x"), Err(NumError::Syntax));
        assert_eq!(i("007"), Err(NumError::Syntax));
        assert_eq!(parse_int(b"12", false), Ok(None));
        assert_eq!(parse_int(b"12,", false).unwrap().unwrap().1, 2);
    }
}
