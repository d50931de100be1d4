//! What a replica's own metrics say about its queue, as the picker reads
//! it: for each followed model (by its slot, see [`super::models`]) and
//! for the replica as a whole, the requests waiting there — from every
//! gateway and every direct client — in thousandths of a request, and
//! when that was read. Written by the scraper ([`super::scrape`]), read
//! per request without a lock; a value older than the backend's
//! `metrics_stale_after` counts as nothing, so a broken metrics endpoint
//! leaves the replica compared on its outstanding requests alone.

use std::sync::atomic::{AtomicU64, Ordering};

/// The queue of one replica.
#[derive(Debug)]
pub struct Queue {
    /// One per model slot, then the replica's total.
    entries: Box<[Entry]>,
}

#[derive(Debug, Default)]
struct Entry {
    /// Requests waiting, in thousandths.
    milli: AtomicU64,
    /// When it was read (ms on [`super::now_ms`]'s clock); 0: never.
    at: AtomicU64,
}

impl Entry {
    fn fresh(&self, now: u64, stale_ms: u64) -> Option<u64> {
        let at = self.at.load(Ordering::Relaxed);
        (at != 0 && now.saturating_sub(at) <= stale_ms).then(|| self.milli.load(Ordering::Relaxed))
    }
}

impl Queue {
    /// Room for `model_slots` followed models.
    pub fn new(model_slots: usize) -> Queue {
        Queue {
            entries: (0..=model_slots).map(|_| Entry::default()).collect(),
        }
    }

    fn entry(&self, slot: Option<usize>) -> &Entry {
        let total = self.entries.len() - 1;
        &self.entries[slot.filter(|&s| s < total).unwrap_or(total)]
    }

    /// Records `milli` thousandths of a request waiting for model `slot`
    /// (`None`: the whole replica) at `now`.
    pub fn set(&self, slot: Option<usize>, milli: u64, now: u64) {
        let e = self.entry(slot);
        e.milli.store(milli, Ordering::Relaxed);
        e.at.store(now.max(1), Ordering::Relaxed);
    }

    /// Forgets model `slot`'s value (its slot now follows another model).
    pub fn clear(&self, slot: usize) {
        if slot + 1 < self.entries.len() {
            self.entries[slot].at.store(0, Ordering::Relaxed);
        }
    }

    /// Thousandths of a request waiting for model `slot` at `now`, from
    /// values at most `stale_ms` old: the model's own, else the replica's
    /// total, else 0.
    pub fn waiting(&self, slot: Option<usize>, now: u64, stale_ms: u64) -> u64 {
        let total = self.entry(None);
        slot.and_then(|_| self.entry(slot).fresh(now, stale_ms))
            .or_else(|| total.fresh(now, stale_ms))
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_values_count_stale_ones_do_not() {
        let q = Queue::new(2);
        assert_eq!(q.waiting(Some(0), 1000, 3000), 0, "never read");
        q.set(None, 5_000, 1000);
        q.set(Some(1), 2_500, 1000);
        assert_eq!(q.waiting(Some(1), 1000, 3000), 2_500, "the model's own");
        assert_eq!(
            q.waiting(Some(0), 1000, 3000),
            5_000,
            "no value of its own: the total"
        );
        assert_eq!(q.waiting(None, 4000, 3000), 5_000);
        assert_eq!(q.waiting(Some(1), 4001, 3000), 0, "stale: nothing");
        q.clear(1);
        assert_eq!(q.waiting(Some(1), 1000, 3000), 5_000);
        assert_eq!(
            q.waiting(Some(9), 1000, 3000),
            5_000,
            "an unknown slot: the total"
        );
    }
}
