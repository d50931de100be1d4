//! The retry budget of one backend: over the last ten seconds, retries may
//! be at most a fraction of the requests plus a small number per second, so
//! that when a backend fails, retries cannot multiply the load on what is
//! left of it. Counted in one-second buckets of atomics (no lock); two
//! threads starting a new second at once may lose a count, which only
//! makes the budget a little looser or tighter for that second.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::Retries;

const BUCKETS: usize = 10;

#[derive(Debug, Default)]
struct Bucket {
    /// The second (on the gateway clock) these counts are for.
    second: AtomicU64,
    requests: AtomicU64,
    retries: AtomicU64,
}

/// A backend's retry budget.
#[derive(Debug)]
pub(super) struct Budget {
    buckets: [Bucket; BUCKETS],
    permille: u64,
    min_per_second: u64,
}

impl Budget {
    pub(super) fn new(cfg: &Retries) -> Budget {
        Budget {
            buckets: Default::default(),
            permille: u64::from(cfg.budget_permille),
            min_per_second: u64::from(cfg.min_per_second),
        }
    }

    fn bucket(&self, second: u64) -> &Bucket {
        let b = &self.buckets[(second % BUCKETS as u64) as usize];
        let seen = b.second.load(Ordering::Relaxed);
        if seen != second
            && b.second
                .compare_exchange(seen, second, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            b.requests.store(0, Ordering::Relaxed);
            b.retries.store(0, Ordering::Relaxed);
        }
        b
    }

    /// Counts a request (its first attempt) at `now_ms`.
    pub(super) fn request(&self, now_ms: u64) {
        self.bucket(now_ms / 1000)
            .requests
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Whether a retry at `now_ms` fits the budget; if so it is counted.
    pub(super) fn try_retry(&self, now_ms: u64) -> bool {
        let second = now_ms / 1000;
        let (mut requests, mut retries) = (0, 0);
        for b in &self.buckets {
            let s = b.second.load(Ordering::Relaxed);
            if s + (BUCKETS as u64) > second && s <= second {
                requests += b.requests.load(Ordering::Relaxed);
                retries += b.retries.load(Ordering::Relaxed);
            }
        }
        let allowed = requests * self.permille / 1000 + self.min_per_second * BUCKETS as u64;
        if retries >= allowed {
            return false;
        }
        self.bucket(second).retries.fetch_add(1, Ordering::Relaxed);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(permille: u32, min: u32) -> Budget {
        Budget::new(&Retries {
            max: 2,
            budget_permille: permille,
            min_per_second: min,
        })
    }

    #[test]
    fn a_fraction_of_requests_plus_a_minimum() {
        let b = budget(200, 1);
        let t = 50_000;
        for _ in 0..100 {
            b.request(t);
        }
        // 20% of 100, plus 1/s over 10 s.
        let granted = (0..100).filter(|_| b.try_retry(t)).count();
        assert_eq!(granted, 30);
    }

    #[test]
    fn the_window_slides() {
        let b = budget(0, 1);
        let granted = (0..20).filter(|_| b.try_retry(10_000)).count();
        assert_eq!(granted, 10, "the minimum over the window");
        assert!(!b.try_retry(19_999), "still inside the window");
        let granted = (0..20).filter(|_| b.try_retry(20_000)).count();
        assert_eq!(granted, 10, "the first second's retries have left it");
    }

    #[test]
    fn no_budget_no_retries() {
        let b = budget(0, 0);
        b.request(1);
        assert!(!b.try_retry(1));
    }
}
