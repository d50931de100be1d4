//! `application/json` requests, read whole: `{"instances": [record, ...]}`
//! (other members skipped), a bare `[[...], ...]` or `[{...}, ...]` of
//! several records, a bare `[1.5, ...]` of one, or one record object.
//!
//! The body is buffered up to `max_body_bytes` and its JSON syntax checked
//! whole before the first batch, so a malformed body yields no batch at
//! all; then one batch is converted per call, so at most one batch of
//! (possibly densified) data exists at a time. A body with sparse records
//! (a `"shape"`) is first converted whole without keeping the data, so
//! that what they densify to is held to the request's bound (and any bad
//! record found) before the first batch, not part way through the reply.

use bytes::{Bytes, BytesMut};

use super::batch::{Batch, DecodeConfig, Rows};
use super::error::{ConfigError, Location, RecordError};
use super::json::{Cursor, Key, record};
use super::value::{Elem, Kind, by_kind};

/// Where the records are in the checked body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Records {
    /// The elements of the list opening at this offset.
    List(usize),
    /// One record at this offset.
    One(usize),
}

#[derive(Debug)]
enum State {
    Reading(BytesMut),
    /// Records from `at` on (the position of the next record or of the
    /// list's end), `index` the next record's.
    Converting {
        body: Bytes,
        at: usize,
        index: u64,
        single: bool,
    },
    Done,
    Failed(RecordError),
}

/// Decodes a whole JSON body into batches: [`JsonDecoder::feed`] every
/// chunk (`next_batch` has nothing before the end), then
/// [`JsonDecoder::finish`] until it returns `Ok(None)`.
#[derive(Debug)]
pub struct JsonDecoder {
    kind: Kind,
    rows: Rows,
    max_body: usize,
    state: State,
}

impl JsonDecoder {
    pub fn new(config: &DecodeConfig) -> Result<Self, ConfigError> {
        Ok(JsonDecoder {
            kind: config.kind()?,
            rows: Rows::new(config),
            max_body: config.max_body_bytes,
            state: State::Reading(BytesMut::new()),
        })
    }

    /// Appends a chunk of the body (refused past `max_body_bytes`).
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), RecordError> {
        match &mut self.state {
            State::Reading(buf) => {
                if buf.len().saturating_add(chunk.len()) > self.max_body {
                    let e = RecordError::BodyTooLarge { max: self.max_body };
                    self.state = State::Failed(e.clone());
                    return Err(e);
                }
                buf.extend_from_slice(chunk);
                Ok(())
            }
            State::Failed(e) => Err(e.clone()),
            _ => Ok(()),
        }
    }

    /// Always `Ok(None)` before [`JsonDecoder::finish`]: the body is read
    /// whole. (There so that every decoder has the same calls.)
    pub fn next_batch(&mut self) -> Result<Option<Batch>, RecordError> {
        match &self.state {
            State::Failed(e) => Err(e.clone()),
            _ => Ok(None),
        }
    }

    /// After the last chunk: the batches, one per call, then `Ok(None)`.
    pub fn finish(&mut self) -> Result<Option<Batch>, RecordError> {
        let result = by_kind!(self.kind, T => self.step::<T>());
        if let Err(e) = &result {
            self.state = State::Failed(e.clone());
        }
        result
    }

    fn step<T: Elem>(&mut self) -> Result<Option<Batch>, RecordError> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Reading(buf) => {
                let body = buf.freeze();
                let (at, single) = match locate(&body)? {
                    Records::List(at) => (at + 1, false),
                    Records::One(at) => (at, true),
                };
                if memchr::memmem::find(&body, b"\"shape\"").is_some() {
                    check_all::<T>(&body, at, single, self.rows.clone())?;
                }
                self.state = State::Converting {
                    body,
                    at,
                    index: 0,
                    single,
                };
                self.step::<T>()
            }
            State::Converting {
                body,
                at,
                index,
                single,
            } => {
                let next = self.convert::<T>(&body, at, index, single)?;
                if let Some((at, index)) = next {
                    self.state = State::Converting {
                        body,
                        at,
                        index,
                        single,
                    };
                }
                if self.rows.total() == 0 {
                    return Err(RecordError::NoRecords);
                }
                Ok(self.rows.take())
            }
            State::Done => Ok(None),
            State::Failed(e) => {
                self.state = State::Failed(e.clone());
                Err(e)
            }
        }
    }

    /// Converts records from `at` until the batch is full; where to go on,
    /// or `None` at the end.
    fn convert<T: Elem>(
        &mut self,
        body: &[u8],
        at: usize,
        mut index: u64,
        single: bool,
    ) -> Result<Option<(usize, u64)>, RecordError> {
        let mut c = Cursor::new(body, Location::Instance(index));
        c.i = at;
        if single {
            record::<T>(&mut c, &mut self.rows)?;
            return Ok(None);
        }
        if c.peek() == Some(b']') {
            return Ok(None);
        }
        loop {
            c.at = Location::Instance(index);
            record::<T>(&mut c, &mut self.rows)?;
            index += 1;
            if c.next_or_close(b']')? {
                return Ok(None);
            }
            if self.rows.full() {
                return Ok(Some((c.i, index)));
            }
        }
    }
}

/// Converts every record from `at` into `rows`, keeping none of the data:
/// what only the whole body can say (what its sparse records densify to)
/// is known before the first batch.
fn check_all<T: Elem>(
    body: &[u8],
    at: usize,
    single: bool,
    mut rows: Rows,
) -> Result<(), RecordError> {
    let mut c = Cursor::new(body, Location::Instance(0));
    c.i = at;
    if single {
        return record::<T>(&mut c, &mut rows);
    }
    if c.peek() == Some(b']') {
        return Ok(());
    }
    let mut index = 0;
    loop {
        c.at = Location::Instance(index);
        record::<T>(&mut c, &mut rows)?;
        rows.discard();
        index += 1;
        if c.next_or_close(b']')? {
            return Ok(());
        }
    }
}

/// Checks the whole body's syntax and finds its records.
fn locate(body: &[u8]) -> Result<Records, RecordError> {
    let mut c = Cursor::new(body, Location::Instance(0));
    let records = match c.peek() {
        Some(b'{') => {
            let start = c.i;
            let mut instances = None;
            if !c.open_object()? {
                loop {
                    if c.key()? == Key::Instances {
                        if instances.is_some() {
                            return Err(c.err("\"instances\" appears twice"));
                        }
                        if c.peek() != Some(b'[') {
                            return Err(c.err("\"instances\" must be a list"));
                        }
                        instances = Some(c.i);
                    }
                    c.skip_value(1)?;
                    if c.next_or_close(b'}')? {
                        break;
                    }
                }
            }
            instances.map_or(Records::One(start), Records::List)
        }
        Some(b'[') => {
            let start = c.i;
            c.i += 1;
            let first = c.peek();
            c.i = start;
            c.skip_value(0)?;
            match first {
                Some(b'[' | b'{' | b']') => Records::List(start),
                _ => Records::One(start),
            }
        }
        _ => return Err(c.err("expected {\"instances\": [...]} or a list")),
    };
    if c.peek().is_some() {
        return Err(c.err("unexpected text after the JSON value"));
    }
    Ok(records)
}

#[cfg(test)]
mod tests;
