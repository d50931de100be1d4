//! A client's request body as it comes off the connection ([`Wire`]), and
//! what the request's driver knows of it while it comes ([`BodyClock`]):
//! when the whole body is due, how much of it arrived, whether it ended.
//!
//! The clock is shared so that the body's total deadline holds whether or
//! not anything reads the body: the driver races the request against
//! [`BodyClock::overdue`], which fires at the deadline unless the body has
//! ended by then. A body dropped before its end (an early answer, a
//! refusal from the head) is read on and thrown away in the background,
//! within a bound and the body's timeouts, so the connection can carry the
//! client's next request (what nginx does with the bodies of early
//! answers); when it cannot be (a declared length past the bound, no
//! declared length, out of time), the clock says so and the driver answers
//! with `Connection: close`, so a client reusing connections does not write
//! its next request into a connection that is about to close.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body as _, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::time::{Instant, Sleep};

use super::body::BoxError;
use super::idle::StreamOverdue;
use crate::config::ServerConfig;

/// Most bytes of a body refused before it was opened (from its head) that
/// are read and thrown away so the connection can be kept.
pub const DISCARD_BYTES: u64 = 1 << 20;

/// How long a client may take over its request body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyTimeouts {
    /// Longest pause between two pieces.
    pub idle: Duration,
    /// The whole body, from when the request arrived.
    pub total: Duration,
}

impl From<&ServerConfig> for BodyTimeouts {
    fn from(s: &ServerConfig) -> Self {
        BodyTimeouts {
            idle: s.body_read_timeout,
            total: s.body_total_timeout,
        }
    }
}

/// What runs out first when waiting for the next piece at `now`: the
/// pause allowed, or the time left to the whole body's `deadline`.
pub fn next_wait(now: Instant, idle: Duration, deadline: Instant) -> (Duration, Limit) {
    let left = deadline.saturating_duration_since(now);
    if left <= idle {
        (left, Limit::Total)
    } else {
        (idle, Limit::Idle)
    }
}

/// Which body timeout a wait is bounded by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Idle,
    Total,
}

/// One request body's progress, shared by the body and the driver.
#[derive(Debug)]
pub struct BodyClock {
    timeouts: BodyTimeouts,
    deadline: Instant,
    /// The `Content-Length` the client sent.
    declared: Option<u64>,
    /// Bytes taken off the wire so far.
    wire: AtomicU64,
    ended: AtomicBool,
    /// Dropped before its end and not to be read to it: the connection
    /// cannot carry another request.
    unread: AtomicBool,
}

impl BodyClock {
    /// The clock of a body whose head is `headers`, starting now.
    pub fn start(headers: &HeaderMap, timeouts: BodyTimeouts) -> Arc<BodyClock> {
        Self::declaring(super::headers::declared_length(headers), timeouts)
    }

    /// The clock of a client's request `body` whose head is `headers`,
    /// starting now. An HTTP/1 body of a length above 0 has it from its
    /// `Content-Length` alone, as hyper parsed and checked it (a
    /// `Transfer-Encoding` takes it out of the head): no second lookup and
    /// parse of the header (measurable with scripts/bench/instructions.sh).
    /// Any other body's is read from the head.
    pub fn for_request(
        headers: &HeaderMap,
        body: &Incoming,
        version: http::Version,
        timeouts: BodyTimeouts,
    ) -> Arc<BodyClock> {
        let declared = match body.size_hint().exact() {
            Some(n) if n > 0 && version < http::Version::HTTP_2 => Some(n),
            _ => super::headers::declared_length(headers),
        };
        Self::declaring(declared, timeouts)
    }

    fn declaring(declared: Option<u64>, timeouts: BodyTimeouts) -> Arc<BodyClock> {
        Arc::new(BodyClock {
            timeouts,
            deadline: Instant::now() + timeouts.total,
            declared,
            wire: AtomicU64::new(0),
            ended: AtomicBool::new(false),
            unread: AtomicBool::new(false),
        })
    }

    pub fn timeouts(&self) -> BodyTimeouts {
        self.timeouts
    }

    /// When the whole body must have arrived.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The body has been read to its end.
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    /// Whether the connection can carry another request as far as this
    /// body is concerned: false once it was dropped unread and will not be
    /// read to its end.
    pub fn keeps_connection(&self) -> bool {
        !self.unread.load(Ordering::Acquire)
    }

    /// Resolves at the deadline if the body has not ended by then; never
    /// otherwise. No timer is made for a body that has already ended.
    pub async fn overdue(&self) {
        if !self.ended() {
            tokio::time::sleep_until(self.deadline).await;
            if !self.ended() {
                return;
            }
        }
        std::future::pending::<()>().await;
    }

