//! A backend that speaks V2 over gRPC (`grpc://`, `grpcs://`): an infer
//! request goes as one `ModelInfer` call whose `raw_input_contents` are
//! the request's own pieces, and its reply — read whole, bounded, checked
//! on its wire form before it is decoded — becomes the core's reply in the
//! V2 binary layout: its outputs' heads as a JSON header with their
//! `binary_data_size`, then the `raw_output_contents` as they came (slices
//! of the reply, never copied). A status other than OK is the backend
//! refusing the request, kept as its code ([`Refusal::grpc`]).

use std::time::Instant;

use bytes::Bytes;
use http::HeaderMap;
use http::header::{self, HeaderValue};
use prost::Message;

use super::request::RequestBody;
use super::{BackendReply, Refusal, Sent, Wire, refused};
use crate::codec::grpc::budget::{self, Caps};
use crate::codec::grpc::frame::FrameError;
use crate::codec::grpc::status::Code;
use crate::codec::grpc::{self, frame};
use crate::codec::v2::json_write::{DocWriter, TensorForm};
use crate::codec::v2::{DocLimits, Document};
use crate::error::Error;
use crate::error::UpstreamKind;
use crate::http::body::Body;
use crate::http::client_body::BodyError;
use crate::http::headers::trace_headers;
use crate::infer::calls;
use crate::infer::calls::{Call, CallError, Op, Origin, Reply};
use crate::infer::metadata::{MetadataError, ModelMetadata};
use crate::infer::{Exchange, InferError, ModelRef, TensorData};
use crate::observe::Metered;
use crate::upstream::grpc::{Answer, ReadError, read_answer};
use crate::upstream::{Outgoing, Upstream, UpstreamBody};

/// The content type of a gRPC request body.
pub(super) const CONTENT_TYPE: &str = "application/grpc";

/// Most bytes of a metadata reply the gateway reads.
const MAX_METADATA_BYTES: u64 = 1 << 20;

/// V2 over gRPC.
#[derive(Debug)]
pub(super) struct Grpc;

impl Wire for Grpc {
    /// The `ModelInfer` call for `model` with these inputs, framed.
    async fn build(
        exchange: Exchange<'_>,
        model: &ModelRef,
        header: Document,
        data: Vec<TensorData>,
    ) -> Result<RequestBody, InferError> {
        let pieces: Vec<Vec<Bytes>> = data.iter().map(|d| d.pieces().to_vec()).collect();
        let bad = |reason: String| InferError::NotGrpc {
            route: exchange.route.name.clone(),
            reason,
        };
        let message = grpc::encode_request(&model.name, model.version.as_deref(), &header, &pieces)
            .map_err(|e| bad(e.to_string()))?;
        let chunks = frame::encode(message).map_err(|e| bad(e.to_string()))?;
        Ok(RequestBody {
            chunks,
            header_len: None,
            content_type: CONTENT_TYPE,
        })
    }

    /// A raw request names no input, and a `ModelInfer` call must: send
    /// the input with its header instead.
    fn build_raw(exchange: Exchange<'_>, _raw: Bytes) -> Result<RequestBody, InferError> {
        Err(InferError::NotGrpc {
            route: exchange.route.name.clone(),
            reason: "a raw binary request (Inference-Header-Content-Length: 0) names no input; \
                     send the input with a JSON header"
                .to_owned(),
        })
    }

    fn target(_model: &ModelRef, headers: &mut HeaderMap) -> String {
        headers.insert(header::TE, HeaderValue::from_static("trailers"));
        format!("{}ModelInfer", crate::upstream::grpc::SERVICE)
    }

    /// The reply read whole (within the request's time and the route's
    /// `max_response_bytes`).
    async fn answer(
        exchange: Exchange<'_>,
        parts: http::response::Parts,
        body: Metered<UpstreamBody>,
        deadline: Instant,
    ) -> Result<Sent, InferError> {
        if !parts.status.is_success() {
            return Ok(refused(exchange, parts, body));
        }
        let upstream = exchange.upstream;
        let limit = exchange.route.limits.max_response_bytes;
        let caps = crate::infer::checks::grpc_caps(exchange.route);
        let read = reply(upstream.name(), &parts.headers, body, limit, &caps);
        let reply = tokio::time::timeout_at(deadline.into(), read)
            .await
            .map_err(|_| upstream.timeout(upstream.backend.request_timeout))?;
        match reply {
            Ok(Ok((header, data))) => {
                let (header_len, chunks) = binary_layout(&header, data);
                let reply = BackendReply::decoded(exchange, header_len, chunks, deadline)?;
                Ok(Sent::Reply(Box::new(reply)))
            }
            Ok(Err((code, message))) => {
                let refusal = Refusal::grpc(code, message);
                exchange.obs.backend_status(refusal.resp.status());
                Ok(Sent::Failed(refusal))
            }
            Err(ReplyFault::Read(ReadError::Frame(FrameError::TooLarge { .. }))) => {
                Err(InferError::ReplyTooLarge {
                    route: exchange.route.name.clone(),
                    limit,
                })
            }
            Err(ReplyFault::Read(ReadError::Body(e))) => Err(upstream.body_error(&*e).into()),
            Err(other) => Err(InferError::BadReply {
                backend: upstream.name().to_owned(),
                source: Box::new(super::MalformedReply::Http {
                    detail: other.to_string(),
                }),
            }),
        }
    }

