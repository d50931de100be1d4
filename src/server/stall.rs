//! HTTP/2 streams the client's flow control holds up, reset after
//! `send_timeout`.
//!
//! A client that advertises a zero receive window and never sends a
//! WINDOW_UPDATE (while answering PINGs) writes nothing to its socket to
//! time out: hyper simply stops asking the reply body for more, and the
//! stream kept its request slot and its buffered reply for ever (2
//! connections held all 256 slots and 1.3 GB). nginx applies its
//! `send_timeout` to a stream waiting for window; so does this:
//!
//! - every HTTP/2 stream runs in a [`Watched`] task (hyper spawns them
//!   through [`StreamExec`]), which knows, through the reply body
//!   ([`Stalled::poll`]), whether the body has handed a frame to hyper and
//!   not been asked for the next one: hyper is waiting for window. Once that
//!   has lasted `send_timeout` with no progress, the stream's task is
//!   dropped: h2 resets the stream (RST_STREAM CANCEL) and drops what it
//!   held for it, and the reply body (with its request slot) is dropped;
//! - reply frames are handed to hyper at most [`MAX_CHUNK`] bytes at a
//!   time, so that what h2 holds beyond the client's window is one such
//!   piece, not a whole reply.
//!
//! HTTP/1 replies are timed on the socket instead ([`super::send`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use tokio::time::Sleep;

/// The most bytes of a reply handed to hyper at once on an HTTP/2 stream.
pub(super) const MAX_CHUNK: usize = 64 << 10;

/// What one stream's task and its reply body share.
#[derive(Debug, Default)]
struct Flow {
    /// The body handed a frame to hyper and has not been polled since.
    owed: AtomicBool,
    /// Frames handed over so far: progress, whatever the window.
    frames: AtomicU64,
}

tokio::task_local! {
    /// The flow of the stream whose task is running.
    static FLOW: Arc<Flow>;
}

/// Spawns hyper's HTTP/2 stream tasks, each [`Watched`].
#[derive(Clone, Debug)]
pub(super) struct StreamExec {
    /// `send_timeout` in milliseconds, as of the last connection accepted.
    limit_ms: Arc<AtomicU64>,
}

impl StreamExec {
    pub(super) fn new(limit: Duration) -> StreamExec {
        let exec = StreamExec {
            limit_ms: Arc::new(AtomicU64::new(0)),
        };
        exec.set_limit(limit);
        exec
    }

    /// The `send_timeout` of streams started from now on.
    pub(super) fn set_limit(&self, limit: Duration) {
        let ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX).max(1);
        self.limit_ms.store(ms, Ordering::Relaxed);
    }
}

impl<F> hyper::rt::Executor<F> for StreamExec
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        let limit = Duration::from_millis(self.limit_ms.load(Ordering::Relaxed));
        tokio::spawn(Watched {
            inner: Some(Box::pin(fut)),
            flow: Arc::default(),
            limit,
            timer: None,
            seen: 0,
        });
    }
}

/// One HTTP/2 stream's task, dropped once hyper has waited `limit` for
/// the client's window with no progress.
pub(super) struct Watched<F> {
    inner: Option<Pin<Box<F>>>,
    flow: Arc<Flow>,
    limit: Duration,
    /// Running while hyper waits for window.
    timer: Option<Pin<Box<Sleep>>>,
    /// Frames handed over when the timer was armed.
    seen: u64,
}

impl<F> std::fmt::Debug for Watched<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched")
            .field("flow", &self.flow)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl<F: Future> Future for Watched<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(());
        };
        let polled = FLOW.sync_scope(this.flow.clone(), || inner.as_mut().poll(cx));
        if polled.is_ready() {
            return Poll::Ready(());
        }
        if !this.flow.owed.load(Ordering::Relaxed) {
            // Waiting for the reply (or the request), not for the client.
            this.timer = None;
            return Poll::Pending;
        }
        let frames = this.flow.frames.load(Ordering::Relaxed);
        if this.timer.is_none() || frames != this.seen {
            this.seen = frames;
            this.timer = Some(Box::pin(tokio::time::sleep(this.limit)));
        }
        let Some(timer) = this.timer.as_mut() else {
            return Poll::Pending;
        };
        if timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        tracing::debug!(
            limit = ?this.limit,
            "resetting an HTTP/2 stream whose client gave no window for send_timeout"
        );
        // Dropping the task resets the stream and frees its reply.
        this.inner = None;
        Poll::Ready(())
    }
}

