//! A backend that speaks V2 over HTTP (`http://`, `https://`): an infer
//! request goes to `/v2/models/{model}[/versions/{v}]/infer` (the path
//! from the request's [`ModelRef`], never from the client's path) in the
//! route's wire format — binary, with the JSON header's length in
//! `Inference-Header-Content-Length`, or JSON — and its reply is read as
//! it streams; a non-2xx reply is the backend refusing the request.

use std::time::Instant;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{HeaderMap, Response, StatusCode};
use http_body_util::{BodyExt, Limited};

use super::request::{self, RequestBody};
use super::{BackendReply, Sent, Wire, refused};
use crate::codec::v2::Document;
use crate::config::WireFormat;
use crate::cpu::{OFF_THREAD_BYTES, off_thread};
use crate::error::{Error, Origin as RefusalOrigin};
use crate::http::client_body::BodyError;
use crate::http::encoding::{Coding, request_coding};
use crate::http::headers::strip_hop_by_hop;
use crate::infer::calls::{Answer, Call, Op, Origin, Reply};
use crate::infer::metadata::{MetadataError, ModelMetadata};
use crate::infer::{Exchange, InferError, ModelRef, TensorData};
use crate::observe::Metered;
use crate::upstream::{OutBody, UpstreamError};
use crate::upstream::{Outgoing, Upstream, UpstreamBody};

/// Most bytes of a metadata reply the gateway reads.
const MAX_METADATA_BYTES: usize = 1 << 20;

/// V2 over HTTP.
#[derive(Debug)]
pub(super) struct Http;

impl Wire for Http {
    /// Writing a large request as JSON (for a JSON backend) happens on a
    /// blocking thread.
    async fn build(
        exchange: Exchange<'_>,
        _model: &ModelRef,
        header: Document,
        data: Vec<TensorData>,
    ) -> Result<RequestBody, InferError> {
        let format = exchange.route.backend_format;
        let size: u64 = data.iter().map(TensorData::len).sum();
        if format == WireFormat::Json && size >= OFF_THREAD_BYTES {
            let route = exchange.route.name.clone();
            off_thread(move || request::build(&route, header, data, format)).await
        } else {
            request::build(&exchange.route.name, header, data, format)
        }
    }

    fn build_raw(_exchange: Exchange<'_>, raw: Bytes) -> Result<RequestBody, InferError> {
        Ok(RequestBody {
            chunks: vec![raw],
            header_len: Some(0),
            content_type: "application/octet-stream",
        })
    }

    fn target(model: &ModelRef, _headers: &mut HeaderMap) -> String {
        model.infer_path()
    }

    async fn answer(
        exchange: Exchange<'_>,
        parts: http::response::Parts,
        body: Metered<UpstreamBody>,
        deadline: Instant,
    ) -> Result<Sent, InferError> {
        if !parts.status.is_success() {
            return Ok(refused(exchange, parts, body));
        }
        let body = super::BackendBody::Wire(body);
        BackendReply::new(exchange, parts, body, deadline).map(|r| Sent::Reply(Box::new(r)))
    }

    fn sends_early() -> bool {
        true
    }

    fn streams() -> super::Streams {
        super::Streams::PerRequest
    }

    async fn call(exchange: Exchange<'_>, call: Call) -> Result<Answer, Error> {
        let (mut parts, body) = match call.origin {
            Origin::Http { parts, body } => (parts, body),
            Origin::Grpc {
                method,
                message,
                headers,
                ..
            } => {
                // Boxed: the passthrough's future need not hold it.
                let op = Op::from_grpc(method, &message)?;
                let reply = Box::pin(translated(exchange, &op, headers)).await?;
                return Ok(Answer::Translated(Box::new((op, reply))));
            }
        };
        // A V2 request passed through as it is: streaming both ways, hop-by-hop
        // headers removed, its body bounded on the wire and, when compressed,
        // decompressed, by the route's `max_body_bytes` (the gateway opened it
        // so); the backend's reply relayed as it streams, metered once.
        let (upstream, obs) = (exchange.upstream, exchange.obs);
        let coding = request_coding(&parts.headers).unwrap_or(Coding::Identity);
        // The client's `Host` stays: the upstream replaces it with the
        // replica's.
        strip_hop_by_hop(&mut parts.headers);
        let body = match body {
            Some(b) => OutBody::Stream(obs.forwarded_request(b).boxed_unsync()),
            // Nothing to stream: the request can be sent again if need be.
            None => OutBody::Empty,
        };
        let model = obs.model();
        let out = Outgoing {
            method: parts.method,
            path: parts
                .uri
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .to_owned(),
            headers: parts.headers,
            body,
            model: Some(model.to_owned()).filter(|m| !m.is_empty()),
            idempotent: false,
            deadline: obs.deadline(),
        };
        let sent = Instant::now();
        let resp = match upstream.send(out, Some(obs.watch())).await {
            Ok(resp) => resp,
            // Over the limit, or corrupt, while it streamed: say which
            // route's limit, and which coding.
            Err(UpstreamError::RequestBody(BodyError::TooLarge { .. })) => {
                return Err(BodyError::TooLarge {
                    route: exchange.route.name.clone(),
                    limit: exchange.route.limits.max_body_bytes,
                }
                .into());
            }
            Err(UpstreamError::RequestBody(BodyError::BadEncoding { detail, .. })) => {
                return Err(BodyError::BadEncoding {
                    encoding: coding.name(),
                    detail,
                }
                .into());
            }
            Err(e) => return Err(InferError::from(e).into()),
        };
        obs.upstream_first_byte(sent.elapsed());
        obs.backend_status(resp.status());
        let (mut parts, body) = resp.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        // Metered once, as the client's reply and the backend's body.
        obs.relay(sent);
        Ok(Answer::Http(Response::from_parts(
            parts,
            body.boxed_unsync(),
        )))
    }

