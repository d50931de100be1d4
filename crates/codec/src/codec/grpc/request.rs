//! `ModelInferRequest` and the V2 request form the gateway's core uses:
//! a [`Document`] (`id`, `parameters` and `outputs` members; each input a
//! [`TensorEntry`](crate::codec::v2::model::TensorEntry) head) and each input's data in the V2 binary layout as
//! `Bytes` pieces.
//!
//! From gRPC, `raw_input_contents` entries become the pieces as they are
//! (slices of the message, never copied) and typed contents are converted.
//! To gRPC, the pieces become `raw_input_contents` without a copy: the
//! message is written as pieces ([`PieceWriter`]). Parameters of the HTTP
//! binary extension (`binary_data_size`, `binary_data`,
//! `binary_data_output`) mean nothing over gRPC and are dropped both ways;
//! every other parameter (`classification`, shared memory, sequence ids)
//! passes.

use bytes::Bytes;
use prost::Message;
use serde_json::{Map, Value};

use super::error::{InferError, noun};
use super::head::{self, GrpcHead};
use super::params;
use super::proto::inference::ModelInferRequest;
use super::proto::inference::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};
use super::wire::PieceWriter;
use crate::codec::v2::{DocKind, DocLimits, Document, EntryData};

/// Request parameters of the HTTP binary extension.
const HTTP_ONLY_REQUEST_PARAMS: [&str; 1] = ["binary_data_output"];
/// `raw_input_contents`'s field number.
const RAW_INPUT_CONTENTS: u32 = 7;

/// A `ModelInferRequest` in the V2 form.
#[derive(Clone, Debug, PartialEq)]
pub struct V2Request {
    pub model_name: String,
    /// `None` when the request names no version.
    pub model_version: Option<String>,
    /// `id`, `parameters` and `outputs` members (each only when given) and
    /// each input's head; an input's data is [`EntryData::Binary`] with its
    /// size, or [`EntryData::SharedMemory`].
    pub header: Document,
    /// Each input's data in the V2 binary layout, in input order (empty for
    /// shared memory and for empty tensors).
    pub data: Vec<Vec<Bytes>>,
}

/// Decodes a `ModelInferRequest` and converts it; `raw_input_contents`
/// stay slices of `message`.
pub fn decode_request(message: Bytes, limits: &DocLimits) -> Result<V2Request, InferError> {
    let request = ModelInferRequest::decode(message)
        .map_err(|e| InferError::decode("ModelInferRequest", &e))?;
    request_to_v2(request, limits)
}

/// Converts a decoded `ModelInferRequest`.
pub fn request_to_v2(
    request: ModelInferRequest,
    limits: &DocLimits,
) -> Result<V2Request, InferError> {
    let mut members = Vec::with_capacity(3);
    if !request.id.is_empty() {
        members.push(("id".to_owned(), Value::String(request.id)));
    }
    let parameters: Map<_, _> = params::to_json(&request.parameters, &HTTP_ONLY_REQUEST_PARAMS)?;
    if !parameters.is_empty() {
        members.push(("parameters".to_owned(), Value::Object(parameters)));
    }
    let tensors_at = members.len();
    if !request.outputs.is_empty() {
        members.push(("outputs".to_owned(), requested_outputs(&request.outputs)?));
    }
    let raw = request.raw_input_contents;
    let takes_raw = request
        .inputs
        .iter()
        .filter(|i| i.contents.is_none() && !i.parameters.contains_key(head::SHARED_MEMORY_REGION))
        .count();
    let mut raw_iter = raw.iter();
    let mut tensors = Vec::with_capacity(request.inputs.len());
    let mut data = Vec::with_capacity(request.inputs.len());
    for (index, input) in request.inputs.iter().enumerate() {
        let h = GrpcHead {
            kind: DocKind::Request,
            index,
            name: &input.name,
            datatype: &input.datatype,
            shape: &input.shape,
            parameters: &input.parameters,
        };
        let (mut entry, count) = h.entry(limits)?;
        let bytes = match (&entry.data, &input.contents) {
            (EntryData::SharedMemory, Some(_)) => {
                return Err(h.problem(super::error::TensorProblem::SharedMemoryAndContents));
            }
            (EntryData::SharedMemory, None) => None,
            (_, Some(_)) if !raw.is_empty() => {
                return Err(h.problem(super::error::TensorProblem::RawAndTyped {
                    noun: noun(DocKind::Request),
                }));
            }
            (_, Some(c)) => Some(h.typed(&entry, count, c)?),
            (_, None) if raw.is_empty() => {
                return Err(h.problem(super::error::TensorProblem::NoData));
            }
            (_, None) => {
                let r = raw_iter
                    .next()
                    .ok_or_else(|| h.missing_raw(raw.len(), takes_raw))?;
                h.check_raw(&entry, count, r)?;
                Some(r.clone())
            }
        };
        let pieces = bytes
            .filter(|b| !b.is_empty())
            .into_iter()
            .collect::<Vec<_>>();
        head::place(&mut entry, pieces.iter().map(Bytes::len).sum());
        tensors.push(entry);
        data.push(pieces);
    }
    if raw.len() > takes_raw {
        return Err(InferError::ExtraRaw {
            noun: noun(DocKind::Request),
            raw: raw.len(),
            tensors: takes_raw,
        });
    }
    Ok(V2Request {
        model_name: request.model_name,
        model_version: Some(request.model_version).filter(|v| !v.is_empty()),
        header: Document {
            kind: DocKind::Request,
            members,
            tensors_at,
            tensors,
        },
        data,
    })
}

