//! One token bucket: `per_second` tokens a second, at most `burst` saved,
//! behind its own small lock (held for a few arithmetic operations, never
//! across an await). Time is passed in, so the arithmetic is tested
//! without sleeping.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::config::Rate;

/// What taking tokens came to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Take {
    /// Taken.
    Ok,
    /// Not enough tokens: this long until there are.
    Wait(Duration),
    /// More than the bucket ever holds: it can never pass.
    Never,
}

#[derive(Debug)]
struct State {
    rate: Rate,
    tokens: f64,
    last: Instant,
}

/// A token bucket.
#[derive(Debug)]
pub(super) struct Bucket {
    state: Mutex<State>,
}

impl Bucket {
    /// A full bucket.
    pub(super) fn new(rate: Rate, now: Instant) -> Bucket {
        Bucket {
            state: Mutex::new(State {
                rate,
                tokens: rate.burst as f64,
                last: now,
            }),
        }
    }

    /// Changes the rate, keeping the tokens saved (at most the new burst).
    pub(super) fn set_rate(&self, rate: Rate) {
        let mut s = self.lock();
        s.rate = rate;
        s.tokens = s.tokens.min(rate.burst as f64);
    }

    /// Takes `n` tokens at `now` if the bucket has them.
    pub(super) fn take(&self, n: u64, now: Instant) -> Take {
        let mut s = self.lock();
        let verdict = s.refill(n, now);
        if verdict == Take::Ok {
            s.tokens -= n as f64;
        }
        verdict
    }

    /// Whether `n` tokens could be taken at `now`, taking none.
    pub(super) fn peek(&self, n: u64, now: Instant) -> Take {
        self.lock().refill(n, now)
    }

    /// Takes `n` tokens at `now` whatever it holds, down to empty: what a
    /// local copy of a shared bucket does when the store admitted a
    /// request.
    pub(super) fn drain(&self, n: u64, now: Instant) {
        let mut s = self.lock();
        s.refill(n, now);
        s.tokens = (s.tokens - n as f64).max(0.0);
    }

    /// Gives back tokens taken for a request another bucket refused.
    pub(super) fn give_back(&self, n: u64) {
        let mut s = self.lock();
        s.tokens = (s.tokens + n as f64).min(s.rate.burst as f64);
    }

    /// The state; a poisoned lock is taken as it is (only arithmetic runs
    /// under it, so no update is ever half done).
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl State {
    /// Adds the tokens earned since the last call; whether `n` are there.
    fn refill(&mut self, n: u64, now: Instant) -> Take {
        let n = n as f64;
        if n > self.rate.burst as f64 {
            return Take::Never;
        }
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate.per_second).min(self.rate.burst as f64);
        self.last = self.last.max(now);
        if self.tokens >= n {
            Take::Ok
        } else {
            Take::Wait(Duration::from_secs_f64(
                (n - self.tokens) / self.rate.per_second,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(per_second: f64, burst: u64) -> Rate {
        Rate { per_second, burst }
    }

    #[test]
    fn burst_then_the_rate() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let b = Bucket::new(rate(10.0, 3), t0);
        for _ in 0..3 {
            assert_eq!(b.take(1, t0), Take::Ok);
        }
        assert_eq!(b.take(1, t0), Take::Wait(Duration::from_millis(100)));
        assert_eq!(b.take(1, ms(50)), Take::Wait(Duration::from_millis(50)));
        assert_eq!(b.take(1, ms(100)), Take::Ok);
        // A second refills the burst, not more.
        assert_eq!(b.take(3, ms(1100)), Take::Ok);
        assert_eq!(b.take(1, ms(1100)), Take::Wait(Duration::from_millis(100)));
        assert_eq!(b.take(4, ms(5000)), Take::Never);
        // Over 10 s at 10/s: 100 tokens and the burst.
        let b = Bucket::new(rate(10.0, 3), t0);
        let taken = (0..=10_000)
            .filter(|i| b.take(1, ms(*i)) == Take::Ok)
            .count();
        assert_eq!(taken, 103);
    }

    #[test]
    fn peeking_takes_nothing_and_draining_stops_at_empty() {
        let t0 = Instant::now();
        let b = Bucket::new(rate(10.0, 2), t0);
        assert_eq!(b.peek(2, t0), Take::Ok);
        assert_eq!(b.peek(2, t0), Take::Ok, "a peek takes nothing");
        b.drain(5, t0);
        assert_eq!(b.peek(1, t0), Take::Wait(Duration::from_millis(100)));
        assert_eq!(b.peek(3, t0), Take::Never);
    }

    #[test]
    fn time_going_backwards_refills_nothing() {
        let t0 = Instant::now();
        let b = Bucket::new(rate(1.0, 1), t0 + Duration::from_secs(1));
        assert_eq!(b.take(1, t0), Take::Ok);
        assert_eq!(b.take(1, t0), Take::Wait(Duration::from_secs(1)));
    }

    #[test]
    fn new_rates_keep_what_is_saved_and_refunds_are_capped() {
        let t0 = Instant::now();
        let b = Bucket::new(rate(1.0, 10), t0);
        assert_eq!(b.take(4, t0), Take::Ok);
        b.set_rate(rate(1.0, 5));
        assert_eq!(b.take(5, t0), Take::Ok);
        assert_eq!(b.take(1, t0), Take::Wait(Duration::from_secs(1)));
        b.give_back(100);
        assert_eq!(b.take(5, t0), Take::Ok);
        assert_eq!(b.take(1, t0), Take::Wait(Duration::from_secs(1)));
    }
}
