//! One client connection's lifetime around hyper: closed if it has not
//! completed its handshake within `handshake_timeout`; an HTTP/2
//! connection with no request in progress for `header_read_timeout` is
//! closed gracefully (GOAWAY), as an idle HTTP/1 keep-alive connection is
//! by hyper's header timer; closed gracefully when the server drains.
//! Aborting is the caller's (the task set). Never looks at requests.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

use super::sniff::Verdict;

/// What the connection's reader and service have seen, shared with its
/// driver.
#[derive(Debug)]
pub struct ConnState {
    opened: Instant,
    /// The client's address (the TCP peer's), when known.
    peer: Option<std::net::IpAddr>,
    http2: AtomicBool,
    handshaken: AtomicBool,
    /// Requests started and not yet finished (reply body ended or dropped).
    active: AtomicUsize,
    /// Milliseconds after `opened` at which a request last started or ended.
    last_active_ms: AtomicU64,
}

impl ConnState {
    /// The state of a connection from `peer`.
    pub fn with_peer(peer: Option<std::net::IpAddr>) -> Arc<ConnState> {
        Arc::new(ConnState {
            opened: Instant::now(),
            peer,
            http2: AtomicBool::new(false),
            handshaken: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            last_active_ms: AtomicU64::new(0),
        })
    }

    /// Takes what the first bytes said.
    pub fn sniffed(&self, verdict: Verdict) {
        if let Verdict::Http2 { handshaken } = verdict {
            self.http2.store(true, Ordering::Relaxed);
            if handshaken {
                self.handshaken.store(true, Ordering::Relaxed);
            }
        }
    }

    /// A request head has been parsed: for HTTP/1 that completes the
    /// handshake.
    pub fn request_started(&self) {
        self.handshaken.store(true, Ordering::Relaxed);
        self.active.fetch_add(1, Ordering::Relaxed);
        self.touch();
    }

    pub fn request_ended(&self) {
        self.active.fetch_sub(1, Ordering::Relaxed);
        self.touch();
    }

    /// The client's address, when known.
    pub fn peer(&self) -> Option<std::net::IpAddr> {
        self.peer
    }

    /// When the connection was accepted: its handshake deadline counts
    /// from here (the TLS handshake included).
    pub fn opened(&self) -> Instant {
        self.opened
    }

    /// Whether the connection speaks HTTP/2 (known from its first bytes).
    pub fn http2(&self) -> bool {
        self.http2.load(Ordering::Relaxed)
    }

    pub fn handshaken(&self) -> bool {
        self.handshaken.load(Ordering::Relaxed)
    }

