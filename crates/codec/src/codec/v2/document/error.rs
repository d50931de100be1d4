//! What can go wrong while parsing a V2 document.

use std::fmt;

use crate::codec::v2::json_data::DataError;
use crate::codec::v2::model::Subject;
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
    /// A shape so long that it was refused while it was read: `read` is how
    /// many dimensions were let through before giving up.
    #[error("{subject}: shape has more than {read} dimensions, over the limit of {max}")]
    ShapeTooLong {
        subject: Subject,
        read: usize,
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
        "{subject}: {datatype} data of shape {shape} is more than 2^64 bytes, but \"binary_data_size\" is {declared}"
    )]
    BinarySizeOverflow {
        subject: Subject,
        datatype: DataType,
        shape: Shape,
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
    /// The JSON outside tensor data went over
    /// [`DocLimits::max_member_bytes`](crate::codec::v2::DocLimits::max_member_bytes)
    /// at this member (a gateway answers 413).
    #[error("{member} goes over the limit of {limit} bytes for JSON outside tensor data")]
    MemberTooLarge { member: MemberRef, limit: u64 },
    /// The JSON outside tensor data went over
    /// [`DocLimits::max_member_values`](crate::codec::v2::DocLimits::max_member_values)
    /// at this member.
    #[error("{member} goes over the limit of {limit} values for JSON outside tensor data")]
    TooManyValues { member: MemberRef, limit: u64 },
}

/// Names a member in messages: `member "id"`, `input "X": member
/// "parameters"`, or `a member name` while the name itself is being read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberRef {
    /// The tensor holding the member; `None` at the top level.
    pub tensor: Option<Subject>,
    /// `None` when the member name was too large to read.
    pub key: Option<String>,
}

impl fmt::Display for MemberRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(tensor) = &self.tensor {
            write!(f, "{tensor}: ")?;
        }
        match &self.key {
            Some(key) => write!(f, "member \"{key}\""),
            None => f.write_str("a member name"),
        }
    }
}