    fn sends_early() -> bool {
        false
    }

    fn streams() -> super::Streams {
        super::Streams::AsItCame
    }

    async fn call(exchange: Exchange<'_>, call: Call) -> Result<calls::Answer, Error> {
        match call.origin {
            Origin::Grpc {
                method,
                message,
                headers,
                idempotent,
            } => {
                let answer = forward(exchange, method, message, headers, idempotent).await?;
                Ok(calls::Answer::Grpc(answer))
            }
            Origin::Http { parts, body } => translated(exchange, parts, body).await,
        }
    }

    /// `ModelMetadata`, read as its JSON twin.
    async fn metadata(
        upstream: &Upstream,
        model: &ModelRef,
    ) -> Result<ModelMetadata, MetadataError> {
        use crate::codec::grpc::json::model_metadata_to_json;
        use crate::codec::grpc::proto::inference as pb;
        let invalid = |detail: String| MetadataError::Invalid {
            backend: upstream.name().to_owned(),
            model: model.name.clone(),
            detail,
        };
        let message = pb::ModelMetadataRequest {
            name: model.name.clone(),
            version: model.version.clone().unwrap_or_default(),
        }
        .encode_to_vec();
        let req = crate::upstream::grpc::call(
            "ModelMetadata",
            vec![message.into()],
            HeaderMap::new(),
            Some(model.name.clone()),
            true,
        )
        .map_err(|e| invalid(e.to_string()))?;
        let resp = upstream.send(req, None).await?;
        let (parts, mut body) = resp.into_parts();
        let answer = read_answer(&parts.headers, &mut body, MAX_METADATA_BYTES)
            .await
            .map_err(|e| invalid(format!("reading the reply failed: {e}")))?;
        match answer {
            Answer::Message(m) => {
                if let Some(schema) = budget::schema("inference.ModelMetadataResponse") {
                    budget::check(schema, &m, &Caps::DEFAULT)
                        .map_err(|e| invalid(e.to_string()))?;
                }
                let reply =
                    pb::ModelMetadataResponse::decode(m).map_err(|e| invalid(e.to_string()))?;
                let json = model_metadata_to_json(&reply).map_err(|e| invalid(e.to_string()))?;
                ModelMetadata::parse(&json).map_err(invalid)
            }
            Answer::Status { code, .. } => Err(MetadataError::NotFound {
                backend: upstream.name().to_owned(),
                model: model.name.clone(),
                status: http::StatusCode::from_u16(code.http())
                    .unwrap_or(http::StatusCode::NOT_FOUND),
            }),
        }
    }
}

/// One unary call other than `ModelInfer` (readiness, metadata, control)
/// to the exchange's gRPC backend: sent under the request's deadline,
/// observed as every backend call is (first byte, the backend's body), and
/// its reply read whole within the route's `max_response_bytes`. The
/// outer error is the call failing; the inner one, a reply that could not
/// be read, which each caller words for its own client.
pub(crate) async fn unary(
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

/// A decoded `ModelInferResponse` (its V2 header and each output's
/// pieces), or the status the backend refused it with.
type Decoded = Result<(Document, Vec<Vec<Bytes>>), (crate::codec::grpc::status::Code, String)>;

/// A gRPC reply, read whole (the message at most `limit` bytes, checked
/// against `caps` before it is decoded).
async fn reply(
    backend: &str,
    head: &HeaderMap,
    mut body: Metered<UpstreamBody>,
    limit: u64,
    caps: &Caps,
) -> Result<Decoded, ReplyFault> {
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
            let invalid = |detail: String| {
                judge(&body);
                ReplyFault::Invalid {
                    backend: backend.to_owned(),
                    detail,
                }
            };
            // Nothing is decoded past the route's caps: a reply of empty
            // outputs would build a struct of hundreds of bytes for
            // every two bytes of it.
            budget::check(&budget::MODEL_INFER_RESPONSE, &message, caps)
                .map_err(|e| invalid(e.to_string()))?;
            let limits = DocLimits::new(u64::MAX, 64);
            let v2 = grpc::decode_response(message, &limits).map_err(|e| invalid(e.to_string()))?;
            Ok(Ok((v2.header, v2.data)))
        }
        Answer::Status { code, message } => Ok(Err((code, message))),
    }
}

