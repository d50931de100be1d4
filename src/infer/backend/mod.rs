//! The one client for V2 backends that every frontend uses: builds the
//! backend request from an [`InferRequest`] in the route's wire format,
//! sends it to `/v2/models/{model}[/versions/{v}]/infer` (the path comes
//! from the request's [`ModelRef`], never from the
//! client's path), and hands back the reply to be read ([`BackendReply`]).

mod early;
mod grpc;
mod reply;
mod request;

use std::time::Instant;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, Response};

pub use super::error::MalformedReply;
pub use early::{Attempt, EarlySend};
pub use grpc::unary;
pub use reply::{BackendReply, ReplyFraming, ReplyHead, ReplyStream};
pub use request::RequestBody;

use super::InferError;
use super::{Exchange, InferRequest, ModelRef};
use crate::codec::v2::framing::IHCL_HEADER;
use crate::config::Protocol;
use crate::config::WireFormat;
use crate::cpu::{OFF_THREAD_BYTES, off_thread};
use crate::http::body::{BoxError, ChunksBody};
use crate::http::headers::lacks;
use crate::observe::Direction;
use crate::observe::Metered;
use crate::upstream::{OutBody, Outgoing, UpstreamBody, UpstreamError};

/// `Inference-Header-Content-Length` as a header name: looked up or set by
/// its text, the name is parsed (31 bytes checked and lowercased) every
/// time.
pub const IHCL: HeaderName = HeaderName::from_static(IHCL_HEADER);

/// A backend's reply body as the core reads it.
#[derive(Debug)]
pub enum BackendBody {
    /// The backend's own body: counted, its pauses bounded, holding the
    /// backend's connection slot until it ends.
    Wire(Metered<UpstreamBody>),
    /// A reply read whole already and written in the V2 layout (a gRPC
    /// backend's); its bytes were counted as they came.
    Decoded(ChunksBody),
}

impl BackendBody {
    fn decoded(chunks: Vec<Bytes>) -> BackendBody {
        BackendBody::Decoded(ChunksBody::new(chunks))
    }

    /// Counts a fault of the reply against the replica that sent it. A
    /// reply already decoded (a gRPC backend's) was judged as it was read.
    pub(crate) fn fault(&self, kind: crate::error::UpstreamKind) {
        match self {
            BackendBody::Wire(b) => b.get_ref().fault(kind),
            BackendBody::Decoded(_) => {}
        }
    }
}

impl http_body::Body for BackendBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            BackendBody::Wire(b) => std::pin::Pin::new(b).poll_frame(cx),
            BackendBody::Decoded(b) => std::pin::Pin::new(b).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            BackendBody::Wire(b) => b.is_end_stream(),
            BackendBody::Decoded(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match self {
            BackendBody::Wire(b) => b.size_hint(),
            BackendBody::Decoded(b) => b.size_hint(),
        }
    }
}

/// What the backend answered.
#[derive(Debug)]
pub enum Sent {
    /// A 2xx reply, still to be read.
    Reply(Box<BackendReply>),
    /// Any other status, with its body as the backend sends it.
    Failed(Response<BackendBody>),
}

/// A request built in the route's backend format, ready to send.
#[derive(Debug)]
pub struct Prepared {
    model: ModelRef,
    body: RequestBody,
}

/// Builds the backend request: the last step of translating a request,
/// whichever frontend read it. Here every request is whole and its element
/// count known, so here its elements are counted, charged to the caller's
/// element rate limits, and its translation time (from `started`, when its
/// frontend began) recorded. Writing a large request as JSON (for a JSON
/// backend) happens on a blocking thread.
pub async fn prepare(
    exchange: Exchange<'_>,
    req: InferRequest,
    started: Instant,
) -> Result<Prepared, InferError> {
    prepare_charged(exchange, req, started, 0).await
}

