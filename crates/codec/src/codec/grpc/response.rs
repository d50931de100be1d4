//! `ModelInferResponse` and the V2 response form: a [`Document`]
//! (`id`, `model_name`, `model_version`, `parameters` members; each output
//! a [`TensorEntry`](crate::codec::v2::model::TensorEntry) head) and each output's data in the V2 binary layout
//! as `Bytes` pieces, both ways without copying tensor data.
//!
//! Triton answers with `raw_output_contents`, one entry per output in
//! output order; other servers (KServe's) answer with typed contents, which
//! are converted. A response written here always uses raw contents, one
//! entry per output (an empty one for an output in shared memory, so that
//! entry `i` is output `i`'s).

use bytes::Bytes;
use prost::Message;
use serde_json::Value;

use super::error::{InferError, TensorProblem, noun};
use super::head::{self, GrpcHead};
use super::params;
use super::proto::inference::model_infer_response::InferOutputTensor;
use super::proto::inference::{ModelInferResponse, ModelStreamInferResponse};
use super::wire::PieceWriter;
use crate::codec::v2::{DocKind, DocLimits, Document, EntryData};

/// `raw_output_contents`'s field number.
const RAW_OUTPUT_CONTENTS: u32 = 6;
/// `ModelStreamInferResponse.infer_response`'s field number.
const STREAM_INFER_RESPONSE: u32 = 2;

/// A `ModelInferResponse` in the V2 form.
#[derive(Clone, Debug, PartialEq)]
pub struct V2Response {
    /// `id` (when not empty), `model_name`, `model_version` and
    /// `parameters` (when not empty) members, and each output's head.
    pub header: Document,
    /// Each output's data in the V2 binary layout, in output order.
    pub data: Vec<Vec<Bytes>>,
}

/// Decodes a `ModelInferResponse` and converts it; raw contents stay
/// slices of `message`.
pub fn decode_response(message: Bytes, limits: &DocLimits) -> Result<V2Response, InferError> {
    let response = ModelInferResponse::decode(message)
        .map_err(|e| InferError::decode("ModelInferResponse", &e))?;
    response_to_v2(response, limits)
}

/// Converts a decoded `ModelInferResponse`.
pub fn response_to_v2(
    response: ModelInferResponse,
    limits: &DocLimits,
) -> Result<V2Response, InferError> {
    let mut members = Vec::with_capacity(4);
    if !response.id.is_empty() {
        members.push(("id".to_owned(), Value::String(response.id)));
    }
    members.push(("model_name".to_owned(), Value::String(response.model_name)));
    members.push((
        "model_version".to_owned(),
        Value::String(response.model_version),
    ));
    let parameters: serde_json::Map<_, _> = params::to_json(&response.parameters, &[])?;
    if !parameters.is_empty() {
        members.push(("parameters".to_owned(), Value::Object(parameters)));
    }
    let raw = response.raw_output_contents;
    let in_shm = |o: &InferOutputTensor| o.parameters.contains_key(head::SHARED_MEMORY_REGION);
    let takes_raw = response
        .outputs
        .iter()
        .filter(|o| o.contents.is_none() && !in_shm(o))
        .count();
    // Entry i is output i's (Triton), or entries skip outputs in shared
    // memory (as raw_input_contents do).
    let by_position = raw.len() == response.outputs.len();
    if !by_position && raw.len() > takes_raw {
        return Err(InferError::ExtraRaw {
            noun: noun(DocKind::Response),
            raw: raw.len(),
            tensors: takes_raw,
        });
    }
    let mut next_raw = 0;
    let mut tensors = Vec::with_capacity(response.outputs.len());
    let mut data = Vec::with_capacity(response.outputs.len());
    for (index, output) in response.outputs.iter().enumerate() {
        let h = GrpcHead {
            kind: DocKind::Response,
            index,
            name: &output.name,
            datatype: &output.datatype,
            shape: &output.shape,
            parameters: &output.parameters,
        };
        let (mut entry, count) = h.entry(limits)?;
        let slot = if by_position { Some(index) } else { None };
        let bytes = match (&entry.data, &output.contents) {
            (EntryData::SharedMemory, Some(_)) => {
                return Err(h.problem(TensorProblem::SharedMemoryAndContents));
            }
            (EntryData::SharedMemory, None) => None,
            (_, Some(_)) if slot.is_some_and(|i| !raw[i].is_empty()) => {
                return Err(h.problem(TensorProblem::RawAndTyped {
                    noun: noun(DocKind::Response),
                }));
            }
            (_, Some(c)) => Some(h.typed(&entry, count, c)?),
            (_, None) => {
                let i = slot.unwrap_or(next_raw);
                next_raw += 1;
                let r = raw
                    .get(i)
                    .ok_or_else(|| h.missing_raw(raw.len(), takes_raw))?;
                h.check_raw(&entry, count, r)?;
                Some(r.clone())
            }
        };
        let pieces: Vec<Bytes> = bytes.filter(|b| !b.is_empty()).into_iter().collect();
        head::place(&mut entry, pieces.iter().map(Bytes::len).sum());
        tensors.push(entry);
        data.push(pieces);
    }
    Ok(V2Response {
        header: Document {
            kind: DocKind::Response,
            tensors_at: members.len(),
            members,
            tensors,
        },
        data,
    })
}

