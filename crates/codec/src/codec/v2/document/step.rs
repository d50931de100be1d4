//! One step of the document state machine per call: each state's handler
//! reads the next token and says which state follows.

use bytes::Bytes;
use serde_json::Value;

use super::checked::check_json;
use super::{DocError, DocParser, EntryBuilder, Level, Raw, State};
use crate::codec::v2::json_data::{DataParser, Progress};
use crate::codec::v2::scan::{ScanError, ValueScan};
use crate::codec::v2::strings::{self, StringScan};

/// What the state machine does after a step.
pub(super) enum Flow {
    /// Go on with this state.
    Go(State),
    /// Stop in this state until more input arrives.
    Wait(State),
}

impl State {
    fn key(level: Level, first: bool) -> State {
        State::Key {
            level,
            first,
            scan: StringScan::default(),
        }
    }
}

impl DocParser {
    /// Runs `state` on the input at `*i`, moving `*i` past what it used.
    pub(super) fn step(
        &mut self,
        state: State,
        input: &[u8],
        i: &mut usize,
        eof: bool,
    ) -> Result<Flow, DocError> {
        let c = input.get(*i).copied();
        let next = match state {
            State::Start => {
                self.expect(c, b'{', *i, "expected '{' at the start of the document")?;
                *i += 1;
                State::key(Level::Top, true)
            }
            State::Key { level, first, scan } => {
                return self.on_key(level, first, scan, input, i, eof);
            }
            State::Colon(level) => {
                self.expect(c, b':', *i, "expected ':'")?;
                *i += 1;
                State::Value(level)
            }
            State::Value(level) => self.start_value(level, c, *i)?,
            State::Next(level) => self.on_next(level, c, i)?,
            State::ListOpen => {
                if c != Some(b'[') {
                    return Err(self.not_a_list());
                }
                *i += 1;
                State::ListItem { first: true }
            }
            State::ListItem { first } => self.on_list_item(first, c, i)?,
            State::ListNext => self.on_list_next(c, i)?,
            State::Raw { level, raw, scan } => return self.on_raw(level, raw, scan, input, i, eof),
            State::Data(parser) => return self.on_data(parser, input, i, eof),
            State::End => match c {
                None => return Ok(Flow::Wait(State::End)),
                Some(_) => return Err(self.syntax(*i, "unexpected data after the document")),
            },
            State::Failed(e) => return Err(*e),
        };
        Ok(Flow::Go(next))
    }

    fn expect(&self, c: Option<u8>, want: u8, at: usize, what: &str) -> Result<(), DocError> {
        if c == Some(want) {
            Ok(())
        } else {
            Err(self.syntax(at, what))
        }
    }

    fn not_a_list(&self) -> DocError {
        DocError::MemberType {
            key: self.kind.tensors_key().to_owned(),
            expected: "an array of tensor objects",
        }
    }

    /// A member name, or the `}` of an empty object.
    fn on_key(
        &mut self,
        level: Level,
        first: bool,
        mut scan: StringScan,
        input: &[u8],
        i: &mut usize,
        eof: bool,
    ) -> Result<Flow, DocError> {
        match input.get(*i) {
            Some(b'}') if first => {
                *i += 1;
                Ok(Flow::Go(self.close(level)?))
            }
            Some(b'"') => {
                let Some(token) = self.scan_key(&mut scan, level, &input[*i..], eof, *i)? else {
                    return Ok(Flow::Wait(State::Key { level, first, scan }));
                };
                let content = token.content(&input[*i..]);
                self.key = decode_key(content, token.escaped).map_err(|e| self.syntax(*i, e))?;
                *i += token.len;
                Ok(Flow::Go(State::Colon(level)))
            }
            Some(_) => Err(self.syntax(*i, "expected a member name")),
            None => Err(self.syntax(*i, "unexpected end of input")),
        }
    }

    fn on_next(&mut self, level: Level, c: Option<u8>, i: &mut usize) -> Result<State, DocError> {
        match c {
            Some(b',') => {
                *i += 1;
                Ok(State::key(level, false))
            }
            Some(b'}') => {
                *i += 1;
                self.close(level)
            }
            _ => Err(self.syntax(*i, "expected ',' or '}'")),
        }
    }

    fn on_list_item(
        &mut self,
        first: bool,
        c: Option<u8>,
        i: &mut usize,
    ) -> Result<State, DocError> {
        match c {
            Some(b']') if first => {
                *i += 1;
                Ok(State::Next(Level::Top))
            }
            Some(b'{') => {
                *i += 1;
                self.entry = Some(EntryBuilder::new(self.tensors.len()));
                Ok(State::key(Level::Entry, true))
            }
            _ => Err(self.not_a_list()),
        }
    }

    fn on_list_next(&mut self, c: Option<u8>, i: &mut usize) -> Result<State, DocError> {
        match c {
            Some(b',') => {
                *i += 1;
                Ok(State::ListItem { first: false })
            }
            Some(b']') => {
                *i += 1;
                Ok(State::Next(Level::Top))
            }
            _ => Err(self.syntax(*i, "expected ',' or ']'")),
        }
    }

