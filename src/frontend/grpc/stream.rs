//! `ModelStreamInfer`: a stream of inference requests, each answered by
//! one or more responses (several for a decoupled model). Every request
//! message is a request of its own, as a unary call is: observed apart
//! (its own access-log line and count), bound to the route its model
//! names, its caller checked against that route's keys with the stream's
//! credentials and one token taken from its rate limits, its elements
//! charged, its tensors checked against its route's rules, all before it
//! goes on. One that fails is answered with the stream's error message,
//! as Triton answers a failed request on a stream, while the stream goes
//! on. The stream itself is bound to the route of its first message
//! (credentials checked, no token taken).
//!
//! - To a backend that speaks gRPC, the stream goes through both ways:
//!   checked request messages are forwarded as they came, the backend's
//!   response messages and final status come back as they are. Such a
//!   stream carries requests for its first route's models only (one
//!   backend stream); a message for another route's model is refused.
//!   A message's access-log line is written when it is forwarded.
//! - To a backend that speaks HTTP, each request is one infer through the
//!   core (through its own route), its response sent when it is back, in
//!   order. A decoupled model cannot answer an HTTP infer (Triton: 501):
//!   the stream then ends with UNIMPLEMENTED saying so — such models need
//!   a `grpc://` backend.
//!
//! The stream's messages are read under the largest body limit of the
//! routes they may be for, each then held to its own route's limit and
//! its wire form checked against the route's caps before it is decoded;
//! the whole stream is read under the server's body timeouts.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use http_body::Frame;
use tokio::sync::mpsc;

use super::Read;
use super::message::{self, GrpcError};
use super::status::{self, Code, code_of};
use crate::codec::grpc::proto::inference::ModelInferRequest;
use crate::codec::grpc::proto::inference::infer_parameter::ParameterChoice;
use crate::codec::grpc::{self, FrameDecoder, budget, frame};
use crate::config::Route;
use crate::error::{DeadlineExceeded, Error};
use crate::frontend::{Call, Services, Target};
use crate::http::body::{Body, BoxError};
use crate::http::client_body::ClientBody;
use crate::http::headers::trace_headers;
use crate::infer::backend::{self, Streams};
use crate::infer::call::{self, InferCall};
use crate::infer::checks::{check_request, doc_limits, grpc_caps};
use crate::infer::route::{self, RouteError};
use crate::infer::{Exchange, InferRequest, ModelRef, TensorData};
use crate::observe::{Direction, Observation};
use crate::upstream::{OutBody, Outgoing, Upstream};

/// Response frames buffered between the stream's task and the client.
const BUFFERED_FRAMES: usize = 8;

/// What every request of the stream shares, owned by the stream's task.
struct Stream {
    services: Arc<dyn Services>,
    /// The route of the stream's first message, and its backend.
    route: Arc<Route>,
    upstream: Upstream,
    /// The stream's own observation (the HTTP/2 request).
    obs: Observation,
    /// Trace headers, forwarded with every request.
    headers: HeaderMap,
    /// The client's head, whose credentials each message is checked with.
    credentials: HeaderMap,
    /// Messages taken so far.
    taken: std::sync::atomic::AtomicU64,
}

/// Serves one `ModelStreamInfer` call.
pub(super) async fn serve(call: Call<'_, Read>) -> Result<Response<Body>, Error> {
    let (Target::Bound { exchange, .. }, Some(Read::Stream(first, reader))) =
        (call.target, call.named)
    else {
        return Err(RouteError::Internal {
            what: "a stream came without its first message".into(),
        }
        .into());
    };
    let (head, obs) = (call.head, call.obs);
    let stream = Stream {
        services: call.services.owned(),
        route: exchange.route.clone(),
        upstream: exchange.upstream.clone(),
        obs: obs.clone(),
        headers: trace_headers(&head.headers),
        credentials: head.headers.clone(),
        taken: Default::default(),
    };
    let (tx, rx) = mpsc::channel(BUFFERED_FRAMES);
    let deadline = obs.deadline();
    let (out, obs) = (tx.clone(), obs.clone());
    match backend::streams(&stream.upstream) {
        Streams::AsItCame => tokio::spawn(within(
            deadline,
            out,
            obs,
            through_grpc(stream, first, reader, tx),
        )),
        Streams::PerRequest => tokio::spawn(within(
            deadline,
            out,
            obs,
            through_http(stream, first, reader, tx),
        )),
    };
    let mut resp = Response::new(http_body_util::BodyExt::boxed_unsync(Frames(rx)));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(status::CONTENT_TYPE),
    );
    Ok(resp)
}