/// [`prepare`] for a request of which `charged` elements were charged
/// already (by an [`EarlySend`] that did not go through).
pub async fn prepare_charged(
    exchange: Exchange<'_>,
    req: InferRequest,
    started: Instant,
    charged: u64,
) -> Result<Prepared, InferError> {
    let elements = req.element_count();
    exchange.obs.elements(Direction::Request, elements);
    exchange
        .obs
        .charge_elements(elements.saturating_sub(charged))
        .await?;
    let InferRequest {
        model,
        header,
        data,
    } = req;
    let format = exchange.route.backend_format;
    let size: u64 = data.iter().map(super::TensorData::len).sum();
    let body = if exchange.upstream.backend.protocol() == Protocol::Grpc {
        grpc::request(&exchange.route.name, &model, &header, &data)?
    } else if format == WireFormat::Json && size >= OFF_THREAD_BYTES {
        let route = exchange.route.name.clone();
        off_thread(move || request::build(&route, header, data, format)).await?
    } else {
        request::build(&exchange.route.name, header, data, format)?
    };
    exchange
        .obs
        .translation(Direction::Request, started.elapsed());
    Ok(Prepared { model, body })
}

impl Prepared {
    /// Sends it. `headers` are the headers the frontend forwards (request
    /// id, tracing, ...); body and hop-by-hop headers are set here.
    pub async fn send(
        self,
        exchange: Exchange<'_>,
        headers: HeaderMap,
    ) -> Result<Sent, InferError> {
        send_body(exchange, &self.model, self.body, headers).await
    }

    /// Sends it, unless `early` (started while the client's request was
    /// read) already sent this very request: then the rest of its body goes
    /// and its answer is this one's.
    pub async fn send_after(
        self,
        exchange: Exchange<'_>,
        headers: HeaderMap,
        early: Option<EarlySend<'_>>,
    ) -> Result<Sent, InferError> {
        if let Some(early) = early
            && let Some(sent) = early.finish(&self.body).await
        {
            return sent;
        }
        // Not through `send`: its future, nested in this one, was one
        // more layer to copy and poll.
        send_body(exchange, &self.model, self.body, headers).await
    }
}

/// Sends a body already in the backend's format (a raw binary request).
pub async fn send_raw(
    exchange: Exchange<'_>,
    model: &ModelRef,
    raw: Bytes,
    headers: HeaderMap,
) -> Result<Sent, InferError> {
    let body = RequestBody {
        chunks: vec![raw],
        header_len: Some(0),
        content_type: "application/octet-stream",
    };
    send_body(exchange, model, body, headers).await
}

/// Most bytes of a refusal's body read for its message.
const MAX_REFUSAL_BYTES: usize = 64 << 10;

/// A non-2xx reply as an error, for frontends that do not pass the
/// backend's own reply on: 404 is an unknown model (or version), anything
/// else the backend refusing the request, with its `{"error"}` message (or
/// its text).
pub async fn refusal(
    exchange: Exchange<'_>,
    model: &ModelRef,
    resp: Response<BackendBody>,
) -> InferError {
    let (parts, body) = resp.into_parts();
    let backend = exchange.upstream.name().to_owned();
    if parts.status == http::StatusCode::NOT_FOUND {
        return InferError::UnknownModel {
            backend,
            model: model.clone(),
        };
    }
    let limit = exchange.upstream.backend.request_timeout;
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
    InferError::Refused {
        backend,
        status: parts.status,
        message,
    }
}

async fn send_body(
    exchange: Exchange<'_>,
    model: &ModelRef,
    body: RequestBody,
    headers: HeaderMap,
) -> Result<Sent, InferError> {
    let len = body.len();
    let head = BodyHead {
        len,
        header_len: body.header_len,
        content_type: body.content_type,
    };
    let out = outgoing(exchange, model, head, OutBody::Chunks(body.chunks), headers);
    exchange.obs.backend_out(len);
    let sent = Instant::now();
    // The shadow's copy goes once the real request has its answer.
    let copy = exchange
        .shadow
        .and_then(|m| m.copy(&out, exchange.obs.trace()));
    let resp = exchange
        .upstream
        .send(out, Some(exchange.obs.watch()))
        .await;
    if let Some(copy) = copy {
        copy.start();
    }
    received(exchange, resp, sent).await
}

