//! `ModelInfer` on the demo models: the request through the codec's gRPC
//! conversion (raw or typed contents into the V2 layout), the same model
//! code, checks and output selection as the HTTP demo, and the response as
//! Triton answers it (`raw_output_contents`, one per output in order).

use std::time::Instant;

use bytes::{Bytes, BytesMut};

use super::stats::Stats;
use super::status::refused;
use crate::catalog::{self, Model, Named, VERSION};
use crate::error::DemoError;
use crate::infer::{select, wanted_outputs};
use tensorgate_codec::codec::grpc::proto::inference::model_infer_response::InferOutputTensor;
use tensorgate_codec::codec::grpc::proto::inference::{ModelInferRequest, ModelInferResponse};
use tensorgate_codec::codec::grpc::request_to_v2;
use tensorgate_codec::codec::v2::DocLimits;
use tensorgate_codec::tensor::Tensor;

/// The model a request names, or Triton's error for it.
pub fn lookup(name: &str, version: &str) -> Result<&'static Model, DemoError> {
    let model = catalog::find(name).ok_or_else(|| DemoError::UnknownModel(name.to_owned()))?;
    if !version.is_empty() && version != VERSION {
        return Err(DemoError::UnknownVersion {
            model: name.to_owned(),
            version: version.to_owned(),
        });
    }
    Ok(model)
}

/// A request's id as Triton prefixes its errors with: `None` when empty.
pub fn request_id(request: &ModelInferRequest) -> Option<String> {
    Some(request.id.clone()).filter(|id| !id.is_empty())
}

/// Runs one non-decoupled inference, counted in `stats`.
pub fn infer(stats: &Stats, request: ModelInferRequest) -> Result<ModelInferResponse, DemoError> {
    let model = lookup(&request.model_name, &request.model_version)?;
    if model.decoupled() {
        return Err(DemoError::Decoupled);
    }
    let started = Instant::now();
    let result = run(model, request);
    stats.record(
        model,
        result.as_ref().map(|(_, batch)| *batch).ok(),
        started.elapsed(),
    );
    result.map(|(response, _)| response)
}

/// The response and the batch size it counts for.
fn run(
    model: &'static Model,
    request: ModelInferRequest,
) -> Result<(ModelInferResponse, u64), DemoError> {
    let id = request_id(&request);
    let (wanted, inputs) = read(model, id.as_deref(), request)?;
    let batch = batch_size(model, &inputs);
    let outputs = model.run(id.as_deref(), inputs)?;
    let selected = select(model, &wanted, outputs)?;
    let outputs = selected.into_iter().map(|(name, t, _)| (name, t)).collect();
    Ok((response(model, id, outputs), batch))
}

/// The request's requested outputs and its inputs as tensors.
pub fn read(
    model: &Model,
    id: Option<&str>,
    request: ModelInferRequest,
) -> Result<(tensorgate_codec::codec::v2::OutputSelection, Vec<Named>), DemoError> {
    let v2 = request_to_v2(request, &DocLimits::default()).map_err(|e| refused(model, id, e))?;
    if v2.header.uses_shared_memory() {
        return Err(DemoError::Invalid(
            "shared memory inputs are not supported by the demo server".to_owned(),
        ));
    }
    let wanted = wanted_outputs(&v2.header)?;
    let mut inputs = Vec::with_capacity(v2.header.tensors.len());
    for (entry, pieces) in v2.header.tensors.into_iter().zip(v2.data) {
        let tensor = Tensor::new(entry.datatype, entry.shape, join(pieces))
            .map_err(|e| DemoError::Framing(format!("input '{}': {e}", entry.name)))?;
        inputs.push((entry.name, tensor));
    }
    Ok((wanted, inputs))
}

/// A response of `outputs` in Triton's form.
pub fn response(model: &Model, id: Option<String>, outputs: Vec<Named>) -> ModelInferResponse {
    let mut response = ModelInferResponse {
        model_name: model.name.to_owned(),
        model_version: VERSION.to_owned(),
        id: id.unwrap_or_default(),
        ..Default::default()
    };
    for (name, t) in outputs {
        response.outputs.push(InferOutputTensor {
            name,
            datatype: t.dtype.v2_name().to_owned(),
            shape: t
                .shape
                .dims()
                .iter()
                .map(|&d| i64::try_from(d).unwrap_or(i64::MAX))
                .collect(),
            ..Default::default()
        });
        response.raw_output_contents.push(t.data);
    }
    response
}

/// Inferences a request counts for: its batch for a batching model, else 1.
fn batch_size(model: &Model, inputs: &[Named]) -> u64 {
    if model.max_batch_size == 0 {
        return 1;
    }
    inputs
        .first()
        .and_then(|(_, t)| t.shape.dims().first().copied())
        .unwrap_or(1)
}

/// One tensor's pieces in one buffer (they are one slice, or none, as the
/// codec gives them).
fn join(pieces: Vec<Bytes>) -> Bytes {
    if pieces.len() <= 1 {
        return pieces.into_iter().next().unwrap_or_default();
    }
    let mut out = BytesMut::with_capacity(pieces.iter().map(Bytes::len).sum());
    for p in pieces {
        out.extend_from_slice(&p);
    }
    out.freeze()
}
