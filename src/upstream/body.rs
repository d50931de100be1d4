//! Bodies that cross the gateway with a bound on how long they may stand
//! still (`stream_idle_timeout`), and the backend reply body, which also
//! holds the backend's connection slot until it ends or is dropped.
//!
//! A stall on the side that produces bytes is seen inside `poll_frame`
//! (the inner body is pending and a timer runs). A client that stops
//! reading is not: hyper stops polling a body once its write buffer is
//! full. So a backend reply that may outgrow that buffer is moved by a
//! small task into a channel of two frames, and that task gives up when
//! the client has not taken a frame for the idle time: the backend
//! connection is dropped, and the client's stream ends in an error — it is
//! never completed as if it were whole.
//!
//! The body also carries its reply's [`ReplyVerdict`] on the replica: read to
//! its end, it counts for the replica; failed on the backend's side, or
//! found at fault by its reader ([`UpstreamBody::fault`]), against it.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as _, Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::sync::mpsc;

use super::Lease;
use super::failure::source_of;
use super::http1::ReplyBody;
use super::verdict::ReplyVerdict;
use crate::error::UpstreamKind;
use crate::http::body::BoxError;
use crate::http::idle::{Idle, Stalled, StreamStalled};

/// Replies at most this long (exact length) are read in the client's task:
/// even translated to JSON (up to five bytes of text per byte) they fit in
/// hyper's write buffer, so hyper keeps polling them whether or not the
/// client reads.
const DIRECT_MAX: u64 = 64 << 10;

/// Frames a moved reply may hold between the backend and the client.
const CHANNEL_FRAMES: usize = 2;

/// The stream ended before it was whole (the mover gave up).
#[derive(Debug, thiserror::Error)]
#[error("backend stream cut off before its end")]
pub(crate) struct StreamCut;

/// A backend's reply body. Holds the replica's lease (its connection slot,
/// its count of outstanding requests) until the body ends or is dropped.
#[derive(Debug)]
pub struct UpstreamBody {
    inner: Inner,
}

/// Boxed either way: a reply body is moved through several futures. The
/// verdict (`None` when the head decided already: a 5xx, counted then)
/// shares the box, one allocation per reply.
#[derive(Debug)]
enum Inner {
    Direct(Box<Direct>),
    Moved(Box<Moved>),
}

/// A reply read in the client's task.
#[derive(Debug)]
struct Direct {
    body: Idle<ReplyBody>,
    slot: Option<Lease>,
    verdict: Option<ReplyVerdict>,
}

/// The client's end of a reply moved by a task.
#[derive(Debug)]
struct Moved {
    rx: mpsc::Receiver<Result<Frame<Bytes>, BoxError>>,
    complete: Arc<AtomicBool>,
    remaining: Option<u64>,
    ended: bool,
    verdict: Option<ReplyVerdict>,
}

impl UpstreamBody {
    /// Wraps a backend reply body. `slot` is released when the body ends or
    /// is dropped; what `on_stall` makes (only for a reply moved by a task,
    /// the only kind a stall cuts unseen) is told when a stall cuts it;
    /// `verdict` is decided by how the body ends.
    pub(super) fn new<F>(
        body: ReplyBody,
        idle: Duration,
        slot: Option<Lease>,
        verdict: Option<ReplyVerdict>,
        on_stall: impl FnOnce() -> F,
    ) -> UpstreamBody
    where
        F: FnOnce(Stalled) + Send + 'static,
    {
        if body.is_end_stream()
            && let Some(v) = &verdict
        {
            v.ended();
        }
        let small = body.size_hint().exact().is_some_and(|n| n <= DIRECT_MAX);
        if small || body.is_end_stream() {
            return UpstreamBody {
                inner: Inner::Direct(Box::new(Direct {
                    body: Idle::new(body, idle, Stalled::Backend),
                    slot,
                    verdict,
                })),
            };
        }
        let remaining = body.size_hint().exact();
        let (tx, rx) = mpsc::channel(CHANNEL_FRAMES);
        let complete = Arc::new(AtomicBool::new(false));
        tokio::spawn(mover(body, tx, idle, complete.clone(), slot, on_stall()));
        UpstreamBody {
            inner: Inner::Moved(Box::new(Moved {
                rx,
                complete,
                remaining,
                ended: false,
                verdict,
            })),
        }
    }

