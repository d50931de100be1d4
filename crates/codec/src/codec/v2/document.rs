//! Incremental parser for a V2 JSON document (request or response), fed in
//! chunks of any size.
//!
//! The tensor list is parsed structurally; each tensor's `"data"` goes
//! through [`DataParser`] straight into binary. Every other value (names,
//! shapes, parameters, unknown members) is scanned to its end and parsed by
//! `serde_json`, within one budget per document for the JSON outside tensor
//! data ([`DocLimits::max_member_bytes`], [`DocLimits::max_member_values`]):
//! the budget is checked while a value is scanned, so no more than it is
//! ever buffered, and a shape is cut off soon after [`DocLimits::max_dims`].
//! A `"data"` that comes before its `"datatype"` is kept as text (bounded by
//! [`DocLimits::max_elements`]) and converted when the tensor ends. No DOM is
//! built for tensor data. A tensor's head (name, datatype, shape) is
//! announced through [`DocParser::take_heads`] as soon as it is known, so
//! rules can refuse a request before its data is read.
//!
//! A first chunk that holds a whole, small document in the plain forms
//! nearly every client and backend writes is read in one pass instead
//! ([`whole`]), into exactly what the state machine would build; anything
//! else, errors included, goes through the state machine.
//!
//! The first error is final: the parser keeps it, and every later
//! [`DocParser::feed`] or [`DocParser::finish`] returns it again. Never does
//! I/O.

mod budget;
mod checked;
mod entry;
mod error;
mod quick;
mod step;
mod whole;

use bytes::{Buf, BytesMut};
use serde_json::Value;

use super::json_data::{DataError, DataParser, Progress};
use super::model::{DocKind, DocLimits, Document, EntryHead, Subject, TensorEntry};
use super::scan::ValueScan;
use super::strings::StringScan;
use crate::tensor::{DataType, Shape};
use budget::Budget;
use entry::EntryBuilder;
pub use error::{DocError, MemberRef};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Top,
    Entry,
}

/// What a value captured whole is for: decides its limits and its errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Raw {
    /// Any member but `data`: charged to the member budget.
    Member,
    /// A tensor's `shape`: a member, also cut off soon after `max_dims`.
    Shape,
    /// A tensor's `data` before its `datatype`: bounded by `max_elements`.
    Data,
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
        raw: Raw,
        scan: ValueScan,
    },
    Data(Box<DataParser>),
    End,
    /// Terminal: the first error, returned by every later call.
    Failed(Box<DocError>),
}

/// The second part of a chunk cut by [`DocParser::split`], converted apart.
#[derive(Debug)]
pub struct DataTail {
    /// Which tensor `data` value it was cut from (see `DocParser::data_values`).
    data_value: u64,
    /// The data's nesting depth at the cut.
    depth: u32,
    parser: DataParser,
    result: Option<Result<Progress, DataError>>,
}

