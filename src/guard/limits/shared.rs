//! The decision for buckets shared through the store: the local copies
//! first (refusing only what the store would refuse too), then one round
//! trip for all of the request's buckets, and `on_store_error` while the
//! store cannot answer.

use std::sync::Arc;
use std::time::Instant;

use super::{Limit, Refusal, RouteLimiter, Unit};
use crate::config::{OnStoreError, Rate};
use crate::guard::bucket::Take;
use crate::guard::store::{Ask, Store, StoreDecision};

impl RouteLimiter {
    /// The decision for shared buckets `limits` (the key's, the route's).
    pub(super) async fn shared(
        &self,
        store: &Store,
        limits: [Option<&Limit>; 2],
        key: Option<&Arc<str>>,
        unit: Unit,
        cost: u64,
        now: Instant,
    ) -> Result<(), Refusal> {
        // The local copies first: one that cannot pay means the shared
        // bucket cannot either.
        for (i, limit) in limits.iter().enumerate() {
            if let Some(limit) = limit {
                let peeked = limit.bucket.peek(cost, now);
                if peeked != Take::Ok {
                    store.prechecked();
                    return self.check(peeked, limit, key, unit, i == 0, cost);
                }
            }
        }
        let mut asks: Vec<Ask<'_>> = Vec::with_capacity(2);
        let mut asked: Vec<(bool, &Limit)> = Vec::with_capacity(2);
        for (i, limit) in limits.iter().enumerate() {
            if let Some(limit) = limit
                && let Some(shared) = &limit.shared
            {
                asks.push(Ask {
                    key: &shared.key,
                    rate: limit.rate,
                });
                asked.push((i == 0, limit));
            }
        }
        if asks.is_empty() {
            return Ok(());
        }
        if !store.is_up() {
            return self.fallback(store, limits, key, unit, cost, now);
        }
        match store.decide(&asks, cost).await {
            Ok(StoreDecision::Admitted) => {
                for (_, limit) in &asked {
                    limit.bucket.drain(cost, now);
                }
                Ok(())
            }
            Ok(StoreDecision::Refused { index, wait }) => {
                let (per_key, limit) = asked[index.min(asked.len() - 1)];
                Err(self.refusal(limit, key, unit, per_key, cost, wait))
            }
            Err(_) => self.fallback(store, limits, key, unit, cost, now),
        }
    }

    /// The decision `on_store_error` makes while the store cannot.
    fn fallback(
        &self,
        store: &Store,
        [mine, own]: [Option<&Limit>; 2],
        key: Option<&Arc<str>>,
        unit: Unit,
        cost: u64,
        now: Instant,
    ) -> Result<(), Refusal> {
        store.fell_back();
        match store.policy() {
            OnStoreError::Allow => Ok(()),
            OnStoreError::Deny => {
                let (limit, per_key) = match (mine, own) {
                    (Some(m), _) => (m, true),
                    (None, Some(o)) => (o, false),
                    (None, None) => return Ok(()),
                };
                let mut refusal = self.refusal(limit, key, unit, per_key, cost, None);
                refusal.wait = Some(store.settings().probe_interval);
                refusal.store_down = true;
                Err(refusal)
            }
            OnStoreError::Local => {
                // The fallbacks' rates follow the number of gateways.
                let peers = store.peers();
                for l in [mine, own].into_iter().flatten() {
                    if let Some(s) = &l.shared {
                        s.fallback.set_rate(share(l.rate, peers));
                    }
                }
                self.take_both(mine, own, key, unit, cost, Limit::fallback, now)
            }
        }
    }
}

/// One gateway's share of `rate` when `peers` share it (the burst at least
/// one token).
pub(super) fn share(rate: Rate, peers: u32) -> Rate {
    let n = f64::from(peers.max(1));
    Rate {
        per_second: rate.per_second / n,
        burst: ((rate.burst as f64 / n).ceil() as u64).max(1),
    }
}
