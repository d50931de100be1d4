//! The one client for V2 backends that every frontend uses: builds the
//! backend request from an [`InferRequest`] in the route's wire format,
//! sends it to `/v2/models/{model}[/versions/{v}]/infer` (the path comes
//! from the request's [`ModelRef`](super::ModelRef), never from the
//! client's path), and hands back the reply to be read ([`BackendReply`]).

mod reply;
mod request;

use std::time::Instant;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{HeaderMap, Request, Response};
use hyper::body::Incoming;

pub use reply::{BackendReply, ReplyError, ReplyFraming, ReplyHead, ReplyStream};
pub use request::RequestBody;

use super::{Exchange, InferRequest, ModelRef};
use crate::codec::v2::framing::IHCL_HEADER;
use crate::gateway::body::ChunksBody;
use crate::gateway::error::GatewayError;
use crate::gateway::observe::Metered;

/// What the backend answered.
#[derive(Debug)]
pub enum Sent {
    /// A 2xx reply, still to be read.
    Reply(Box<BackendReply>),
    /// Any other status, with its body as the backend sends it.
    Failed(Response<Metered<Incoming>>),
}

/// A request built in the route's backend format, ready to send.
#[derive(Debug)]
pub struct Prepared {
    model: ModelRef,
    body: RequestBody,
}

/// Builds the backend request (the last step of translating a request;
/// frontends time translation up to here). The request's tensor elements
/// are charged to the caller's element rate limits first: this is where
/// every frontend's request is whole and its element count known.
pub fn prepare(x: Exchange<'_>, req: InferRequest) -> Result<Prepared, GatewayError> {
    x.obs.charge_elements(req.element_count())?;
    let InferRequest {
        model,
        header,
        data,
    } = req;
    let body = request::build(&x.route.name, header, data, x.route.backend_format)?;
    Ok(Prepared { model, body })
}

impl Prepared {
    /// Sends it. `headers` are the headers the frontend forwards (request
    /// id, tracing, ...); body and hop-by-hop headers are set here.
    pub async fn send(self, x: Exchange<'_>, headers: HeaderMap) -> Result<Sent, GatewayError> {
        send_body(x, &self.model, self.body, headers).await
    }
}

/// Sends a body already in the backend's format (a raw binary request).
pub async fn send_raw(
    x: Exchange<'_>,
    model: &ModelRef,
    raw: Bytes,
    headers: HeaderMap,
) -> Result<Sent, GatewayError> {
    let body = RequestBody {
        chunks: vec![raw],
        header_len: Some(0),
        content_type: "application/octet-stream",
    };
    send_body(x, model, body, headers).await
}

/// Most bytes of a refusal's body read for its message.
const MAX_REFUSAL_BYTES: usize = 64 << 10;

/// A non-2xx reply as an error, for frontends that do not pass the
/// backend's own reply on: 404 is an unknown model (or version), anything
/// else the backend refusing the request, with its `{"error"}` message (or
/// its text).
pub async fn refusal(
    x: Exchange<'_>,
    model: &ModelRef,
    resp: Response<Metered<Incoming>>,
) -> GatewayError {
    let (parts, body) = resp.into_parts();
    let backend = x.upstream.name().to_owned();
    if parts.status == http::StatusCode::NOT_FOUND {
        return GatewayError::UnknownModel {
            backend,
            model: model.clone(),
        };
    }
    let limit = x.upstream.backend.request_timeout;
    let read = tokio::time::timeout(
        limit,
        http_body_util::BodyExt::collect(http_body_util::Limited::new(body, MAX_REFUSAL_BYTES)),
    )
    .await;
    let text = match read {
        Ok(Ok(collected)) => collected.to_bytes(),
        _ => Bytes::new(),
    };
    let message = serde_json::from_slice::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&text).trim().to_owned());
    GatewayError::BackendFailed {
        backend,
        status: parts.status,
        message,
    }
}

async fn send_body(
    x: Exchange<'_>,
    model: &ModelRef,
    body: RequestBody,
    mut headers: HeaderMap,
) -> Result<Sent, GatewayError> {
    let len = body.len();
    // The gateway reads the reply itself: ask for it uncompressed.
    headers.remove(header::ACCEPT_ENCODING);
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(body.content_type),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    if let Some(n) = body.header_len {
        headers.insert(IHCL_HEADER, HeaderValue::from(n));
    }
    let mut req = Request::new(ChunksBody::new(body.chunks).boxed());
    *req.method_mut() = http::Method::POST;
    *req.uri_mut() = x.upstream.uri_for(&model.infer_path());
    *req.headers_mut() = headers;
    x.obs.backend_out(len);
    let sent = Instant::now();
    let resp = x.upstream.send(req).await?;
    x.obs.upstream_first_byte(sent.elapsed());
    let (parts, body) = resp.into_parts();
    let body = x.obs.backend_body(body, sent);
    if !parts.status.is_success() {
        x.obs.backend_status(parts.status);
        return Ok(Sent::Failed(Response::from_parts(parts, body)));
    }
    let deadline = sent + x.upstream.backend.request_timeout;
    BackendReply::new(x, parts, body, deadline).map(|r| Sent::Reply(Box::new(r)))
}
