//! A backend that speaks gRPC (`grpc://`, `grpcs://`): an infer request
//! goes as one `ModelInfer` call whose `raw_input_contents` are the
//! request's own pieces, and the reply comes back in the V2 binary layout
//! every frontend reads — its outputs' heads as a JSON header with their
//! `binary_data_size`, then the `raw_output_contents` as they came (slices
//! of the reply, never copied). A status other than OK is the backend
//! refusing the request, in the form an HTTP backend would have refused it
//! (the status its code stands for, `{"error": message}`), so every
//! frontend reads a refusal one way.

use std::time::Instant;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{HeaderMap, Response, StatusCode};

use super::BackendBody;
use super::request::RequestBody;
use crate::codec::grpc::budget::{self, Caps};
use crate::codec::grpc::frame::FrameError;
use crate::codec::grpc::{self, frame};
use crate::codec::v2::json_write::{DocWriter, TensorForm};
use crate::codec::v2::{DocLimits, Document};
use crate::error::UpstreamKind;
use crate::http::body::error_body;
use crate::infer::{Exchange, InferError, ModelRef, TensorData};
use crate::observe::Metered;
use crate::upstream::grpc::{Answer, ReadError, read_answer};
use crate::upstream::{Outgoing, UpstreamBody};

/// The content type of a gRPC request body.
pub const CONTENT_TYPE: &str = "application/grpc";

/// The `ModelInfer` call for `model` with these inputs, framed.
pub fn request(
    route: &str,
    model: &ModelRef,
    header: &Document,
    data: &[TensorData],
) -> Result<RequestBody, InferError> {
    let pieces: Vec<Vec<Bytes>> = data.iter().map(|d| d.pieces().to_vec()).collect();
    let bad = |reason: String| InferError::NotGrpc {
        route: route.to_owned(),
        reason,
    };
    let message = grpc::encode_request(&model.name, model.version.as_deref(), header, &pieces)
        .map_err(|e| bad(e.to_string()))?;
    let chunks = frame::encode(message).map_err(|e| bad(e.to_string()))?;
    Ok(RequestBody {
        chunks,
        header_len: None,
        content_type: CONTENT_TYPE,
    })
}

/// One unary call other than `ModelInfer` (readiness, metadata, control)
/// to the exchange's gRPC backend: sent under the request's deadline,
/// observed as every backend call is (first byte, the backend's body), and
/// its reply read whole within the route's `max_response_bytes`. The
/// outer error is the call failing; the inner one, a reply that could not
/// be read, which each caller words for its own client.
pub async fn unary(
    exchange: Exchange<'_>,
    mut out: Outgoing,
) -> Result<Result<Answer, ReadError>, InferError> {
    out.deadline = exchange.obs.deadline();
    let sent = Instant::now();
    let resp = exchange
        .upstream
        .send(out, Some(exchange.obs.watch()))
        .await?;
    exchange.obs.upstream_first_byte(sent.elapsed());
    let (parts, body) = resp.into_parts();
    let mut body = exchange.obs.backend_body(body, sent);
    let limit = exchange.route.limits.max_response_bytes;
    Ok(read_answer(&parts.headers, &mut body, limit).await)
}

/// A gRPC reply, read whole (the message at most `limit` bytes), as an
/// HTTP backend's reply would have been: a binary-framed 200, or a refusal.
pub async fn reply(
    backend: &str,
    head: &HeaderMap,
    mut body: Metered<UpstreamBody>,
    limit: u64,
    caps: &Caps,
) -> Result<Response<BackendBody>, ReplyFault> {
    let answer = read_answer(head, &mut body, limit).await;
    // What no correct backend sends counts against the replica, as for an
    // HTTP reply; a message whose prefix declares more than the limit does
    // not (any replica would answer that request alike), and a body that
    // failed on the way was judged by the body itself.
    let judge = |body: &Metered<UpstreamBody>| body.get_ref().fault(UpstreamKind::Invalid);
    match &answer {
        Err(ReadError::Body(_) | ReadError::Frame(FrameError::TooLarge { .. })) | Ok(_) => {}
        Err(_) => judge(&body),
    }
    match answer? {
        Answer::Message(message) => {
            // Nothing is decoded past the route's caps: a reply of empty
            // outputs would build a struct of hundreds of bytes for
            // every two bytes of it.
            budget::check(&budget::MODEL_INFER_RESPONSE, &message, caps).map_err(|e| {
                judge(&body);
                ReplyFault::Invalid {
                    backend: backend.to_owned(),
                    detail: e.to_string(),
                }
            })?;
            let limits = DocLimits::new(u64::MAX, 64);
            let v2 = grpc::decode_response(message, &limits).map_err(|e| {
                judge(&body);
                ReplyFault::Invalid {
                    backend: backend.to_owned(),
                    detail: e.to_string(),
                }
            })?;
            Ok(binary_framed(&v2.header, v2.data))
        }
        Answer::Status { code, message } => {
            let status =
                StatusCode::from_u16(code.http()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut resp = Response::new(BackendBody::decoded(vec![error_body(&message)]));
            *resp.status_mut() = status;
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            Ok(resp)
        }
    }
}

/// Why a gRPC reply could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReplyFault {
    #[error("{0}")]
    Read(#[from] ReadError),
    #[error("backend \"{backend}\" sent an invalid ModelInferResponse: {detail}")]
    Invalid { backend: String, detail: String },
}

/// A reply in the V2 binary layout: the JSON header (each output with its
/// `binary_data_size`), then each output's pieces.
fn binary_framed(header: &Document, data: Vec<Vec<Bytes>>) -> Response<BackendBody> {
    let mut json = Vec::with_capacity(256);
    let mut w = DocWriter::new();
    w.open(header, &mut json);
    for (t, pieces) in header.tensors.iter().zip(&data) {
        let len = pieces.iter().map(|p| p.len() as u64).sum();
        w.tensor_open(t, TensorForm::Binary(len), &mut json);
    }
    w.close(header, &mut json);
    let header_len = json.len();
    let chunks = std::iter::once(Bytes::from(json))
        .chain(data.into_iter().flatten())
        .collect();
    let mut resp = Response::new(BackendBody::decoded(chunks));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(super::IHCL, HeaderValue::from(header_len));
    resp
}
