//! The idle connections of one replica on one worker thread: a list used
//! last in, first out (the connection that answered last is the one asked
//! next, so the others age out), with no key to hash per request. A
//! connection taken is checked alive first. Those idle longer than the
//! idle timeout are closed instead of used, and so are the oldest beyond
//! the cap on idle connections. Entries are in the order they went idle,
//! so the expired ones are always a prefix; a periodic sweep
//! ([`sweep_replicas`]) closes what a quiet pool still holds.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::Inner;

/// An idle connection as the pool sees it.
pub(super) trait Conn {
    /// Whether a request may be sent on it now (not closed, not busy).
    fn usable(&self) -> bool;
}

/// One worker's idle connections to one replica.
#[derive(Debug)]
pub(super) struct Pool<C> {
    idle: Mutex<VecDeque<Idle<C>>>,
    /// Idle connections kept at most (`pool_max_idle_per_host`); 0 keeps
    /// none.
    max: usize,
    /// How long a connection may stay idle (`pool_idle_timeout`).
    timeout: Duration,
}

#[derive(Debug)]
struct Idle<C> {
    conn: C,
    since: Instant,
}

impl<C: Conn> Pool<C> {
    pub(super) fn new(max: usize, timeout: Duration) -> Pool<C> {
        Pool {
            idle: Mutex::new(VecDeque::new()),
            max,
            timeout,
        }
    }

    pub(super) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The connection that went idle last and can take a request, if any.
    /// Those found closed on the way are dropped; when the newest has
    /// been idle too long, all have, and all are dropped.
    pub(super) fn take(&self, now: Instant) -> Option<C> {
        let mut dropped = Vec::new();
        let taken = {
            let mut idle = self.lock();
            loop {
                let Some(entry) = idle.pop_back() else {
                    break None;
                };
                if self.expired(&entry, now) {
                    dropped.extend(idle.drain(..));
                    dropped.push(entry);
                    break None;
                }
                if entry.conn.usable() {
                    break Some(entry.conn);
                }
                dropped.push(entry);
            }
        };
        // Closing happens outside the lock.
        drop(dropped);
        taken
    }

    /// Keeps `conn` as idle from `now`. The expired go first, then the
    /// oldest while the pool is at its cap; with a cap of 0 `conn` itself
    /// is closed.
    pub(super) fn put(&self, conn: C, now: Instant) {
        if self.max == 0 {
            return;
        }
        let mut dropped = Vec::new();
        {
            let mut idle = self.lock();
            while idle.front().is_some_and(|e| self.expired(e, now)) || idle.len() >= self.max {
                dropped.extend(idle.pop_front());
            }
            idle.push_back(Idle { conn, since: now });
        }
        drop(dropped);
    }

    /// Closes the connections idle too long and those no longer usable
    /// (closed by the backend); returns how many are left.
    pub(super) fn sweep(&self, now: Instant) -> usize {
        let mut dropped = Vec::new();
        let left = {
            let mut idle = self.lock();
            while idle.front().is_some_and(|e| self.expired(e, now)) {
                dropped.extend(idle.pop_front());
            }
            let mut i = 0;
            while i < idle.len() {
                if idle[i].conn.usable() {
                    i += 1;
                } else {
                    dropped.extend(idle.remove(i));
                }
            }
            idle.len()
        };
        drop(dropped);
        left
    }

