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

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::bucket::{Bucket, Take};
use crate::config::{Config, Rate, Rates};

/// What a bucket counts (the `limit` label of
/// `tensorgate_rate_limited_total`).
pub use crate::error::LimitUnit as Unit;
use crate::error::{Class, Classify};

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
}

/// Every bucket, kept across configurations.
#[derive(Debug, Default)]
pub struct Registry {
    buckets: Mutex<HashMap<BucketId, Arc<Bucket>>>,
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

    /// The table of `config`'s limits, with the buckets this registry
    /// already has for them; buckets `config` does not name are dropped.
    pub fn table(&self, config: &Config) -> Table {
        let now = Instant::now();
        let mut buckets = self.lock();
        let mut live = HashSet::new();
        let mut bucket = |id: BucketId, rate: Option<Rate>| {
            let rate = rate?;
            live.insert(id.clone());
            let b = buckets
                .entry(id)
                .and_modify(|b| b.set_rate(rate))
                .or_insert_with(|| Arc::new(Bucket::new(rate, now)));
            Some(Limit {
                bucket: b.clone(),
                rate,
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
    bucket: Arc<Bucket>,
    rate: Rate,
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
}

impl std::error::Error for Refusal {}

impl Classify for Refusal {
    fn class(&self) -> Class {
        Class::RateLimited {
            unit: self.unit,
            retry_after: self.wait.map(|w| (w.as_secs_f64().ceil() as u64).max(1)),
        }
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
    /// Takes `cost` of `unit` for the caller `key` at `now`: from the key's
    /// bucket, then the route's (the key's tokens go back if the route's
    /// bucket refuses).
    pub fn admit(
        &self,
        key: Option<&Arc<str>>,
        unit: Unit,
        cost: u64,
        now: Instant,
    ) -> Result<(), Refusal> {
        let mine = key
            .and_then(|k| self.per_key.get(k))
            .and_then(|p| p.get(unit));
        if let Some(limit) = mine {
            self.take(limit, key, unit, true, cost, now)?;
        }
        if let Some(limit) = self.own.get(unit)
            && let Err(refusal) = self.take(limit, key, unit, false, cost, now)
        {
            if let Some(m) = mine {
                m.bucket.give_back(cost);
            }
            return Err(refusal);
        }
        Ok(())
    }

    fn take(
        &self,
        limit: &Limit,
        key: Option<&Arc<str>>,
        unit: Unit,
        per_key: bool,
        cost: u64,
        now: Instant,
    ) -> Result<(), Refusal> {
        let wait = match limit.bucket.take(cost, now) {
            Take::Ok => return Ok(()),
            Take::Wait(d) => Some(d),
            Take::Never => None,
        };
        Err(Refusal {
            route: self.route.clone(),
            key: key.cloned(),
            unit,
            per_key,
            rate: limit.rate,
            cost,
            wait,
        })
    }

    /// Whether elements are limited for `key` (to skip counting them).
    pub fn limits_elements(&self, key: Option<&Arc<str>>) -> bool {
        self.own.elements.is_some()
            || key
                .and_then(|k| self.per_key.get(k))
                .is_some_and(|p| p.elements.is_some())
    }
}

#[cfg(test)]
mod tests;