/// `outputs` as V2 JSON: `[{"name": "X", "parameters": {...}}]`.
fn requested_outputs(outputs: &[InferRequestedOutputTensor]) -> Result<Value, InferError> {
    let mut list = Vec::with_capacity(outputs.len());
    for o in outputs {
        let mut entry = Map::new();
        entry.insert("name".to_owned(), Value::String(o.name.clone()));
        let p: Map<_, _> = params::to_json(&o.parameters, &head::HTTP_ONLY_TENSOR_PARAMS)?;
        if !p.is_empty() {
            entry.insert("parameters".to_owned(), Value::Object(p));
        }
        list.push(Value::Object(entry));
    }
    Ok(Value::Array(list))
}

/// The V2 `outputs` member as requested gRPC outputs.
fn grpc_outputs(header: &Document) -> Result<Vec<InferRequestedOutputTensor>, InferError> {
    let Some(outputs) = header.member("outputs") else {
        return Ok(Vec::new());
    };
    let bad = || {
        InferError::Member(
            "member \"outputs\" must be a list of {\"name\", \"parameters\"} objects".to_owned(),
        )
    };
    let list = outputs.as_array().ok_or_else(bad)?;
    list.iter()
        .map(|o| {
            let name = o.get("name").and_then(Value::as_str).ok_or_else(bad)?;
            let parameters = match o.get("parameters") {
                None => Default::default(),
                Some(Value::Object(p)) => params::from_json(p, &head::HTTP_ONLY_TENSOR_PARAMS)?,
                Some(_) => return Err(bad()),
            };
            Ok(InferRequestedOutputTensor {
                name: name.to_owned(),
                parameters,
            })
        })
        .collect()
}

/// A V2 request as `ModelInferRequest` bytes, in pieces: each input's data
/// (not in shared memory) becomes its `raw_input_contents` entry, made of
/// the same `Bytes` as `data`. The message's fields are in field order, as
/// any protobuf encoder writes them.
pub fn encode_request(
    model_name: &str,
    model_version: Option<&str>,
    header: &Document,
    data: &[Vec<Bytes>],
) -> Result<Vec<Bytes>, InferError> {
    if data.len() != header.tensors.len() {
        return Err(InferError::Member(format!(
            "{} inputs but data for {}",
            header.tensors.len(),
            data.len()
        )));
    }
    let mut inputs = Vec::with_capacity(header.tensors.len());
    for (index, entry) in header.tensors.iter().enumerate() {
        let (shape, parameters) = head::grpc_head(DocKind::Request, index, entry)?;
        inputs.push(InferInputTensor {
            name: entry.name.clone(),
            datatype: entry.datatype.v2_name().to_owned(),
            shape,
            parameters,
            contents: None,
        });
    }
    let message = ModelInferRequest {
        model_name: model_name.to_owned(),
        model_version: model_version.unwrap_or_default().to_owned(),
        id: head::string_member(&header.members, "id")?,
        parameters: params::from_json(
            &head::parameters_member(&header.members)?,
            &HTTP_ONLY_REQUEST_PARAMS,
        )?,
        inputs,
        outputs: grpc_outputs(header)?,
        raw_input_contents: Vec::new(),
    };
    let mut w = PieceWriter::new();
    w.message(&message);
    for (entry, pieces) in header.tensors.iter().zip(data) {
        if entry.data != EntryData::SharedMemory {
            w.bytes_field(RAW_INPUT_CONTENTS, pieces);
        }
    }
    Ok(w.finish())
}

#[cfg(test)]
mod tests;