    /// `GET /v2/models/{name}[/versions/{v}]`.
    async fn metadata(
        upstream: &Upstream,
        model: &ModelRef,
    ) -> Result<ModelMetadata, MetadataError> {
        let mut req = Outgoing::get(model.path());
        req.model = Some(model.name.clone());
        let resp = upstream.send(req, None).await?;
        let status = resp.status();
        let invalid = |detail: String| MetadataError::Invalid {
            backend: upstream.name().to_owned(),
            model: model.name.clone(),
            detail,
        };
        let body = Limited::new(resp.into_body(), MAX_METADATA_BYTES)
            .collect()
            .await
            .map_err(|e| invalid(format!("reading the reply failed: {e}")))?
            .to_bytes();
        if !status.is_success() {
            return Err(MetadataError::NotFound {
                backend: upstream.name().to_owned(),
                model: model.name.clone(),
                status,
            });
        }
        ModelMetadata::parse(&body).map_err(invalid)
    }
}

/// `op` as the V2 HTTP request that stands for it; the backend's answer
/// in neutral form. A flag is the status alone; any other status than
/// 2xx is the backend refusing the call.
async fn translated(
    exchange: Exchange<'_>,
    op: &Op,
    mut headers: HeaderMap,
) -> Result<Reply, Error> {
    let (method, path, json) = op.http()?;
    let body = match json {
        Some(v) => {
            let bytes = Bytes::from(serde_json::to_vec(&v).unwrap_or_default());
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
            OutBody::Chunks(vec![bytes])
        }
        None => OutBody::Empty,
    };
    let (status, body) = fetch(exchange, method, path, headers, body).await?;
    if !op.is_flag() && !status.is_success() {
        let message = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).trim().to_owned());
        return Err(InferError::Refused {
            backend: exchange.upstream.name().to_owned(),
            origin: RefusalOrigin::Http(status),
            message,
        }
        .into());
    }
    Ok(Reply::from_json(op, status.as_u16(), &body)?)
}

/// Sends a request; its status and its body (bounded by the route's
/// `max_response_bytes`).
async fn fetch(
    exchange: Exchange<'_>,
    method: http::Method,
    path: String,
    headers: HeaderMap,
    body: OutBody,
) -> Result<(StatusCode, Bytes), Error> {
    let upstream = exchange.upstream;
    let out = Outgoing {
        method,
        path,
        headers,
        body,
        model: Some(exchange.obs.model().to_owned()).filter(|m| !m.is_empty()),
        idempotent: false,
        deadline: exchange.obs.deadline(),
    };
    let sent = Instant::now();
    let resp = upstream
        .send(out, Some(exchange.obs.watch()))
        .await
        .map_err(InferError::from)?;
    exchange.obs.upstream_first_byte(sent.elapsed());
    exchange.obs.backend_status(resp.status());
    let (parts, body) = resp.into_parts();
    let body = exchange.obs.backend_body(body, sent);
    let limit = usize::try_from(exchange.route.limits.max_response_bytes).unwrap_or(usize::MAX);
    let bytes = Limited::new(body, limit)
        .collect()
        .await
        .map_err(|e: crate::http::body::BoxError| InferError::from(upstream.body_error(&*e)))?
        .to_bytes();
    Ok((parts.status, bytes))
}
