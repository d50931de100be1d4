//! The backends the core calls: one implementation per backend protocol —
//! V2 over HTTP ([`http`]), V2 over gRPC ([`grpc`]) — behind one interface,
//! [`Wire`]. The core never compares protocols: it calls the functions of
//! this module, which choose the implementation with one exhaustive
//! `match` on the backend's protocol (the `wire!` macro); a third protocol is a
//! third implementation of [`Wire`], and the compiler names every call it
//! has to answer.
//!
//! What a backend does for the core:
//! - builds an infer request from the core's [`InferRequest`](crate::infer::InferRequest) in its
//!   protocol, and says where it goes ([`build`], [`outgoing`]);
//! - reads its answer into the core's form ([`answer`]): a reply in the V2
//!   binary layout, read as it streams ([`BackendReply`]), or the backend's
//!   refusal kept with where it came from ([`Refusal`]: an HTTP status or a
//!   gRPC code, as it came);
//! - answers the calls other than infer in neutral types ([`calls`](crate::infer::calls)),
//!   and a model's metadata ([`metadata`]);
//! - says whether a request may go while the client's is still read
//!   ([`sends_early`]).
//!
//! The inference call that drives these is [`crate::infer::call`].

mod grpc;
mod http;
mod reply;
mod request;

use std::time::Instant;

use ::http::header::{self, HeaderName, HeaderValue};
use ::http::{HeaderMap, Response};
use bytes::Bytes;

pub(crate) use super::error::MalformedReply;
pub(crate) use reply::{BackendReply, ReplyFraming, ReplyHead};
pub(crate) use request::{RequestBody, provisional_header};

use super::InferError;
use super::calls::{Answer, Call, GrpcAnswer, Reply};
use super::metadata::{MetadataError, ModelMetadata};
use super::stats;
use super::{Exchange, ModelRef, TensorData};
use crate::codec::v2::Document;
use crate::codec::v2::framing::IHCL_HEADER;
use crate::config::Config;
use crate::config::Protocol;
use crate::error::{Error, Origin};
use crate::http::body::{Body, full};
use crate::http::body::{BoxError, ChunksBody};
use crate::http::headers::lacks;
use crate::observe::Metered;
use crate::upstream::{OutBody, Outgoing, Upstream, UpstreamBody, UpstreamError};
use http_body_util::BodyExt;

/// `Inference-Header-Content-Length` as a header name: looked up or set by
/// its text, the name is parsed (31 bytes checked and lowercased) every
/// time.
pub(crate) const IHCL: HeaderName = HeaderName::from_static(IHCL_HEADER);

/// One backend protocol's side of what the core asks of a backend.
/// Implemented once per protocol; reached only through this module's
/// functions.
trait Wire {
    /// The infer request for `model` in this protocol.
    async fn build(
        exchange: Exchange<'_>,
        model: &ModelRef,
        header: Document,
        data: Vec<TensorData>,
    ) -> Result<RequestBody, InferError>;

