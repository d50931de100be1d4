//! `application/jsonlines` (and `application/jsonl`) requests: one JSON
//! record per line, in any of the shapes [`super::json`] reads; lines may
//! mix shapes.

use super::batch::{Batch, DecodeConfig, Rows};
use super::error::{ConfigError, Location, RecordError};
use super::json::line_record;
use super::lines::{LineDecoder, LineRecord};
use super::value::Elem;

/// Decodes a JSON Lines body fed in chunks into batches; used exactly like
/// [`super::CsvDecoder`].
#[derive(Debug)]
pub struct JsonLinesDecoder(LineDecoder<JsonLine>);

/// A JSON Lines line: one record as one JSON value.
#[derive(Debug)]
pub(super) struct JsonLine;

impl LineRecord for JsonLine {
    fn read<T: Elem>(line: &[u8], rows: &mut Rows, at: Location) -> Result<(), RecordError> {
        line_record::<T>(line, at, rows)
    }
}

impl JsonLinesDecoder {
    pub fn new(config: &DecodeConfig) -> Result<Self, ConfigError> {
        LineDecoder::new(config).map(JsonLinesDecoder)
    }

    /// Appends a chunk of the body; drain [`JsonLinesDecoder::next_batch`]
    /// before the next one.
    pub fn feed(&mut self, chunk: &[u8]) {
        self.0.feed(chunk);
    }

    /// The next complete batch, or `Ok(None)` when more input is needed.
    pub fn next_batch(&mut self) -> Result<Option<Batch>, RecordError> {
        self.0.step(false)
    }

    /// After the last chunk: the remaining batches, one per call, then
    /// `Ok(None)`.
    pub fn finish(&mut self) -> Result<Option<Batch>, RecordError> {
        self.0.step(true)
    }
}
