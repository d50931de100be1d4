//! Response bodies and the few response shapes the demo server sends, with
//! Triton's headers in Triton's order (docs/TRITON-FACTS.md §1).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::response::Builder;
use http::{Response, StatusCode};
use http_body::Frame;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};

use tokio::sync::mpsc;

use tensorgate_codec::codec::v2::framing::IHCL_HEADER;

/// Every response body: a whole buffer, or a channel for streams.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

/// A body fed through the returned sender; it has no length, so HTTP/1.1
/// sends it chunked, each chunk as soon as it is sent. Sending fails once
/// the client is gone; dropping the sender ends the body.
pub fn channel() -> (mpsc::Sender<Bytes>, Body) {
    let (tx, rx) = mpsc::channel(1);
    (tx, ChannelBody(rx).boxed_unsync())
}

#[derive(Debug)]
struct ChannelBody(mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| Ok(Frame::data(c))))
    }
}

/// Builds the response; a builder error (impossible with the static header
/// values used here) becomes an empty 500.
pub fn finish(builder: Builder, body: Body) -> Response<Body> {
    builder.body(body).unwrap_or_else(|e| {
        tracing::error!(error = %e, "demo server built an invalid response");
        let mut r = Response::new(full(Bytes::new()));
        *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        r
    })
}

/// `200` with a JSON body.
pub fn json(body: impl Into<Bytes>) -> Response<Body> {
    let body = body.into();
    let builder = Response::builder()
        .header(CONTENT_TYPE, "application/json")
        .header(CONTENT_LENGTH, body.len());
    finish(builder, full(body))
}

/// `200` with a binary-extension body whose JSON header is `header_len`
/// bytes.
pub fn binary(body: impl Into<Bytes>, header_len: usize) -> Response<Body> {
    let body = body.into();
    let builder = Response::builder()
        .header(CONTENT_TYPE, "application/octet-stream")
        .header(IHCL_HEADER, header_len)
        .header(CONTENT_LENGTH, body.len());
    finish(builder, full(body))
}

/// `200` with an empty `text/plain` body (health and readiness).
pub fn empty_ok() -> Response<Body> {
    let builder = Response::builder()
        .header(CONTENT_LENGTH, 0)
        .header(CONTENT_TYPE, "text/plain");
    finish(builder, EmptyBody.boxed_unsync())
}

/// An empty body that does not say so up front: hyper then writes our
/// `Content-Length: 0` where we put it instead of moving it last, keeping
/// Triton's header order.
#[derive(Debug)]
struct EmptyBody;

impl http_body::Body for EmptyBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(None)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(0)
    }
}

/// A streamed (chunked) response with the given status and content type.
pub fn streamed(status: StatusCode, content_type: &'static str, body: Body) -> Response<Body> {
    let builder = Response::builder()
        .status(status)
        .header(CONTENT_TYPE, content_type);
    finish(builder, body)
}
