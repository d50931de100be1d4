//! A position in a complete JSON text: the lexing the record parser needs,
//! and skipping (with syntax checks) of the members it does not read.

use super::super::error::{Location, RecordError};
use crate::codec::v2::number;

/// Deepest nesting skipped inside members this side does not read.
pub(in crate::codec::sagemaker) const MAX_DEPTH: u32 = 64;

/// A position in a complete JSON text.
#[derive(Debug)]
pub(in crate::codec::sagemaker) struct Cursor<'a> {
    pub(in crate::codec::sagemaker) s: &'a [u8],
    pub(in crate::codec::sagemaker) i: usize,
    pub(in crate::codec::sagemaker) at: Location,
}

/// Member names this side reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::codec::sagemaker) enum Key {
    Features,
    Data,
    Values,
    Keys,
    Shape,
    Instances,
    Other,
}

impl<'a> Cursor<'a> {
    pub(in crate::codec::sagemaker) fn new(s: &'a [u8], at: Location) -> Self {
        Cursor { s, i: 0, at }
    }

    pub(in crate::codec::sagemaker) fn err(&self, what: &'static str) -> RecordError {
        RecordError::Json {
            at: self.at,
            offset: self.i,
            what,
        }
    }

    pub(in crate::codec::sagemaker) fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    /// The next non-blank byte.
    pub(in crate::codec::sagemaker) fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    pub(in crate::codec::sagemaker) fn eat(
        &mut self,
        c: u8,
        what: &'static str,
    ) -> Result<(), RecordError> {
        if self.peek() != Some(c) {
            return Err(self.err(what));
        }
        self.i += 1;
        Ok(())
    }

    /// After a member or element: `true` at `close` (consumed), `false`
    /// after a comma.
    pub(in crate::codec::sagemaker) fn next_or_close(
        &mut self,
        close: u8,
    ) -> Result<bool, RecordError> {
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
    pub(in crate::codec::sagemaker) fn string(&mut self) -> Result<(&'a [u8], bool), RecordError> {
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
    pub(in crate::codec::sagemaker) fn key(&mut self) -> Result<Key, RecordError> {
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
    pub(in crate::codec::sagemaker) fn open_object(&mut self) -> Result<bool, RecordError> {
        self.eat(b'{', "expected an object")?;
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(true);
        }
        Ok(false)
    }

    /// Skips any JSON value, checking its syntax.
    pub(in crate::codec::sagemaker) fn skip_value(
        &mut self,
        depth: u32,
    ) -> Result<(), RecordError> {
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
pub(in crate::codec::sagemaker) fn token(s: &[u8]) -> &[u8] {
    let end = s
        .iter()
        .position(|c| matches!(c, b',' | b']' | b'}' | b' ' | b'\t' | b'\r' | b'\n' | b'"'))
        .unwrap_or(s.len());
    &s[..end]
}
