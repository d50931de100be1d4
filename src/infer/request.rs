//! What a frontend hands to the backend client and gets back.
//!
//! A request is the backend model it is for, a V2 header (pass-through
//! members such as `id`, `parameters` and `outputs`, and each input's name,
//! datatype, shape and parameters) and each input's data in the V2 binary
//! layout, held as `Bytes` slices of what the client sent wherever the
//! layouts agree. A reply is the same for outputs. Frontends build these
//! from their own protocol; the backend client never sees that protocol.

use bytes::Bytes;

use crate::codec::pieces::concat;
use crate::codec::v2::{DocKind, Document, TensorEntry};

/// A backend model, and optionally one version of it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ModelRef {
    pub name: String,
    pub version: Option<String>,
}

impl ModelRef {
    pub fn new(name: impl Into<String>) -> ModelRef {
        ModelRef {
            name: name.into(),
            version: None,
        }
    }

    /// `/v2/models/{name}[/versions/{v}]`, each segment percent-encoded.
    pub fn path(&self) -> String {
        crate::codec::v2::path::model_base(&self.name, self.version.as_deref())
    }

    /// The backend's infer endpoint for this model.
    pub fn infer_path(&self) -> String {
        let mut p = self.path();
        p.push_str("/infer");
        p
    }
}

/// Where one tensor's bytes are.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorData {
    /// The V2 binary layout, in one or more slices.
    Pieces(Vec<Bytes>),
    /// In a shared-memory region the header names: nothing in the body.
    SharedMemory,
}

impl TensorData {
    /// Bytes in the body.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u64 {
        match self {
            TensorData::Pieces(p) => p.iter().map(|b| b.len() as u64).sum(),
            TensorData::SharedMemory => 0,
        }
    }

    /// The bytes in one buffer (a copy only when split in several pieces).
    pub fn joined(&self) -> Bytes {
        match self {
            TensorData::Pieces(p) => concat(p.clone()),
            TensorData::SharedMemory => Bytes::new(),
        }
    }

    pub fn pieces(&self) -> &[Bytes] {
        match self {
            TensorData::Pieces(p) => p,
            TensorData::SharedMemory => &[],
        }
    }
}

/// An inference request, protocol-neutral.
#[derive(Clone, Debug)]
pub(crate) struct InferRequest {
    pub model: ModelRef,
    /// The V2 request header: members passed through to the backend and
    /// each input's head. Its entries' [`EntryData`](crate::codec::v2::EntryData)
    /// is ignored: [`InferRequest::data`] says where the bytes are.
    pub header: Document,
    /// Each input's data, in header order.
    pub data: Vec<TensorData>,
}

impl InferRequest {
    /// A request with no pass-through members: what frontends other than
    /// V2 build.
    pub(crate) fn new(model: ModelRef, inputs: Vec<(TensorEntry, TensorData)>) -> InferRequest {
        let (tensors, data) = inputs.into_iter().unzip();
        InferRequest {
            model,
            header: Document {
                kind: DocKind::Request,
                members: Vec::new(),
                tensors_at: 0,
                tensors,
            },
            data,
        }
    }

    /// Elements in every input.
    pub(crate) fn element_count(&self) -> u64 {
        self.header.element_count()
    }
}

/// A backend's successful reply, protocol-neutral, with every output's data
/// at hand.
#[derive(Clone, Debug)]
pub struct InferReply {
    /// The V2 response header: members (`id`, `model_name`,
    /// `model_version`, ...) and each output's head.
    pub header: Document,
    /// Each output's data, in header order.
    pub data: Vec<TensorData>,
}

impl InferReply {
    /// Each output's head and data, in the backend's order.
    pub fn outputs(&self) -> impl Iterator<Item = (&TensorEntry, &TensorData)> {
        self.header.tensors.iter().zip(&self.data)
    }

    /// Elements in every output.
    pub fn element_count(&self) -> u64 {
        self.header.element_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_paths_are_encoded() {
        assert_eq!(
            ModelRef::new("simple").infer_path(),
            "/v2/models/simple/infer"
        );
        let m = ModelRef {
            name: "a b/c".into(),
            version: Some("2".into()),
        };
        assert_eq!(m.infer_path(), "/v2/models/a%20b%2Fc/versions/2/infer");
        assert_eq!(m.path(), "/v2/models/a%20b%2Fc/versions/2");
    }
}