impl DataTail {
    /// Converts `input`, the chunk after the cut. No I/O, no shared state:
    /// any thread may run it.
    pub fn run(&mut self, input: &[u8]) {
        self.result = Some(self.parser.parse(input, false));
    }
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
    /// The heads of every tensor in `tensors` are still to be announced: a
    /// document read whole keeps them there rather than as copies in
    /// `heads` ([`DocParser::check_heads`] reads them in place).
    whole_heads: bool,
    pending: BytesMut,
    /// Absolute offset of `pending[0]` (or of the next input) in the document.
    offset: u64,
    budget: Budget,
    /// Tensor `data` values begun so far: tells a [`DataTail`] cut in one
    /// tensor's data from the next tensor's.
    data_values: u64,
    /// Whether a first chunk holding the whole document is read by the
    /// one-pass parser ([`whole`]); only tests turn it off, to compare.
    try_whole: bool,
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
            whole_heads: false,
            pending: BytesMut::new(),
            offset: 0,
            budget: Budget {
                bytes: limits.max_member_bytes,
                values: limits.max_member_values,
            },
            data_values: 0,
            try_whole: true,
        }
    }

    /// A parser that reads every document with the streaming state machine,
    /// never the one-pass parser: what the one-pass parser is held to.
    #[cfg(test)]
    fn streaming(kind: DocKind, limits: DocLimits) -> Self {
        DocParser {
            try_whole: false,
            ..DocParser::new(kind, limits)
        }
    }

    /// Parses a complete document in one call.
    pub fn parse(kind: DocKind, limits: DocLimits, input: &[u8]) -> Result<Document, DocError> {
        if let Some(w) = whole::parse(kind, &limits, input, false) {
            return Ok(Document {
                kind,
                members: w.members,
                tensors_at: w.tensors_at,
                tensors: w.tensors,
            });
        }
        let mut p = DocParser::new(kind, limits);
        // Already tried: not a whole, plain document.
        p.try_whole = false;
        p.feed(input)?;
        p.finish()
    }

    /// Feeds the next chunk. After an error, returns that error again.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), DocError> {
        if let State::Failed(e) = &self.state {
            return Err(DocError::clone(e));
        }
        if matches!(self.state, State::Start) && self.pending.is_empty() && self.read_whole(chunk) {
            return Ok(());
        }
        let result = self.feed_chunk(chunk);
        if let Err(e) = &result {
            self.fail(e.clone());
        }
        result
    }

    /// Reads `chunk` with the one-pass parser if it holds a whole, plain
    /// document: then the parser stands where the streaming state machine
    /// would after the same chunk (at the end, the heads to take).
    fn read_whole(&mut self, chunk: &[u8]) -> bool {
        if !self.try_whole {
            return false;
        }
        let Some(w) = whole::parse(self.kind, &self.limits, chunk, false) else {
            return false;
        };
        self.members = w.members;
        self.tensors_at = Some(w.tensors_at);
        self.tensors = w.tensors;
        self.whole_heads = true;
        self.data_values += w.data_values;
        self.offset += chunk.len() as u64;
        self.state = State::End;
        true
    }

    fn feed_chunk(&mut self, chunk: &[u8]) -> Result<(), DocError> {
        // A held-back token is finished with as little of the chunk as it
        // needs (a number's last digits, usually); the rest is parsed in
        // the chunk itself: copying every chunk behind a few held bytes
        // cost a copy of the whole body.
        let mut fed = 0;
        let mut step = 64;
        while !self.pending.is_empty() && fed < chunk.len() {
            let end = (fed + step).min(chunk.len());
            self.pending.extend_from_slice(&chunk[fed..end]);
            fed = end;
            step *= 2;
            let pending = std::mem::take(&mut self.pending);
            let result = self.run(&pending, false);
            self.pending = pending;
            let used = result?;
            self.offset += used as u64;
            self.pending.advance(used);
            if self.pending.len() <= fed {
                // All that is held came from the chunk: go on from there.
                fed -= self.pending.len();
                self.pending.clear();
            }
        }
        if self.pending.is_empty() {
            let rest = &chunk[fed..];
            let used = self.run(rest, false)?;
            self.offset += used as u64;
            self.pending.extend_from_slice(&rest[used..]);
        }
        Ok(())
    }

    /// Where `chunk`, fed next, can be cut in two so that its second part
    /// is converted apart (on another thread, say) while [`DocParser::feed`]
    /// converts the first: inside a large tensor's `data`, just after a
    /// comma (see [`DataParser::cut`]). Feed `chunk[..cut]`, run the tail
    /// on `chunk[cut..]`, then hand it to [`DocParser::join_tail`] with the
    /// same bytes. The result is the same as feeding `chunk` whole, errors
    /// included.
    pub fn split(&mut self, chunk: &[u8]) -> Option<(usize, DataTail)> {
        self.split_after(chunk, None)
    }

    /// [`DocParser::split`] cut just after the first comma at or past `at`
    /// (`None`: past four sevenths, see [`DataParser::cut`]).
    pub fn split_after(&mut self, chunk: &[u8], at: Option<usize>) -> Option<(usize, DataTail)> {
        let State::Data(parser) = &mut self.state else {
            return None;
        };
        let cut = match at {
            Some(at) => parser.cut_after(chunk, at)?,
            None => parser.cut(chunk)?,
        };
        let tail = DataTail {
            data_value: self.data_values,
            depth: parser.depth(),
            parser: parser.tail(chunk.len() - cut),
            result: None,
        };
        Some((cut, tail))
    }

    /// Feeds `chunk` the way a two-thread caller of [`DocParser::split`]
    /// does, on this thread, in an order the threads may take: the tail
    /// first, then the part before the cut, then the join. The same as
    /// [`DocParser::feed`]; tests and fuzzing hold the two to that.
    pub fn feed_cut(&mut self, chunk: &[u8]) -> Result<(), DocError> {
        let Some((cut, mut tail)) = self.split(chunk) else {
            return self.feed(chunk);
        };
        tail.run(&chunk[cut..]);
        self.feed(&chunk[..cut])?;
        self.join_tail(tail, &chunk[cut..])
    }

    /// Takes over the work of a tail that ran on `input` (the chunk after
    /// the cut), once the part before the cut has been fed. When the cut
    /// turned out not to fall between two elements of this data (the data
    /// ended before it, another tensor's began, or it was not at the depth
    /// the tail assumed), the tail's work is
    /// dropped and `input` is fed here instead.
    pub fn join_tail(&mut self, tail: DataTail, input: &[u8]) -> Result<(), DocError> {
        // The first part may have ended this tensor's data and begun the
        // next one's: the same depth after a comma, but not the tail's.
        let at_cut = self.pending.is_empty()
            && self.data_values == tail.data_value
            && matches!(&self.state, State::Data(p) if p.at_cut(tail.depth));
        let Some(result) = tail.result.filter(|_| at_cut) else {
            return self.feed(input);
        };
        let State::Data(parser) = &mut self.state else {
            unreachable!("checked above");
        };
        let result = match result {
            Ok(progress) => parser.absorb(tail.parser).map(|()| progress),
            Err(e) => Err(parser.tail_error(&tail.parser, e)),
        };
        let progress = result.map_err(|source| {
            let e = DocError::Data {
                subject: self.subject(),
                source,
            };
            self.fail(e.clone());
            e
        })?;
        match progress {
            Progress::NeedMore(used) => {
                self.offset += used as u64;
                self.pending.extend_from_slice(&input[used..]);
                Ok(())
            }
            Progress::Done(used) => {
                self.offset += used as u64;
                let State::Data(parser) = std::mem::replace(&mut self.state, State::End) else {
                    unreachable!("checked above");
                };
                self.state = self.data_done(*parser);
                self.feed(&input[used..])
            }
        }
    }

    /// While a fixed-size tensor's `data` is being converted (its name,
    /// datatype and shape known): the document as it would be if nothing
    /// but the rest of that data followed. The members and tensors so far,
    /// then this tensor with its data as `binary_data_size` (the size its
    /// shape takes). For a caller that starts sending the document in
    /// binary form before it is parsed whole, and holds that guess against
    /// the document [`DocParser::finish`] returns.
    pub fn provisional(&self) -> Option<Document> {
        let State::Data(_) = &self.state else {
            return None;
        };
        let current = self.entry.as_ref()?.provisional()?;
        let mut tensors = self.tensors.clone();
        tensors.push(current);
        Some(Document {
            kind: self.kind,
            members: self.members.clone(),
            tensors_at: self.tensors_at?,
            tensors,
        })
    }

    /// While a tensor's `data` is being converted: the tensor's index and
    /// the data converted so far.
    pub fn converted(&self) -> Option<(usize, &[u8])> {
        let State::Data(parser) = &self.state else {
            return None;
        };
        Some((self.entry.as_ref()?.index, parser.converted()))
    }

    /// Tensor heads that became known since the last call.
    pub fn take_heads(&mut self) -> Vec<EntryHead> {
        if std::mem::take(&mut self.whole_heads) {
            return self
                .tensors
                .iter()
                .enumerate()
                .map(|(index, t)| EntryHead {
                    index,
                    name: t.name.clone(),
                    datatype: t.datatype,
                    shape: t.shape.clone(),
                })
                .collect();
        }
        std::mem::take(&mut self.heads)
    }

    /// Calls `check` with the name, datatype and shape of every tensor head
    /// that became known since the last call, in order, up to the first
    /// error: the heads [`take_heads`](Self::take_heads) would give, all
    /// taken, without copying a document read whole.
    pub fn check_heads<E>(
        &mut self,
        mut check: impl FnMut(&str, DataType, &Shape) -> Result<(), E>,
    ) -> Result<(), E> {
        if std::mem::take(&mut self.whole_heads) {
            return self
                .tensors
                .iter()
                .try_for_each(|t| check(&t.name, t.datatype, &t.shape));
        }
        std::mem::take(&mut self.heads)
            .iter()
            .try_for_each(|h| check(&h.name, h.datatype, &h.shape))
    }

    /// Input bytes held back until the token they start is complete: a
    /// member's value (at most what is left of the member budget), or a
    /// piece of tensor data.
    pub fn buffered(&self) -> usize {
        self.pending.len()
    }

    /// Ends the input and returns the document, or the error the parser
    /// failed with.
    pub fn finish(mut self) -> Result<Document, DocError> {
        if let State::Failed(e) = self.state {
            return Err(*e);
        }
        let pending = std::mem::take(&mut self.pending);
        self.run(&pending, true)?;
        if !matches!(self.state, State::End) {
            return Err(self.syntax(pending.len(), "unexpected end of input"));
        }
        let tensors_at = self.tensors_at.ok_or_else(|| DocError::MissingTensors {
            key: self.kind.tensors_key(),
        })?;
        Ok(Document {
            kind: self.kind,
            members: self.members,
            tensors_at,
            tensors: self.tensors,
        })
    }

    /// Enters the failed state, dropping everything parsed so far.
    fn fail(&mut self, error: DocError) {
        self.state = State::Failed(Box::new(error));
        self.pending = BytesMut::new();
        self.members = Vec::new();
        self.tensors = Vec::new();
        self.entry = None;
        self.heads = Vec::new();
        self.whole_heads = false;
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
            if !matches!(self.state, State::Data(_)) {
                // Whitespace between tokens.
                while i < input.len() && matches!(input[i], b' ' | b'\n' | b'\r' | b'\t') {
                    i += 1;
                }
                if i == input.len() && self.stops_at_end(eof, i)? {
                    return Ok(i);
                }
            }
            let state = std::mem::replace(&mut self.state, State::End);
            match self.step(state, input, &mut i, eof)? {
                step::Flow::Go(next) => self.state = next,
                step::Flow::Wait(next) => {
                    self.state = next;
                    return Ok(i);
                }
            }
        }
    }

    /// At the end of the input between tokens: whether to stop here. Only
    /// the scanners (member names, captured values) and tensor data have
    /// something to say about the end of the input.
    fn stops_at_end(&self, eof: bool, i: usize) -> Result<bool, DocError> {
        if matches!(self.state, State::End) || !eof {
            return Ok(true);
        }
        if matches!(self.state, State::Raw { .. } | State::Key { .. }) {
            return Ok(false);
        }
        Err(self.syntax(i, "unexpected end of input"))
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_limits;
