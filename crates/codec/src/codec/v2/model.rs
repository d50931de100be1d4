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
    pub parameters: Params,
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

/// A tensor's `"parameters"` object: its members in order, as sent. A
/// tensor has few (a Triton reply's outputs one each, `binary_data_size`),
/// so they are kept in a vector and found by a scan. A `serde_json::Map`
/// (an `IndexMap` with SipHash) hashed each name and allocated a hash table
/// besides its entries, for each object read, two per small infer reply
/// (see docs/PERFORMANCE.md, "What each decision bought"). It behaves as
/// that map did: names are unique, a name inserted again keeps its place,
/// [`Params::remove`] moves the last member into the removed one's place,
/// and equality ignores order.
#[derive(Clone, Debug, Default)]
pub struct Params(Vec<(String, Value)>);

impl Params {
    pub const fn new() -> Self {
        Params(Vec::new())
    }

    /// Empty, with room for `n` members without reallocating.
    pub fn with_capacity(n: usize) -> Self {
        Params(Vec::with_capacity(n))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.0.iter().position(|(k, _)| k == key)
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// Sets `key` to `value` (in its place if it is there, else last);
    /// returns the value it replaced.
    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        match self.position(&key) {
            Some(at) => Some(std::mem::replace(&mut self.0[at].1, value)),
            None => {
                self.0.push((key, value));
                None
            }
        }
    }

    /// Removes `key`; the last member takes its place.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.position(key)?;
        Some(self.0.swap_remove(at).1)
    }

    pub fn iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = (&String, &Value)> + ExactSizeIterator + Clone {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator {
        self.0.iter().map(|(k, _)| k)
    }

    /// The members as a JSON object.
    pub fn into_map(self) -> Map<String, Value> {
        self.0.into_iter().collect()
    }
}

impl PartialEq for Params {
    fn eq(&self, other: &Params) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl From<Map<String, Value>> for Params {
    fn from(map: Map<String, Value>) -> Params {
        // A map's names are unique already.
        Params(map.into_iter().collect())
    }
}

impl FromIterator<(String, Value)> for Params {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Params {
        let mut params = Params::new();
        for (k, v) in iter {
            params.insert(k, v);
        }
        params
    }
}

impl<'a> IntoIterator for &'a Params {
    type Item = (&'a String, &'a Value);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Value)>,
        fn(&'a (String, Value)) -> (&'a String, &'a Value),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Map, Value};

    use super::Params;

    /// One change made to both a `Params` and a `serde_json::Map`.
    #[derive(Clone, Debug)]
    enum Op {
        Insert(String, i64),
        Remove(String),
    }

    fn op() -> impl Strategy<Value = Op> {
        let key = "[abc]|binary_data_size";
        prop_oneof![
            3 => (key, any::<i64>()).prop_map(|(k, v)| Op::Insert(k, v)),
            1 => key.prop_map(Op::Remove),
        ]
    }

    fn pairs(params: &Params) -> Vec<(String, Value)> {
        params.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    fn map_pairs(map: &Map<String, Value>) -> Vec<(String, Value)> {
        map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    proptest! {
        /// Order, replaced and removed values, lookups and equality as
        /// serde's order-preserving map has them.
        #[test]
        fn params_behave_as_serde_map(ops in proptest::collection::vec(op(), 0..24)) {
            let mut params = Params::new();
            let mut map = Map::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => prop_assert_eq!(
                        params.insert(k.clone(), Value::from(v)),
                        map.insert(k, Value::from(v))
                    ),
                    Op::Remove(k) => prop_assert_eq!(params.remove(&k), map.remove(&k)),
                }
                prop_assert_eq!(pairs(&params), map_pairs(&map));
                for k in ["a", "b", "c", "binary_data_size"] {
                    prop_assert_eq!(params.get(k), map.get(k));
                    prop_assert_eq!(params.contains_key(k), map.contains_key(k));
                }
                prop_assert_eq!(params.len(), map.len());
                prop_assert_eq!(Params::from(map.clone()), params.clone());
                prop_assert_eq!(params.clone().into_map(), map.clone());
                let reversed: Params = map_pairs(&map).into_iter().rev().collect();
                prop_assert_eq!(&reversed, &params);
            }
        }
    }

    #[test]
    fn params_differ_by_value_or_member() {
        let p = |pairs: &[(&str, i64)]| -> Params {
            pairs
                .iter()
                .map(|&(k, v)| (k.to_owned(), Value::from(v)))
                .collect()
        };
        assert_eq!(p(&[("a", 1), ("b", 2)]), p(&[("b", 2), ("a", 1)]));
        assert_ne!(p(&[("a", 1), ("b", 2)]), p(&[("a", 1), ("b", 3)]));
        assert_ne!(p(&[("a", 1)]), p(&[("a", 1), ("b", 2)]));
        assert_ne!(p(&[("a", 1), ("b", 2)]), p(&[("a", 1), ("c", 2)]));
    }
}
