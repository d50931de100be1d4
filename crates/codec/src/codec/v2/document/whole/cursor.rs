//! Reading position in a whole document, and the plain JSON forms the
//! one-pass parser accepts: strings without escapes, integers that fit an
//! `i64` (at most 18 digits), literals, and arrays and objects of them.
//! Every read returns `None` for anything else, and the caller hands the
//! document to the streaming parser: nothing here produces an error.

use serde_json::{Map, Value};

use crate::codec::v2::model::Params;

/// Most members of a tensor's `"parameters"` read here: each is checked
/// against those before it for a duplicate name, and more are left to
/// serde.
const MAX_PARAMS: usize = 16;

/// `b` in every byte of a word.
const fn bytes(b: u8) -> u64 {
    u64::from_le_bytes([b; 8])
}

/// A word with the top bit set in the first byte of `w` that is `"`, `\`
/// or a control character (bytes above it may be set too: a borrow only
/// moves up from a byte that is itself flagged, so the lowest set bit is
/// exact).
#[inline(always)]
fn specials(w: u64) -> u64 {
    const HIGH: u64 = bytes(0x80);
    let zero = |x: u64| x.wrapping_sub(bytes(1)) & !x;
    (w.wrapping_sub(bytes(0x20)) & !w | zero(w ^ bytes(b'"')) | zero(w ^ bytes(b'\\'))) & HIGH
}

/// The length of the string content at the start of `s` (just after its
/// opening quote), if it ends at a `"` before any escape or control
/// character: eight bytes at a time.
#[inline]
fn plain_len(s: &[u8]) -> Option<usize> {
    let mut at = 0;
    while let Some(chunk) = s.get(at..at + 8) {
        let found = specials(u64::from_le_bytes(chunk.try_into().ok()?));
        if found != 0 {
            at += (found.trailing_zeros() / 8) as usize;
            return (s[at] == b'"').then_some(at);
        }
        at += 8;
    }
    for (k, &c) in s.get(at..)?.iter().enumerate() {
        match c {
            b'"' => return Some(at + k),
            b'\\' | 0..=0x1f => return None,
            _ => {}
        }
    }
    None
}