/// A V2 response as `ModelInferResponse` bytes, in pieces: one
/// `raw_output_contents` entry per output, made of the same `Bytes` as
/// `data`.
pub fn encode_response(header: &Document, data: &[Vec<Bytes>]) -> Result<Vec<Bytes>, InferError> {
    Ok(write_response(header, data)?.finish())
}

/// A V2 response as one message of a `ModelStreamInfer` stream
/// (`ModelStreamInferResponse.infer_response`), in pieces.
pub fn encode_stream_response(
    header: &Document,
    data: &[Vec<Bytes>],
) -> Result<Vec<Bytes>, InferError> {
    let inner = write_response(header, data)?;
    // The field's key and length, then the response itself.
    let mut pieces = key_and_len(STREAM_INFER_RESPONSE, inner.len());
    pieces.extend(inner.finish());
    Ok(pieces)
}

/// A stream response carrying only an error, as Triton sends a failed
/// request's error on `ModelStreamInfer`.
pub fn encode_stream_error(message: &str) -> Bytes {
    ModelStreamInferResponse {
        error_message: message.to_owned(),
        infer_response: None,
    }
    .encode_to_vec()
    .into()
}

fn key_and_len(field: u32, len: u64) -> Vec<Bytes> {
    let mut buf = bytes::BytesMut::with_capacity(11);
    prost::encoding::encode_key(field, prost::encoding::WireType::LengthDelimited, &mut buf);
    prost::encoding::encode_varint(len, &mut buf);
    vec![buf.freeze()]
}

fn write_response(header: &Document, data: &[Vec<Bytes>]) -> Result<PieceWriter, InferError> {
    if data.len() != header.tensors.len() {
        return Err(InferError::Member(format!(
            "{} outputs but data for {}",
            header.tensors.len(),
            data.len()
        )));
    }
    let mut outputs = Vec::with_capacity(header.tensors.len());
    for (index, entry) in header.tensors.iter().enumerate() {
        let (shape, parameters) = head::grpc_head(DocKind::Response, index, entry)?;
        outputs.push(InferOutputTensor {
            name: entry.name.clone(),
            datatype: entry.datatype.v2_name().to_owned(),
            shape,
            parameters,
            contents: None,
        });
    }
    let message = ModelInferResponse {
        model_name: head::string_member(&header.members, "model_name")?,
        model_version: head::string_member(&header.members, "model_version")?,
        id: head::string_member(&header.members, "id")?,
        parameters: params::from_json(&head::parameters_member(&header.members)?, &[])?,
        outputs,
        raw_output_contents: Vec::new(),
    };
    let mut w = PieceWriter::new();
    w.message(&message);
    for (entry, pieces) in header.tensors.iter().zip(data) {
        let pieces: &[Bytes] = if entry.data == EntryData::SharedMemory {
            &[]
        } else {
            pieces
        };
        w.bytes_field(RAW_OUTPUT_CONTENTS, pieces);
    }
    Ok(w)
}

#[cfg(test)]
mod tests;
