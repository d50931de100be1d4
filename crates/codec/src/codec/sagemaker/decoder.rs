//! One decoder type for every request format, so that a frontend drives
//! them all with the same three calls.

use super::batch::{Batch, DecodeConfig};
use super::error::{ConfigError, RecordError};
use super::media::RequestFormat;
use super::{CsvDecoder, JsonDecoder, JsonLinesDecoder, RecordIoDecoder};

/// Any request decoder. The loop a frontend runs:
///
/// ```
/// use tensorgate_codec::codec::sagemaker::{DecodeConfig, RequestDecoder, RequestFormat};
/// use tensorgate_codec::tensor::DataType;
///
/// let mut dec = RequestDecoder::new(RequestFormat::Csv, &DecodeConfig::new(DataType::F32))?;
/// let mut batches = Vec::new();
/// for chunk in [&b"1,2\n3,"[..], b"4\n"] {
///     dec.feed(chunk)?;
///     while let Some(batch) = dec.next_batch()? {
///         batches.push(batch);
///     }
/// }
/// while let Some(batch) = dec.finish()? {
///     batches.push(batch);
/// }
/// assert_eq!((batches[0].records, batches[0].features), (2, 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub enum RequestDecoder {
    Csv(CsvDecoder),
    Json(JsonDecoder),
    JsonLines(JsonLinesDecoder),
    RecordIo(RecordIoDecoder),
}

impl RequestDecoder {
    pub fn new(format: RequestFormat, config: &DecodeConfig) -> Result<Self, ConfigError> {
        Ok(match format {
            RequestFormat::Csv => RequestDecoder::Csv(CsvDecoder::new(config)?),
            RequestFormat::Json => RequestDecoder::Json(JsonDecoder::new(config)?),
            RequestFormat::JsonLines => RequestDecoder::JsonLines(JsonLinesDecoder::new(config)?),
            RequestFormat::RecordIo => RequestDecoder::RecordIo(RecordIoDecoder::new(config)?),
        })
    }

    /// Appends a chunk of the body. Drain [`RequestDecoder::next_batch`]
    /// after each chunk: decoders buffer what they are fed until it is
    /// converted (JSON keeps the whole body, up to `max_body_bytes`).
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), RecordError> {
        match self {
            RequestDecoder::Csv(d) => d.feed(chunk),
            RequestDecoder::Json(d) => return d.feed(chunk),
            RequestDecoder::JsonLines(d) => d.feed(chunk),
            RequestDecoder::RecordIo(d) => d.feed(chunk),
        }
        Ok(())
    }

    /// The next complete batch, or `Ok(None)` when more input is needed.
    pub fn next_batch(&mut self) -> Result<Option<Batch>, RecordError> {
        match self {
            RequestDecoder::Csv(d) => d.next_batch(),
            RequestDecoder::Json(d) => d.next_batch(),
            RequestDecoder::JsonLines(d) => d.next_batch(),
            RequestDecoder::RecordIo(d) => d.next_batch(),
        }
    }

    /// After the last chunk: the remaining batches, one per call, then
    /// `Ok(None)`. A body without any record is [`RecordError::NoRecords`].
    pub fn finish(&mut self) -> Result<Option<Batch>, RecordError> {
        match self {
            RequestDecoder::Csv(d) => d.finish(),
            RequestDecoder::Json(d) => d.finish(),
            RequestDecoder::JsonLines(d) => d.finish(),
            RequestDecoder::RecordIo(d) => d.finish(),
        }
    }
}
