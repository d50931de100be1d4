//! SageMaker inference record formats: request bodies (CSV, JSON, JSON
//! Lines, RecordIO-protobuf) in, mini-batches of one `[N, F]` input tensor
//! out; backend outputs in, reply bodies (JSON, JSON Lines, CSV) out; and the
//! `Content-Type` / `Accept` negotiation between them.
//!
//! Sans-I/O: this module never touches sockets, hyper or tokio. Decoders are
//! fed the body's chunks and hand back complete [`Batch`]es, "more input
//! needed" being `Ok(None)`, never an error; every length read from the wire
//! is checked against a limit of [`DecodeConfig`] before it is buffered or
//! allocated. Writers append to a `Vec<u8>` the caller sends on.
//!
//! Conventions every error follows: CSV and JSON Lines records are named by
//! their **1-based line number** (`line 3`), JSON instances and RecordIO
//! records by their **0-based index** (`instance 0`, `record 0`), and
//! features by their **0-based index** in the record (`feature 2`).

mod batch;
mod csv;
mod decoder;
mod error;
mod instances;
mod json;
mod jsonlines;
mod lines;
mod media;
mod proto;
mod recordio;
mod reply;
mod value;

pub use batch::{
    Batch, DEFAULT_BATCH_RECORDS, DEFAULT_MAX_BATCH_BYTES, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_FEATURES, DEFAULT_MAX_RECORD_BYTES, DecodeConfig,
};
pub use csv::CsvDecoder;
pub use decoder::RequestDecoder;
pub use error::{ConfigError, Location, RecordError};
pub use instances::JsonDecoder;
pub use jsonlines::JsonLinesDecoder;
pub use media::{
    MediaError, ReplyFormat, ReplyType, RequestFormat, negotiate_accept, request_format,
};
pub use recordio::{RECORDIO_MAGIC, RecordIoDecoder};
pub use reply::{OutputRef, ReplyError, ReplyWriter};

/// The `aialgs.data` protobuf messages of RecordIO-protobuf bodies
/// (mirroring `record.proto` beside this file).
pub mod record {
    pub use super::proto::{
        Bytes, Float32Tensor, Float64Tensor, Int32Tensor, Record, Value, value,
    };
}
