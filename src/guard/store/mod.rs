//! The shared rate-limit store (`[rate_limit_store]`): token buckets kept
//! in Redis, so every gateway in front of the same backends draws from the
//! same buckets.
//!
//! One decision is one round trip: a Lua script ([`script::DECIDE`]) that
//! checks and takes from every bucket of the request at once. Each worker
//! thread has its own multiplexed connection (made on first use, driven by
//! that worker's runtime), which pipelines the worker's concurrent
//! decisions; a connection that closed is made again on the next decision.
//! What a reply may be is bounded before redis-rs parses it ([`resp`],
//! [`link`]): a server (or whoever speaks for it on a `redis://`
//! connection, which is clear text) cannot make the gateway allocate
//! without end. A decision waits at most `timeout`; one that fails or
//! times out takes the store as *down* and drops every connection: from
//! then on decisions are made by `on_store_error` without asking it, until
//! a probe (every `probe_interval`, the first a whole interval after the
//! failure, in [`watch`]) gets answers on a new connection, to the
//! announcement and to the decision that failed, asked again taking
//! nothing (a Redis that answers `PING` but fails the script stays down);
//! each change is logged once and shown in
//! `tensorgate_rate_limit_store_up`. The probe also announces the gateway
//! ([`script::ANNOUNCE`]), which tells every gateway how many share the
//! store (what `local` divides limits by).
//!
//! Never holds a lock across an await; never logs the store's password.
//! Errors never reach a client: the policy decides instead.

mod link;
mod resp;
mod script;
mod watch;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::IntoConnectionInfo;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::config::{OnStoreError, Rate, RateLimitStore, ServerConfig};
use crate::metrics::StoreFamilies;

/// Why the store gave no decision. Never rendered to a client: the policy
/// decides the request instead, and this goes to the log and the metrics.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("{0}")]
    Failed(String),
    #[error("unexpected reply {0:?}")]
    Reply(String),
}

impl StoreError {
    /// The `kind` label of `tensorgate_rate_limit_store_errors_total`.
    fn kind(&self) -> &'static str {
        match self {
            StoreError::Timeout(_) => "timeout",
            StoreError::Failed(_) | StoreError::Reply(_) => "error",
        }
    }
}

/// What the store said about a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreDecision {
    /// Taken from every bucket.
    Admitted,
    /// Bucket `index` (in the order given) refused; it would pass after
    /// `wait` (`None`: never, the cost is over its burst).
    Refused {
        index: usize,
        wait: Option<Duration>,
    },
}

/// One bucket of a decision: its key in the store and its rate.
#[derive(Clone, Copy, Debug)]
pub struct Ask<'a> {
    pub key: &'a str,
    pub rate: Rate,
}

/// A decision's buckets, kept to ask again.
#[derive(Debug)]
struct Replay {
    keys: Vec<String>,
    rates: Vec<Rate>,
}

/// The client to the shared store, shared by every route's limiter.
#[derive(Debug)]
pub struct Store {
    settings: RateLimitStore,
    dial: link::Dial,
    /// One connection per worker thread (and one for every other thread),
    /// as [`crate::worker::current`] numbers them.
    conns: Box<[link::Slot]>,
    decide: redis::Script,
    announce: redis::Script,
    /// Whether decisions go to the store.
    up: AtomicBool,
    /// Gateways sharing the store, as last counted (at least 1).
    peers: AtomicU32,
    /// This gateway's name in the set of gateways.
    id: String,
    metrics: Option<StoreFamilies>,
    /// The decision that took the store down, for the probe to ask again.
    failed_asks: Mutex<Option<Replay>>,
    /// Restarts the probe's interval (when the store was just found down).
    wake: Arc<Notify>,
    task: Mutex<Option<AbortHandle>>,
}

impl Drop for Store {
    fn drop(&mut self) {
        let task = self.task.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = task.take() {
            t.abort();
        }
    }
}

