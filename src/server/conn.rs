//! One client connection's lifetime around hyper: closed if it has not
//! completed its handshake within `handshake_timeout`; a connection with
//! no request in progress for `header_read_timeout` is closed — gracefully
//! (GOAWAY) for HTTP/2; for HTTP/1 at once, as hyper's header read timer
//! did, with a request head half sent or none; closed gracefully when the
//! server drains. Aborting is the caller's (the task set). Never looks at
//! requests.
//!
//! The HTTP/1 header timer is this one, not hyper's: hyper's allocated,
//! registered and cancelled a timer for every request head, where this
//! one timer per connection is looked at when it fires (see
//! docs/PERFORMANCE.md, "What each decision bought").

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
pub(super) struct ConnState {
    opened: Instant,
    /// The client's address (the TCP peer's), when known.
    peer: Option<std::net::IpAddr>,
    http2: AtomicBool,
    /// The client has sent bytes (before, only the handshake deadline
    /// holds, as when hyper timed the heads).
    spoke: AtomicBool,
    handshaken: AtomicBool,
    /// Requests started and not yet finished (reply body ended or dropped).
    active: AtomicUsize,
    /// Milliseconds after `opened` at which a request last ended, or a
    /// reply's write the client held up went through: what the idle time
    /// counts from when no request is in progress.
    last_active_ms: AtomicU64,
    /// A write waits for the client to take bytes: hyper is still sending
    /// a reply, and reads no next head until it is out.
    write_waiting: AtomicBool,
}

impl ConnState {
    /// The state of a connection from `peer`.
    pub(super) fn with_peer(peer: Option<std::net::IpAddr>) -> Arc<ConnState> {
        Arc::new(ConnState {
            opened: Instant::now(),
            peer,
            http2: AtomicBool::new(false),
            spoke: AtomicBool::new(false),
            handshaken: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            last_active_ms: AtomicU64::new(0),
            write_waiting: AtomicBool::new(false),
        })
    }

    /// Takes what the first bytes said.
    pub(super) fn sniffed(&self, verdict: Verdict) {
        self.spoke.store(true, Ordering::Relaxed);
        if let Verdict::Http2 { handshaken } = verdict {
            self.http2.store(true, Ordering::Relaxed);
            if handshaken {
                self.handshaken.store(true, Ordering::Relaxed);
            }
        }
    }