    /// `body` (a reply) ending in an error if it is waited for past the
    /// deadline while this request body has not ended: a reply that
    /// started before its request was read cannot outlast the request's
    /// deadline.
    pub fn bound<B>(self: &Arc<Self>, body: B) -> Overdue<B> {
        Overdue {
            inner: body,
            clock: self.clone(),
            timer: None,
        }
    }

    fn took(&self, n: u64) {
        self.wire.fetch_add(n, Ordering::Relaxed);
    }

    /// The `Content-Length` the head declared, when usable (read once,
    /// when the clock started).
    pub fn declared(&self) -> Option<u64> {
        self.declared
    }

    /// Declared bytes not yet taken off the wire; `None` without a
    /// declared length.
    fn remaining(&self) -> Option<u64> {
        self.declared
            .map(|d| d.saturating_sub(self.wire.load(Ordering::Relaxed)))
    }
}

/// The client's body off the wire, its progress on its [`BodyClock`].
/// Dropped before its end, it is read on in the background, up to its
/// budget (see the module doc).
#[derive(Debug)]
pub struct Wire {
    inner: Option<Incoming>,
    clock: Arc<BodyClock>,
    /// Bytes the body may come to in all and still be read on when dropped.
    budget: u64,
}

impl Wire {
    pub fn new(inner: Incoming, clock: Arc<BodyClock>) -> Wire {
        if inner.is_end_stream() {
            clock.ended.store(true, Ordering::Release);
        }
        Wire {
            inner: Some(inner),
            clock,
            budget: DISCARD_BYTES,
        }
    }

    pub fn clock(&self) -> &Arc<BodyClock> {
        &self.clock
    }

    /// Reads on, once dropped, to at most `limit` bytes in all: a body
    /// opened for a route is bounded by the route's limit.
    pub fn read_up_to(&mut self, limit: u64) {
        self.budget = limit;
    }

    /// Reads nothing more, not even in the background (the client ran out
    /// of time, or its body broke): the connection is closed.
    pub fn abandon(&mut self) {
        if self.inner.take().is_some() && !self.clock.ended() {
            self.clock.unread.store(true, Ordering::Release);
        }
    }
}

impl http_body::Body for Wire {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = ready!(Pin::new(&mut *inner).poll_frame(cx));
        match &polled {
            Some(Ok(frame)) => {
                // The frame that completes a body ends it, though its end
                // is not polled: a reader that stops at the last byte it
                // needs (a JSON document's close) leaves no body to wait
                // for, no timer to arm for its deadline and no reply to
                // bound by it.
                if inner.is_end_stream() {
                    self.clock.ended.store(true, Ordering::Release);
                }
                if let Some(data) = frame.data_ref() {
                    self.clock.took(data.len() as u64);
                }
            }
            None => self.clock.ended.store(true, Ordering::Release),
            Some(Err(_)) => {}
        }
        Poll::Ready(polled)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Incoming::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Incoming::size_hint)
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        let clock = &self.clock;
        if clock.ended() || inner.is_end_stream() {
            return;
        }
        let taken = clock.wire.load(Ordering::Relaxed);
        let left = self.budget.saturating_sub(taken);
        let on_time = Instant::now() < clock.deadline;
        let drains = on_time && clock.remaining().is_some_and(|r| r <= left);
        if !drains {
            clock.unread.store(true, Ordering::Release);
        }
        if !on_time {
            return;
        }
        // Read on even when it cannot be read to its end: the client gets
        // the answer before the connection closes, rather than a reset.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(discard(inner, left, clock.timeouts.idle, clock.deadline));
        }
    }
}

/// Reads `body` to its end, at most `budget` more bytes, each piece within
/// `idle` and all before `deadline`; gives up (dropping it) otherwise.
async fn discard(mut body: Incoming, mut budget: u64, idle: Duration, deadline: Instant) {
    loop {
        let (wait, _) = next_wait(Instant::now(), idle, deadline);
        let Ok(Some(Ok(frame))) = tokio::time::timeout(wait, body.frame()).await else {
            return;
        };
        let len = frame.data_ref().map_or(0, |d| d.len() as u64);
        let Some(left) = budget.checked_sub(len) else {
            return;
        };
        budget = left;
    }
}

/// A reply bounded by its request body's deadline (see
/// [`BodyClock::bound`]).
#[derive(Debug)]
pub struct Overdue<B> {
    inner: B,
    clock: Arc<BodyClock>,
    timer: Option<Pin<Box<Sleep>>>,
}