    /// A raw binary request (`Inference-Header-Content-Length: 0`: the
    /// body is the model's single input) in this protocol.
    fn build_raw(exchange: Exchange<'_>, raw: Bytes) -> Result<RequestBody, InferError>;

    /// The path of `model`'s infer call, and what its headers need.
    fn target(model: &ModelRef, headers: &mut HeaderMap) -> String;

    /// The answer to an infer request, its head in: a reply to read, or
    /// the backend's refusal.
    async fn answer(
        exchange: Exchange<'_>,
        parts: ::http::response::Parts,
        body: Metered<UpstreamBody>,
        deadline: Instant,
    ) -> Result<Sent, InferError>;

    /// Whether a request may go while the client's is still read.
    fn sends_early() -> bool;

    /// How it serves a gRPC stream of infer requests.
    fn streams() -> Streams;

    /// `model`'s metadata, from the backend.
    async fn metadata(
        upstream: &Upstream,
        model: &ModelRef,
    ) -> Result<ModelMetadata, MetadataError>;

    /// A call other than infer: one in this protocol as it came, one in
    /// the other for what it is ([`calls`]).
    async fn call(exchange: Exchange<'_>, call: Call) -> Result<Answer, Error>;
}

/// `$call` of the implementation of `$upstream`'s protocol: the one place
/// a protocol is chosen.
macro_rules! wire {
    ($upstream:expr, $f:ident($($arg:expr),* $(,)?)) => {
        match $upstream.backend.protocol() {
            Protocol::Http => <http::Http as Wire>::$f($($arg),*),
            Protocol::Grpc => <grpc::Grpc as Wire>::$f($($arg),*),
        }
    };
    ($upstream:expr, $f:ident($($arg:expr),* $(,)?).await) => {
        match $upstream.backend.protocol() {
            Protocol::Http => <http::Http as Wire>::$f($($arg),*).await,
            Protocol::Grpc => <grpc::Grpc as Wire>::$f($($arg),*).await,
        }
    };
}

/// The infer request for `model`, in the exchange's backend protocol (and,
/// for HTTP, the route's wire format).
pub(crate) async fn build(
    exchange: Exchange<'_>,
    model: &ModelRef,
    header: Document,
    data: Vec<TensorData>,
) -> Result<RequestBody, InferError> {
    wire!(
        exchange.upstream,
        build(exchange, model, header, data).await
    )
}

/// A raw binary request, in the exchange's backend protocol.
pub(crate) fn build_raw(exchange: Exchange<'_>, raw: Bytes) -> Result<RequestBody, InferError> {
    wire!(exchange.upstream, build_raw(exchange, raw))
}

/// Whether the exchange's backend takes a request while the client's is
/// still read ([`EarlySend`](crate::infer::call::EarlySend)).
pub(crate) fn sends_early(upstream: &Upstream) -> bool {
    wire!(upstream, sends_early())
}

/// How a backend serves a gRPC stream of infer requests
/// (`ModelStreamInfer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Streams {
    /// As the stream came, both ways: the backend speaks gRPC.
    AsItCame,
    /// One infer call per request, answered in order.
    PerRequest,
}

/// How `upstream`'s backend serves a gRPC stream of infer requests.
pub(crate) fn streams(upstream: &Upstream) -> Streams {
    wire!(upstream, streams())
}

/// `model`'s metadata from `upstream`'s backend.
pub(crate) async fn metadata(
    upstream: &Upstream,
    model: &ModelRef,
) -> Result<ModelMetadata, MetadataError> {
    wire!(upstream, metadata(upstream, model).await)
}

/// A call other than infer, answered by the exchange's backend: as it
/// came when the backend speaks the call's protocol, translated when it
/// does not. Statistics asked for without a model name are cut down to
/// the route's own models ([`stats`]), whichever form the answer took.
///
/// A V2 request passed through to an HTTP backend (every health check,
/// every metadata read) is the common case and is answered by the HTTP
/// backend's future itself; the others are boxed, so that the common
/// case's future is not as large as the largest of them.
pub(crate) async fn call(
    exchange: Exchange<'_>,
    config: &Config,
    call: Call,
) -> Result<Answer, Error> {
    match (exchange.upstream.backend.protocol(), call.all_stats) {
        (Protocol::Http, false) => <http::Http as Wire>::call(exchange, call).await,
        (Protocol::Grpc, false) => Box::pin(<grpc::Grpc as Wire>::call(exchange, call)).await,
        (_, true) => Box::pin(all_stats(exchange, config, call)).await,
    }
}

/// A call for every model's statistics, its answer cut down to the route's
/// models.
async fn all_stats(exchange: Exchange<'_>, config: &Config, call: Call) -> Result<Answer, Error> {
    let answer = wire!(exchange.upstream, call(exchange, call).await)?;
    let route = exchange.route;
    let bad = |e: stats::StatsError| -> Error { e.into() };
    Ok(match answer {
        Answer::Http(resp) if resp.status().is_success() => {
            Answer::Http(retain_http(exchange, config, resp).await?)
        }
        Answer::Grpc(GrpcAnswer::Message(m)) => Answer::Grpc(GrpcAnswer::Message(
            stats::retain_grpc(config, route, &m).map_err(bad)?,
        )),
        Answer::Translated(mut translated) => {
            if let (_, Reply::ModelStatistics(s)) = &mut *translated {
                s.model_stats
                    .retain(|m| stats::serves(config, route, &m.name));
            }
            Answer::Translated(translated)
        }
        other => other,
    })
}

/// A V2 statistics reply, read (bounded by the route's
/// `max_response_bytes`) and cut down.
async fn retain_http(
    exchange: Exchange<'_>,
    config: &Config,
    resp: Response<Body>,
) -> Result<Response<Body>, Error> {
    let resp = exchange.obs.unrelay(resp);
    let (mut parts, mut body) = resp.into_parts();
    let limit = exchange.route.limits.max_response_bytes;
    let mut whole = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| InferError::from(exchange.upstream.body_error(&*e)))?;
        if let Ok(data) = frame.into_data() {
            whole.extend_from_slice(&data);
            if whole.len() as u64 > limit {
                return Err(InferError::ReplyTooLarge {
                    route: exchange.route.name.clone(),
                    limit,
                }
                .into());
            }
        }
    }
    let kept = stats::retain_json(config, exchange.route, &whole)?;
    parts
        .headers
        .insert(header::CONTENT_LENGTH, kept.len().into());
    Ok(Response::from_parts(parts, full(kept)))
}

