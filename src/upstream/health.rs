//! A replica's health, readable without a lock: what the active checks
//! ([`super::check`]) last concluded, with their thresholds, and passive
//! ejection — a replica whose requests fail `after` times in a row (a 5xx,
//! a failed exchange, or a reply found at fault once read: see
//! [`super::verdict`]) takes
//! no traffic for `base`, twice as long each time it is ejected again, up
//! to `max`; the backoff starts over once it has served a whole `base`
//! without being ejected. A replica is *eligible* when the checks say it
//! is up and it is not ejected.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::config::{Ejection, HealthChecks};
use crate::metrics::{ReplicaSeries, ReplicaState};

/// Milliseconds on the gateway's clock (tokio's, so paused-time tests can
/// move it); never 0.
pub(super) fn now_ms() -> u64 {
    ms_at(Instant::now())
}

/// `at` in milliseconds on the clock of [`now_ms`]: for a caller that has
/// read the time already (a clock reading is a call into the vDSO;
/// measurable with scripts/bench/instructions.sh).
pub(super) fn ms_at(at: Instant) -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    let start = *START.get_or_init(Instant::now);
    u64::try_from(at.saturating_duration_since(start).as_millis())
        .unwrap_or(u64::MAX)
        .saturating_add(1)
}

/// One replica's health.
#[derive(Debug)]
pub struct Health {
    /// The active checks' verdict; up until they say otherwise.
    up: AtomicBool,
    /// Consecutive active results: above 0 passes, below 0 failures.
    streak: AtomicI32,
    /// Consecutive failed requests.
    failures: AtomicU32,
    /// Ejected until this time (ms); in the past when not ejected.
    ejected_until: AtomicU64,
    /// Ejections in a row: the backoff's exponent.
    level: AtomicU32,
    /// The state metrics show, as a [`ReplicaState`] number.
    shown: AtomicU8,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            up: AtomicBool::new(true),
            streak: AtomicI32::new(0),
            failures: AtomicU32::new(0),
            ejected_until: AtomicU64::new(0),
            level: AtomicU32::new(0),
            shown: AtomicU8::new(ReplicaState::Healthy as u8),
        }
    }
}

impl Health {
    /// Whether it may take requests at `now`.
    pub fn eligible(&self, now: u64) -> bool {
        self.up.load(Ordering::Relaxed) && self.ejected_until.load(Ordering::Relaxed) <= now
    }

    /// Whether the active checks say it is up.
    pub fn up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    pub fn state(&self, now: u64) -> ReplicaState {
        if !self.up.load(Ordering::Relaxed) {
            ReplicaState::Unhealthy
        } else if self.ejected_until.load(Ordering::Relaxed) > now {
            ReplicaState::Ejected
        } else {
            ReplicaState::Healthy
        }
    }

    /// Records an active check; returns the new verdict when it changed.
    pub fn checked(&self, passed: bool, cfg: &HealthChecks) -> Option<bool> {
        let streak = self.streak.load(Ordering::Relaxed);
        let streak = match (passed, streak > 0) {
            (true, true) => streak.saturating_add(1),
            (true, false) => 1,
            (false, true) => -1,
            (false, false) => streak.saturating_sub(1),
        };
        self.streak.store(streak, Ordering::Relaxed);
        let up = self.up.load(Ordering::Relaxed);
        let flip = if up {
            !passed && streak.unsigned_abs() >= cfg.unhealthy_threshold
        } else {
            passed && streak.unsigned_abs() >= cfg.healthy_threshold
        };
        if !flip {
            return None;
        }
        self.up.store(!up, Ordering::Relaxed);
        Some(!up)
    }

    /// A request succeeded at `now()`, which is asked only when an
    /// ejection's backoff may have to start over (a clock read per reply
    /// saved when it has none).
    pub fn succeeded(&self, now: impl FnOnce() -> u64, cfg: &Ejection) {
        if self.failures.load(Ordering::Relaxed) != 0 {
            self.failures.store(0, Ordering::Relaxed);
        }
        if self.level.load(Ordering::Relaxed) == 0 {
            return;
        }
        let base = u64::try_from(cfg.base.as_millis()).unwrap_or(u64::MAX);
        if now()
            >= self
                .ejected_until
                .load(Ordering::Relaxed)
                .saturating_add(base)
        {
            self.level.store(0, Ordering::Relaxed);
        }
    }

    /// A request failed; true once failures in a row reach the ejection
    /// threshold.
    pub fn failed(&self, cfg: &Ejection) -> bool {
        self.failures.fetch_add(1, Ordering::Relaxed) + 1 >= cfg.after
    }

    /// Ejects it from `now` unless it is ejected already (another request
    /// got there first); returns for how long.
    pub fn eject(&self, now: u64, cfg: &Ejection) -> Option<Duration> {
        let until = self.ejected_until.load(Ordering::Relaxed);
        if until > now {
            return None;
        }
        let level = self.level.load(Ordering::Relaxed).min(20);
        let time = cfg.base.saturating_mul(1 << level).min(cfg.max);
        let ms = u64::try_from(time.as_millis()).unwrap_or(u64::MAX);
        let next = now.saturating_add(ms);
        self.ejected_until
            .compare_exchange(until, next, Ordering::Relaxed, Ordering::Relaxed)
            .ok()?;
        self.level.fetch_add(1, Ordering::Relaxed);
        self.failures.store(0, Ordering::Relaxed);
        Some(time)
    }