impl Store {
    /// The store of `settings`, its probe started on the current runtime
    /// (none without one: a unit test). Connects on first use.
    pub fn start(
        settings: &RateLimitStore,
        metrics: Option<StoreFamilies>,
    ) -> Result<Arc<Store>, StoreError> {
        let info = settings
            .url
            .secret()
            .into_connection_info()
            .map_err(|e| StoreError::Failed(e.to_string()))?;
        let dial = link::Dial::new(info)?;
        if let Some(m) = &metrics {
            m.init();
            m.up.set(1);
            m.gateways.set(1);
        }
        let store = Arc::new(Store {
            settings: settings.clone(),
            dial,
            conns: (0..=ServerConfig::MAX_WORKERS)
                .map(|_| link::Slot::default())
                .collect(),
            decide: redis::Script::new(script::DECIDE),
            announce: redis::Script::new(script::ANNOUNCE),
            up: AtomicBool::new(true),
            peers: AtomicU32::new(1),
            id: gateway_id(),
            metrics,
            failed_asks: Mutex::new(None),
            wake: Arc::new(Notify::new()),
            task: Mutex::new(None),
        });
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let task = rt.spawn(watch::run(Arc::downgrade(&store), store.wake.clone()));
            *store.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task.abort_handle());
        }
        Ok(store)
    }

    pub fn settings(&self) -> &RateLimitStore {
        &self.settings
    }

    /// Whether decisions go to the store now.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// Gateways sharing the store, as last counted (at least 1).
    pub fn peers(&self) -> u32 {
        self.peers.load(Ordering::Relaxed).max(1)
    }

    pub fn policy(&self) -> OnStoreError {
        self.settings.on_store_error
    }

    /// The key of one bucket: `PREFIX:rl:LEN:ROUTE:KEY:UNIT`, the route's
    /// length first so that no two (route, key) pairs share a key.
    pub fn bucket_key(&self, route: &str, key: Option<&str>, unit: &str) -> String {
        let prefix = &self.settings.key_prefix;
        format!(
            "{prefix}:rl:{}:{route}:{}:{unit}",
            route.len(),
            key.unwrap_or("")
        )
    }

    /// Takes `cost` from every bucket of `asks` in the store, or from none.
    /// A failure marks the store down (see [`Store::is_up`]).
    pub async fn decide(&self, asks: &[Ask<'_>], cost: u64) -> Result<StoreDecision, StoreError> {
        let mut invocation = self.decide.prepare_invoke();
        invocation.arg(cost);
        for ask in asks {
            invocation.key(ask.key);
            invocation.arg(ask.rate.per_second).arg(ask.rate.burst);
        }
        let started = Instant::now();
        let answer = self
            .call(async |mut conn| invocation.invoke_async::<(i64, i64)>(&mut conn).await)
            .await;
        if let Some(m) = &self.metrics {
            m.decisions.observe(started.elapsed().as_secs_f64());
        }
        let verdict = answer.and_then(|(i, wait)| verdict(i, wait, asks.len()));
        if let Err(e) = &verdict {
            *self.lock_failed_asks() = Some(Replay {
                keys: asks.iter().map(|a| a.key.to_owned()).collect(),
                rates: asks.iter().map(|a| a.rate).collect(),
            });
            self.failed(e);
        }
        verdict
    }

    /// Asks again, taking nothing, the decision that took the store down
    /// (none: nothing to ask).
    async fn ask_again(&self) -> Result<(), StoreError> {
        let mut invocation = self.decide.prepare_invoke();
        let asked = {
            let failed = self.lock_failed_asks();
            let Some(replay) = failed.as_ref() else {
                return Ok(());
            };
            invocation.arg(0);
            for (key, rate) in replay.keys.iter().zip(&replay.rates) {
                invocation.key(key);
                invocation.arg(rate.per_second).arg(rate.burst);
            }
            replay.keys.len()
        };
        let (i, wait) = self
            .call(async |mut conn| invocation.invoke_async::<(i64, i64)>(&mut conn).await)
            .await?;
        verdict(i, wait, asked).map(|_| ())
    }

    fn lock_failed_asks(&self) -> std::sync::MutexGuard<'_, Option<Replay>> {
        self.failed_asks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a decision made by the policy.
    pub fn fell_back(&self) {
        if let Some(m) = &self.metrics {
            m.fallbacks
                .with_label_values(&[self.policy().label()])
                .inc();
        }
    }

    /// Counts a request the local copy refused without asking the store.
    pub fn prechecked(&self) {
        if let Some(m) = &self.metrics {
            m.prechecked.inc();
        }
    }

    /// `f` on the calling thread's connection (made first when there is
    /// none), all within the timeout. A connection whose call failed is
    /// dropped: it may be stuck in a reply that never ends.
    async fn call<T>(
        &self,
        f: impl AsyncFnOnce(redis::aio::MultiplexedConnection) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let slot = &self.conns[crate::worker::current() % self.conns.len()];
        let timeout = self.settings.timeout;
        let mut held = None;
        let call = async {
            let link = slot.get(&self.dial).await?;
            let conn = link.conn.clone();
            held = Some(link);
            f(conn).await.map_err(|e| failure(&e, timeout))
        };
        let answer = match tokio::time::timeout(timeout, call).await {
            Err(_) => Err(StoreError::Timeout(timeout)),
            Ok(answer) => answer,
        };
        if let (Err(_), Some(held)) = (&answer, &held) {
            slot.forget(held);
        }
        answer
    }

    /// A decision failed: counted, and the store taken as down (logged
    /// when it was up) with every connection dropped.
    fn failed(&self, e: &StoreError) {
        if let Some(m) = &self.metrics {
            m.errors.with_label_values(&[e.kind()]).inc();
        }
        if self.up.swap(false, Ordering::Relaxed) {
            tracing::warn!(
                store = %self.settings.url,
                error = %e,
                on_store_error = self.policy().label(),
                "rate-limit store unreachable: on_store_error decides until it answers again"
            );
            if let Some(m) = &self.metrics {
                m.up.set(0);
            }
            for slot in &self.conns {
                slot.clear();
            }
            self.wake.notify_one();
        }
    }

    /// A probe got answers: decisions go to the store again (logged when
    /// it was down).
    fn recovered(&self) {
        *self.lock_failed_asks() = None;
        if !self.up.swap(true, Ordering::Relaxed) {
            tracing::info!(
                store = %self.settings.url,
                gateways = self.peers(),
                "rate-limit store reachable again: shared limits resume"
            );
            if let Some(m) = &self.metrics {
                m.up.set(1);
            }
        }
    }

    fn set_peers(&self, n: u32) {
        self.peers.store(n.max(1), Ordering::Relaxed);
        if let Some(m) = &self.metrics {
            m.gateways.set(i64::from(n.max(1)));
        }
    }
}