/// Why a gRPC reply could not be read.
#[derive(Debug, thiserror::Error)]
enum ReplyFault {
    #[error("{0}")]
    Read(#[from] ReadError),
    #[error("backend \"{backend}\" sent an invalid ModelInferResponse: {detail}")]
    Invalid { backend: String, detail: String },
}

/// A reply in the V2 binary layout: the JSON header (each output with its
/// `binary_data_size`), then each output's pieces; the header's length.
fn binary_layout(header: &Document, data: Vec<Vec<Bytes>>) -> (u64, Vec<Bytes>) {
    let mut json = Vec::with_capacity(256);
    let mut w = DocWriter::new();
    w.open(header, &mut json);
    for (t, pieces) in header.tensors.iter().zip(&data) {
        let len = pieces.iter().map(|p| p.len() as u64).sum();
        w.tensor_open(t, TensorForm::Binary(len), &mut json);
    }
    w.close(header, &mut json);
    let header_len = json.len() as u64;
    let chunks = std::iter::once(Bytes::from(json))
        .chain(data.into_iter().flatten())
        .collect();
    (header_len, chunks)
}

/// A gRPC call passed on as it came: its reply message (nothing of a
/// `ModelConfig` is lost to a translation) or its status, as they are.
async fn forward(
    exchange: Exchange<'_>,
    method: &'static str,
    message: Bytes,
    headers: HeaderMap,
    idempotent: bool,
) -> Result<Answer, Error> {
    let model = Some(exchange.obs.model().to_owned()).filter(|m| !m.is_empty());
    let out = crate::upstream::grpc::call(method, vec![message], headers, model, idempotent)
        .map_err(|e| CallError::Translate {
            what: "call",
            reason: e.to_string(),
        })?;
    let answer = unary(exchange, out)
        .await?
        .map_err(|e| CallError::Translate {
            what: "reply",
            reason: e.to_string(),
        })?;
    Ok(answer)
}

/// A V2 HTTP request as the call that stands for it. A flag a server
/// cannot give is "not ready" (as Triton's HTTP endpoint says), but for an
/// unavailable server; any other status is the backend refusing the call.
async fn translated(
    exchange: Exchange<'_>,
    parts: http::request::Parts,
    body: Option<Body>,
) -> Result<calls::Answer, Error> {
    let request = match (Op::http_body(&parts.method), body) {
        (true, Some(b)) => {
            read(
                b,
                exchange.route.limits.max_body_bytes,
                &exchange.route.name,
            )
            .await?
        }
        _ => Bytes::new(),
    };
    let op = Op::from_http(&parts.method, parts.uri.path(), &request);
    let (method, message) = op.grpc()?;
    let model = Some(exchange.obs.model().to_owned()).filter(|m| !m.is_empty());
    let out = crate::upstream::grpc::call(
        method,
        vec![message.into()],
        trace_headers(&parts.headers),
        model,
        true,
    )
    .map_err(|e| bad_reply(exchange, e.to_string()))?;
    let answer = unary(exchange, out)
        .await?
        .map_err(|e| bad_reply(exchange, e.to_string()))?;
    match answer {
        Answer::Message(m) => {
            let reply =
                Reply::from_message(&op, &m).map_err(|e| bad_reply(exchange, e.to_string()))?;
            Ok(calls::Answer::Translated(Box::new((op, reply))))
        }
        Answer::Status { code, .. } if op.is_flag() && code != Code::Unavailable => {
            exchange.obs.backend_status(status_of(code));
            Ok(calls::Answer::Translated(Box::new((
                op,
                Reply::Flag(false),
            ))))
        }
        Answer::Status { code, message } => {
            exchange.obs.backend_status(status_of(code));
            Ok(calls::Answer::Refused { code, message })
        }
    }
}

fn status_of(code: Code) -> http::StatusCode {
    http::StatusCode::from_u16(code.http()).unwrap_or(http::StatusCode::BAD_GATEWAY)
}

fn bad_reply(exchange: Exchange<'_>, detail: String) -> InferError {
    InferError::BadReply {
        backend: exchange.upstream.name().to_owned(),
        source: Box::new(super::MalformedReply::Http { detail }),
    }
}

/// A request body for a call, whole, within `limit` bytes (the route's
/// `max_body_bytes`).
async fn read(mut body: Body, limit: u64, route: &str) -> Result<Bytes, Error> {
    use http_body_util::BodyExt;
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError::Broken {
            detail: e.to_string(),
        })?;
        if let Ok(data) = frame.into_data() {
            out.extend_from_slice(&data);
            if out.len() as u64 > limit {
                return Err(BodyError::TooLarge {
                    route: route.to_owned(),
                    limit,
                }
                .into());
            }
        }
    }
    Ok(out.into())
}
