//! Rate limits: token buckets per route and per (route, key), for requests
//! and for tensor elements.
//!
//! The buckets live in a [`Registry`] that outlives any one configuration:
//! a [`Table`] is built from a configuration by asking the registry for the
//! bucket of each (route, key, unit), which hands back the one it already
//! has (its saved tokens kept, its rate updated) or makes a new one. So a
//! reloaded configuration keeps every bucket it still names; buckets no
//! longer named are dropped from the registry when the table is built.
//! The number of buckets is bounded by the configuration: at most two per
//! route and two per key of a route's key file.
//!
//! On the hot path a request looks its route up in the table (an immutable
//! map) and takes tokens under each bucket's own lock: there is no lock
//! shared by all requests.
//!
//! With a shared store (`[rate_limit_store]`, [`super::store`]) the store
//! decides, in one round trip for all of a request's buckets. The local
//! bucket then is a copy of the shared one as far as this gateway knows
//! it: it is drained by what the store admitted here, so it never holds
//! fewer tokens than the shared bucket (which other gateways drain too),
//! and a request it cannot pay for is refused without asking the store
//! (which would refuse it as well). It never admits on its own. While the
//! store is down, `on_store_error` decides: everything passes, nothing
//! does, or each gateway's own fallback buckets at its share of the rates.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::bucket::{Bucket, Take};
use super::store::Store;
use crate::config::{Config, Rate, Rates};
use crate::metrics::Metrics;
use shared::share;

/// What a bucket counts (the `limit` label of
/// `tensorgate_rate_limited_total`).
pub use crate::error::LimitUnit as Unit;
use crate::error::{Class, Classified, Classify};

/// What a refusal calls the unit.
fn noun(unit: Unit) -> &'static str {
    match unit {
        Unit::Requests => "requests",
        Unit::Elements => "tensor elements",
    }
}

/// Which bucket, across configurations.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct BucketId {
    route: String,
    /// `None`: the route's own bucket.
    key: Option<Arc<str>>,
    unit: Unit,
    /// The fallback of a shared bucket (else the local bucket, or the
    /// local copy of a shared one).
    fallback: bool,
}

/// Every bucket, kept across configurations, and the shared store.
#[derive(Debug, Default)]
pub struct Registry {
    buckets: Mutex<HashMap<BucketId, Arc<Bucket>>>,
    /// The store of the last table built with one: kept by a table for a
    /// configuration with the same `[rate_limit_store]`.
    store: Mutex<Option<Arc<Store>>>,
}

