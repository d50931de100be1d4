//! One tensor's head (name, datatype, shape, parameters) between its gRPC
//! form and a V2 [`TensorEntry`], and the checks of its data against it.
//! Shared by requests (inputs) and responses (outputs).

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::{Map, Value};

use super::contents;
use super::error::{InferError, TensorProblem, noun};
use super::params;
use super::proto::inference::{InferParameter, InferTensorContents};
use crate::codec::v2::{DocKind, DocLimits, EntryData, Params, TensorEntry};
use crate::tensor::{self, DataType, Shape, bytes_layout};

/// The parameter that puts a tensor in shared memory.
pub const SHARED_MEMORY_REGION: &str = "shared_memory_region";
/// Tensor parameters of the V2 HTTP binary extension, with no meaning over
/// gRPC: never sent to a gRPC peer.
pub const HTTP_ONLY_TENSOR_PARAMS: [&str; 2] = ["binary_data_size", "binary_data"];

/// A gRPC tensor's head, before its data is placed.
#[derive(Debug)]
pub struct GrpcHead<'a> {
    pub kind: DocKind,
    pub index: usize,
    pub name: &'a str,
    pub datatype: &'a str,
    pub shape: &'a [i64],
    pub parameters: &'a BTreeMap<String, InferParameter>,
}

impl GrpcHead<'_> {
    fn error(&self, problem: TensorProblem) -> InferError {
        InferError::tensor(self.kind, self.index, self.name, problem)
    }

    /// The checked V2 entry (its data still to be set) and its element
    /// count: a known datatype, no negative dimension, the shape within the
    /// limits and its product within 64 bits.
    pub fn entry(&self, limits: &DocLimits) -> Result<(TensorEntry, u64), InferError> {
        let datatype = DataType::from_v2_name(self.datatype)
            .ok_or_else(|| self.error(TensorProblem::UnknownDatatype(self.datatype.to_owned())))?;
        if self.shape.len() > limits.max_dims {
            return Err(self.error(TensorProblem::TooManyDims {
                dims: self.shape.len(),
                limit: limits.max_dims,
            }));
        }
        let dims = self
            .shape
            .iter()
            .map(|&d| u64::try_from(d))
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|_| self.error(TensorProblem::NegativeDim(self.shape.to_vec())))?;
        let shape = Shape::new(dims);
        let count = tensor::element_count(shape.dims())
            .ok_or_else(|| self.error(TensorProblem::Overflow(shape.clone())))?;
        if count > limits.max_elements {
            return Err(self.error(TensorProblem::TooManyElements {
                shape,
                count,
                limit: limits.max_elements,
            }));
        }
        let parameters: Params = params::to_json(self.parameters, &HTTP_ONLY_TENSOR_PARAMS)
            .map_err(|e| self.error(TensorProblem::Parameter(e)))?;
        let data = if parameters.contains_key(SHARED_MEMORY_REGION) {
            EntryData::SharedMemory
        } else {
            EntryData::Binary { size: 0 }
        };
        let entry = TensorEntry {
            name: self.name.to_owned(),
            datatype,
            shape,
            parameters,
            extra: Vec::new(),
            data,
        };
        Ok((entry, count))
    }

    /// `raw` checked against the entry: exactly the shape's bytes for a
    /// fixed-size type, exactly its count of well-formed elements for BYTES.
    pub fn check_raw(
        &self,
        entry: &TensorEntry,
        count: u64,
        raw: &Bytes,
    ) -> Result<(), InferError> {
        match entry.datatype.fixed_size() {
            Some(size) => {
                // `count` fits the element limit, far below u64::MAX / 8.
                let expected = count.saturating_mul(size as u64);
                if expected != raw.len() as u64 {
                    return Err(self.error(TensorProblem::RawSize {
                        dtype: entry.datatype,
                        shape: entry.shape.clone(),
                        expected,
                        actual: raw.len() as u64,
                    }));
                }
                Ok(())
            }
            None => bytes_layout::validate(raw, count)
                .map_err(|e| self.error(TensorProblem::RawBytes(e))),
        }
    }

    /// Typed contents in the V2 binary layout.
    pub fn typed(
        &self,
        entry: &TensorEntry,
        count: u64,
        c: &InferTensorContents,
    ) -> Result<Bytes, InferError> {
        contents::to_binary(entry.datatype, count, c).map_err(|e| self.error(e.into()))
    }

    pub fn missing_raw(&self, raw: usize, tensors: usize) -> InferError {
        self.error(TensorProblem::MissingRaw {
            noun: noun(self.kind),
            raw,
            tensors,
        })
    }

    pub fn problem(&self, problem: TensorProblem) -> InferError {
        self.error(problem)
    }
}

/// A V2 entry's head in gRPC terms: its shape as int64 dimensions and its
/// parameters without the HTTP-only ones.
pub fn grpc_head(
    kind: DocKind,
    index: usize,
    entry: &TensorEntry,
) -> Result<(Vec<i64>, BTreeMap<String, InferParameter>), InferError> {
    let error = |p| InferError::tensor(kind, index, &entry.name, p);
    let shape = entry
        .shape
        .dims()
        .iter()
        .map(|&d| i64::try_from(d).map_err(|_| error(TensorProblem::DimTooLarge(d))))
        .collect::<Result<Vec<i64>, _>>()?;
    let parameters = params::from_json(&entry.parameters, &HTTP_ONLY_TENSOR_PARAMS)
        .map_err(|e| error(TensorProblem::Parameter(e)))?;
    Ok((shape, parameters))
}

/// The size to record for data of `len` bytes (shared memory keeps its
/// marker).
pub fn place(entry: &mut TensorEntry, len: usize) {
    if entry.data != EntryData::SharedMemory {
        entry.data = EntryData::Binary { size: len as u64 };
    }
}

/// A top-level V2 member that must be a string (`id`, `model_name`, ...),
/// or `""` when absent or `null` (KServe writes `"model_version": null`).
pub fn string_member(members: &[(String, Value)], key: &str) -> Result<String, InferError> {
    match members.iter().find(|(k, _)| k == key).map(|(_, v)| v) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(InferError::Member(format!(
            "member \"{key}\" must be a string, not {other}"
        ))),
    }
}

/// The top-level `parameters` object (empty when absent or `null`).
pub fn parameters_member(members: &[(String, Value)]) -> Result<Map<String, Value>, InferError> {
    match members
        .iter()
        .find(|(k, _)| k == "parameters")
        .map(|(_, v)| v)
    {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(other) => Err(InferError::Member(format!(
            "member \"parameters\" must be an object, not {other}"
        ))),
    }
}
