//! JSON string tokens: a resumable scanner for strings split across chunks,
//! and unescaping straight into an output buffer.

/// Scans a JSON string token that may arrive in pieces. The scanner keeps
/// how far it got, so a long string fed one byte at a time costs linear
/// time, not quadratic.
#[derive(Clone, Debug, Default)]
pub struct StringScan {
    scanned: usize,
    escaped: bool,
}

/// A complete string token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    /// Length including both quotes.
    pub len: usize,
    /// Whether the content holds backslash escapes.
    pub escaped: bool,
}

impl Token {
    /// The bytes between the quotes of the token at the start of `s`.
    pub fn content<'a>(&self, s: &'a [u8]) -> &'a [u8] {
        &s[1..self.len - 1]
    }
}

impl StringScan {
    /// `s` starts at the opening quote (the same position on every call
    /// until the token completes). `Ok(None)`: the closing quote has not
    /// arrived yet.
    pub fn scan(&mut self, s: &[u8], eof: bool) -> Result<Option<Token>, &'static str> {
        let mut i = self.scanned.max(1);
        loop {
            let Some(k) = memchr::memchr2(b'"', b'\\', &s[i.min(s.len())..]) else {
                self.scanned = s.len();
                return if eof {
                    Err("unterminated string")
                } else {
                    Ok(None)
                };
            };
            let j = i + k;
            if s[j] == b'"' {
                let token = Token {
                    len: j + 1,
                    escaped: self.escaped,
                };
                *self = StringScan::default();
                return Ok(Some(token));
            }
            self.escaped = true;
            if j + 1 >= s.len() {
                self.scanned = j;
                return if eof {
                    Err("unterminated string")
                } else {
                    Ok(None)
                };
            }
            i = j + 2;
        }
    }
}

/// Checks unescaped string content: no raw control characters, valid UTF-8.
pub fn check_plain(content: &[u8]) -> Result<(), &'static str> {
    if content.iter().any(|&b| b < 0x20) {
        return Err("control character in string");
    }
    std::str::from_utf8(content).map_err(|_| "string is not valid UTF-8")?;
    Ok(())
}

/// Appends the decoded bytes of escaped string content to `out`.
pub fn unescape(content: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let mut i = 0;
    while i < content.len() {
        let Some(k) = memchr::memchr(b'\\', &content[i..]) else {
            check_plain(&content[i..])?;
            out.extend_from_slice(&content[i..]);
            return Ok(());
        };
        check_plain(&content[i..i + k])?;
        out.extend_from_slice(&content[i..i + k]);
        i += k + 1;
        let esc = *content.get(i).ok_or("unterminated escape")?;
        i += 1;
        let byte = match esc {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let (c, used) = unicode_escape(&content[i..])?;
                i += used;
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                continue;
            }
            _ => return Err("invalid escape"),
        };
        out.push(byte);
    }
    Ok(())
}

/// Decodes the `XXXX` (and a following `\uXXXX` low surrogate) after `\u`.
fn unicode_escape(s: &[u8]) -> Result<(char, usize), &'static str> {
    let hi = hex4(s)?;
    if (0xDC00..0xE000).contains(&hi) {
        return Err("lone low surrogate in \\u escape");
    }
    if !(0xD800..0xDC00).contains(&hi) {
        return char::from_u32(hi)
            .map(|c| (c, 4))
            .ok_or("invalid \\u escape");
    }
    if s.get(4..6) != Some(b"\\u") {
        return Err("lone high surrogate in \\u escape");
    }
    let lo = hex4(&s[6..])?;
    if !(0xDC00..0xE000).contains(&lo) {
        return Err("lone high surrogate in \\u escape");
    }
    let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
    char::from_u32(c)
        .map(|c| (c, 10))
        .ok_or("invalid \\u escape")
}

fn hex4(s: &[u8]) -> Result<u32, &'static str> {
    let digits = s.get(..4).ok_or("truncated \\u escape")?;
    digits.iter().try_fold(0u32, |acc, &c| {
        let d = (c as char).to_digit(16).ok_or("invalid \\u escape")?;
        Ok(acc * 16 + d)
    })
}

/// Appends `bytes` as a JSON string (with quotes), escaping what JSON
/// requires. `bytes` must be valid UTF-8.
#[inline]
pub fn write_json_string(bytes: &[u8], out: &mut Vec<u8>) {
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if !any_escape(bytes) {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Eight bytes at a time while none needs escaping.
        if let Some(word) = bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
            if !needs_escape(word) {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xf) as usize]);
                i += 1;
                start = i;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(esc);
        i += 1;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Whether any byte of `bytes` needs escaping in a JSON string.
#[inline]
fn any_escape(bytes: &[u8]) -> bool {
    any_word(bytes, needs_escape, |b| b < 0x20 || b == b'"' || b == b'\\')
}