/// Runs the stream's task until the client's deadline, if it gave one;
/// then the stream ends with DEADLINE_EXCEEDED.
async fn within(
    deadline: Option<Instant>,
    tx: Out,
    obs: Observation,
    task: impl Future<Output = ()>,
) {
    let Some(at) = deadline else {
        return task.await;
    };
    if tokio::time::timeout_at(at.into(), task).await.is_err() {
        let started = Instant::now().checked_sub(obs.elapsed());
        let after = started.map_or(Duration::ZERO, |s| at.saturating_duration_since(s));
        fail(&tx, &obs, &DeadlineExceeded { after }.into()).await;
    }
}

/// The client's side of the stream.
#[derive(Debug)]
pub struct Reader {
    body: ClientBody,
    frames: FrameDecoder,
}

impl Reader {
    /// The stream's messages, read off `body` under `limits` each.
    pub fn new(body: ClientBody, limits: crate::codec::grpc::FrameLimits) -> Reader {
        Reader {
            body,
            frames: FrameDecoder::new(limits),
        }
    }

    /// The next message; `None` once the client's side has ended.
    pub async fn next(&mut self) -> Result<Option<Bytes>, Error> {
        next_message(&mut self.body, &mut self.frames).await
    }
}

async fn next_message(
    body: &mut ClientBody,
    frames: &mut FrameDecoder,
) -> Result<Option<Bytes>, Error> {
    loop {
        if let Some(f) = frames.decode().map_err(GrpcError::from)? {
            return Ok(Some(f.message));
        }
        match body.next().await? {
            Some(chunk) => frames.push(chunk),
            None => {
                frames.finish().map_err(GrpcError::from)?;
                return Ok(None);
            }
        }
    }
}

/// The sender of the stream's response frames.
type Out = mpsc::Sender<Frame<Bytes>>;

/// Sends one response message; `false` once the client is gone.
async fn send_message(tx: &Out, message: Vec<Bytes>) -> bool {
    let Ok(framed) = frame::encode(message) else {
        return false;
    };
    for piece in framed {
        if tx.send(Frame::data(piece)).await.is_err() {
            return false;
        }
    }
    true
}

/// Ends the stream with `code` (and its message).
async fn end(tx: &Out, obs: &Observation, code: Code, message: &str) {
    obs.set_status(code.http());
    let mut trailers = HeaderMap::new();
    status::put_status(&mut trailers, code, message);
    let _ = tx.send(Frame::trailers(trailers)).await;
}

/// Ends the stream with the status of `e`.
async fn fail(tx: &Out, obs: &Observation, e: &Error) {
    obs.error(e);
    end(tx, obs, code_of(&e.class()), &e.to_string()).await;
}

/// The request parameter asking every response of a stream to say whether
/// it is the request's last (`triton_final_response`). gRPC streams only:
/// Triton's HTTP endpoint refuses `triton_` parameters.
const EMPTY_FINAL: &str = "triton_enable_empty_final_response";
/// The response parameter saying so.
const FINAL: &str = "triton_final_response";

/// One request of a stream, checked and converted.
struct Checked {
    req: InferRequest,
    /// The client asked for [`FINAL`] on every response.
    says_final: bool,
}

/// Records and ends a message refused with `e`.
fn refused(obs: &Observation, e: &Error) {
    obs.error(e);
    obs.end(code_of(&e.class()).http());
}

impl Stream {
    /// The observation of the stream's next message.
    fn next_message_obs(&self) -> Observation {
        let n = 1 + self
            .taken
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.obs.message(n)
    }
}

/// Takes one message as a request of its own, observed by `obs`: bound
/// to the route its model names with its caller checked and a token
/// taken, held to that route's body limit and caps, decoded, its tensors
/// checked against the route's rules. Its exchange and the request (its
/// elements are charged by its call, or where it is forwarded).
async fn take<'a>(
    stream: &'a Stream,
    obs: &'a Observation,
    message: Bytes,
) -> Result<(Exchange<'a>, Checked), Error> {
    let (name, _) = budget::model_of_request(&message).map_err(GrpcError::from)?;
    let route = route::for_model(stream.services.config(), name, |_| true)?;
    let exchange = stream
        .services
        .bind_message(route, name, &stream.credentials, obs)
        .await?;
    message::within_route(route, &message)?;
    let c = checked(route, message)?;
    Ok((exchange, c))
}

