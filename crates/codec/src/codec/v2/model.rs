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

/// Deepest JSON nesting accepted anywhere in a V2 document, tensor data
/// included.
pub const MAX_JSON_DEPTH: u32 = 100;

/// Bounds applied while parsing, before anything is allocated for them.
///
/// Build one with [`DocLimits::new`] (or `..DocLimits::default()`) so that
/// the fields a caller does not set keep their defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocLimits {
    /// Most elements one tensor may have (declared or sent).
    pub max_elements: u64,
    /// Most dimensions a shape may have.
    pub max_dims: usize,
    /// Deepest JSON nesting accepted anywhere in the document.
    pub max_depth: u32,
    /// Most bytes of JSON outside tensor `data` in one document, added up
    /// over every member name and every value other than a tensor's data
    /// (top-level members, tensor names, datatypes, shapes, parameters,
    /// unknown members). Checked while a value is read, so no more than this
    /// is ever buffered for it.
    pub max_member_bytes: u64,
    /// Most JSON values outside tensor `data` in one document, added up the
    /// same way: every object, array, string (member names included), number
    /// and literal. Bounds what `serde_json` builds for them (about 80 bytes
    /// a value).
    pub max_member_values: u64,
}

impl DocLimits {
    /// The default limits: 2^28 elements, 32 dimensions, depth
    /// [`MAX_JSON_DEPTH`], and 1 MiB / 65536 values of JSON outside tensor
    /// data.
    pub const DEFAULT: DocLimits = DocLimits {
        max_elements: 1 << 28,
        max_dims: 32,
        max_depth: MAX_JSON_DEPTH,
        max_member_bytes: 1 << 20,
        max_member_values: 1 << 16,
    };

    /// The given tensor bounds, the defaults for everything else.
    pub const fn new(max_elements: u64, max_dims: usize) -> Self {
        DocLimits {
            max_elements,
            max_dims,
            ..Self::DEFAULT
        }
    }

    /// These limits with another budget for JSON outside tensor data.
    pub const fn with_member_budget(self, max_bytes: u64, max_values: u64) -> Self {
        DocLimits {
            max_member_bytes: max_bytes,
            max_member_values: max_values,
            ..self
        }
    }
}

impl Default for DocLimits {
    fn default() -> Self {
        Self::DEFAULT
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

    /// Sizes of the binary chunks that follow the JSON header, in order, as
    /// `(tensor index, size)`.
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

    /// Total bytes of the binary chunks that follow the JSON header; `None`
    /// when the declared sizes add up to more than `u64::MAX`.
    pub fn binary_total(&self) -> Option<u64> {
        self.binary_sizes()
            .try_fold(0u64, |total, (_, size)| total.checked_add(size))
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