/// What a Redis error means: the connection's own response timeout (set
/// to the same `timeout`, so it usually fires first) is a timeout too.
fn failure(e: &redis::RedisError, timeout: Duration) -> StoreError {
    if e.is_timeout() {
        StoreError::Timeout(timeout)
    } else {
        StoreError::Failed(e.to_string())
    }
}

/// The script's answer `{i, wait}` for `asked` buckets.
fn verdict(i: i64, wait: i64, asked: usize) -> Result<StoreDecision, StoreError> {
    if i == 0 {
        return Ok(StoreDecision::Admitted);
    }
    let index = usize::try_from(i - 1)
        .ok()
        .filter(|&index| index < asked)
        .ok_or_else(|| StoreError::Reply(format!("{{{i}, {wait}}}")))?;
    let wait = u64::try_from(wait).ok().map(Duration::from_micros);
    Ok(StoreDecision::Refused { index, wait })
}

/// A name for this gateway in the store, distinct across hosts and
/// restarts: the host name, the process id and a random number.
fn gateway_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let random = {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.finish()
    };
    format!("{}:{}:{random:016x}", host.trim(), std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_timeout_is_counted_as_a_timeout() {
        let t = Duration::from_millis(50);
        let timed_out = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert_eq!(failure(&timed_out, t), StoreError::Timeout(t));
        assert_eq!(failure(&timed_out, t).kind(), "timeout");
        let reset = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert!(matches!(failure(&reset, t), StoreError::Failed(_)));
        assert_eq!(failure(&reset, t).kind(), "error");
    }

    #[test]
    fn script_answers_become_verdicts() {
        assert_eq!(verdict(0, 0, 2), Ok(StoreDecision::Admitted));
        assert_eq!(
            verdict(2, 1500, 2),
            Ok(StoreDecision::Refused {
                index: 1,
                wait: Some(Duration::from_micros(1500))
            })
        );
        assert_eq!(
            verdict(1, -1, 1),
            Ok(StoreDecision::Refused {
                index: 0,
                wait: None
            })
        );
        assert!(matches!(verdict(3, 0, 2), Err(StoreError::Reply(_))));
        assert!(matches!(verdict(-1, 0, 2), Err(StoreError::Reply(_))));
    }

    #[test]
    fn bucket_keys_cannot_collide() {
        let url = crate::config::StoreUrl::parse("redis://127.0.0.1:1").unwrap();
        let store = Store::start(&RateLimitStore::new(url), None).unwrap();
        assert_eq!(
            store.bucket_key("a:b", Some("k"), "requests"),
            "tensorgate:rl:3:a:b:k:requests"
        );
        assert_ne!(
            store.bucket_key("a:b", None, "requests"),
            store.bucket_key("a", Some("b"), "requests")
        );
    }
}
