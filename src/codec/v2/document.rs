//! Incremental parser for a V2 JSON document (request or response), fed in
//! chunks of any size.
//!
//! The tensor list is parsed structurally; each tensor's `"data"` goes
//! through [`DataParser`] straight into binary, and every other value is
//! captured whole and parsed by `serde_json` (they are small: names, shapes,
//! parameters). No DOM is built for tensor data. A tensor's head (name,
//! datatype, shape) is announced through [`DocParser::take_heads`] as soon as
//! it is known, so rules can refuse a request before its data is read.

use bytes::{Buf, Bytes, BytesMut};
use serde_json::{Map, Value};

use super::json_data::{DataError, DataParser, Progress};
use super::model::{DocKind, DocLimits, Document, EntryData, EntryHead, Subject, TensorEntry};
use super::scan::ValueScan;
use super::strings::{self, StringScan};
use crate::tensor::{DataType, Shape};

/// A V2 document could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DocError {
    #[error("malformed JSON at byte {offset}: {what}")]
    Syntax { offset: u64, what: String },
    #[error("{subject}: {source}")]
    Data { subject: Subject, source: DataError },
    #[error("{subject}: missing \"{field}\"")]
    MissingField {
        subject: Subject,
        field: &'static str,
    },
    #[error("{subject}: \"{field}\" {problem}")]
    BadField {
        subject: Subject,
        field: &'static str,
        problem: String,
    },
    #[error("{subject}: unknown datatype \"{datatype}\"")]
    UnknownDatatype { subject: Subject, datatype: String },
    #[error("{subject}: shape {shape} has {rank} dimensions, over the limit of {max}")]
    TooManyDims {
        subject: Subject,
        shape: String,
        rank: usize,
        max: usize,
    },
    #[error("{subject}: shape {shape} has {count} elements, over the limit of {max}")]
    TooManyElements {
        subject: Subject,
        shape: Shape,
        count: String,
        max: u64,
    },
    #[error("{subject}: shape {shape} holds {expected} elements but \"data\" has {found}")]
    ElementCount {
        subject: Subject,
        shape: Shape,
        expected: u64,
        found: u64,
    },
    #[error(
        "{subject}: {datatype} data of shape {shape} is {expected} bytes, but \"binary_data_size\" is {declared}"
    )]
    BinarySize {
        subject: Subject,
        datatype: DataType,
        shape: Shape,
        expected: u64,
        declared: u64,
    },
    #[error(
        "{subject}: exactly one of \"data\", \"binary_data_size\" and \"shared_memory_region\" must be given"
    )]
    DataSource { subject: Subject },
    #[error("duplicate member \"{key}\"")]
    Duplicate { key: String },
    #[error("\"{key}\" must be {expected}")]
    MemberType { key: String, expected: &'static str },
    #[error("missing \"{key}\"")]
    MissingTensors { key: &'static str },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Top,
    Entry,
}

#[derive(Debug)]
enum State {
    Start,
    Key {
        level: Level,
        first: bool,
        scan: StringScan,
    },
    Colon(Level),
    Value(Level),
    Next(Level),
    ListOpen,
    ListItem {
        first: bool,
    },
    ListNext,
    Raw {
        level: Level,
        scan: ValueScan,
    },
    Data(Box<DataParser>),
    End,
}

/// Builds one tensor entry as its members arrive.
#[derive(Debug, Default)]
struct EntryBuilder {
    index: usize,
    name: Option<String>,
    datatype: Option<DataType>,
    shape: Option<Shape>,
    parameters: Option<Map<String, Value>>,
    extra: Vec<(String, Value)>,
    data: Option<Bytes>,
    data_count: u64,
    /// Raw `data` text captured before the datatype was known.
    deferred: Option<Bytes>,
    head_sent: bool,
}

/// The incremental V2 document parser.
#[derive(Debug)]
pub struct DocParser {
    kind: DocKind,
    limits: DocLimits,
    state: State,
    key: String,
    members: Vec<(String, Value)>,
    tensors_at: Option<usize>,
    tensors: Vec<TensorEntry>,
    entry: Option<EntryBuilder>,
    heads: Vec<EntryHead>,
    pending: BytesMut,
    /// Absolute offset of `pending[0]` (or of the next input) in the document.
    offset: u64,
}

impl DocParser {
    pub fn new(kind: DocKind, limits: DocLimits) -> Self {
        DocParser {
            kind,
            limits,
            state: State::Start,
            key: String::new(),
            members: Vec::new(),
            tensors_at: None,
            tensors: Vec::new(),
            entry: None,
            heads: Vec::new(),
            pending: BytesMut::new(),
            offset: 0,
        }
    }

    /// Parses a complete document in one call.
    pub fn parse(kind: DocKind, limits: DocLimits, input: &[u8]) -> Result<Document, DocError> {
        let mut p = DocParser::new(kind, limits);
        p.feed(input)?;
        p.finish()
    }

    /// Feeds the next chunk.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), DocError> {
        if self.pending.is_empty() {
            let used = self.run(chunk, false)?;
            self.offset += used as u64;
            self.pending.extend_from_slice(&chunk[used..]);
        } else {
            self.pending.extend_from_slice(chunk);
            let pending = std::mem::take(&mut self.pending);
            let result = self.run(&pending, false);
            self.pending = pending;
            let used = result?;
            self.offset += used as u64;
            self.pending.advance(used);
        }
        Ok(())
    }

    /// Tensor heads that became known since the last call.
    pub fn take_heads(&mut self) -> Vec<EntryHead> {
        std::mem::take(&mut self.heads)
    }

    /// Ends the input and returns the document.
    pub fn finish(mut self) -> Result<Document, DocError> {
        let pending = std::mem::take(&mut self.pending);
        self.run(&pending, true)?;
        if !matches!(self.state, State::End) {
            return Err(self.syntax(pending.len(), "unexpected end of input"));
        }
        let tensors_at = self.tensors_at.ok_or(DocError::MissingTensors {
            key: self.kind.tensors_key(),
        })?;
        Ok(Document {
            kind: self.kind,
            members: self.members,
            tensors_at,
            tensors: self.tensors,
        })
    }

    fn syntax(&self, at: usize, what: impl Into<String>) -> DocError {
        DocError::Syntax {
            offset: self.offset + at as u64,
            what: what.into(),
        }
    }

    fn subject(&self) -> Subject {
        let entry = self.entry.as_ref();
        Subject {
            kind: self.kind,
            name: entry.and_then(|e| e.name.clone()),
            index: entry.map_or(self.tensors.len(), |e| e.index),
        }
    }

    /// Runs the state machine over `input`; returns how many bytes were
    /// consumed (the rest starts an incomplete token).
    fn run(&mut self, input: &[u8], eof: bool) -> Result<usize, DocError> {
        let mut i = 0;
        loop {
            // Whitespace between tokens.
            if !matches!(self.state, State::Data(_)) {
                while i < input.len() && matches!(input[i], b' ' | b'\n' | b'\r' | b'\t') {
                    i += 1;
                }
            }
            let c = input.get(i).copied();
            if c.is_none() && !matches!(self.state, State::Data(_)) {
                // Only Data and the scanners care about end of input here.
                if matches!(self.state, State::End) || !eof {
                    return Ok(i);
                }
                if !matches!(self.state, State::Raw { .. } | State::Key { .. }) {
                    return Err(self.syntax(i, "unexpected end of input"));
                }
            }
            let state = std::mem::replace(&mut self.state, State::End);
            self.state = match state {
                State::Start => match c {
                    Some(b'{') => {
                        i += 1;
                        State::Key {
                            level: Level::Top,
                            first: true,
                            scan: StringScan::default(),
                        }
                    }
                    _ => return Err(self.syntax(i, "expected '{' at the start of the document")),
                },
                State::Key {
                    level,
                    first,
                    mut scan,
                } => match c {
                    Some(b'}') if first => {
                        i += 1;
                        self.close(level, i)?
                    }
                    Some(b'"') => {
                        match scan.scan(&input[i..], eof).map_err(|e| self.syntax(i, e))? {
                            None => {
                                self.state = State::Key { level, first, scan };
                                return Ok(i);
                            }
                            Some(token) => {
                                let content = token.content(&input[i..]);
                                self.key = decode_key(content, token.escaped)
                                    .map_err(|e| self.syntax(i, e))?;
                                i += token.len;
                                State::Colon(level)
                            }
                        }
                    }
                    Some(_) => return Err(self.syntax(i, "expected a member name")),
                    None => return Err(self.syntax(i, "unexpected end of input")),
                },
                State::Colon(level) => match c {
                    Some(b':') => {
                        i += 1;
                        State::Value(level)
                    }
                    _ => return Err(self.syntax(i, "expected ':'")),
                },
                State::Value(level) => self.start_value(level, c, i)?,
                State::Next(level) => match c {
                    Some(b',') => {
                        i += 1;
                        State::Key {
                            level,
                            first: false,
                            scan: StringScan::default(),
                        }
                    }
                    Some(b'}') => {
                        i += 1;
                        self.close(level, i)?
                    }
                    _ => return Err(self.syntax(i, "expected ',' or '}'")),
                },
                State::ListOpen => match c {
                    Some(b'[') => {
                        i += 1;
                        State::ListItem { first: true }
                    }
                    _ => {
                        return Err(DocError::MemberType {
                            key: self.kind.tensors_key().to_owned(),
                            expected: "an array of tensor objects",
                        });
                    }
                },
                State::ListItem { first } => match c {
                    Some(b']') if first => {
                        i += 1;
                        State::Next(Level::Top)
                    }
                    Some(b'{') => {
                        i += 1;
                        self.entry = Some(EntryBuilder {
                            index: self.tensors.len(),
                            ..EntryBuilder::default()
                        });
                        State::Key {
                            level: Level::Entry,
                            first: true,
                            scan: StringScan::default(),
                        }
                    }
                    _ => {
                        return Err(DocError::MemberType {
                            key: self.kind.tensors_key().to_owned(),
                            expected: "an array of tensor objects",
                        });
                    }
                },
                State::ListNext => match c {
                    Some(b',') => {
                        i += 1;
                        State::ListItem { first: false }
                    }
                    Some(b']') => {
                        i += 1;
                        State::Next(Level::Top)
                    }
                    _ => return Err(self.syntax(i, "expected ',' or ']'")),
                },
                State::Raw { level, mut scan } => {
                    match scan
                        .scan(&input[i..], eof, self.limits.max_depth)
                        .map_err(|e| self.syntax(i, e))?
                    {
                        None => {
                            self.state = State::Raw { level, scan };
                            return Ok(i);
                        }
                        Some(len) => {
                            let raw = &input[i..i + len];
                            let value: Value = serde_json::from_slice(raw)
                                .map_err(|e| self.syntax(i, e.to_string()))?;
                            i += len;
                            self.raw_member(level, value, raw)?;
                            State::Next(level)
                        }
                    }
                }
                State::Data(mut parser) => {
                    let progress =
                        parser
                            .parse(&input[i..], eof)
                            .map_err(|source| DocError::Data {
                                subject: self.subject(),
                                source,
                            })?;
                    match progress {
                        Progress::NeedMore(used) => {
                            self.state = State::Data(parser);
                            return Ok(i + used);
                        }
                        Progress::Done(used) => {
                            i += used;
                            let (data, count) = parser.into_data();
                            if let Some(entry) = self.entry.as_mut() {
                                entry.data = Some(Bytes::from(data));
                                entry.data_count = count;
                            }
                            State::Next(Level::Entry)
                        }
                    }
                }
                State::End => match c {
                    None => {
                        self.state = State::End;
                        return Ok(i);
                    }
                    Some(_) => return Err(self.syntax(i, "unexpected data after the document")),
                },
            };
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
        if level == Level::Entry && self.key == "data" {
            let Some(entry) = self.entry.as_mut() else {
                return Err(self.syntax(i, "data outside a tensor"));
            };
            if entry.data.is_some() || entry.deferred.is_some() {
                return Err(DocError::Duplicate {
                    key: "data".to_owned(),
                });
            }
            if let Some(datatype) = entry.datatype {
                let expected = entry.shape.as_ref().and_then(|s| s.element_count().ok());
                return Ok(State::Data(Box::new(DataParser::new(
                    datatype,
                    expected,
                    self.limits.max_elements,
                    self.limits.max_depth,
                ))));
            }
        }
        if c.is_none() {
            return Err(self.syntax(i, "unexpected end of input"));
        }
        Ok(State::Raw {
            level,
            scan: ValueScan::default(),
        })
    }

    fn raw_member(&mut self, level: Level, value: Value, raw: &[u8]) -> Result<(), DocError> {
        let key = std::mem::take(&mut self.key);
        if level == Level::Top {
            if self.members.iter().any(|(k, _)| *k == key) {
                return Err(DocError::Duplicate { key });
            }
            self.members.push((key, value));
            return Ok(());
        }
        let subject = self.subject();
        let limits = self.limits;
        let Some(entry) = self.entry.as_mut() else {
            return Ok(());
        };
        let bad = |field: &'static str, problem: &str| DocError::BadField {
            subject: subject.clone(),
            field,
            problem: problem.to_owned(),
        };
        let dup = |set: bool, key: &str| {
            if set {
                Err(DocError::Duplicate {
                    key: key.to_owned(),
                })
            } else {
                Ok(())
            }
        };
        match key.as_str() {
            "name" => {
                dup(entry.name.is_some(), &key)?;
                let Value::String(name) = value else {
                    return Err(bad("name", "must be a string"));
                };
                entry.name = Some(name);
            }
            "datatype" => {
                dup(entry.datatype.is_some(), &key)?;
                let Value::String(name) = value else {
                    return Err(bad("datatype", "must be a string"));
                };
                let dt = DataType::from_v2_name(&name).ok_or(DocError::UnknownDatatype {
                    subject: subject.clone(),
                    datatype: name,
                })?;
                entry.datatype = Some(dt);
            }
            "shape" => {
                dup(entry.shape.is_some(), &key)?;
                let shape = parse_shape(&value, &subject, &limits)?;
                entry.shape = Some(shape);
            }
            "parameters" => {
                dup(entry.parameters.is_some(), &key)?;
                let Value::Object(map) = value else {
                    return Err(bad("parameters", "must be an object"));
                };
                entry.parameters = Some(map);
            }
            "data" => {
                // Arrived before "datatype": converted when the tensor ends.
                entry.deferred = Some(Bytes::copy_from_slice(raw));
            }
            _ => {
                if entry.extra.iter().any(|(k, _)| *k == key) {
                    return Err(DocError::Duplicate { key });
                }
                entry.extra.push((key, value));
            }
        }
        self.announce_head();
        Ok(())
    }

    /// Records the current tensor's head once name, datatype and shape are
    /// all known.
    fn announce_head(&mut self) {
        let Some(entry) = self.entry.as_mut() else {
            return;
        };
        if entry.head_sent {
            return;
        }
        if let (Some(name), Some(datatype), Some(shape)) =
            (&entry.name, entry.datatype, &entry.shape)
        {
            entry.head_sent = true;
            self.heads.push(EntryHead {
                index: entry.index,
                name: name.clone(),
                datatype,
                shape: shape.clone(),
            });
        }
    }

    /// Handles the `}` closing an object at `level`.
    fn close(&mut self, level: Level, _at: usize) -> Result<State, DocError> {
        match level {
            Level::Top => Ok(State::End),
            Level::Entry => {
                let entry = self.finish_entry()?;
                self.tensors.push(entry);
                Ok(State::ListNext)
            }
        }
    }

    fn finish_entry(&mut self) -> Result<TensorEntry, DocError> {
        let subject = self.subject();
        let limits = self.limits;
        let mut b = self.entry.take().unwrap_or_default();
        let missing = |field| DocError::MissingField {
            subject: subject.clone(),
            field,
        };
        let name = b.name.take().ok_or_else(|| missing("name"))?;
        let subject = Subject {
            name: Some(name.clone()),
            ..subject
        };
        let datatype = b.datatype.ok_or_else(|| missing("datatype"))?;
        let shape = b.shape.take().ok_or_else(|| missing("shape"))?;
        if !b.head_sent {
            self.heads.push(EntryHead {
                index: b.index,
                name: name.clone(),
                datatype,
                shape: shape.clone(),
            });
        }
        let expected = shape
            .element_count()
            .map_err(|_| DocError::TooManyElements {
                subject: subject.clone(),
                shape: shape.clone(),
                count: "more than 2^64".to_owned(),
                max: limits.max_elements,
            })?;
        if let Some(raw) = b.deferred.take() {
            let mut parser = DataParser::new(
                datatype,
                Some(expected),
                limits.max_elements,
                limits.max_depth,
            );
            parser.parse(&raw, true).map_err(|source| DocError::Data {
                subject: subject.clone(),
                source,
            })?;
            let (data, count) = parser.into_data();
            b.data = Some(Bytes::from(data));
            b.data_count = count;
        }
        let parameters = b.parameters.take().unwrap_or_default();
        let binary_size = match parameters.get("binary_data_size") {
            None => None,
            Some(v) => Some(v.as_u64().ok_or_else(|| DocError::BadField {
                subject: subject.clone(),
                field: "binary_data_size",
                problem: "must be a non-negative integer".to_owned(),
            })?),
        };
        let shm = parameters.contains_key("shared_memory_region");
        let sources =
            usize::from(b.data.is_some()) + usize::from(binary_size.is_some()) + usize::from(shm);
        if sources != 1 {
            return Err(DocError::DataSource { subject });
        }
        let data = if let Some(data) = b.data.take() {
            if b.data_count != expected {
                return Err(DocError::ElementCount {
                    subject,
                    shape,
                    expected,
                    found: b.data_count,
                });
            }
            EntryData::Inline {
                data,
                elements: b.data_count,
            }
        } else if let Some(size) = binary_size {
            if let Some(elem) = datatype.fixed_size() {
                let want = expected.saturating_mul(elem as u64);
                if want != size {
                    return Err(DocError::BinarySize {
                        subject,
                        datatype,
                        shape,
                        expected: want,
                        declared: size,
                    });
                }
            }
            EntryData::Binary { size }
        } else {
            EntryData::SharedMemory
        };
        Ok(TensorEntry {
            name,
            datatype,
            shape,
            parameters,
            extra: b.extra,
            data,
        })
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

fn parse_shape(value: &Value, subject: &Subject, limits: &DocLimits) -> Result<Shape, DocError> {
    let bad = || DocError::BadField {
        subject: subject.clone(),
        field: "shape",
        problem: "must be an array of non-negative integers".to_owned(),
    };
    let dims = value.as_array().ok_or_else(bad)?;
    if dims.len() > limits.max_dims {
        return Err(DocError::TooManyDims {
            subject: subject.clone(),
            shape: value.to_string(),
            rank: dims.len(),
            max: limits.max_dims,
        });
    }
    let dims = dims
        .iter()
        .map(|d| d.as_u64().filter(|&d| d <= i64::MAX as u64).ok_or_else(bad))
        .collect::<Result<Vec<u64>, _>>()?;
    let shape = Shape::new(dims);
    match shape.element_count() {
        Ok(n) if n <= limits.max_elements => Ok(shape),
        Ok(n) => Err(DocError::TooManyElements {
            subject: subject.clone(),
            count: n.to_string(),
            shape,
            max: limits.max_elements,
        }),
        Err(_) => Err(DocError::TooManyElements {
            subject: subject.clone(),
            count: "more than 2^64".to_owned(),
            shape,
            max: limits.max_elements,
        }),
    }
}

#[cfg(test)]
mod tests;
