//! JSON records, read from a complete slice (a JSON Lines line, or a JSON
//! body) without building a document tree: numbers go straight into the
//! batch.
//!
//! A record is one of
//! - `[1.5, 2, ...]`: a bare list of numbers;
//! - `{"features": [...]}`;
//! - `{"data": {"features": {"values": [...]}}}`, or with `"keys"` and
//!   `"shape"` beside `"values"` for a sparse record (densified);
//!   `"features"` may also hold a tensor object directly, and `"data"`'s
//!   `"features"` a bare list.
//!
//! Other members (`"configuration"`, `"label"`, ...) are skipped. Elements
//! are JSON numbers, Python's bare `NaN` / `Infinity` / `-Infinity`, or
//! strings holding a number as a CSV field would (`"NaN"`, `"1.5"`).

use super::batch::Rows;
use super::csv::value_error;
use super::error::{Location, RecordError};
use super::value::Elem;
use crate::codec::v2::number;

/// Deepest nesting skipped inside members this side does not read.
pub(super) const MAX_DEPTH: u32 = 64;

/// A position in a complete JSON text.
#[derive(Debug)]
pub(super) struct Cursor<'a> {
    pub(super) s: &'a [u8],
    pub(super) i: usize,
    pub(super) at: Location,
}

/// Member names this side reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Key {
    Features,
    Data,
    Values,
    Keys,
    Shape,
    Instances,
    Other,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(s: &'a [u8], at: Location) -> Self {
        Cursor { s, i: 0, at }
    }

    pub(super) fn err(&self, what: &'static str) -> RecordError {
        RecordError::Json {
            at: self.at,
            offset: self.i,
            what,
        }
    }

    pub(super) fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    /// The next non-blank byte.
    pub(super) fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    pub(super) fn eat(&mut self, c: u8, what: &'static str) -> Result<(), RecordError> {
        if self.peek() != Some(c) {
            return Err(self.err(what));
        }
        self.i += 1;
        Ok(())
    }

    /// After a member or element: `true` at `close` (consumed), `false`
    /// after a comma.
    pub(super) fn next_or_close(&mut self, close: u8) -> Result<bool, RecordError> {
        match self.peek() {
            Some(b',') => {
                self.i += 1;
                Ok(false)
            }
            Some(c) if c == close => {
                self.i += 1;
                Ok(true)
            }
            _ => Err(self.err(if close == b']' {
                "expected ',' or ']'"
            } else {
                "expected ',' or '}'"
            })),
        }
    }

    /// The string at the cursor: its content and whether it holds escapes.
    fn string(&mut self) -> Result<(&'a [u8], bool), RecordError> {
        if self.peek() != Some(b'"') {
            return Err(self.err("expected a string"));
        }
        let from = self.i + 1;
        let mut j = from;
        let mut escaped = false;
        loop {
            let Some(k) = memchr::memchr2(b'"', b'\\', &self.s[j..]) else {
                return Err(self.err("unterminated string"));
            };
            j += k;
            if self.s[j] == b'"' {
                self.i = j + 1;
                return Ok((&self.s[from..j], escaped));
            }
            escaped = true;
            j += 2;
            if j > self.s.len() {
                return Err(self.err("unterminated string"));
            }
        }
    }

    /// A member name and its colon.
    pub(super) fn key(&mut self) -> Result<Key, RecordError> {
        let (name, escaped) = self.string()?;
        let mut unescaped = Vec::new();
        let name = if escaped {
            crate::codec::v2::strings::unescape(name, &mut unescaped)
                .map_err(|what| self.err(what))?;
            &unescaped[..]
        } else {
            name
        };
        self.eat(b':', "expected ':'")?;
        Ok(match name {
            b"features" => Key::Features,
            b"data" => Key::Data,
            b"values" => Key::Values,
            b"keys" => Key::Keys,
            b"shape" => Key::Shape,
            b"instances" => Key::Instances,
            _ => Key::Other,
        })
    }

    /// Opens an object: `Ok(true)` if it is empty (and closed).
    pub(super) fn open_object(&mut self) -> Result<bool, RecordError> {
        self.eat(b'{', "expected an object")?;
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(true);
        }
        Ok(false)
    }

    /// Skips any JSON value, checking its syntax.
    pub(super) fn skip_value(&mut self, depth: u32) -> Result<(), RecordError> {
        if depth > MAX_DEPTH {
            return Err(RecordError::TooDeep {
                at: self.at,
                max: MAX_DEPTH,
            });
        }
        match self.peek() {
            Some(b'"') => self.string().map(|_| ()),
            Some(b'{') => {
                if self.open_object()? {
                    return Ok(());
                }
                loop {
                    self.key()?;
                    self.skip_value(depth + 1)?;
                    if self.next_or_close(b'}')? {
                        return Ok(());
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    if self.next_or_close(b']')? {
                        return Ok(());
                    }
                }
            }
            Some(_) => self.scalar_token().map(|_| ()),
            None => Err(self.err("unexpected end of input")),
        }
    }

    /// A number or literal (`true`, `NaN`, ...): its text.
    fn scalar_token(&mut self) -> Result<&'a [u8], RecordError> {
        let token = token(&self.s[self.i..]);
        let valid = matches!(
            token,
            b"true" | b"false" | b"null" | b"NaN" | b"Infinity" | b"-Infinity"
        ) || matches!(number::parse_f64(token, true), Ok(Some((_, n))) if n == token.len());
        if !valid {
            return Err(self.err("expected a value"));
        }
        self.i += token.len();
        Ok(token)
    }
}

