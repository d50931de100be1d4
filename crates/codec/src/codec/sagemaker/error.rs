//! What can be wrong with a request body, named by record and feature.

use std::fmt;

use crate::tensor::DataType;

/// Where in the body a record is: the 1-based line of a CSV or JSON Lines
/// body, the 0-based index of a JSON instance or of a RecordIO record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    Line(u64),
    Instance(u64),
    Record(u64),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line(n) => write!(f, "line {n}"),
            Location::Instance(n) => write!(f, "instance {n}"),
            Location::Record(n) => write!(f, "record {n}"),
        }
    }
}

/// A request body could not be turned into records. Features are counted
/// from 0; see [`Location`] for records.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("{at}: {found} features, expected {expected}")]
    FeatureCount {
        at: Location,
        expected: usize,
        found: usize,
    },
    #[error("{at}: more than {max} features, the limit")]
    TooManyFeatures { at: Location, max: usize },
    #[error("{at}: the record has no features")]
    NoFeatures { at: Location },
    #[error("{at}, feature {feature}: {text:?} is not a number")]
    NotNumber {
        at: Location,
        feature: usize,
        text: String,
    },
    #[error("{at}, feature {feature}: {dtype} needs an integer, found {text}")]
    NotInteger {
        at: Location,
        feature: usize,
        dtype: DataType,
        text: String,
    },
    #[error("{at}, feature {feature}: {text} is out of range for {dtype}")]
    OutOfRange {
        at: Location,
        feature: usize,
        dtype: DataType,
        text: String,
    },
    #[error("{at}, feature {feature}: a quoted field has no closing quote")]
    UnterminatedQuote { at: Location, feature: usize },
    #[error("{at}: blank line between records")]
    BlankLine { at: Location },
    #[error("{at}: longer than {max} bytes, the record size limit")]
    TooLong { at: Location, max: usize },
    #[error("{at}: malformed JSON at byte {offset}: {what}")]
    Json {
        at: Location,
        offset: usize,
        what: &'static str,
    },
    #[error("{at}: JSON nests deeper than {max} levels")]
    TooDeep { at: Location, max: u32 },
    #[error("{at}: {what}")]
    Layout { at: Location, what: &'static str },
    #[error("{at}: sparse key {key} is out of range for {size} features")]
    KeyOutOfRange { at: Location, key: u64, size: u64 },
    #[error("{at}: sparse key {key} appears twice")]
    RepeatedKey { at: Location, key: u64 },
    #[error("{at}: {keys} sparse keys for {values} values")]
    SparseMismatch {
        at: Location,
        keys: usize,
        values: usize,
    },
    #[error("{at}: RecordIO magic is {found:#010x}, expected 0xced7230a")]
    BadMagic { at: Location, found: u32 },
    #[error("{at}: multi-part RecordIO records (continuation flag {flag}) are not supported")]
    Continuation { at: Location, flag: u32 },
    #[error("{at}: the body ends {missing} bytes before the end of the record")]
    Truncated { at: Location, missing: u64 },
    #[error("{at}: not an aialgs.data.Record: {error}")]
    Protobuf {
        at: Location,
        #[source]
        error: prost::DecodeError,
    },
    #[error(
        "{at}: the \"values\" feature holds {kind}; float32, float64 and int32 tensors are supported"
    )]
    UnsupportedTensor { at: Location, kind: &'static str },
    #[error("the request body holds no records")]
    NoRecords,
    #[error("the request body is larger than {max} bytes, the limit for this format")]
    BodyTooLarge { max: usize },
    /// Sparse records densifying past what one request may make of them:
    /// `limit` names the bound, `max` its value.
    #[error(
        "{at}: the sparse records of this request densify to more than {max} {unit}, the route's {limit}"
    )]
    DenseTooLarge {
        at: Location,
        max: u64,
        unit: &'static str,
        limit: &'static str,
    },
}

/// A [`super::DecodeConfig`] that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "{0} inputs cannot be read from SageMaker records; use FP16, BF16, FP32, FP64, INT8..INT64 or UINT8..UINT64"
    )]
    UnsupportedDataType(DataType),
    #[error("batch_records must be at least 1")]
    ZeroBatch,
    #[error("the feature count must be at least 1")]
    ZeroFeatures,
    #[error("{features} features exceed max_features ({max})")]
    FeaturesOverLimit { features: usize, max: usize },
}
