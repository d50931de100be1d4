//! The body type the gateway serves and sends, and small bodies built from
//! bytes already in hand.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;

/// Errors a streaming body can end with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Every body the gateway produces: boxed so handlers can return any of
/// them.
pub type Body = http_body_util::combinators::UnsyncBoxBody<Bytes, BoxError>;

pub fn full(bytes: impl Into<Bytes>) -> Body {
    http_body_util::Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

pub fn empty() -> Body {
    http_body_util::Empty::new()
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// `{"error": message}` as bytes.
pub fn error_body(message: &str) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 12);
    out.extend_from_slice(b"{\"error\":");
    crate::codec::v2::strings::write_json_string(message.as_bytes(), &mut out);
    out.push(b'}');
    Bytes::from(out)
}

/// A JSON response with a status.
pub fn json_response(status: http::StatusCode, body: Bytes) -> http::Response<Body> {
    let mut resp = http::Response::new(full(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

/// A body made of byte chunks already in hand (a header and tensor data),
/// sent without concatenating them.
#[derive(Debug, Default)]
pub struct ChunksBody {
    chunks: VecDeque<Bytes>,
    remaining: u64,
}

impl ChunksBody {
    pub fn new(chunks: impl IntoIterator<Item = Bytes>) -> Self {
        let chunks: VecDeque<Bytes> = chunks.into_iter().filter(|c| !c.is_empty()).collect();
        let remaining = chunks.iter().map(|c| c.len() as u64).sum();
        ChunksBody { chunks, remaining }
    }

    /// The chunks of `chunks`, in the vector's own allocation: neither
    /// the list nor a chunk is copied (a request body built once and sent
    /// once need not be cloned chunk by chunk).
    pub fn from_vec(chunks: Vec<Bytes>) -> Self {
        let mut chunks = VecDeque::from(chunks);
        chunks.retain(|c| !c.is_empty());
        let remaining = chunks.iter().map(|c| c.len() as u64).sum();
        ChunksBody { chunks, remaining }
    }

    pub fn len(&self) -> u64 {
        self.remaining
    }

    pub fn is_empty(&self) -> bool {
        self.remaining == 0
    }

    pub fn boxed(self) -> Body {
        BodyExt::boxed_unsync(self)
    }
}

impl http_body::Body for ChunksBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.chunks.pop_front() {
            Some(c) => {
                self.remaining -= c.len() as u64;
                Poll::Ready(Some(Ok(Frame::data(c))))
            }
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

/// A body of `len` bytes whose pieces come through an unbounded channel (the
/// sender holds what it sends anyway): a request sent while the client's
/// request it is made from is still being read. An `Err` sent
/// through the channel aborts it; so does the sender going away before
/// `len` bytes came through (an exact-length body ending short).
#[derive(Debug)]
pub struct SizedChannelBody {
    rx: tokio::sync::mpsc::UnboundedReceiver<Result<Bytes, BoxError>>,
    remaining: u64,
}

impl SizedChannelBody {
    pub fn new(
        len: u64,
    ) -> (
        tokio::sync::mpsc::UnboundedSender<Result<Bytes, BoxError>>,
        SizedChannelBody,
    ) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (tx, SizedChannelBody { rx, remaining: len })
    }
}

impl http_body::Body for SizedChannelBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.rx.poll_recv(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(b))) => {
                self.remaining = self.remaining.saturating_sub(b.len() as u64);
                Poll::Ready(Some(Ok(Frame::data(b))))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(None) if self.remaining > 0 => Poll::Ready(Some(Err(format!(
                "request body ended {} bytes short",
                self.remaining
            )
            .into()))),
            Poll::Ready(None) => Poll::Ready(None),
        }
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

/// Bytes already read off a body, followed by the rest of it: puts a body
/// back together after its head was inspected, without copying.
#[derive(Debug)]
pub struct PrefixedBody<B> {
    prefix: VecDeque<Bytes>,
    inner: B,
}

impl<B> PrefixedBody<B> {
    pub fn new(prefix: impl IntoIterator<Item = Bytes>, inner: B) -> Self {
        PrefixedBody {
            prefix: prefix.into_iter().filter(|b| !b.is_empty()).collect(),
            inner,
        }
    }
}

impl<B> http_body::Body for PrefixedBody<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(b) = self.prefix.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(b))));
        }
        Pin::new(&mut self.inner).poll_frame(cx).map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.prefix.is_empty() && self.inner.is_end_stream()
    }
}

/// A body fed by a task through a bounded channel: the task waits while the
/// client reads, so what is buffered stays at the channel's few chunks. An
/// `Err` from the task aborts the body (the client sees a cut-off reply,
/// never a complete-looking one).
#[derive(Debug)]
pub struct ChannelBody {
    rx: tokio::sync::mpsc::Receiver<Result<Bytes, BoxError>>,
}

impl ChannelBody {
    /// A body and the sender that feeds it.
    pub fn new(capacity: usize) -> (tokio::sync::mpsc::Sender<Result<Bytes, BoxError>>, Self) {
        let (tx, rx) = tokio::sync::mpsc::channel(capacity.max(1));
        (tx, ChannelBody { rx })
    }

    /// The body a channel's receiving end feeds.
    pub fn from_receiver(rx: tokio::sync::mpsc::Receiver<Result<Bytes, BoxError>>) -> Self {
        ChannelBody { rx }
    }
}

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.rx
            .poll_recv(cx)
            .map(|item| item.map(|r| r.map(Frame::data)))
    }
}