    /// The reply's reader found fault with it (over the gateway's limit,
    /// malformed, too slow): counted against the replica that sent it, at
    /// most once per reply.
    pub fn fault(&self, kind: UpstreamKind) {
        if let Some(v) = self.verdict() {
            v.fault(kind);
        }
    }

    fn ended(&self) {
        if let Some(v) = self.verdict() {
            v.ended();
        }
    }

    fn verdict(&self) -> Option<&ReplyVerdict> {
        match &self.inner {
            Inner::Direct(d) => d.verdict.as_ref(),
            Inner::Moved(m) => m.verdict.as_ref(),
        }
    }

    /// What a failed body says about its replica.
    fn judge(&self, e: &BoxError) {
        let Some(v) = self.verdict() else { return };
        let e: &(dyn std::error::Error + 'static) = &**e;
        match source_of::<StreamStalled>(e) {
            Some(s) if s.side == Stalled::Backend => v.fault(UpstreamKind::Timeout),
            // The client stopped reading: not the replica's doing.
            Some(_) => {}
            None if source_of::<StreamCut>(e).is_some() => {}
            None => v.fault(UpstreamKind::Reset),
        }
    }
}

/// Moves a reply from the backend to the client's end, one or two frames
/// ahead, cutting it when either side stands still for `idle`.
async fn mover<F: FnOnce(Stalled)>(
    mut body: ReplyBody,
    tx: mpsc::Sender<Result<Frame<Bytes>, BoxError>>,
    idle: Duration,
    complete: Arc<AtomicBool>,
    slot: Option<Lease>,
    on_stall: F,
) {
    let stalled = loop {
        let frame = tokio::select! {
            f = tokio::time::timeout(idle, body.frame()) => f,
            // The client's end was dropped: stop reading the backend now.
            () = tx.closed() => break None,
        };
        let item = match frame {
            Err(_) => {
                let _ = tx.try_send(Err(Box::new(StreamStalled {
                    side: Stalled::Backend,
                    idle,
                })));
                break Some(Stalled::Backend);
            }
            Ok(None) => {
                complete.store(true, Ordering::Release);
                break None;
            }
            Ok(Some(Err(e))) => {
                let _ = tx.try_send(Err(Box::new(e)));
                break None;
            }
            Ok(Some(Ok(frame))) => frame,
        };
        match tokio::time::timeout(idle, tx.send(Ok(item))).await {
            Err(_) => break Some(Stalled::Client),
            Ok(Err(_)) => break None,
            Ok(Ok(())) => {}
        }
    };
    // The backend connection goes before anyone is told.
    drop(body);
    drop(slot);
    if let Some(side) = stalled {
        on_stall(side);
    }
}

impl http_body::Body for UpstreamBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = match &mut self.inner {
            Inner::Direct(d) => {
                let polled = Pin::new(&mut d.body).poll_frame(cx);
                if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
                    d.slot.take();
                }
                polled
            }
            Inner::Moved(m) => m.poll(cx),
        };
        match &polled {
            // A body of exact length is not polled past its last byte.
            Poll::Ready(None) => self.ended(),
            Poll::Ready(Some(Ok(_))) if self.is_end_stream() => self.ended(),
            Poll::Ready(Some(Err(e))) => self.judge(e),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Direct(d) => d.body.is_end_stream(),
            Inner::Moved(m) => m.ended || m.remaining == Some(0),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Direct(d) => d.body.size_hint(),
            Inner::Moved(m) => m.remaining.map_or_else(SizeHint::new, SizeHint::with_exact),
        }
    }
}

impl Moved {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match ready!(self.rx.poll_recv(cx)) {
            Some(Ok(frame)) => {
                if let (Some(left), Some(data)) = (self.remaining.as_mut(), frame.data_ref()) {
                    *left = left.saturating_sub(data.len() as u64);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(e)) => {
                self.ended = true;
                Poll::Ready(Some(Err(e)))
            }
            None => {
                self.ended = true;
                if self.complete.load(Ordering::Acquire) {
                    Poll::Ready(None)
                } else {
                    Poll::Ready(Some(Err(Box::new(StreamCut))))
                }
            }
        }
    }
}