/// Whether `bytes` is ASCII that a JSON string holds as it is: valid UTF-8
/// with nothing to escape, so it can be quoted without further checks.
#[inline]
pub fn is_plain_ascii(bytes: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    !any_word(
        bytes,
        |w| w & HIGH != 0 || needs_escape(w),
        |b| b < 0x20 || b == b'"' || b == b'\\' || b >= 0x80,
    )
}

/// Whether `word_test` holds for any 8-byte word of `bytes`, reading the
/// last partial word overlapping the one before it; `byte_test` for inputs
/// shorter than a word.
#[inline(always)]
fn any_word(bytes: &[u8], word_test: impl Fn(u64) -> bool, byte_test: impl Fn(u8) -> bool) -> bool {
    let n = bytes.len();
    if n < 8 {
        return bytes.iter().any(|&b| byte_test(b));
    }
    let word = |at: usize| {
        let w: [u8; 8] = bytes[at..at + 8].try_into().unwrap_or_default();
        word_test(u64::from_le_bytes(w))
    };
    let mut at = 0;
    while at + 8 <= n {
        if word(at) {
            return true;
        }
        at += 8;
    }
    at < n && word(n - 8)
}

/// Whether any of the eight bytes in `word` is a control character, `"` or
/// `\\`. Each test sets a byte's top bit exactly when that byte matches or
/// a lower byte did, so a zero result is exact; bytes of 0x80 and above
/// never match.
#[inline(always)]
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    let quote = zero_byte(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(word ^ (ONES * u64::from(b'\\')));
    control | quote | backslash != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(s: &str) -> Result<Vec<u8>, &'static str> {
        let mut out = Vec::new();
        unescape(s.as_bytes(), &mut out).map(|()| out)
    }

    #[test]
    fn unescapes() {
        assert_eq!(decode(r#"a\"b\\c\/\n\t"#).unwrap(), b"a\"b\\c/\n\t");
        assert_eq!(decode(r"\u00e9").unwrap(), "é".as_bytes());
        assert_eq!(decode(r"\ud83d\ude00").unwrap(), "😀".as_bytes());
        assert_eq!(decode(r"\ud83d"), Err("lone high surrogate in \\u escape"));
        assert_eq!(decode(r"\ude00"), Err("lone low surrogate in \\u escape"));
        assert_eq!(decode(r"\x"), Err("invalid escape"));
        assert_eq!(decode(r"\u12"), Err("truncated \\u escape"));
        assert_eq!(decode("a\nb"), Err("control character in string"));
    }

    #[test]
    fn scan_resumes() {
        let full = br#""ab\"cd" rest"#;
        let mut scan = StringScan::default();
        for end in 1..8 {
            assert_eq!(scan.scan(&full[..end], false), Ok(None), "prefix {end}");
        }
        let t = scan.scan(full, false).unwrap().unwrap();
        assert_eq!(t.len, 8);
        assert!(t.escaped);
        assert_eq!(t.content(full), br#"ab\"cd"#);
        let mut scan = StringScan::default();
        assert_eq!(scan.scan(b"\"abc", true), Err("unterminated string"));
    }

    /// Every byte that JSON escapes, at every position of a long string,
    /// beside multi-byte characters: the same text as escaping byte by byte.
    #[test]
    fn writes_escapes_at_any_position() {
        fn reference(bytes: &[u8]) -> Vec<u8> {
            let s = std::str::from_utf8(bytes).unwrap();
            serde_json::to_vec(s).unwrap()
        }
        let base = "abcdefghé€😀ijklmnopqrstuvwxyz0123456789";
        for special in [
            '"', '\\', '\n', '\r', '\t', '\u{8}', '\u{c}', '\u{0}', '\u{1f}', '\u{7f}',
        ] {
            for at in 0..=base.chars().count() {
                let mut text: String = base.chars().take(at).collect();
                text.push(special);
                text.extend(base.chars().skip(at));
                let mut out = Vec::new();
                write_json_string(text.as_bytes(), &mut out);
                assert_eq!(out, reference(text.as_bytes()), "{text:?}");
            }
        }
    }

    #[test]
    fn plain_ascii() {
        for text in [
            "",
            "a",
            "abcdefg",
            "abcdefgh",
            "abcdefghijklmnopq",
            "0123456789abcdef",
        ] {
            assert!(is_plain_ascii(text.as_bytes()), "{text:?}");
            for bad in ["\"", "\\", "\n", "\u{1}", "é", "\u{7f}\u{80}"] {
                for at in 0..=text.len() {
                    let t = format!("{}{bad}{}", &text[..at], &text[at..]);
                    let plain =
                        !t.contains(['"', '\\']) && t.bytes().all(|b| (0x20..0x80).contains(&b));
                    assert_eq!(is_plain_ascii(t.as_bytes()), plain, "{t:?}");
                }
            }
        }
    }

    #[test]
    fn writes_escaped() {
        let mut out = Vec::new();
        write_json_string("a\"\\\n\u{1}é".as_bytes(), &mut out);
        assert_eq!(out, "\"a\\\"\\\\\\n\\u0001é\"".as_bytes());
    }
}