    /// Idle connections held now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn expired(&self, entry: &Idle<C>, now: Instant) -> bool {
        now.saturating_duration_since(entry.since) > self.timeout
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<Idle<C>>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How often the idle connections of a backend with `timeout` are swept:
/// half the timeout (so none outlives it by more than half), at least
/// every 50 ms and at most every 30 s.
pub(super) fn sweep_interval(timeout: Duration) -> Duration {
    (timeout / 2).clamp(Duration::from_millis(50), Duration::from_secs(30))
}

/// Sweeps the pools of every replica of the upstream every `every`, until
/// the upstream is gone.
pub(super) async fn sweep_replicas(inner: Weak<Inner>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let now = Instant::now();
        for r in inner.set.snapshot().iter() {
            r.sweep(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::*;

    /// A connection with a name, a switch for its liveness, and a count of
    /// those dropped (closed).
    #[derive(Debug)]
    struct Fake {
        id: u32,
        alive: Arc<AtomicBool>,
        closed: Arc<AtomicUsize>,
    }

    impl Conn for Fake {
        fn usable(&self) -> bool {
            self.alive.load(Ordering::SeqCst)
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            self.closed.fetch_add(1, Ordering::SeqCst);
        }
    }

    struct Maker {
        closed: Arc<AtomicUsize>,
    }

    impl Maker {
        fn new() -> Maker {
            Maker {
                closed: Arc::default(),
            }
        }

        fn conn(&self, id: u32) -> (Fake, Arc<AtomicBool>) {
            let alive = Arc::new(AtomicBool::new(true));
            let fake = Fake {
                id,
                alive: alive.clone(),
                closed: self.closed.clone(),
            };
            (fake, alive)
        }

        fn closed(&self) -> usize {
            self.closed.load(Ordering::SeqCst)
        }
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn the_last_one_in_is_the_first_out() {
        let m = Maker::new();
        let pool = Pool::new(8, 10 * SECOND);
        let t0 = Instant::now();
        for id in 1..=3 {
            pool.put(m.conn(id).0, t0);
        }
        assert_eq!(pool.take(t0).map(|c| c.id), Some(3));
        assert_eq!(pool.take(t0).map(|c| c.id), Some(2));
        assert_eq!(pool.take(t0).map(|c| c.id), Some(1));
        assert!(pool.take(t0).is_none());
        assert_eq!(m.closed(), 3, "each taken connection dropped here");
    }

    #[test]
    fn closed_connections_are_skipped_and_dropped() {
        let m = Maker::new();
        let pool = Pool::new(8, 10 * SECOND);
        let t0 = Instant::now();
        let (a, _) = m.conn(1);
        let (b, b_alive) = m.conn(2);
        pool.put(a, t0);
        pool.put(b, t0);
        b_alive.store(false, Ordering::SeqCst);
        let got = pool.take(t0).expect("the live one");
        assert_eq!(got.id, 1);
        assert_eq!(m.closed(), 1, "the dead one was dropped");
        assert_eq!(pool.len(), 0);
    }

    #[test]
    fn connections_idle_too_long_are_not_used() {
        let m = Maker::new();
        let pool = Pool::new(8, 4 * SECOND);
        let t0 = Instant::now();
        pool.put(m.conn(1).0, t0);
        pool.put(m.conn(2).0, t0 + SECOND);
        // At 4.5 s the first is over the limit, the second is not.
        let t = t0 + 4 * SECOND + SECOND / 2;
        assert_eq!(pool.sweep(t), 1);
        assert_eq!(m.closed(), 1);
        // At 5.5 s the second is too: taking finds nothing, and drops it.
        assert!(pool.take(t + SECOND).is_none());
        assert_eq!(m.closed(), 2);
        assert_eq!(pool.len(), 0);
    }

    #[test]
    fn the_newest_expired_means_all_are() {
        let m = Maker::new();
        let pool = Pool::new(8, SECOND);
        let t0 = Instant::now();
        for id in 1..=4 {
            pool.put(m.conn(id).0, t0);
        }
        assert!(pool.take(t0 + 2 * SECOND).is_none());
        assert_eq!(m.closed(), 4);
    }

    #[test]
    fn at_most_max_idle_are_kept_the_oldest_go() {
        let m = Maker::new();
        let pool = Pool::new(2, 10 * SECOND);
        let t0 = Instant::now();
        for id in 1..=5 {
            pool.put(m.conn(id).0, t0);
        }
        assert_eq!(pool.len(), 2);
        assert_eq!(m.closed(), 3);
        assert_eq!(pool.take(t0).map(|c| c.id), Some(5));
        assert_eq!(pool.take(t0).map(|c| c.id), Some(4));
    }

    #[test]
    fn a_cap_of_zero_keeps_nothing() {
        let m = Maker::new();
        let pool = Pool::new(0, 10 * SECOND);
        pool.put(m.conn(1).0, Instant::now());
        assert_eq!(pool.len(), 0);
        assert_eq!(m.closed(), 1);
    }

    #[test]
    fn a_sweep_drops_the_dead_and_keeps_the_order() {
        let m = Maker::new();
        let pool = Pool::new(8, 10 * SECOND);
        let t0 = Instant::now();
        let mut switches = Vec::new();
        for id in 1..=4 {
            let (c, alive) = m.conn(id);
            pool.put(c, t0);
            switches.push(alive);
        }
        switches[1].store(false, Ordering::SeqCst);
        assert_eq!(pool.sweep(t0), 3);
        assert_eq!(m.closed(), 1);
        let order: Vec<u32> = std::iter::from_fn(|| pool.take(t0).map(|c| c.id)).collect();
        assert_eq!(order, [4, 3, 1]);
    }

    #[test]
    fn sweeps_run_at_half_the_timeout_within_bounds() {
        assert_eq!(sweep_interval(4 * SECOND), 2 * SECOND);
        assert_eq!(sweep_interval(Duration::ZERO), Duration::from_millis(50));
        assert_eq!(sweep_interval(3600 * SECOND), 30 * SECOND);
    }
}
