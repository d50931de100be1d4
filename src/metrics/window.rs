//! The last minute of one route's or one replica's traffic, for the status
//! page: requests, errors and a latency histogram in twelve five-second
//! slots, written with a few relaxed atomic adds per request and summed
//! only when the page asks ([`Window::summary`]). A slot from more than a
//! minute ago is reset by the first request that lands on it (a request
//! racing that reset may go uncounted: this is a view, not an account —
//! the Prometheus series are the account).
//!
//! Latencies go into log-linear buckets, four per power of two of
//! microseconds, so a quantile read back is within about 12% of the true
//! value, from a microsecond to days.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Slots kept, and the seconds each covers: one minute.
const SLOTS: usize = 12;
const SLOT_SECONDS: u64 = 5;
/// Latency buckets: four per power of two up to 2^40 µs.
const BUCKETS: usize = 160;

/// One route's or replica's last minute.
#[derive(Debug)]
pub struct Window {
    slots: [Slot; SLOTS],
}

#[derive(Debug)]
struct Slot {
    /// The five-second period the counts are of (`u64::MAX`: none yet).
    period: AtomicU64,
    requests: AtomicU64,
    errors: AtomicU64,
    latency: [AtomicU32; BUCKETS],
}

/// What a window saw over the last minute.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    pub requests: u64,
    pub errors: u64,
    /// Requests per second over the time covered.
    pub rate: f64,
    /// Errors per request (0 without requests).
    pub error_ratio: f64,
    /// Median and 99th percentile latency (`None` without requests).
    pub p50: Option<Duration>,
    pub p99: Option<Duration>,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            slots: std::array::from_fn(|_| Slot {
                period: AtomicU64::new(u64::MAX),
                requests: AtomicU64::new(0),
                errors: AtomicU64::new(0),
                latency: std::array::from_fn(|_| AtomicU32::new(0)),
            }),
        }
    }
}

/// Time since the process's first window: the windows' clock.
fn clock() -> Duration {
    clock_at(Instant::now())
}

/// The windows' clock at `now`.
fn clock_at(now: Instant) -> Duration {
    static START: OnceLock<Instant> = OnceLock::new();
    now.saturating_duration_since(*START.get_or_init(|| now))
}

impl Window {
    /// Records one request that took `latency`, failed or not.
    pub fn record(&self, latency: Duration, error: bool) {
        self.record_at(clock(), latency, error);
    }

    /// Records one request that took `latency` and ended at `now`, a
    /// clock read the caller made anyway.
    pub fn record_ended(&self, now: Instant, latency: Duration, error: bool) {
        self.record_at(clock_at(now), latency, error);
    }

    fn record_at(&self, now: Duration, latency: Duration, error: bool) {
        let period = now.as_secs() / SLOT_SECONDS;
        let slot = &self.slots[(period % SLOTS as u64) as usize];
        let seen = slot.period.load(Ordering::Relaxed);
        if seen != period
            && slot
                .period
                .compare_exchange(seen, period, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            slot.requests.store(0, Ordering::Relaxed);
            slot.errors.store(0, Ordering::Relaxed);
            for b in &slot.latency {
                b.store(0, Ordering::Relaxed);
            }
        }
        slot.requests.fetch_add(1, Ordering::Relaxed);
        if error {
            slot.errors.fetch_add(1, Ordering::Relaxed);
        }
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        slot.latency[bucket(us)].fetch_add(1, Ordering::Relaxed);
    }

    /// The last minute, summed.
    pub fn summary(&self) -> Summary {
        self.summary_at(clock())
    }

    fn summary_at(&self, now: Duration) -> Summary {
        let period = now.as_secs() / SLOT_SECONDS;
        let oldest = period.saturating_sub(SLOTS as u64 - 1);
        let mut s = Summary::default();
        let mut latency = [0u64; BUCKETS];
        for slot in &self.slots {
            let p = slot.period.load(Ordering::Relaxed);
            if p == u64::MAX || p < oldest || p > period {
                continue;
            }
            s.requests += slot.requests.load(Ordering::Relaxed);
            s.errors += slot.errors.load(Ordering::Relaxed);
            for (total, b) in latency.iter_mut().zip(&slot.latency) {
                *total += u64::from(b.load(Ordering::Relaxed));
            }
        }
        // The time the kept slots cover: the whole slots before this one,
        // and this one so far (less at start-up).
        let covered = (now.as_secs_f64() - (oldest * SLOT_SECONDS) as f64).max(1.0);
        s.rate = s.requests as f64 / covered;
        if s.requests > 0 {
            s.error_ratio = s.errors as f64 / s.requests as f64;
            s.p50 = quantile(&latency, 0.5);
            s.p99 = quantile(&latency, 0.99);
        }
        s
    }
}