impl Registry {
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Buckets held now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<BucketId, Arc<Bucket>>> {
        self.buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The shared store `config` names: the one already made when its
    /// settings did not change, else a new one (its probe started on the
    /// current runtime). A store whose client cannot be made is logged
    /// and left out (local buckets then).
    fn store(&self, config: &Config, metrics: Option<&Metrics>) -> Option<Arc<Store>> {
        let mut held = self.store.lock().unwrap_or_else(|p| p.into_inner());
        let Some(settings) = &config.rate_limit_store else {
            *held = None;
            return None;
        };
        if let Some(s) = held.as_ref().filter(|s| s.settings() == settings) {
            return Some(s.clone());
        }
        match Store::start(settings, metrics.map(|m| m.store.clone())) {
            Ok(s) => {
                *held = Some(s.clone());
                Some(s)
            }
            Err(e) => {
                tracing::error!(store = %settings.url, error = %e, "rate-limit store unusable: buckets stay local");
                *held = None;
                None
            }
        }
    }

    /// The table of `config`'s limits, with the buckets this registry
    /// already has for them; buckets `config` does not name are dropped.
    /// With `[rate_limit_store]` they are shared through the store.
    pub fn table(&self, config: &Config, metrics: Option<&Metrics>) -> Table {
        let store = self.store(config, metrics);
        let now = Instant::now();
        let mut buckets = self.lock();
        let mut live = HashSet::new();
        let mut get = |id: BucketId, rate: Rate| {
            live.insert(id.clone());
            buckets
                .entry(id)
                .and_modify(|b| b.set_rate(rate))
                .or_insert_with(|| Arc::new(Bucket::new(rate, now)))
                .clone()
        };
        let mut bucket = |id: BucketId, rate: Option<Rate>| {
            let rate = rate?;
            let shared = store.as_ref().map(|s| {
                let key = s.bucket_key(&id.route, id.key.as_deref(), id.unit.label());
                let fallback = BucketId {
                    fallback: true,
                    ..id.clone()
                };
                Shared {
                    key: key.into(),
                    fallback: get(fallback, share(rate, s.peers())),
                }
            });
            Some(Limit {
                bucket: get(id, rate),
                rate,
                shared,
            })
        };
        let mut routes = HashMap::new();
        for route in &config.routes {
            let limits = &route.rate_limit;
            if limits.is_empty() {
                continue;
            }
            let name = route.name.clone();
            let mut pair = |key: Option<Arc<str>>, rates: &Rates| Pair {
                requests: bucket(id(&name, key.clone(), Unit::Requests), rates.requests),
                elements: bucket(id(&name, key, Unit::Elements), rates.elements),
            };
            let own = pair(None, &limits.route);
            let mut per_key = HashMap::new();
            if let Some(auth) = route.auth.as_ref().filter(|_| !limits.per_key.is_empty()) {
                for key in auth.keys.names() {
                    per_key.insert(key.clone(), pair(Some(key.clone()), &limits.per_key));
                }
            }
            let limiter = RouteLimiter {
                route: name.clone(),
                own,
                per_key,
                store: store.clone(),
            };
            routes.insert(name, Arc::new(limiter));
        }
        buckets.retain(|id, _| live.contains(id));
        Table { routes }
    }
}

fn id(route: &str, key: Option<Arc<str>>, unit: Unit) -> BucketId {
    BucketId {
        route: route.to_owned(),
        key,
        unit,
        fallback: false,
    }
}

/// One configuration's limits, by route name. Immutable.
#[derive(Debug, Default)]
pub struct Table {
    routes: HashMap<String, Arc<RouteLimiter>>,
}

impl Table {
    /// The limits of `route`, if it has any.
    pub fn route(&self, route: &str) -> Option<&Arc<RouteLimiter>> {
        self.routes.get(route)
    }
}

#[derive(Clone, Debug)]
struct Limit {
    /// The bucket; with a store, the local copy of the shared one.
    bucket: Arc<Bucket>,
    rate: Rate,
    /// With a store: the bucket's key there and its fallback.
    shared: Option<Shared>,
}

impl Limit {
    /// The bucket taken from without a store.
    fn local(&self) -> &Bucket {
        &self.bucket
    }

    /// The bucket `on_store_error = "local"` takes from.
    fn fallback(&self) -> &Bucket {
        self.shared.as_ref().map_or(&self.bucket, |s| &s.fallback)
    }
}

/// What a shared bucket has besides its local copy.
#[derive(Clone, Debug)]
struct Shared {
    key: Box<str>,
    /// The bucket `on_store_error = "local"` takes from.
    fallback: Arc<Bucket>,
}

#[derive(Clone, Debug, Default)]
struct Pair {
    requests: Option<Limit>,
    elements: Option<Limit>,
}

impl Pair {
    fn get(&self, unit: Unit) -> Option<&Limit> {
        match unit {
            Unit::Requests => self.requests.as_ref(),
            Unit::Elements => self.elements.as_ref(),
        }
    }
}

/// One route's buckets: its own, and one pair per key.
#[derive(Debug)]
pub struct RouteLimiter {
    route: String,
    own: Pair,
    per_key: HashMap<Arc<str>, Pair>,
    /// The shared store, when the buckets live there.
    store: Option<Arc<Store>>,
}

/// A request over a limit.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub route: String,
    /// The caller's key, if any.
    pub key: Option<Arc<str>>,
    pub unit: Unit,
    /// The key's own bucket refused (else the route's).
    pub per_key: bool,
    pub rate: Rate,
    /// What the request costs.
    pub cost: u64,
    /// How long until it would pass; `None`: never (over the burst).
    pub wait: Option<Duration>,
    /// Refused because the shared store cannot be reached and
    /// `on_store_error = "deny"` (not for being over the limit).
    pub store_down: bool,
}

impl std::error::Error for Refusal {}