/// The bytes up to the next JSON delimiter.
fn token(s: &[u8]) -> &[u8] {
    let end = s
        .iter()
        .position(|c| matches!(c, b',' | b']' | b'}' | b' ' | b'\t' | b'\r' | b'\n' | b'"'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Reads one record at the cursor into `rows`.
pub(super) fn record<T: Elem>(c: &mut Cursor<'_>, rows: &mut Rows) -> Result<(), RecordError> {
    let start = rows.buf.len();
    match c.peek() {
        Some(b'[') => numbers::<T>(c, rows, start)?,
        Some(b'{') => record_object::<T>(c, rows, start)?,
        _ => return Err(c.err("expected a record: a list of numbers or an object")),
    }
    rows.end_row(c.at, start)
}

fn record_object<T: Elem>(
    c: &mut Cursor<'_>,
    rows: &mut Rows,
    start: usize,
) -> Result<(), RecordError> {
    let mut found = false;
    if !c.open_object()? {
        loop {
            match c.key()? {
                Key::Features | Key::Data if found => {
                    return Err(RecordError::Layout {
                        at: c.at,
                        what: "the record has more than one \"features\" or \"data\"",
                    });
                }
                Key::Features => {
                    found = true;
                    features::<T>(c, rows, start)?;
                }
                Key::Data => {
                    found = true;
                    data::<T>(c, rows, start)?;
                }
                _ => c.skip_value(1)?,
            }
            if c.next_or_close(b'}')? {
                break;
            }
        }
    }
    if !found {
        return Err(RecordError::Layout {
            at: c.at,
            what: "the record has no \"features\" or \"data\"",
        });
    }
    Ok(())
}

/// `"data": {"features": ...}`.
fn data<T: Elem>(c: &mut Cursor<'_>, rows: &mut Rows, start: usize) -> Result<(), RecordError> {
    let mut found = false;
    if !c.open_object()? {
        loop {
            match c.key()? {
                Key::Features if found => {
                    return Err(c.err("\"features\" appears twice"));
                }
                Key::Features => {
                    found = true;
                    features::<T>(c, rows, start)?;
                }
                _ => c.skip_value(1)?,
            }
            if c.next_or_close(b'}')? {
                break;
            }
        }
    }
    if !found {
        return Err(RecordError::Layout {
            at: c.at,
            what: "\"data\" has no \"features\"",
        });
    }
    Ok(())
}

fn features<T: Elem>(c: &mut Cursor<'_>, rows: &mut Rows, start: usize) -> Result<(), RecordError> {
    match c.peek() {
        Some(b'[') => numbers::<T>(c, rows, start),
        Some(b'{') => tensor::<T>(c, rows, start),
        _ => Err(RecordError::Layout {
            at: c.at,
            what: "\"features\" must be a list of numbers or {\"values\", \"keys\", \"shape\"}",
        }),
    }
}

/// `{"values": [...], "keys": [...], "shape": [...]}`.
fn tensor<T: Elem>(c: &mut Cursor<'_>, rows: &mut Rows, start: usize) -> Result<(), RecordError> {
    rows.keys.clear();
    rows.shape.clear();
    let mut seen = [false; 3];
    if !c.open_object()? {
        loop {
            let key = c.key()?;
            let slot = match key {
                Key::Values => Some(0),
                Key::Keys => Some(1),
                Key::Shape => Some(2),
                _ => None,
            };
            if let Some(k) = slot {
                if seen[k] {
                    return Err(c.err("a tensor member appears twice"));
                }
                seen[k] = true;
            }
            match key {
                Key::Values => numbers::<T>(c, rows, start)?,
                Key::Keys => {
                    let max = rows.max_features;
                    let too_many = RecordError::TooManyFeatures { at: c.at, max };
                    unsigned(c, &mut rows.keys, max, too_many)?;
                }
                Key::Shape => {
                    let too_many = RecordError::Layout {
                        at: c.at,
                        what: "a shape has at most 8 dimensions",
                    };
                    unsigned(c, &mut rows.shape, 8, too_many)?;
                }
                _ => c.skip_value(1)?,
            }
            if c.next_or_close(b'}')? {
                break;
            }
        }
    }
    rows.finish_tensor(c.at, start)
}

/// A list of numbers, appended to the record that started at `start`.
fn numbers<T: Elem>(c: &mut Cursor<'_>, rows: &mut Rows, start: usize) -> Result<(), RecordError> {
    c.eat(b'[', "expected a list of numbers")?;
    if c.peek() == Some(b']') {
        c.i += 1;
        return Ok(());
    }
    rows.reserve_row((c.s.len() - c.i) / 2);
    let max = rows.max_features;
    loop {
        let feature = rows.count(start);
        if feature == max {
            return Err(RecordError::TooManyFeatures { at: c.at, max });
        }
        c.ws();
        let rest = &c.s[c.i..];
        // The fast path refuses a number followed by a letter, digit or
        // dot, so what follows is for `next_or_close` to judge.
        let v = match T::fast(rest) {
            Some((v, n)) => {
                c.i += n;
                v
            }
            None => element::<T>(c, feature)?,
        };
        v.put(&mut rows.buf);
        if c.next_or_close(b']')? {
            return Ok(());
        }
    }
}

/// An element the fast path did not take.
#[cold]
fn element<T: Elem>(c: &mut Cursor<'_>, feature: usize) -> Result<T, RecordError> {
    let text = match c.s.get(c.i) {
        Some(b'"') => {
            let (text, _) = c.string()?;
            text
        }
        Some(b'[' | b'{') => {
            return Err(RecordError::Layout {
                at: c.at,
                what: "features must be numbers, not lists or objects",
            });
        }
        _ => {
            let text = token(&c.s[c.i..]);
            if text.is_empty() {
                return Err(c.err("expected a number"));
            }
            c.i += text.len();
            text
        }
    };
    T::slow(text).map_err(|fail| value_error::<T>(fail, c.at, feature, text))
}

/// A list of non-negative integers (sparse keys, a shape), at most `max`.
fn unsigned(
    c: &mut Cursor<'_>,
    out: &mut Vec<u64>,
    max: usize,
    too_many: RecordError,
) -> Result<(), RecordError> {
    c.eat(b'[', "expected a list of integers")?;
    if c.peek() == Some(b']') {
        c.i += 1;
        return Ok(());
    }
    loop {
        if out.len() == max {
            return Err(too_many);
        }
        c.ws();
        let v = match number::parse_int(&c.s[c.i..], true) {
            Ok(Some((v, n))) => {
                c.i += n;
                v.to_u64()
            }
            _ => None,
        };
        out.push(v.ok_or(RecordError::Layout {
            at: c.at,
            what: "sparse keys and shapes must be non-negative integers",
        })?);
        if c.next_or_close(b']')? {
            return Ok(());
        }
    }
}

/// Reads a JSON Lines line: one record and nothing else.
pub(super) fn line_record<T: Elem>(
    line: &[u8],
    at: Location,
    rows: &mut Rows,
) -> Result<(), RecordError> {
    let mut c = Cursor::new(line, at);
    record::<T>(&mut c, rows)?;
    if c.peek().is_some() {
        return Err(c.err("unexpected text after the record"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
