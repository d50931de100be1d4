//! `ModelStreamInfer`: the requests of one stream answered in order, as
//! Triton does for each: a non-decoupled model's one response, the
//! decoupled `repeat` model's `count` responses `delay_ms` apart (the same
//! inputs, defaults and caps as its `generate_stream`), each response with
//! the `triton_final_response` parameter Triton adds, and a request that
//! fails as a message carrying only its `error_message` (the stream goes
//! on).

use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{mpsc, watch};
use tokio_stream::StreamExt;
use tonic::{Status, Streaming};

use super::infer::{self, lookup, request_id};
use super::stats::Stats;
use crate::catalog::{Kind, Model, Named};
use crate::error::DemoError;
use crate::generate::{DEFAULT_COUNT, DEFAULT_DELAY_MS, MAX_COUNT, MAX_DELAY_MS};
use tensorgate_codec::codec::grpc::proto::inference::infer_parameter::ParameterChoice;
use tensorgate_codec::codec::grpc::proto::inference::{
    InferParameter, ModelInferRequest, ModelInferResponse, ModelStreamInferResponse,
};
use tensorgate_codec::tensor::{BytesElements, DataType, Shape, Tensor};

/// What the stream's task sends the client.
pub type Sender = mpsc::Sender<Result<ModelStreamInferResponse, Status>>;

/// Answers the requests of `input` on `out` until the client ends its side,
/// goes away, or the server drains.
pub async fn serve(
    stats: std::sync::Arc<Stats>,
    mut input: Streaming<ModelInferRequest>,
    out: Sender,
    mut draining: watch::Receiver<bool>,
) {
    loop {
        let next = tokio::select! {
            next = input.next() => next,
            _ = draining.wait_for(|d| *d) => return,
        };
        let request = match next {
            None => return,
            Some(Ok(request)) => request,
            Some(Err(status)) => {
                let _ = out.send(Err(status)).await;
                return;
            }
        };
        let sent = match lookup(&request.model_name, &request.model_version) {
            Ok(model) if model.kind == Kind::Repeat => {
                repeat(&stats, model, request, &out, &mut draining).await
            }
            Ok(_) | Err(_) => {
                let message = match infer::infer(&stats, request) {
                    Ok(response) => answer(response, true),
                    Err(e) => error(&e),
                };
                out.send(Ok(message)).await.is_ok()
            }
        };
        if !sent {
            return;
        }
    }
}

fn answer(mut response: ModelInferResponse, last: bool) -> ModelStreamInferResponse {
    response.parameters.insert(
        "triton_final_response".to_owned(),
        InferParameter {
            parameter_choice: Some(ParameterChoice::BoolParam(last)),
        },
    );
    ModelStreamInferResponse {
        error_message: String::new(),
        infer_response: Some(response),
    }
}

fn error(e: &DemoError) -> ModelStreamInferResponse {
    ModelStreamInferResponse {
        error_message: e.to_string(),
        infer_response: None,
    }
}

/// `repeat`'s responses for one request; `false` when the client went
/// away.
async fn repeat(
    stats: &Stats,
    model: &'static Model,
    request: ModelInferRequest,
    out: &Sender,
    draining: &mut watch::Receiver<bool>,
) -> bool {
    let started = Instant::now();
    let empty_final = matches!(
        request
            .parameters
            .get("triton_enable_empty_final_response")
            .and_then(|p| p.parameter_choice.as_ref()),
        Some(ParameterChoice::BoolParam(true))
    );
    let id = request_id(&request);
    let plan = infer::read(model, id.as_deref(), request)
        .and_then(|(_, inputs)| model.check_inputs(id.as_deref(), &inputs).map(|()| inputs))
        .and_then(|inputs| Plan::read(&inputs));
    stats.record(model, plan.as_ref().ok().map(|_| 1), started.elapsed());
    let plan = match plan {
        Ok(plan) => plan,
        Err(e) => return out.send(Ok(error(&e))).await.is_ok(),
    };
    if plan.count <= 0 {
        if !empty_final {
            return true;
        }
        let response = infer::response(model, id, Vec::new());
        return out.send(Ok(answer(response, true))).await.is_ok();
    }
    for i in 0..plan.count {
        if i > 0 && !plan.delay.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(plan.delay) => {}
                _ = draining.wait_for(|d| *d) => return false,
            }
        }
        let response = infer::response(model, id.clone(), plan.outputs(i));
        if out
            .send(Ok(answer(response, i == plan.count - 1)))
            .await
            .is_err()
        {
            return false;
        }
    }
    true
}

/// What one `repeat` request asks for.
struct Plan {
    text: Bytes,
    count: i64,
    delay: Duration,
}

impl Plan {
    /// From inputs already checked against the model's declaration.
    fn read(inputs: &[Named]) -> Result<Plan, DemoError> {
        let get = |name: &str| inputs.iter().find(|(n, _)| n == name).map(|(_, t)| t);
        let int = |name: &str| {
            get(name)
                .and_then(|t| t.data.first_chunk::<4>())
                .map(|b| i64::from(i32::from_le_bytes(*b)))
        };
        let text = get("text_input")
            .and_then(|t| BytesElements::new(&t.data).next())
            .and_then(Result::ok)
            .map(Bytes::copy_from_slice)
            .ok_or_else(|| {
                DemoError::Invalid("input 'text_input' is required by model 'repeat'".into())
            })?;
        Ok(Plan {
            text,
            count: int("count").unwrap_or(DEFAULT_COUNT).min(MAX_COUNT),
            delay: Duration::from_millis(
                int("delay_ms")
                    .unwrap_or(DEFAULT_DELAY_MS)
                    .clamp(0, MAX_DELAY_MS) as u64,
            ),
        })
    }

    /// Response `i`: `text_output` = the text and `i`, `index` = `i`.
    fn outputs(&self, i: i64) -> Vec<Named> {
        let mut text = self.text.to_vec();
        text.extend_from_slice(i.to_string().as_bytes());
        let one = || Shape::new(vec![1]);
        let text = tensorgate_codec::tensor::bytes_layout::build([text]);
        let index = Bytes::copy_from_slice(&(i as i32).to_le_bytes());
        [
            ("text_output", DataType::Bytes, text),
            ("index", DataType::I32, index),
        ]
        .into_iter()
        .filter_map(|(name, dtype, data)| {
            Some((name.to_owned(), Tensor::new(dtype, one(), data).ok()?))
        })
        .collect()
    }
}