impl Classify for Refusal {
    fn classify(&self) -> Classified {
        let class = Class::RateLimited {
            unit: self.unit,
            retry_after: self.wait.map(|w| (w.as_secs_f64().ceil() as u64).max(1)),
        };
        class.into()
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "route \"{}\": ", self.route)?;
        let whose = match (&self.key, self.per_key) {
            (Some(k), true) => format!("key \"{k}\"'s"),
            _ => "the route's".to_owned(),
        };
        let noun = noun(self.unit);
        if self.store_down {
            return write!(
                f,
                "the shared rate-limit store cannot be reached and the gateway refuses requests until it can (on_store_error = \"deny\"); retry in {:.3}s",
                self.wait.unwrap_or_default().as_secs_f64()
            );
        }
        match self.wait {
            Some(wait) => write!(
                f,
                "over {whose} limit of {} {noun} per second (burst {}); retry in {:.3}s",
                self.rate.per_second,
                self.rate.burst,
                wait.as_secs_f64()
            ),
            None => write!(
                f,
                "the request carries {} {noun}, more than {whose} burst of {}: it can never pass; send fewer at once",
                self.cost, self.rate.burst
            ),
        }
    }
}

impl RouteLimiter {
    /// Takes `cost` of `unit` for the caller `key` at `now`, from the key's
    /// bucket and the route's: locally (the key's tokens go back if the
    /// route's bucket refuses), or in the shared store.
    pub async fn admit(
        &self,
        key: Option<&Arc<str>>,
        unit: Unit,
        cost: u64,
        now: Instant,
    ) -> Result<(), Refusal> {
        let mine = key
            .and_then(|k| self.per_key.get(k))
            .and_then(|p| p.get(unit));
        let own = self.own.get(unit);
        match &self.store {
            None => self.take_both(mine, own, key, unit, cost, Limit::local, now),
            Some(store) => self.shared(store, [mine, own], key, unit, cost, now).await,
        }
    }

    /// Takes from `mine`, then `own`, giving `mine`'s tokens back when
    /// `own` refuses; `which` picks the bucket of a limit.
    #[allow(clippy::too_many_arguments)]
    fn take_both(
        &self,
        mine: Option<&Limit>,
        own: Option<&Limit>,
        key: Option<&Arc<str>>,
        unit: Unit,
        cost: u64,
        which: fn(&Limit) -> &Bucket,
        now: Instant,
    ) -> Result<(), Refusal> {
        if let Some(limit) = mine {
            let taken = which(limit).take(cost, now);
            self.check(taken, limit, key, unit, true, cost)?;
        }
        if let Some(limit) = own {
            let taken = which(limit).take(cost, now);
            if let Err(refusal) = self.check(taken, limit, key, unit, false, cost) {
                if let Some(m) = mine {
                    which(m).give_back(cost);
                }
                return Err(refusal);
            }
        }
        Ok(())
    }

    /// `Ok` for a take that went through, else the refusal it comes to.
    fn check(
        &self,
        taken: Take,
        limit: &Limit,
        key: Option<&Arc<str>>,
        unit: Unit,
        per_key: bool,
        cost: u64,
    ) -> Result<(), Refusal> {
        let wait = match taken {
            Take::Ok => return Ok(()),
            Take::Wait(d) => Some(d),
            Take::Never => None,
        };
        Err(self.refusal(limit, key, unit, per_key, cost, wait))
    }

    fn refusal(
        &self,
        limit: &Limit,
        key: Option<&Arc<str>>,
        unit: Unit,
        per_key: bool,
        cost: u64,
        wait: Option<Duration>,
    ) -> Refusal {
        Refusal {
            route: self.route.clone(),
            key: key.cloned(),
            unit,
            per_key,
            rate: limit.rate,
            cost,
            wait,
            store_down: false,
        }
    }

    /// Whether elements are limited for `key` (to skip counting them).
    pub fn limits_elements(&self, key: Option<&Arc<str>>) -> bool {
        self.own.elements.is_some()
            || key
                .and_then(|k| self.per_key.get(k))
                .is_some_and(|p| p.elements.is_some())
    }
}

mod shared;
#[cfg(test)]
mod tests;