/// How a backend request's body is described in its headers.
struct BodyHead {
    len: u64,
    header_len: Option<u64>,
    content_type: &'static str,
}

/// The backend request for `model`'s infer endpoint. `headers` are the
/// ones the frontend forwards; body headers are set here.
fn outgoing(
    exchange: Exchange<'_>,
    model: &ModelRef,
    head: BodyHead,
    body: OutBody,
    mut headers: HeaderMap,
) -> Outgoing {
    if exchange.upstream.backend.protocol() == Protocol::Grpc {
        headers.insert(header::TE, HeaderValue::from_static("trailers"));
    }
    // The gateway reads the reply itself: ask for it uncompressed. The V2
    // frontend forwards none: known without a hash lookup.
    if !lacks(&headers, &header::ACCEPT_ENCODING) {
        headers.remove(header::ACCEPT_ENCODING);
    }
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(head.content_type),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(head.len));
    if let Some(n) = head.header_len {
        headers.insert(IHCL, HeaderValue::from(n));
    }
    let path = match exchange.upstream.backend.protocol() {
        Protocol::Grpc => format!("{}ModelInfer", crate::upstream::grpc::SERVICE),
        Protocol::Http => model.infer_path(),
    };
    Outgoing {
        method: http::Method::POST,
        path,
        headers,
        body,
        model: Some(model.name.clone()),
        idempotent: exchange.route.retry_infer,
        deadline: exchange.obs.deadline(),
    }
}

/// The backend's answer to a request whose last byte went at `sent`.
async fn received(
    exchange: Exchange<'_>,
    resp: Result<Response<UpstreamBody>, UpstreamError>,
    sent: Instant,
) -> Result<Sent, InferError> {
    let resp = resp?;
    exchange.obs.upstream_first_byte(sent.elapsed());
    let (parts, body) = resp.into_parts();
    let body = exchange.obs.backend_body(body, sent);
    let deadline = sent + exchange.upstream.backend.request_timeout;
    let (parts, body) =
        if exchange.upstream.backend.protocol() == Protocol::Grpc && parts.status.is_success() {
            grpc_reply(exchange, &parts, body, deadline)
                .await?
                .into_parts()
        } else {
            (parts, BackendBody::Wire(body))
        };
    if !parts.status.is_success() {
        exchange.obs.backend_status(parts.status);
        return Ok(Sent::Failed(Response::from_parts(parts, body)));
    }
    BackendReply::new(exchange, parts, body, deadline).map(|r| Sent::Reply(Box::new(r)))
}

/// A gRPC backend's reply read whole (within the request's time and the
/// route's `max_response_bytes`) and written as an HTTP backend's.
async fn grpc_reply(
    exchange: Exchange<'_>,
    parts: &http::response::Parts,
    body: Metered<UpstreamBody>,
    deadline: Instant,
) -> Result<Response<BackendBody>, InferError> {
    let upstream = exchange.upstream;
    let limit = exchange.route.limits.max_response_bytes;
    let caps = crate::infer::checks::grpc_caps(exchange.route);
    let read = grpc::reply(upstream.name(), &parts.headers, body, limit, &caps);
    let reply = tokio::time::timeout_at(deadline.into(), read)
        .await
        .map_err(|_| upstream.timeout(upstream.backend.request_timeout))?;
    reply.map_err(|fault| match fault {
        grpc::ReplyFault::Read(crate::upstream::grpc::ReadError::Frame(
            crate::codec::grpc::FrameError::TooLarge { .. },
        )) => InferError::ReplyTooLarge {
            route: exchange.route.name.clone(),
            limit,
        },
        grpc::ReplyFault::Read(crate::upstream::grpc::ReadError::Body(e)) => {
            upstream.body_error(&*e).into()
        }
        other => InferError::BadReply {
            backend: upstream.name().to_owned(),
            source: Box::new(MalformedReply::Http {
                detail: other.to_string(),
            }),
        },
    })
}
