//! `application/x-recordio-protobuf` requests: SageMaker RecordIO frames
//! of `aialgs.data.Record` messages.
//!
//! A frame is the magic `0xCED7230A` and the payload length, both
//! little-endian u32, then the payload and zero padding up to a multiple of
//! 4 bytes (not counted in the length). The length is checked against
//! `max_record_bytes` before anything waits for the payload. The features
//! are the tensor under `features["values"]`: dense, or sparse with `keys`
//! and `shape` (densified); labels and the other fields are ignored.

use bytes::{Buf, BytesMut};
use prost::Message as _;

use super::batch::{Batch, DecodeConfig, Rows};
use super::error::{ConfigError, Location, RecordError};
use super::proto::{Record, value::Value};
use super::value::value_error;
use super::value::{Elem, Kind, ValueFail, by_kind};

/// The first four bytes of every frame (little-endian).
pub const RECORDIO_MAGIC: u32 = 0xCED7_230A;

const HEADER: usize = 8;

/// Decodes a RecordIO-protobuf body fed in chunks into batches; used
/// exactly like [`super::CsvDecoder`].
#[derive(Debug)]
pub struct RecordIoDecoder {
    kind: Kind,
    rows: Rows,
    buf: BytesMut,
    max: usize,
    failed: Option<RecordError>,
}

impl RecordIoDecoder {
    pub fn new(config: &DecodeConfig) -> Result<Self, ConfigError> {
        Ok(RecordIoDecoder {
            kind: config.kind()?,
            rows: Rows::new(config),
            buf: BytesMut::new(),
            max: config.max_record_bytes,
            failed: None,
        })
    }

    /// Appends a chunk of the body; drain [`RecordIoDecoder::next_batch`]
    /// before the next one.
    pub fn feed(&mut self, chunk: &[u8]) {
        if self.failed.is_none() {
            self.buf.extend_from_slice(chunk);
        }
    }

    /// The next complete batch, or `Ok(None)` when more input is needed.
    pub fn next_batch(&mut self) -> Result<Option<Batch>, RecordError> {
        self.step(false)
    }

    /// After the last chunk: the remaining batches, one per call, then
    /// `Ok(None)`. A body that ends inside a frame is truncated.
    pub fn finish(&mut self) -> Result<Option<Batch>, RecordError> {
        self.step(true)
    }

    fn step(&mut self, eof: bool) -> Result<Option<Batch>, RecordError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = by_kind!(self.kind, T => self.run::<T>(eof));
        if let Err(e) = &result {
            self.failed = Some(e.clone());
        }
        result
    }

    fn run<T: Elem>(&mut self, eof: bool) -> Result<Option<Batch>, RecordError> {
        while !self.rows.full() {
            let at = Location::Record(self.rows.total());
            let Some(len) = frame_len(&self.buf, self.max, at)? else {
                break;
            };
            let payload = &self.buf[HEADER..HEADER + len];
            let record =
                Record::decode(payload).map_err(|error| RecordError::Protobuf { at, error })?;
            features::<T>(&record, &mut self.rows, at)?;
            self.buf.advance(HEADER + len + padding(len));
        }
        if eof && !self.buf.is_empty() && !self.rows.full() {
            return Err(truncated(&self.buf, self.rows.total()));
        }
        if self.rows.full() || eof {
            if eof && self.rows.total() == 0 {
                return Err(RecordError::NoRecords);
            }
            return Ok(self.rows.take());
        }
        Ok(None)
    }
}

fn padding(len: usize) -> usize {
    (4 - len % 4) % 4
}

/// The payload length of the frame at the start of `buf` once all of it
/// (padding included) is there; `Ok(None)` before.
fn frame_len(buf: &[u8], max: usize, at: Location) -> Result<Option<usize>, RecordError> {
    let Some((header, _)) = buf.split_first_chunk::<HEADER>() else {
        return Ok(None);
    };
    let magic = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    if magic != RECORDIO_MAGIC {
        return Err(RecordError::BadMagic { at, found: magic });
    }
    let word = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    // MXNet keeps a continuation flag in the top three bits; SageMaker
    // writers never split records.
    if word >> 29 != 0 {
        return Err(RecordError::Continuation {
            at,
            flag: word >> 29,
        });
    }
    let len = word as usize;
    if len > max {
        return Err(RecordError::TooLong { at, max });
    }
    if buf.len() < HEADER + len + padding(len) {
        return Ok(None);
    }
    Ok(Some(len))
}

/// The error for a body that ends inside the frame at the start of `buf`.
fn truncated(buf: &[u8], index: u64) -> RecordError {
    let at = Location::Record(index);
    let whole = match buf.get(4..8) {
        Some(w) => {
            let len = u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as u64;
            HEADER as u64 + len + padding(len as usize) as u64
        }
        None => HEADER as u64,
    };
    RecordError::Truncated {
        at,
        missing: whole.saturating_sub(buf.len() as u64),
    }
}

/// Appends the record's features to `rows`.
fn features<T: Elem>(record: &Record, rows: &mut Rows, at: Location) -> Result<(), RecordError> {
    let value = record.features.get("values").ok_or(RecordError::Layout {
        at,
        what: "the record has no \"values\" feature",
    })?;
    let start = rows.buf.len();
    let (keys, shape) = match &value.value {
        Some(Value::Float32Tensor(t)) => {
            put(rows, at, &t.values, |v| T::from_f64(f64::from(v)))?;
            (&t.keys, &t.shape)
        }
        Some(Value::Float64Tensor(t)) => {
            put(rows, at, &t.values, T::from_f64)?;
            (&t.keys, &t.shape)
        }
        Some(Value::Int32Tensor(t)) => {
            put(rows, at, &t.values, |v| T::from_i64(i64::from(v)))?;
            (&t.keys, &t.shape)
        }
        Some(Value::Bytes(_)) => return Err(RecordError::UnsupportedTensor { at, kind: "bytes" }),
        None => {
            return Err(RecordError::UnsupportedTensor {
                at,
                kind: "no value",
            });
        }
    };
    rows.keys.clear();
    rows.keys.extend_from_slice(keys);
    rows.shape.clear();
    rows.shape.extend_from_slice(shape);
    rows.finish_tensor(at, start)?;
    rows.end_row(at, start)
}

fn put<V: Copy + std::fmt::Debug, T: Elem>(
    rows: &mut Rows,
    at: Location,
    values: &[V],
    convert: impl Fn(V) -> Result<T, ValueFail>,
) -> Result<(), RecordError> {
    if values.len() > rows.max_features {
        return Err(RecordError::TooManyFeatures {
            at,
            max: rows.max_features,
        });
    }
    rows.buf.reserve(values.len() * T::SIZE);
    for (feature, &v) in values.iter().enumerate() {
        // Debug is Rust's shortest round-trip text (`1e300`, not 301 digits).
        let e = convert(v)
            .map_err(|fail| value_error::<T>(fail, at, feature, format!("{v:?}").as_bytes()))?;
        e.put(&mut rows.buf);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