/// Decodes one request message within its route's caps, checks it
/// against the route's rules; the request, converted.
fn checked(route: &Route, message: Bytes) -> Result<Checked, Error> {
    let mut request: ModelInferRequest =
        message::decode_within(message, &budget::MODEL_INFER_REQUEST, &grpc_caps(route))?;
    let says_final = request
        .parameters
        .remove(EMPTY_FINAL)
        .is_some_and(|p| matches!(p.parameter_choice, Some(ParameterChoice::BoolParam(true))));
    let version = Some(request.model_version.clone()).filter(|v| !v.is_empty());
    let name = request.model_name.clone();
    let v2 = grpc::request_to_v2(request, &doc_limits(route)).map_err(GrpcError::from)?;
    check_request(route, &v2.header)?;
    let data = v2
        .header
        .tensors
        .iter()
        .zip(v2.data)
        .map(|(t, pieces)| match t.data {
            crate::codec::v2::EntryData::SharedMemory => TensorData::SharedMemory,
            _ => TensorData::Pieces(pieces),
        })
        .collect();
    Ok(Checked {
        req: InferRequest {
            model: ModelRef { name, version },
            header: v2.header,
            data,
        },
        says_final,
    })
}

/// A stream to a gRPC backend is one backend stream: its requests are
/// for models of its first message's route.
fn same_route(stream: &Stream, route: &Route) -> Result<(), Error> {
    if route.name == stream.route.name {
        return Ok(());
    }
    Err(GrpcError::Unimplemented(
        "a stream across routes to a gRPC backend",
        "every request of a stream to a gRPC backend must be for a model of its first request's route",
    )
    .into())
}

/// To an HTTP backend: each request one infer, its reply sent back in order.
async fn through_http(stream: Stream, first: Bytes, mut reader: Reader, tx: Out) {
    let mut next = Some(first);
    while let Some(message) = next {
        let started = Instant::now();
        let obs = stream.next_message_obs();
        let answered = match take(&stream, &obs, message).await {
            Ok((exchange, c)) => infer_http(&stream, exchange, c, started).await,
            Err(e) => Err(e),
        };
        let sent = match answered {
            Ok(pieces) => {
                let sent = send_message(&tx, pieces).await;
                obs.end(if sent {
                    200
                } else {
                    crate::observe::CLIENT_CLOSED
                });
                sent
            }
            // A decoupled model cannot answer over HTTP: the stream ends.
            Err(e) if refused_with(&e, StatusCode::NOT_IMPLEMENTED) => {
                let message = format!(
                    "{e}; a decoupled model streams only from a gRPC backend (grpc:// URL)"
                );
                refused(&obs, &e);
                stream.obs.error(&e);
                return end(&tx, &stream.obs, Code::Unimplemented, &message).await;
            }
            Err(e) => {
                refused(&obs, &e);
                send_message(&tx, vec![grpc::encode_stream_error(&e.to_string())]).await
            }
        };
        if !sent {
            return;
        }
        next = match reader.next().await {
            Ok(m) => m,
            Err(e) => return fail(&tx, &stream.obs, &e).await,
        };
    }
    end(&tx, &stream.obs, Code::Ok, "").await;
}

/// Whether `e` is the backend refusing with `status`.
fn refused_with(e: &Error, status: StatusCode) -> bool {
    matches!(e.class(), crate::error::Class::Refused { origin, .. } if origin.status() == status)
}

/// One request of the stream through the core to an HTTP backend, on
/// its own route and observation: the stream's response message.
async fn infer_http(
    stream: &Stream,
    exchange: Exchange<'_>,
    c: Checked,
    started: Instant,
) -> Result<Vec<Bytes>, Error> {
    let Checked { req, says_final } = c;
    let mut reply = InferCall::new(exchange, stream.headers.clone(), started)
        .collect(req)
        .await?;
    if says_final {
        // One infer, one response: always the request's last.
        mark_final(&mut reply.header);
    }
    let data: Vec<Vec<Bytes>> = reply.data.iter().map(|d| d.pieces().to_vec()).collect();
    Ok(grpc::encode_stream_response(&reply.header, &data).map_err(GrpcError::from)?)
}

/// Sets [`FINAL`] in a response's parameters.
fn mark_final(header: &mut crate::codec::v2::Document) {
    let flag = (FINAL.to_owned(), serde_json::Value::Bool(true));
    match header.members.iter_mut().find(|(k, _)| k == "parameters") {
        Some((_, serde_json::Value::Object(p))) => {
            p.insert(flag.0, flag.1);
        }
        _ => header.members.push((
            "parameters".to_owned(),
            serde_json::Value::Object([flag].into_iter().collect()),
        )),
    }
}