    /// Decides how to read the value of the member named `self.key`.
    fn start_value(&mut self, level: Level, c: Option<u8>, i: usize) -> Result<State, DocError> {
        if level == Level::Top && self.key == self.kind.tensors_key() {
            if self.tensors_at.is_some() {
                return Err(DocError::Duplicate {
                    key: self.key.clone(),
                });
            }
            self.tensors_at = Some(self.members.len());
            return Ok(State::ListOpen);
        }
        let mut raw = Raw::Member;
        if level == Level::Entry && self.key == "shape" {
            raw = Raw::Shape;
        }
        if level == Level::Entry && self.key == "data" {
            let Some(entry) = self.entry.as_mut() else {
                return Err(self.syntax(i, "data outside a tensor"));
            };
            if entry.has_data() {
                return Err(DocError::Duplicate {
                    key: "data".to_owned(),
                });
            }
            let Some(datatype) = entry.datatype else {
                raw = Raw::Data;
                return self.start_raw(level, raw, c, i);
            };
            let expected = entry.shape.as_ref().and_then(|s| s.element_count().ok());
            self.data_values += 1;
            return Ok(State::Data(Box::new(DataParser::new(
                datatype,
                expected,
                self.limits.max_elements,
                self.limits.max_depth,
            ))));
        }
        self.start_raw(level, raw, c, i)
    }

    fn start_raw(
        &self,
        level: Level,
        raw: Raw,
        c: Option<u8>,
        i: usize,
    ) -> Result<State, DocError> {
        if c.is_none() {
            return Err(self.syntax(i, "unexpected end of input"));
        }
        Ok(State::Raw {
            level,
            raw,
            scan: ValueScan::default(),
        })
    }

    /// A value captured whole: scanned within its limits, then parsed (or,
    /// for early `data`, kept as text).
    fn on_raw(
        &mut self,
        level: Level,
        raw: Raw,
        mut scan: ValueScan,
        input: &[u8],
        i: &mut usize,
        eof: bool,
    ) -> Result<Flow, DocError> {
        let s = &input[*i..];
        let len = match scan.scan(s, eof, &self.scan_limits(raw)) {
            Ok(Some(len)) => len,
            Ok(None) => return Ok(Flow::Wait(State::Raw { level, raw, scan })),
            Err(ScanError::Syntax(what)) => return Err(self.syntax(*i, what)),
            Err(e) => return Err(self.scan_limit_error(e, level, raw)),
        };
        let text = &s[..len];
        if raw == Raw::Data {
            // Checked as JSON without building it; converted when the
            // tensor ends.
            check_json(text).map_err(|e| self.syntax(*i, e.to_string()))?;
            if let Some(entry) = self.entry.as_mut() {
                entry.deferred = Some(Bytes::copy_from_slice(text));
            }
        } else {
            self.budget.charge(len, scan.values());
            let value: Value = match super::quick::quick_value(text) {
                Some(value) => value,
                None => serde_json::from_slice(text).map_err(|e| self.syntax(*i, e.to_string()))?,
            };
            self.member(level, value)?;
        }
        *i += len;
        Ok(Flow::Go(State::Next(level)))
    }

    /// Stores a parsed member other than tensor data.
    fn member(&mut self, level: Level, value: Value) -> Result<(), DocError> {
        let key = std::mem::take(&mut self.key);
        if level == Level::Top {
            if self.members.iter().any(|(k, _)| *k == key) {
                return Err(DocError::Duplicate { key });
            }
            self.members.push((key, value));
            return Ok(());
        }
        let subject = self.subject();
        let Some(entry) = self.entry.as_mut() else {
            return Ok(());
        };
        entry.set(key, value, &subject, &self.limits)?;
        self.heads.extend(entry.new_head());
        Ok(())
    }

    fn on_data(
        &mut self,
        mut parser: Box<DataParser>,
        input: &[u8],
        i: &mut usize,
        eof: bool,
    ) -> Result<Flow, DocError> {
        let progress = parser
            .parse(&input[*i..], eof)
            .map_err(|source| DocError::Data {
                subject: self.subject(),
                source,
            })?;
        match progress {
            Progress::NeedMore(used) => {
                *i += used;
                Ok(Flow::Wait(State::Data(parser)))
            }
            Progress::Done(used) => {
                *i += used;
                Ok(Flow::Go(self.data_done(*parser)))
            }
        }
    }

    /// A tensor's data is complete: the entry keeps it.
    pub(super) fn data_done(&mut self, parser: DataParser) -> State {
        let (data, count) = parser.into_data();
        if let Some(entry) = self.entry.as_mut() {
            entry.data = Some((Bytes::from(data), count));
        }
        State::Next(Level::Entry)
    }

    /// Handles the `}` closing an object at `level`.
    fn close(&mut self, level: Level) -> Result<State, DocError> {
        match level {
            Level::Top => Ok(State::End),
            Level::Entry => {
                let subject = self.subject();
                let mut entry = self.entry.take().unwrap_or_default();
                entry.finish_into(subject, &self.limits, &mut self.heads, &mut self.tensors)?;
                Ok(State::ListNext)
            }
        }
    }
}

fn decode_key(content: &[u8], escaped: bool) -> Result<String, &'static str> {
    let mut bytes = Vec::new();
    if escaped {
        strings::unescape(content, &mut bytes)?;
    } else {
        strings::check_plain(content)?;
        bytes.extend_from_slice(content);
    }
    String::from_utf8(bytes).map_err(|_| "member name is not valid UTF-8")
}
