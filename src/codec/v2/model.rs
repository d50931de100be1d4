//! The parsed form of a V2 inference request or response: the JSON members
//! kept as they came, and each tensor with its data located (converted JSON
//! data, binary bytes to follow, or shared memory).

use std::fmt;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::tensor::{DataType, Shape};

/// Which V2 document is being read: requests carry `"inputs"`, responses
/// `"outputs"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DocKind {
    Request,
    Response,
}

impl DocKind {
    /// The member holding the tensor list.
    pub const fn tensors_key(self) -> &'static str {
        match self {
            DocKind::Request => "inputs",
            DocKind::Response => "outputs",
        }
    }

    /// What one tensor is called in messages.
    pub const fn noun(self) -> &'static str {
        match self {
            DocKind::Request => "input",
            DocKind::Response => "output",
        }
    }
}

/// Bounds applied while parsing, before anything is allocated for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocLimits {
    /// Most elements one tensor may have (declared or sent).
    pub max_elements: u64,
    /// Most dimensions a shape may have.
    pub max_dims: usize,
    /// Deepest JSON nesting accepted anywhere in the document.
    pub max_depth: u32,
}

impl Default for DocLimits {
    fn default() -> Self {
        DocLimits {
            max_elements: 1 << 28,
            max_dims: 32,
            max_depth: 100,
        }
    }
}

/// Where a tensor's data is.
#[derive(Clone, Debug, PartialEq)]
pub enum EntryData {
    /// Given inline as JSON `"data"`, already converted to the V2 binary
    /// layout (little-endian elements, or length-prefixed BYTES elements).
    Inline { data: Bytes, elements: u64 },
    /// `binary_data_size` bytes follow the JSON header.
    Binary { size: u64 },
    /// In a shared-memory region named by the parameters.
    SharedMemory,
}

/// One tensor of a request or response.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorEntry {
    pub name: String,
    pub datatype: DataType,
    pub shape: Shape,
    /// The `"parameters"` object, as sent (including `binary_data_size`).
    pub parameters: Map<String, Value>,
    /// Other members, kept in order and passed through untouched.
    pub extra: Vec<(String, Value)>,
    pub data: EntryData,
}

impl TensorEntry {
    /// Bytes this tensor's data takes in the V2 binary layout, if known
    /// without reading it.
    pub fn binary_size(&self) -> Option<u64> {
        match &self.data {
            EntryData::Inline { data, .. } => Some(data.len() as u64),
            EntryData::Binary { size } => Some(*size),
            EntryData::SharedMemory => None,
        }
    }
}

/// A parsed V2 document.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    pub kind: DocKind,
    /// Top-level members other than the tensor list, in order.
    pub members: Vec<(String, Value)>,
    /// Index into `members` before which the tensor list was written.
    pub tensors_at: usize,
    pub tensors: Vec<TensorEntry>,
}

impl Document {
    /// A top-level member by key.
    pub fn member(&self, key: &str) -> Option<&Value> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The top-level `"parameters"` object, if any.
    pub fn parameters(&self) -> Option<&Map<String, Value>> {
        self.member("parameters").and_then(Value::as_object)
    }

    /// Sizes of the binary chunks that follow the JSON header, in order.
    pub fn binary_sizes(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.tensors
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match t.data {
                EntryData::Binary { size } => Some((i, size)),
                _ => None,
            })
    }

    /// Elements in every tensor (saturating: shapes were checked when
    /// parsed).
    pub fn element_count(&self) -> u64 {
        self.tensors
            .iter()
            .map(|t| t.shape.element_count().unwrap_or(0))
            .fold(0, u64::saturating_add)
    }

    /// Whether any tensor lives in shared memory.
    pub fn uses_shared_memory(&self) -> bool {
        self.tensors
            .iter()
            .any(|t| t.data == EntryData::SharedMemory)
    }
}

/// Names a tensor in messages: `input "INPUT0"`, or `input #2` before its
/// name is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    pub kind: DocKind,
    pub name: Option<String>,
    pub index: usize,
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{} \"{}\"", self.kind.noun(), name),
            None => write!(f, "{} #{}", self.kind.noun(), self.index),
        }
    }
}

/// The name, type and shape of a tensor, available as soon as the three
/// are parsed: rules are checked on this before the data is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryHead {
    pub index: usize,
    pub name: String,
    pub datatype: DataType,
    pub shape: Shape,
}