impl<B> http_body::Body for Overdue<B>
where
    B: http_body::Body<Data = Bytes, Error = BoxError> + Unpin,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if let Poll::Ready(r) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(r);
        }
        if this.clock.ended() {
            this.timer = None;
            return Poll::Pending;
        }
        let deadline = this.clock.deadline;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        ready!(timer.as_mut().poll(cx));
        if this.clock.ended() {
            this.timer = None;
            return Poll::Pending;
        }
        let total = this.clock.timeouts.total;
        Poll::Ready(Some(Err(Box::new(StreamOverdue { total }))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header;

    #[tokio::test(start_paused = true)]
    async fn the_nearer_of_the_pause_and_the_deadline_is_waited_for() {
        let idle = Duration::from_secs(60);
        let now = Instant::now();
        let check = |deadline_in: u64, expected: (u64, Limit)| {
            let (wait, limit) = next_wait(now, idle, now + Duration::from_secs(deadline_in));
            assert_eq!(
                (wait.as_secs(), limit),
                expected,
                "deadline in {deadline_in}s"
            );
        };
        check(300, (60, Limit::Idle));
        check(61, (60, Limit::Idle));
        check(60, (60, Limit::Total));
        check(5, (5, Limit::Total));
        // Past the deadline: no wait at all (a frame already there still
        // counts, tokio polls the future once).
        let (wait, limit) = next_wait(now + Duration::from_secs(10), idle, now);
        assert_eq!((wait, limit), (Duration::ZERO, Limit::Total));
    }

    fn clock_for(content_length: Option<u64>, total: u64) -> Arc<BodyClock> {
        let mut headers = HeaderMap::new();
        if let Some(n) = content_length {
            headers.insert(header::CONTENT_LENGTH, n.into());
        }
        let timeouts = BodyTimeouts {
            idle: Duration::from_secs(1),
            total: Duration::from_secs(total),
        };
        BodyClock::start(&headers, timeouts)
    }

    #[tokio::test(start_paused = true)]
    async fn overdue_fires_at_the_deadline_unless_the_body_ended() {
        let clock = clock_for(Some(10), 5);
        let started = Instant::now();
        clock.overdue().await;
        assert_eq!(started.elapsed(), Duration::from_secs(5));

        let clock = clock_for(Some(10), 5);
        clock.ended.store(true, Ordering::Release);
        let waited = tokio::time::timeout(Duration::from_secs(60), clock.overdue()).await;
        assert!(waited.is_err(), "an ended body is never overdue");
    }

    /// Serves one request sent as `raw` on a loopback connection: its body
    /// as a [`Wire`], from which one frame is read. Returns whether the
    /// clock then says the body ended.
    async fn ended_after_one_frame(raw: &'static [u8]) -> bool {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            stream.write_all(raw).await.unwrap();
            let mut reply = [0u8; 64];
            let _ = stream.read(&mut reply).await;
        });
        let (stream, _) = listener.accept().await.unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let tx = std::sync::Mutex::new(Some(tx));
        let service = hyper::service::service_fn(move |req: http::Request<Incoming>| {
            let clock = BodyClock::start(
                req.headers(),
                BodyTimeouts {
                    idle: Duration::from_secs(5),
                    total: Duration::from_secs(5),
                },
            );
            let mut wire = Wire::new(req.into_body(), clock.clone());
            let tx = tx.lock().unwrap().take();
            async move {
                let frame = wire.frame().await;
                assert!(frame.is_some_and(|f| f.is_ok_and(|f| f.is_data())));
                if let Some(tx) = tx {
                    let _ = tx.send(clock.ended());
                }
                Ok::<_, std::convert::Infallible>(http::Response::new(
                    http_body_util::Empty::<Bytes>::new(),
                ))
            }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
        let served = tokio::time::timeout(Duration::from_secs(10), async {
            let _ = conn.await;
            rx.await.unwrap()
        });
        let ended = served.await.expect("the request is served within 10 s");
        client.abort();
        ended
    }

    #[tokio::test]
    async fn the_frame_that_completes_a_body_ends_it() {
        // The whole declared length in one frame: ended without its end
        // being polled, so no deadline timer is armed for it.
        let whole =
            b"POST / HTTP/1.1\r\nhost: gw\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello";
        assert!(ended_after_one_frame(whole).await);
        // A chunked body is over only once its last chunk is read, though
        // it all arrived at once.
        let chunked = b"POST / HTTP/1.1\r\nhost: gw\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        assert!(!ended_after_one_frame(chunked).await);
    }

    #[test]
    fn what_is_left_counts_from_the_declared_length() {
        let clock = clock_for(Some(100), 5);
        clock.took(30);
        assert_eq!(clock.remaining(), Some(70));
        clock.took(100);
        assert_eq!(clock.remaining(), Some(0));
        assert_eq!(clock_for(None, 5).remaining(), None);
    }
}
