//! Choices made per request without a shared lock: a small random number
//! generator per thread, the power of two choices (of two random eligible
//! replicas, the one with the lower load — requests outstanding here,
//! plus, with `metrics_url`, those waiting in the replica's own queue: a
//! slow replica builds up both and so gets fewer new ones), and a
//! weighted choice for traffic splits.

use std::cell::Cell;

thread_local! {
    static STATE: Cell<u64> = Cell::new(seed());
}

/// A per-thread seed: the standard library's random hash keys.
fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x9e37_79b9_7f4a_7c15);
    h.finish() | 1
}

/// xorshift64*: fast, statistically fine for load balancing, never for
/// secrets.
pub(super) fn next_u64() -> u64 {
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

/// A number below `n` (> 0), without modulo bias worth speaking of.
pub(super) fn below(n: u64) -> u64 {
    ((u128::from(next_u64()) * u128::from(n)) >> 64) as u64
}

/// Of the `n` items for which `eligible` holds, two picked at random (one
/// when there is only one); the one with the lower `load`. `None` when no
/// item is eligible. Scans at most three times, allocates nothing.
pub(super) fn two_choices<L: Ord>(
    n: usize,
    eligible: impl Fn(usize) -> bool,
    load: impl Fn(usize) -> L,
) -> Option<usize> {
    // The common single replica: asked once, not counted then found.
    if n == 1 {
        return eligible(0).then_some(0);
    }
    let count = (0..n).filter(|&i| eligible(i)).count();
    let nth = |k: usize| (0..n).filter(|&i| eligible(i)).nth(k);
    match count {
        0 => None,
        1 => nth(0),
        _ => {
            let a = below(count as u64) as usize;
            // A second, different one: a uniform pick among the others.
            let b = (a + 1 + below(count as u64 - 1) as usize) % count;
            let (a, b) = (nth(a), nth(b));
            match (a, b) {
                (Some(a), Some(b)) if load(b) < load(a) => Some(b),
                (Some(a), _) => Some(a),
                (None, b) => b,
            }
        }
    }
}

/// An index of `weights` with probability proportional to its weight;
/// `None` when every weight is 0.
pub(crate) fn weighted(weights: impl Iterator<Item = u32> + Clone) -> Option<usize> {
    let total: u64 = weights.clone().map(u64::from).sum();
    if total == 0 {
        return None;
    }
    let mut r = below(total);
    for (i, w) in weights.enumerate() {
        let w = u64::from(w);
        if r < w {
            return Some(i);
        }
        r -= w;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_enough() {
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[below(10) as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn two_choices_prefers_the_less_loaded_and_skips_the_ineligible() {
        let load = [5, 0, 9, 0];
        let eligible = [true, false, true, true];
        let mut counts = [0u32; 4];
        for _ in 0..10_000 {
            let i = two_choices(4, |i| eligible[i], |i| load[i]).unwrap();
            counts[i] += 1;
        }
        assert_eq!(counts[1], 0, "ineligible");
        assert_eq!(counts[2], 0, "the most loaded always loses its pair");
        // 3 wins every pair it is in (2 of 3 pairs), 0 wins against 2.
        assert!(counts[3] > 6_000 && counts[0] > 2_500, "{counts:?}");
        assert_eq!(two_choices(3, |_| false, |_| 0), None);
        assert_eq!(two_choices(3, |i| i == 2, |_| 0), Some(2));
        assert_eq!(two_choices(1, |_| true, |_| 0), Some(0));
        assert_eq!(two_choices(1, |_| false, |_| 0), None);
        assert_eq!(two_choices(0, |_| true, |_| 0), None);
    }

    #[test]
    fn weights_hold() {
        let mut counts = [0u32; 3];
        for _ in 0..100_000 {
            counts[weighted([90u32, 0, 10].into_iter()).unwrap()] += 1;
        }
        assert_eq!(counts[1], 0);
        assert!((89_000..91_000).contains(&counts[0]), "{counts:?}");
        assert_eq!(weighted([0u32, 0].into_iter()), None);
    }
}