/// The bucket of `us` microseconds: exact below 8, then four per power of
/// two (the two bits after the leading one).
fn bucket(us: u64) -> usize {
    if us < 8 {
        return us as usize;
    }
    let e = 63 - us.leading_zeros() as usize;
    let sub = ((us >> (e - 2)) & 3) as usize;
    (4 * e + sub).min(BUCKETS - 1)
}

/// The middle of bucket `i`, in microseconds.
fn middle(i: usize) -> f64 {
    if i < 8 {
        return i as f64;
    }
    let (e, sub) = (i / 4, i % 4);
    let low = (4 + sub) as f64 * 2f64.powi(e as i32 - 2);
    low + 2f64.powi(e as i32 - 2) / 2.0
}

/// The `q` quantile of a histogram (the middle of the bucket holding it).
fn quantile(buckets: &[u64; BUCKETS], q: f64) -> Option<Duration> {
    let total: u64 = buckets.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
    let mut seen = 0;
    for (i, n) in buckets.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return Some(Duration::from_secs_f64(middle(i) / 1e6));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn buckets_are_within_an_eighth_of_the_value() {
        for us in [
            1u64,
            7,
            8,
            9,
            15,
            100,
            999,
            12_345,
            1_000_000,
            3_600_000_000,
        ] {
            let m = middle(bucket(us));
            let err = (m - us as f64).abs() / us as f64;
            assert!(err <= 0.125, "{us}: bucket middle {m}");
        }
        assert!(bucket(u64::MAX) == BUCKETS - 1);
        let mut last = 0;
        for us in 0..100_000u64 {
            let b = bucket(us);
            assert!(b >= last, "monotonic at {us}");
            last = b;
        }
    }

    #[test]
    fn a_minute_of_traffic_is_summed_and_older_slots_forgotten() {
        let w = Window::default();
        let t0 = Duration::from_secs(1000);
        // 90 fast requests, 10 slow failures, over 10 seconds.
        for i in 0..100u32 {
            let at = t0 + Duration::from_millis(u64::from(i) * 100);
            let (latency, error) = if i % 10 == 9 {
                (500 * MS, true)
            } else {
                (2 * MS, false)
            };
            w.record_at(at, latency, error);
        }
        let s = w.summary_at(t0 + Duration::from_secs(10));
        assert_eq!((s.requests, s.errors), (100, 10));
        assert!((s.error_ratio - 0.1).abs() < 1e-9);
        let p50 = s.p50.unwrap().as_secs_f64();
        let p99 = s.p99.unwrap().as_secs_f64();
        assert!((p50 - 0.002).abs() / 0.002 < 0.125, "p50 {p50}");
        assert!((p99 - 0.5).abs() / 0.5 < 0.125, "p99 {p99}");
        // The window covers 55 to 60 seconds: 100 requests over about 60 s.
        assert!(
            s.rate > 100.0 / 61.0 && s.rate < 100.0 / 54.0,
            "rate {}",
            s.rate
        );

        // Two minutes on: all forgotten, and a new request resets its slot.
        let later = t0 + Duration::from_secs(130);
        assert_eq!(w.summary_at(later).requests, 0);
        assert_eq!(w.summary_at(later).p50, None);
        w.record_at(later, 10 * MS, false);
        let s = w.summary_at(later);
        assert_eq!((s.requests, s.errors), (1, 0));
    }

    #[test]
    fn the_rate_at_start_up_counts_only_the_time_there_was() {
        let w = Window::default();
        for _ in 0..20 {
            w.record_at(Duration::from_secs(2), MS, false);
        }
        let s = w.summary_at(Duration::from_secs(4));
        assert!((s.rate - 5.0).abs() < 1e-9, "{}", s.rate);
    }
}