    /// Notes when a request started or ended: what an HTTP/2
    /// connection's idle check counts from (HTTP/1 has hyper's timers,
    /// and does not pay for the clock read).
    fn touch(&self) {
        if !self.http2.load(Ordering::Relaxed) {
            return;
        }
        let ms = self.opened.elapsed().as_millis();
        self.last_active_ms
            .store(u64::try_from(ms).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// When an idle HTTP/2 connection is due to be closed, as of `now`.
    fn idle_check(&self, limit: Duration, now: Instant) -> Idle {
        if !self.http2.load(Ordering::Relaxed) {
            return if self.handshaken() {
                Idle::NotHttp2
            } else {
                Idle::CheckAt(now + limit)
            };
        }
        if self.active.load(Ordering::Relaxed) > 0 {
            return Idle::CheckAt(now + limit);
        }
        let last = self.opened + Duration::from_millis(self.last_active_ms.load(Ordering::Relaxed));
        if last + limit <= now {
            Idle::Expired
        } else {
            Idle::CheckAt(last + limit)
        }
    }
}

/// Resolves once `flag` is true; never if its sender is dropped without
/// setting it (the server is gone, and the runtime with it).
pub async fn until_true(flag: &mut watch::Receiver<bool>) {
    if flag.wait_for(|f| *f).await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Idle {
    NotHttp2,
    CheckAt(Instant),
    Expired,
}

/// The connection's time limits.
#[derive(Clone, Copy, Debug)]
pub struct ConnLimits {
    /// Until the first request head (HTTP/1) or preface and SETTINGS
    /// (HTTP/2) has arrived.
    pub handshake: Duration,
    /// Longest time an HTTP/2 connection stays open with no request.
    pub h2_idle: Duration,
}

/// Drives `conn` to its end under `limits`; `graceful` starts hyper's
/// graceful shutdown of it. Returning early drops (closes) the connection.
pub async fn drive<C, E, G>(
    conn: C,
    graceful: G,
    state: &ConnState,
    limits: ConnLimits,
    mut drain: watch::Receiver<bool>,
) where
    C: Future<Output = Result<(), E>>,
    E: std::fmt::Display,
    G: Fn(Pin<&mut C>),
{
    let mut conn = std::pin::pin!(conn);
    let handshake = sleep_until(state.opened + limits.handshake);
    let idle = sleep_until(state.opened + limits.h2_idle);
    let (mut handshake, mut idle) = (std::pin::pin!(handshake), std::pin::pin!(idle));
    // Whether the drain flag changed since the connection started: asked
    // of a receiver of its own, without a lock.
    let probe = drain.clone();
    let mut drained = std::pin::pin!(until_true(&mut drain));
    let (mut awaiting_handshake, mut watching_idle, mut draining) = (true, true, false);
    let mut first = true;
    loop {
        // Polled by hand: the loop runs at every wake-up of the connection
        // (several per request), and a `select!` polled both timers and
        // the drain flag's watch (its lock, its waiter list) every time:
        // about 1,000 instructions per request, measured with callgrind.
        // Once handshaken, the handshake deadline is moot, and an HTTP/1
        // connection (known once handshaken: HTTP/2 is known from its
        // preface) is never closed as an idle HTTP/2 one: what the timers
        // would decide when they fire, decided now, and they are not
        // polled again. The drain flag's future, registered by its first
        // poll, is polled again only when the flag changed.
        let woke = std::future::poll_fn(|cx| {
            if let Poll::Ready(ended) = conn.as_mut().poll(cx) {
                return Poll::Ready(Woke::Ended(ended));
            }
            if awaiting_handshake && state.handshaken() {
                awaiting_handshake = false;
                watching_idle &= state.http2();
            }
            if awaiting_handshake && handshake.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Woke::HandshakeDue);
            }
            if watching_idle && idle.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Woke::IdleDue);
            }
            let look = std::mem::take(&mut first) || probe.has_changed().unwrap_or(true);
            if !draining && look && drained.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Woke::Drain);
            }
            Poll::Pending
        })
        .await;
        match woke {
            Woke::Ended(ended) => {
                if let Err(e) = ended {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            Woke::HandshakeDue => {
                if !state.handshaken() {
                    tracing::debug!(limit = ?limits.handshake, "closing a connection that did not complete its handshake");
                    return;
                }
                awaiting_handshake = false;
            }
            Woke::IdleDue => match state.idle_check(limits.h2_idle, Instant::now()) {
                Idle::NotHttp2 => watching_idle = false,
                Idle::CheckAt(at) => idle.as_mut().reset(at),
                Idle::Expired => {
                    tracing::debug!(limit = ?limits.h2_idle, "closing an idle HTTP/2 connection");
                    graceful(conn.as_mut());
                    watching_idle = false;
                }
            },
            Woke::Drain => {
                graceful(conn.as_mut());
                draining = true;
            }
        }
    }
}

/// What woke [`drive`] with something to do.
enum Woke<E> {
    Ended(Result<(), E>),
    HandshakeDue,
    IdleDue,
    Drain,
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(10);

    #[tokio::test(start_paused = true)]
    async fn idle_http2_connections_expire_from_their_last_request() {
        let s = ConnState::with_peer(None);
        let t0 = s.opened;
        // Undecided: look again later.
        assert_eq!(
            s.idle_check(LIMIT, t0 + LIMIT),
            Idle::CheckAt(t0 + 2 * LIMIT)
        );
        s.sniffed(Verdict::Http2 { handshaken: true });
        assert!(s.handshaken());
        tokio::time::advance(Duration::from_secs(3)).await;
        s.request_started();
        // A request in progress keeps it open however long it takes.
        let late = t0 + 5 * LIMIT;
        assert_eq!(s.idle_check(LIMIT, late), Idle::CheckAt(late + LIMIT));
        tokio::time::advance(Duration::from_secs(4)).await;
        s.request_ended();
        let ended = t0 + Duration::from_secs(7);
        assert_eq!(s.idle_check(LIMIT, ended), Idle::CheckAt(ended + LIMIT));
        assert_eq!(s.idle_check(LIMIT, ended + LIMIT), Idle::Expired);
    }

    #[tokio::test(start_paused = true)]
    async fn http1_connections_are_left_to_hyper() {
        let s = ConnState::with_peer(None);
        s.sniffed(Verdict::Http1);
        assert!(!s.handshaken());
        s.request_started();
        assert!(s.handshaken());
        assert_eq!(s.idle_check(LIMIT, s.opened + LIMIT), Idle::NotHttp2);
    }
}