/// To a gRPC backend: the stream goes through both ways.
async fn through_grpc(stream: Stream, first: Bytes, mut reader: Reader, tx: Out) {
    let (to_backend, backend_body) = mpsc::channel::<Result<Bytes, BoxError>>(BUFFERED_FRAMES);
    let mut headers = stream.headers.clone();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(status::CONTENT_TYPE),
    );
    headers.insert(header::TE, HeaderValue::from_static("trailers"));
    let out = Outgoing {
        method: http::Method::POST,
        path: format!("{}ModelStreamInfer", crate::upstream::grpc::SERVICE),
        headers,
        body: OutBody::Stream(http_body_util::BodyExt::boxed_unsync(
            crate::http::body::ChannelBody::from_receiver(backend_body),
        )),
        model: Some(stream.obs.model().to_owned()).filter(|m| !m.is_empty()),
        idempotent: false,
        deadline: stream.obs.deadline(),
    };
    // Requests go while the backend's responses come back.
    let forward = forward_requests(&stream, first, &mut reader, to_backend, &tx);
    let exchange = async {
        let sent = Instant::now();
        let resp = stream
            .upstream
            .send(out, Some(stream.obs.watch()))
            .await
            .map_err(|e| Error::from(crate::infer::InferError::from(e)))?;
        stream.obs.upstream_first_byte(sent.elapsed());
        Ok::<_, Error>((resp, sent))
    };
    let (forwarded, answered) = tokio::join!(forward, async {
        let (resp, sent) = exchange.await?;
        relay(&stream, resp, sent, &tx).await;
        Ok::<(), Error>(())
    });
    if let Err(e) = answered.and(forwarded) {
        fail(&tx, &stream.obs, &e).await;
    }
}

/// Checks and forwards the client's request messages to the backend until
/// the client's side ends; a request that is refused is answered with
/// the stream's error message instead.
async fn forward_requests(
    stream: &Stream,
    first: Bytes,
    reader: &mut Reader,
    to_backend: mpsc::Sender<Result<Bytes, BoxError>>,
    tx: &Out,
) -> Result<(), Error> {
    let mut next = Some(first);
    while let Some(message) = next {
        let obs = stream.next_message_obs();
        let passed = match take(stream, &obs, message.clone()).await {
            Ok((exchange, c)) => match same_route(stream, exchange.route) {
                // Forwarded as it came, so charged and counted here.
                Ok(()) => {
                    let elements = c.req.element_count();
                    obs.elements(Direction::Request, elements);
                    call::charge(&obs, elements).await.map_err(Error::from)
                }
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        match passed {
            Ok(()) => {
                let Ok(framed) = frame::encode(vec![message]) else {
                    break;
                };
                let mut out = 0;
                for piece in framed {
                    out += piece.len() as u64;
                    if to_backend.send(Ok(piece)).await.is_err() {
                        obs.end(crate::observe::CLIENT_CLOSED);
                        return Ok(()); // the backend's side ended
                    }
                }
                obs.backend_out(out);
                obs.end(200);
            }
            Err(e) => {
                refused(&obs, &e);
                if !send_message(tx, vec![grpc::encode_stream_error(&e.to_string())]).await {
                    return Ok(());
                }
            }
        }
        next = reader.next().await?;
    }
    // The client's side ended: so does the backend's request stream.
    drop(to_backend);
    Ok(())
}

/// Relays the backend's response frames (messages as they are, then its
/// status) to the client.
async fn relay(
    stream: &Stream,
    resp: Response<crate::upstream::UpstreamBody>,
    sent: Instant,
    tx: &Out,
) {
    use http_body_util::BodyExt;
    let (parts, body) = resp.into_parts();
    // A status alone, in the head.
    if parts.headers.contains_key(status::GRPC_STATUS) {
        let mut trailers = HeaderMap::new();
        for name in [status::GRPC_STATUS, status::GRPC_MESSAGE] {
            if let Some(v) = parts.headers.get(&name) {
                trailers.insert(name, v.clone());
            }
        }
        let _ = tx.send(Frame::trailers(trailers)).await;
        return;
    }
    let mut body = stream.obs.backend_body(body, sent);
    while let Some(frame) = body.frame().await {
        let frame = match frame {
            Ok(f) => f,
            Err(e) => {
                let e = Error::from(crate::infer::InferError::from(
                    stream.upstream.body_error(&*e),
                ));
                return fail(tx, &stream.obs, &e).await;
            }
        };
        if let Some(t) = frame.trailers_ref()
            && let Some(code) = t.get(status::GRPC_STATUS)
        {
            let code = code.to_str().ok().and_then(|c| c.parse::<u8>().ok());
            stream
                .obs
                .set_status(code.and_then(Code::from_u8).unwrap_or(Code::Unknown).http());
        }
        if tx.send(frame).await.is_err() {
            return; // the client is gone
        }
    }
}

/// A response body fed frame by frame (data, then trailers).
struct Frames(mpsc::Receiver<Frame<Bytes>>);

impl http_body::Body for Frames {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.0.poll_recv(cx).map(|f| f.map(Ok))
    }
}

impl std::fmt::Debug for Frames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Frames")
    }
}
