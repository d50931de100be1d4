//! Why a gRPC inference message does not convert to the V2 form, or back.
//! Every message names the tensor: `input "INPUT0": raw data holds 40
//! bytes but INT32 [1,8] needs 32`.

use super::contents::ContentsError;
use super::params::ParamError;
use crate::codec::v2::{DocKind, Subject};
use crate::tensor::{BytesLayoutError, DataType, Shape};

/// A conversion failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InferError {
    /// The bytes are not a protobuf message of this type.
    #[error("invalid {message}: {reason}")]
    Decode {
        message: &'static str,
        reason: String,
    },
    #[error("{subject}: {problem}")]
    Tensor {
        subject: Subject,
        problem: TensorProblem,
    },
    /// More raw entries than tensors that take raw data.
    #[error("{raw} raw_{noun}_contents entries for {tensors} {noun}s that take raw data")]
    ExtraRaw {
        noun: &'static str,
        raw: usize,
        tensors: usize,
    },
    #[error("{0}")]
    Parameter(#[from] ParamError),
    /// A V2 member that has no gRPC form (an `id` that is not a string, an
    /// `outputs` entry without a name, ...).
    #[error("{0}")]
    Member(String),
}

/// What is wrong with one tensor.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TensorProblem {
    #[error("datatype \"{0}\" is unknown")]
    UnknownDatatype(String),
    #[error("shape {0:?} has a negative dimension")]
    NegativeDim(Vec<i64>),
    #[error("shape has {dims} dimensions, more than the limit of {limit}")]
    TooManyDims { dims: usize, limit: usize },
    #[error("shape {0} has more elements than fit in 64 bits")]
    Overflow(Shape),
    #[error("shape {shape} has {count} elements, more than the limit of {limit}")]
    TooManyElements {
        shape: Shape,
        count: u64,
        limit: u64,
    },
    #[error("dimension {0} does not fit in a gRPC int64 dimension")]
    DimTooLarge(u64),
    #[error(
        "no data: no contents, no raw_{noun}_contents entry ({raw} for {tensors} {noun}s) and no shared memory"
    )]
    MissingRaw {
        noun: &'static str,
        raw: usize,
        tensors: usize,
    },
    #[error("no data: no contents, no raw contents and no shared memory")]
    NoData,
    #[error("contents must not be given when raw_{noun}_contents is used")]
    RawAndTyped { noun: &'static str },
    #[error("contents must not be given with shared memory")]
    SharedMemoryAndContents,
    #[error("raw data holds {actual} bytes but {dtype} {shape} needs {expected}")]
    RawSize {
        dtype: DataType,
        shape: Shape,
        expected: u64,
        actual: u64,
    },
    #[error("raw BYTES data: {0}")]
    RawBytes(BytesLayoutError),
    #[error("{0}")]
    Contents(#[from] ContentsError),
    #[error("{0}")]
    Parameter(#[from] ParamError),
}

impl InferError {
    pub(super) fn tensor(kind: DocKind, index: usize, name: &str, problem: TensorProblem) -> Self {
        InferError::Tensor {
            subject: Subject {
                kind,
                name: Some(name.to_owned()),
                index,
            },
            problem,
        }
    }

    pub(super) fn decode(message: &'static str, e: &prost::DecodeError) -> Self {
        InferError::Decode {
            message,
            reason: e.to_string(),
        }
    }
}

/// `input` or `output`, as the raw fields are named.
pub(super) const fn noun(kind: DocKind) -> &'static str {
    match kind {
        DocKind::Request => "input",
        DocKind::Response => "output",
    }
}