pub(super) struct Cursor<'a> {
    s: &'a [u8],
    pub i: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(s: &'a [u8]) -> Self {
        Cursor { s, i: 0 }
    }

    /// The input from the current position on.
    pub fn rest(&self) -> &'a [u8] {
        self.s.get(self.i..).unwrap_or_default()
    }

    /// Whether only whitespace is left.
    pub fn at_end(&mut self) -> bool {
        self.ws();
        self.i >= self.s.len()
    }

    #[inline]
    pub fn ws(&mut self) {
        // One compare for the byte after a token of compact JSON, which is
        // never whitespace: all four whitespace bytes are below `!`.
        while let Some(&c) = self.s.get(self.i)
            && c <= b' '
            && matches!(c, b' ' | b'\n' | b'\r' | b'\t')
        {
            self.i += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    #[inline]
    pub fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    /// Consumes `c` (after whitespace), or fails.
    #[inline]
    pub fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// After a member or element: `true` on `,`, `false` on `close`.
    #[inline]
    pub fn more(&mut self, close: u8) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.i += 1;
                Some(true)
            }
            c if c == close => {
                self.i += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// Opens an object or array (`open`): whether it has a first item
    /// (`false`: it was empty and is closed).
    pub fn open(&mut self, open: u8, close: u8) -> Option<bool> {
        self.eat(open)?;
        if self.peek()? == close {
            self.i += 1;
            return Some(false);
        }
        Some(true)
    }

    /// The content of a string without escapes or control characters
    /// (after whitespace), not yet checked as UTF-8.
    pub fn raw_str(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let rest = self.rest();
        let len = plain_len(rest)?;
        self.i += len + 1;
        rest.get(..len)
    }

    /// The content of a plain string, valid UTF-8.
    pub fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.raw_str()?).ok()
    }

    /// A member name and its colon, as bytes: the names the parser knows are
    /// told apart without a UTF-8 check.
    pub fn key(&mut self) -> Option<&'a [u8]> {
        let key = self.raw_str()?;
        self.eat(b':')?;
        Some(key)
    }

    /// A member name as a string, once it is known to be kept. The names
    /// every V2 reply carries are taken from their spelling here, without
    /// the UTF-8 check of the input, four per small reply (see
    /// docs/PERFORMANCE.md, "What each decision bought").
    pub fn key_string(key: &[u8]) -> Option<String> {
        let known = match key {
            b"model_name" => "model_name",
            b"model_version" => "model_version",
            b"id" => "id",
            b"parameters" => "parameters",
            b"binary_data_size" => "binary_data_size",
            _ => return std::str::from_utf8(key).ok().map(str::to_owned),
        };
        Some(known.to_owned())
    }

    /// An integer as JSON writes it, of at most 18 digits; `-0` is left to
    /// serde (which reads it as a float).
    #[inline]
    pub fn int(&mut self) -> Option<i64> {
        self.ws();
        let s = self.s;
        let negative = s.get(self.i) == Some(&b'-');
        let start = self.i + usize::from(negative);
        let first = s.get(start)?.wrapping_sub(b'0');
        if first > 9 {
            return None;
        }
        let mut end = start + 1;
        let mut v = i64::from(first);
        if first != 0 {
            while let Some(&c) = s.get(end) {
                let d = c.wrapping_sub(b'0');
                if d > 9 {
                    break;
                }
                // Wraps only past 18 digits, which are refused below.
                v = v.wrapping_mul(10).wrapping_add(i64::from(d));
                end += 1;
            }
            if end - start > 18 {
                return None;
            }
        } else if negative {
            return None;
        }
        // A number ends at a delimiter: `1.5`, `1e3` are not integers, and
        // a digit after a leading `0` (`01`) is not JSON.
        if let Some(b'0'..=b'9' | b'.' | b'e' | b'E') = s.get(end) {
            return None;
        }
        self.i = end;
        Some(if negative { -v } else { v })
    }

    /// A whole value in one of the plain forms, nesting at most `depth`
    /// arrays and objects.
    pub fn value(&mut self, depth: u32) -> Option<Value> {
        Some(match self.peek()? {
            b'"' => Value::String(self.str()?.to_owned()),
            b'{' => Value::Object(self.object(depth)?),
            b'[' => {
                let depth = depth.checked_sub(1)?;
                let mut items = Vec::new();
                if self.open(b'[', b']')? {
                    loop {
                        items.push(self.value(depth)?);
                        if !self.more(b']')? {
                            break;
                        }
                    }
                }
                Value::Array(items)
            }
            b't' => self.literal(b"true", Value::Bool(true))?,
            b'f' => self.literal(b"false", Value::Bool(false))?,
            b'n' => self.literal(b"null", Value::Null)?,
            _ => Value::from(self.int()?),
        })
    }

    /// An object of plain values; a name given twice is left to serde.
    pub fn object(&mut self, depth: u32) -> Option<Map<String, Value>> {
        let mut map = Map::new();
        self.members(depth, |key, value| map.insert(key, value).is_none())?;
        Some(map)
    }

    /// A tensor's `"parameters"`: an object of plain values, of at most
    /// [`MAX_PARAMS`] members; a name given twice is left to serde.
    pub fn params(&mut self, depth: u32) -> Option<Params> {
        // Room for the one member most have (a binary output's
        // `binary_data_size`): growing from nothing cost a reallocation.
        let mut params = Params::with_capacity(1);
        self.members(depth, |key, value| {
            params.len() < MAX_PARAMS && params.insert(key, value).is_none()
        })?;
        Some(params)
    }

    /// The members of an object of plain values, each handed to `put`;
    /// `None` when one is not read or `put` refuses it.
    fn members(&mut self, depth: u32, mut put: impl FnMut(String, Value) -> bool) -> Option<()> {
        let depth = depth.checked_sub(1)?;
        if self.open(b'{', b'}')? {
            loop {
                let key = Self::key_string(self.key()?)?;
                let value = self.value(depth)?;
                if !put(key, value) {
                    return None;
                }
                if !self.more(b'}')? {
                    break;
                }
            }
        }
        Some(())
    }

    fn literal(&mut self, text: &[u8], value: Value) -> Option<Value> {
        let end = self.i + text.len();
        if self.s.get(self.i..end)? != text {
            return None;
        }
        // `truex` is not `true`.
        if self.s.get(end).is_some_and(u8::is_ascii_alphanumeric) {
            return None;
        }
        self.i = end;
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::{Cursor, plain_len};

    /// The names taken from their spelling are the names read, and any
    /// other name is checked as UTF-8.
    #[test]
    fn key_string_is_the_name_read() {
        for name in [
            "model_name",
            "model_version",
            "id",
            "parameters",
            "binary_data_size",
            "model_nam",
            "binary_data_size_",
            "é",
            "",
        ] {
            assert_eq!(Cursor::key_string(name.as_bytes()).as_deref(), Some(name));
        }
        assert_eq!(Cursor::key_string(b"\xff"), None);
        assert_eq!(Cursor::key_string(b"id\xc3"), None);
    }

    /// The integers read, and where reading stops, against what JSON
    /// allows and the 18-digit bound; everything else is left to serde.
    #[test]
    fn int_reads_plain_json_integers_only() {
        let read = |s: &str| {
            let mut c = Cursor::new(s.as_bytes());
            c.int().map(|v| (v, c.i))
        };
        assert_eq!(read("0"), Some((0, 1)));
        assert_eq!(read("7,"), Some((7, 1)));
        assert_eq!(read(" \n\t\r-42]"), Some((-42, 7)));
        assert_eq!(read("0]"), Some((0, 1)));
        assert_eq!(
            read("999999999999999999"),
            Some((999_999_999_999_999_999, 18))
        );
        assert_eq!(
            read("-999999999999999999 "),
            Some((-999_999_999_999_999_999, 19))
        );
        for refused in [
            "",
            "-",
            "-0",
            "-0,",
            "00",
            "01",
            "-01",
            "1.5",
            "0.5",
            "1e3",
            "1E3",
            "0e1",
            "-0.0",
            "1000000000000000000",
            "-1000000000000000000",
            "+1",
            "x",
            "- 1",
            "\u{b}1",
        ] {
            assert_eq!(read(refused), None, "{refused:?}");
        }
    }

    /// The word-at-a-time scan against a byte loop, at every position of
    /// the special byte and with every byte value around it.
    #[test]
    fn plain_len_matches_a_byte_loop() {
        fn reference(s: &[u8]) -> Option<usize> {
            for (k, &c) in s.iter().enumerate() {
                match c {
                    b'"' => return Some(k),
                    b'\\' | 0..=0x1f => return None,
                    _ => {}
                }
            }
            None
        }
        for len in 0..20 {
            for at in 0..=len {
                for b in 0..=255u8 {
                    for filler in [b'a', 0x20, 0x21, 0x7f, 0x80, 0xff, b'"' + 1, b'\\' - 1] {
                        let mut s = vec![filler; len];
                        if at < len {
                            s[at] = b;
                        }
                        s.push(b'"');
                        s.extend_from_slice(b"\\x\"");
                        assert_eq!(plain_len(&s), reference(&s), "{s:?}");
                    }
                }
            }
        }
    }
}