    /// Shows the state at `now` in `series` if it changed since last shown
    /// (a read when it did not).
    pub fn show(&self, now: u64, series: Option<&ReplicaSeries>) {
        let state = self.state(now) as u8;
        if self.shown.load(Ordering::Relaxed) == state {
            return;
        }
        if self.shown.swap(state, Ordering::Relaxed) != state
            && let Some(s) = series
        {
            s.set_state(self.state(now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks(healthy: u32, unhealthy: u32) -> HealthChecks {
        HealthChecks {
            healthy_threshold: healthy,
            unhealthy_threshold: unhealthy,
            ..HealthChecks::default()
        }
    }

    /// A reading taken once gives what `now_ms` gives at that moment, and
    /// counts milliseconds as `now_ms` does. (Other tests may have started
    /// the clock later than this one's paused time: the differences are
    /// taken an hour ahead, where none is clamped to the start.)
    #[tokio::test(start_paused = true)]
    async fn a_reading_in_ms_is_the_clock_of_now_ms() {
        use std::time::Duration;
        assert_eq!(ms_at(Instant::now()), now_ms());
        let hour = Duration::from_secs(3600);
        tokio::time::advance(hour).await;
        let at = Instant::now();
        assert_eq!(ms_at(at), now_ms());
        tokio::time::advance(Duration::from_millis(1_500)).await;
        assert_eq!(now_ms() - ms_at(at), 1_500);
        assert_eq!(ms_at(at + Duration::from_secs(3)) - ms_at(at), 3_000);
    }

    #[test]
    fn active_thresholds() {
        let h = Health::default();
        let cfg = checks(2, 3);
        assert_eq!(h.checked(false, &cfg), None);
        assert_eq!(h.checked(false, &cfg), None);
        assert_eq!(h.checked(true, &cfg), None, "a pass breaks the streak");
        assert_eq!(h.checked(false, &cfg), None);
        assert_eq!(h.checked(false, &cfg), None);
        assert_eq!(h.checked(false, &cfg), Some(false));
        assert!(!h.eligible(now_ms()));
        assert_eq!(h.state(now_ms()), ReplicaState::Unhealthy);
        assert_eq!(h.checked(false, &cfg), None);
        assert_eq!(h.checked(true, &cfg), None);
        assert_eq!(h.checked(true, &cfg), Some(true));
        assert!(h.eligible(now_ms()));
    }

    #[test]
    fn a_success_reads_the_clock_only_with_a_backoff_to_reset() {
        let cfg = Ejection {
            after: 1,
            base: Duration::from_secs(5),
            max: Duration::from_secs(30),
        };
        let h = Health::default();
        let reads = std::cell::Cell::new(0);
        let clock = |t: u64| {
            reads.set(reads.get() + 1);
            t
        };
        h.succeeded(|| clock(1_000), &cfg);
        assert_eq!(reads.get(), 0, "never ejected: nothing to reset");
        assert!(h.failed(&cfg));
        assert_eq!(h.eject(1_000, &cfg).map(|d| d.as_secs()), Some(5));
        h.succeeded(|| clock(20_000), &cfg);
        assert_eq!(reads.get(), 1, "a backoff level: the clock decides");
        // 20 s is past the 6 s return plus the 5 s base: the level went.
        assert_eq!(h.eject(20_000, &cfg).map(|d| d.as_secs()), Some(5));
        h.succeeded(|| clock(26_000), &cfg);
        assert_eq!(reads.get(), 2);
    }

    #[test]
    fn ejection_backs_off_exponentially_up_to_the_max() {
        let cfg = Ejection {
            after: 3,
            base: Duration::from_secs(5),
            max: Duration::from_secs(30),
        };
        let h = Health::default();
        assert!(!h.failed(&cfg));
        assert!(!h.failed(&cfg));
        h.succeeded(|| 1000, &cfg);
        assert!(!h.failed(&cfg), "a success starts the count over");
        assert!(!h.failed(&cfg));
        assert!(h.failed(&cfg));
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs());
        assert_eq!(secs(h.eject(1000, &cfg)), Some(5));
        assert_eq!(h.eject(1000, &cfg), None, "ejected already");
        assert!(!h.failed(&cfg), "the count starts over");
        assert_eq!(h.state(1000), ReplicaState::Ejected);
        assert!(!h.eligible(5_999));
        assert!(h.eligible(6_000));
        let mut t = 6_000;
        let mut times = Vec::new();
        for _ in 0..4 {
            let d = h.eject(t, &cfg).unwrap();
            times.push(d.as_secs());
            t += d.as_millis() as u64;
        }
        assert_eq!(times, [10, 20, 30, 30], "doubling up to the max");
        // Back, and fine for less than `base`: the backoff stays.
        h.succeeded(|| t + 1_000, &cfg);
        assert_eq!(secs(h.eject(t + 1_000, &cfg)), Some(30));
        t += 31_000;
        // Fine for a whole `base` after returning: it starts over.
        h.succeeded(|| t + 5_000, &cfg);
        assert_eq!(secs(h.eject(t + 5_000, &cfg)), Some(5));
    }
}
