//! Bodies with a bound on how long they may stand still, and optionally on
//! how long they may take in all: a stall on the side that produces bytes
//! is seen inside `poll_frame` (the inner body is pending and a timer
//! runs), and ends the body with an error naming the side.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::body::BoxError;

/// Which side stood still.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stalled {
    /// The backend sent nothing.
    Backend,
    /// The client sent nothing (a forwarded request body) or read nothing.
    Client,
}

/// A stream made no progress for the idle time and was cut.
#[derive(Debug, thiserror::Error)]
#[error("{} made no progress for {:.3}s: stream cut", match .side { Stalled::Backend => "backend stream", Stalled::Client => "client stream" }, .idle.as_secs_f64())]
pub struct StreamStalled {
    pub side: Stalled,
    pub idle: Duration,
}

/// A stream was still going when its whole time was up.
#[derive(Debug, thiserror::Error)]
#[error("the stream did not end within {:.3}s: cut", .total.as_secs_f64())]
pub struct StreamOverdue {
    pub total: Duration,
}

/// A body whose pauses are bounded: `Err(StreamStalled)` once the inner
/// body has been pending for `idle`; with [`Idle::until_at`], also
/// `Err(StreamOverdue)` once it is pending past its deadline.
#[derive(Debug)]
pub struct Idle<B> {
    inner: B,
    idle: Duration,
    side: Stalled,
    /// The deadline and the whole time it stands for.
    deadline: Option<(Instant, Duration)>,
    timer: Option<Pin<Box<Sleep>>>,
}

impl<B> Idle<B> {
    pub fn new(inner: B, idle: Duration, side: Stalled) -> Self {
        Idle {
            inner,
            idle,
            side,
            deadline: None,
            timer: None,
        }
    }

    /// Also ends the body once it is waited for past `deadline`, the end of
    /// a whole time of `total`.
    pub fn until_at(mut self, deadline: Instant, total: Duration) -> Self {
        self.deadline = Some((deadline, total));
        self
    }
}

impl<B> http_body::Body for Idle<B>
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
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(r) => {
                // Progress: the next pause starts from scratch. The timer is
                // made only when the body is actually waited for.
                this.timer = None;
                Poll::Ready(r.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                let idle = this.idle;
                let deadline = this.deadline;
                let timer = this.timer.get_or_insert_with(|| {
                    let mut at = Instant::now() + idle;
                    if let Some((d, _)) = deadline {
                        at = at.min(d);
                    }
                    Box::pin(tokio::time::sleep_until(at))
                });
                ready!(timer.as_mut().poll(cx));
                this.timer = None;
                let error: BoxError = match deadline {
                    Some((d, total)) if Instant::now() >= d => Box::new(StreamOverdue { total }),
                    _ => Box::new(StreamStalled {
                        side: this.side,
                        idle,
                    }),
                };
                Poll::Ready(Some(Err(error)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