/// A backend's reply body as the core reads it.
#[derive(Debug)]
pub(crate) enum BackendBody {
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
pub(crate) enum Sent {
    /// A reply, still to be read.
    Reply(Box<BackendReply>),
    /// The backend refused the request.
    Failed(Refusal),
}

/// A backend's refusal, as it came: where it came from (an HTTP status, a
/// gRPC code), and the refusal as an HTTP reply (the backend's own, or,
/// from a gRPC backend, the status its code stands for with
/// `{"error": message}`), which a V2 HTTP client is given as it is.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub origin: Origin,
    pub resp: Response<BackendBody>,
    /// The refusal's message, when known without reading the reply.
    message: Option<String>,
}

/// Most bytes of a refusal's body read for its message.
const MAX_REFUSAL_BYTES: usize = 64 << 10;

impl Refusal {
    /// An HTTP backend's non-2xx reply.
    fn http(resp: Response<BackendBody>) -> Refusal {
        Refusal {
            origin: Origin::Http(resp.status()),
            resp,
            message: None,
        }
    }

    /// A gRPC backend's status other than OK.
    fn grpc(code: crate::codec::grpc::status::Code, message: String) -> Refusal {
        let origin = Origin::Grpc(code);
        let mut resp = Response::new(BackendBody::decoded(vec![crate::http::body::error_body(
            &message,
        )]));
        *resp.status_mut() = origin.status();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        Refusal {
            origin,
            resp,
            message: Some(message),
        }
    }

    /// The refusal as the core's error, for frontends that do not pass the
    /// backend's reply on: a model the backend does not know (404,
    /// NOT_FOUND), else the backend refusing the request, with its message
    /// (its `{"error"}`, or its text).
    pub(crate) async fn into_error(self, exchange: Exchange<'_>, model: &ModelRef) -> InferError {
        let backend = exchange.upstream.name().to_owned();
        if self.origin.status() == ::http::StatusCode::NOT_FOUND {
            return InferError::UnknownModel {
                backend,
                model: model.clone(),
            };
        }
        let message = match self.message {
            Some(m) => m,
            None => read_message(exchange, self.resp.into_body()).await,
        };
        InferError::Refused {
            backend,
            origin: self.origin,
            message,
        }
    }
}

/// A refusal's `{"error"}` message, or its text.
async fn read_message(exchange: Exchange<'_>, body: BackendBody) -> String {
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
    serde_json::from_slice::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&text).trim().to_owned())
}

/// How a backend request's body is described in its headers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyHead {
    pub len: u64,
    pub header_len: Option<u64>,
    pub content_type: &'static str,
}

impl RequestBody {
    /// What its headers say about it.
    pub(crate) fn head(&self) -> BodyHead {
        BodyHead {
            len: self.len(),
            header_len: self.header_len,
            content_type: self.content_type,
        }
    }
}

/// The backend request for `model`'s infer call. `headers` are the ones
/// the frontend forwards; body headers are set here.
pub(crate) fn outgoing(
    exchange: Exchange<'_>,
    model: &ModelRef,
    head: BodyHead,
    body: OutBody,
    mut headers: HeaderMap,
) -> Outgoing {
    let path = wire!(exchange.upstream, target(model, &mut headers));
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
    Outgoing {
        method: ::http::Method::POST,
        path,
        headers,
        body,
        model: Some(model.name.clone()),
        idempotent: exchange.route.retry_infer,
        deadline: exchange.obs.deadline(),
    }
}

/// The backend's answer to a request whose last byte went at `sent`, read
/// by its protocol.
pub(crate) async fn answer(
    exchange: Exchange<'_>,
    resp: Result<Response<UpstreamBody>, UpstreamError>,
    sent: Instant,
) -> Result<Sent, InferError> {
    let resp = resp?;
    exchange.obs.upstream_first_byte(sent.elapsed());
    let (parts, body) = resp.into_parts();
    let body = exchange.obs.backend_body(body, sent);
    let deadline = sent + exchange.upstream.backend.request_timeout;
    wire!(
        exchange.upstream,
        answer(exchange, parts, body, deadline).await
    )
}

/// A non-2xx head: the backend refusing the request with its own reply.
fn refused(
    exchange: Exchange<'_>,
    parts: ::http::response::Parts,
    body: Metered<UpstreamBody>,
) -> Sent {
    exchange.obs.backend_status(parts.status);
    Sent::Failed(Refusal::http(Response::from_parts(
        parts,
        BackendBody::Wire(body),
    )))
}