/// A reply body's side of the watch, kept by the body of an HTTP/2
/// reply: the frame it polled, cut to [`MAX_CHUNK`]-byte pieces (the
/// rest in `rest`), with the stream's task told whether hyper now owes
/// it a poll.
#[derive(Debug, Default)]
pub(super) struct Stalled {
    /// What is left of a data frame cut into pieces.
    rest: Option<Bytes>,
}

impl Stalled {
    /// Whether a piece of a cut frame is still to come.
    pub(super) fn holds(&self) -> bool {
        self.rest.is_some()
    }

    /// The bytes of a cut frame still to come.
    pub(super) fn held(&self) -> u64 {
        self.rest.as_ref().map_or(0, |r| r.len() as u64)
    }

    /// The next frame: what is left of the last one, else `poll` (the
    /// inner body's), cut; notes it for the stream's task.
    pub(super) fn poll<E>(
        &mut self,
        poll: impl FnOnce() -> Poll<Option<Result<Frame<Bytes>, E>>>,
    ) -> Poll<Option<Result<Frame<Bytes>, E>>> {
        let polled = match self.rest.take() {
            Some(rest) => Poll::Ready(Some(Ok(Frame::data(rest)))),
            None => poll(),
        };
        let polled = polled.map(|f| {
            f.map(|f| {
                f.map(|frame| match frame.into_data() {
                    Ok(mut data) if data.len() > MAX_CHUNK => {
                        self.rest = Some(data.split_off(MAX_CHUNK));
                        Frame::data(data)
                    }
                    Ok(data) => Frame::data(data),
                    Err(frame) => frame,
                })
            })
        });
        let handed = matches!(&polled, Poll::Ready(Some(Ok(f))) if f.is_data());
        let _ = FLOW.try_with(|flow| {
            flow.owed.store(handed, Ordering::Relaxed);
            if handed {
                flow.frames.fetch_add(1, Ordering::Relaxed);
            }
        });
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_cut_to_max_chunk_pieces() {
        let mut s = Stalled::default();
        let big = Bytes::from(vec![7u8; MAX_CHUNK * 2 + 10]);
        let mut polls = 0;
        let mut next = || {
            polls += 1;
            Poll::Ready(Some(Ok::<_, ()>(Frame::data(big.clone()))))
        };
        let mut lens = Vec::new();
        for _ in 0..3 {
            let Poll::Ready(Some(Ok(f))) = s.poll(&mut next) else {
                panic!("a frame");
            };
            lens.push(f.into_data().unwrap().len());
        }
        assert_eq!(lens, [MAX_CHUNK, MAX_CHUNK, 10]);
        assert!(!s.holds());
        assert_eq!(
            polls, 1,
            "the inner body is asked once for the three pieces"
        );
    }

    /// A stream whose body handed a frame and is never polled again (what
    /// hyper does while it waits for window) is dropped after the limit;
    /// one whose body is waiting for its own data is not.
    #[tokio::test(start_paused = true)]
    async fn a_stream_waiting_for_window_is_dropped_after_the_limit() {
        struct Dropped(Arc<AtomicBool>);
        impl Drop for Dropped {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let limit = Duration::from_secs(5);
        for handed in [true, false] {
            let dropped = Arc::new(AtomicBool::new(false));
            let guard = Dropped(dropped.clone());
            let fut = async move {
                let _guard = guard;
                let mut s = Stalled::default();
                // One poll of the body: a frame handed over, or nothing yet.
                let _ = s.poll(|| match handed {
                    true => Poll::Ready(Some(Ok::<_, ()>(Frame::data(Bytes::from_static(b"x"))))),
                    false => Poll::Pending,
                });
                std::future::pending::<()>().await;
            };
            let task = tokio::spawn(Watched {
                inner: Some(Box::pin(fut)),
                flow: Arc::default(),
                limit,
                timer: None,
                seen: 0,
            });
            tokio::time::sleep(limit - Duration::from_millis(10)).await;
            assert!(
                !dropped.load(Ordering::SeqCst),
                "handed={handed}: too early"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert_eq!(dropped.load(Ordering::SeqCst), handed, "handed={handed}");
            assert_eq!(task.is_finished(), handed);
            task.abort();
        }
    }
}