    /// A request head has been parsed: for HTTP/1 that completes the
    /// handshake.
    pub(super) fn request_started(&self) {
        self.handshaken.store(true, Ordering::Relaxed);
        self.active.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn request_ended(&self) {
        self.active.fetch_sub(1, Ordering::Relaxed);
        self.touch();
    }

    /// Whether a write is waiting for the client (`true`) or went
    /// through; the end of a wait counts as activity. Called on every
    /// write: only a change costs more than a load.
    pub(super) fn write_waits(&self, waiting: bool) {
        if self.write_waiting.load(Ordering::Relaxed) != waiting {
            self.write_waiting.store(waiting, Ordering::Relaxed);
            if !waiting {
                self.touch();
            }
        }
    }

    /// The client's address, when known.
    pub(super) fn peer(&self) -> Option<std::net::IpAddr> {
        self.peer
    }

    /// When the connection was accepted: its handshake deadline counts
    /// from here (the TLS handshake included).
    pub(super) fn opened(&self) -> Instant {
        self.opened
    }

    /// Whether the connection speaks HTTP/2 (known from its first bytes).
    pub(super) fn http2(&self) -> bool {
        self.http2.load(Ordering::Relaxed)
    }

    pub(super) fn handshaken(&self) -> bool {
        self.handshaken.load(Ordering::Relaxed)
    }

    /// Notes the time of an activity the idle time counts from. Only
    /// the ends matter: while a request is in progress the connection is
    /// not idle whatever the time.
    fn touch(&self) {
        let ms = self.opened.elapsed().as_millis();
        self.last_active_ms
            .store(u64::try_from(ms).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// When an idle connection is due to be closed, as of `now`. Until
    /// the client has sent a byte, the handshake deadline alone decides.
    fn idle_check(&self, limit: Duration, now: Instant) -> Idle {
        let busy =
            self.active.load(Ordering::Relaxed) > 0 || self.write_waiting.load(Ordering::Relaxed);
        if busy || !self.spoke.load(Ordering::Relaxed) {
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
pub(super) async fn until_true(flag: &mut watch::Receiver<bool>) {
    if flag.wait_for(|f| *f).await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Idle {
    CheckAt(Instant),
    Expired,
}

/// The connection's time limits.
#[derive(Clone, Copy, Debug)]
pub(super) struct ConnLimits {
    /// Until the first request head (HTTP/1) or preface and SETTINGS
    /// (HTTP/2) has arrived.
    pub handshake: Duration,
    /// Longest time a connection stays open with no request in progress
    /// (`header_read_timeout`): for HTTP/1, the time the next request's
    /// head has to arrive whole.
    pub idle: Duration,
}

/// Drives `conn` to its end under `limits`; `graceful` starts hyper's
/// graceful shutdown of it. Returning early drops (closes) the connection.
pub(super) async fn drive<C, E, G>(
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
    let idle = sleep_until(state.opened + limits.idle);
    let (mut handshake, mut idle) = (std::pin::pin!(handshake), std::pin::pin!(idle));
    // Whether the drain flag changed since the connection started: asked
    // of a receiver of its own, without a lock.
    let probe = drain.clone();
    let mut drained = std::pin::pin!(until_true(&mut drain));
    let (mut awaiting_handshake, mut watching_idle, mut draining) = (true, true, false);
    // The idle timer is to be polled (to register it): it is new or was
    // reset. Afterwards it is polled only once it has fired.
    let mut arm_idle = true;
    let mut first = true;
    loop {
        // Polled by hand: the loop runs at every wake-up of the connection
        // (several per request), and a `select!` polled both timers and
        // the drain flag's watch (its lock, its waiter list) every time
        // (measurable with scripts/bench/instructions.sh).
        // Once handshaken, the handshake deadline is moot: what its timer
        // would decide when it fires, decided now, and it is not polled
        // again. The idle timer, once registered, wakes the task when it
        // fires, and is polled only then; the drain flag's future,
        // registered by its first poll, only when the flag changed.
        let woke = std::future::poll_fn(|cx| {
            if let Poll::Ready(ended) = conn.as_mut().poll(cx) {
                return Poll::Ready(Woke::Ended(ended));
            }
            if awaiting_handshake && state.handshaken() {
                awaiting_handshake = false;
            }
            if awaiting_handshake && handshake.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Woke::HandshakeDue);
            }
            let look = std::mem::take(&mut arm_idle) || idle.is_elapsed();
            if watching_idle && look && idle.as_mut().poll(cx).is_ready() {
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
            Woke::IdleDue => match state.idle_check(limits.idle, Instant::now()) {
                Idle::CheckAt(at) => {
                    idle.as_mut().reset(at);
                    arm_idle = true;
                }
                Idle::Expired if state.http2() => {
                    tracing::debug!(limit = ?limits.idle, "closing an idle HTTP/2 connection");
                    graceful(conn.as_mut());
                    watching_idle = false;
                }
                Idle::Expired => {
                    // What hyper's header read timer did: the connection
                    // is dropped, a head half sent or not.
                    tracing::debug!(limit = ?limits.idle, "closing an HTTP/1 connection: no request head within header_read_timeout");
                    return;
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
    async fn http1_connections_expire_from_their_last_request_or_write() {
        let s = ConnState::with_peer(None);
        let t0 = s.opened;
        // Silent: the handshake deadline decides.
        assert_eq!(
            s.idle_check(LIMIT, t0 + 3 * LIMIT),
            Idle::CheckAt(t0 + 4 * LIMIT)
        );
        s.sniffed(Verdict::Http1);
        assert!(!s.handshaken() && !s.http2());
        // A first head that does not come whole in time.
        assert_eq!(s.idle_check(LIMIT, t0 + LIMIT), Idle::Expired);
        s.request_started();
        assert!(s.handshaken());
        let late = t0 + 5 * LIMIT;
        assert_eq!(s.idle_check(LIMIT, late), Idle::CheckAt(late + LIMIT));
        tokio::time::advance(Duration::from_secs(2)).await;
        s.request_ended();
        let ended = t0 + Duration::from_secs(2);
        assert_eq!(s.idle_check(LIMIT, ended), Idle::CheckAt(ended + LIMIT));
        assert_eq!(s.idle_check(LIMIT, ended + LIMIT), Idle::Expired);
        // A reply the client holds up keeps it open; the time runs from
        // when the write went through.
        s.write_waits(true);
        let held = ended + 4 * LIMIT;
        assert_eq!(s.idle_check(LIMIT, held), Idle::CheckAt(held + LIMIT));
        tokio::time::advance(Duration::from_secs(5)).await;
        s.write_waits(false);
        let went = t0 + Duration::from_secs(7);
        assert_eq!(s.idle_check(LIMIT, went), Idle::CheckAt(went + LIMIT));
        assert_eq!(s.idle_check(LIMIT, went + LIMIT), Idle::Expired);
    }
}
