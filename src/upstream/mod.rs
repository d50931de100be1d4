//! The client to one backend and its replicas. Each replica ([`replica`])
//! has its own connections (HTTP/1 through [`http1`], with an idle
//! [`pool`] per worker thread; HTTP/2 for gRPC through hyper-util's
//! pooled client), at most `max_connections` exchanges at
//! once (a slot held until the reply body ends) and its health
//! ([`health`]: active checks in [`check`], passive ejection). A request
//! goes to the less loaded of two random eligible replicas ([`pick`]) that
//! have its model ready ([`models`]); when the connection failed before
//! anything was sent, or the request is safe to repeat, it is sent again
//! to another replica ([`send`]) within the backend's retry budget
//! ([`budget`]). With `metrics_url`, each replica's own queue (read from
//! its metrics by [`scrape`] into [`queue`]) is added to its outstanding
//! count. DNS backends re-resolve their replicas ([`dns`]). Also
//! here: connect and response-head timeouts, bounded pauses in every
//! streamed body ([`body`]), the mapping of failures to gateway errors
//! (`failure`, [`UpstreamError`]), what a reply says about its replica
//! once its body is over (`verdict`: a body that fails, or that its reader
//! finds at fault, counts toward the replica's ejection as a 5xx does),
//! and the backend's readiness asked at most once a TTL (`ready`).
//!
//! Clients get short, stable error messages naming the backend; the detail
//! (OS error text, replica addresses) goes to the log with the request id.
//! It must never send again a request some of which may have reached a
//! replica unless its method is idempotent or its route says its infers
//! are. Background tasks (checks, DNS) stop when the last clone of the
//! [`Upstream`] is dropped.

pub(crate) mod body;
mod budget;
mod check;
pub(crate) mod connector;
mod dns;
mod error;
mod failure;
pub(crate) mod grpc;
mod health;
mod http1;
pub(crate) mod location;
mod models;
mod pick;
mod pool;
mod queue;
mod ready;
mod replica;
mod retry;
mod scrape;
mod send;
mod set;
mod target;
mod verdict;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

pub(crate) use crate::http::idle::{Stalled, StreamStalled};
pub(crate) use body::UpstreamBody;
pub(crate) use connector::{Connector, connector};
pub(crate) use error::UpstreamError;
pub(crate) use pick::weighted;
pub(crate) use replica::{Lease, Replica};

use crate::config::{Backend, Replicas};
use crate::http::body::{Body, ChunksBody, empty};
use crate::metrics::{Metrics, ReplicaFamilies};
use budget::Budget;
use health::{ms_at, now_ms};
use models::Models;
use set::ReplicaSet;

/// A backend: its replicas, the models their checks follow and its retry
/// budget. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Upstream {
    pub backend: Arc<Backend>,
    inner: Arc<Inner>,
}

/// What the caller of [`Upstream::send`] lets the upstream tell it about
/// one client request: the request id its log lines carry, a reply that
/// stalled after it was handed over (counted against the request), and
/// the trace its attempts belong to.
pub trait Watch: Send + Sync + std::fmt::Debug {
    fn request_id(&self) -> &str;
    fn stalled(&self, e: &UpstreamError);
    /// The span each attempt's span is a child of, and whose context the
    /// backend is sent when no attempt span is made (an unsampled trace).
    fn trace(&self) -> Option<&crate::trace::Trace> {
        None
    }
}

#[derive(Debug)]
struct Inner {
    backend: Arc<Backend>,
    set: ReplicaSet,
    models: Models,
    budget: Budget,
    early: EarlyCredit,
    ready: ready::ReadyCache,
    families: Option<ReplicaFamilies>,
    /// Asks the health checks for a round now.
    wake: Arc<Notify>,
    tasks: Mutex<Vec<AbortHandle>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let tasks = self.tasks.get_mut().unwrap_or_else(|p| p.into_inner());
        for t in tasks.drain(..) {
            t.abort();
        }
    }
}

/// Whether requests sent while they are read are worth trying for a
/// backend: its clients may always put members after their inputs (an
/// `"outputs"` list), and then every guess fails, costing an aborted
/// backend request each. A credit: a guess that held adds one (up to
/// [`EarlyCredit::MAX`]), one that did not takes one; at zero, one request
/// in [`EarlyCredit::PROBE`] tries anyway, in case the clients changed.
#[derive(Debug)]
struct EarlyCredit {
    credit: AtomicU32,
    asked: AtomicU32,
}

impl EarlyCredit {
    const START: u32 = 4;
    const MAX: u32 = 16;
    const PROBE: u32 = 32;

    fn allowed(&self) -> bool {
        self.credit.load(Ordering::Relaxed) > 0
            || self
                .asked
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(Self::PROBE)
    }

    fn outcome(&self, held: bool) {
        let _ = self
            .credit
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                Some(if held {
                    (c + 1).min(Self::MAX)
                } else {
                    c.saturating_sub(1)
                })
            });
    }
}

impl Default for EarlyCredit {
    fn default() -> Self {
        EarlyCredit {
            credit: AtomicU32::new(Self::START),
            asked: AtomicU32::new(1),
        }
    }
}

/// A request for the backend.
#[derive(Debug)]
pub struct Outgoing {
    pub method: Method,
    /// The path and query on the backend (a replica URL's prefix is added).
    pub path: String,
    /// Sent as they are, but for `Host`: always the replica's.
    pub headers: HeaderMap,
    pub body: OutBody,
    /// The model it is for: only replicas with it ready are asked.
    pub model: Option<String>,
    /// Safe to send again even if a replica may have read it (idempotent
    /// methods are, whatever this says).
    pub idempotent: bool,
    /// The client's own deadline: the exchange ends by then even when the
    /// backend's request timeout is longer, and a gRPC backend is told the
    /// time left (`grpc-timeout`).
    pub deadline: Option<Instant>,
}

impl Outgoing {
    /// A request with no body, for no model in particular.
    pub fn get(path: impl Into<String>) -> Outgoing {
        Outgoing {
            method: Method::GET,
            path: path.into(),
            headers: HeaderMap::new(),
            body: OutBody::Empty,
            model: None,
            idempotent: false,
            deadline: None,
        }
    }
}

/// A request body. One in hand can be sent again; a stream cannot.
#[derive(Debug)]
pub enum OutBody {
    Empty,
    Chunks(Vec<Bytes>),
    Stream(Body),
    /// A stream the backend's time to answer counts from the end of: the
    /// receiver hears when the last of it was handed over (a request sent
    /// while the client's is still read, whose reading has its own limits).
    Early(Body, Option<tokio::sync::oneshot::Receiver<()>>),
    /// A body a failed connect handed back unsent (never polled): it can
    /// go once more, moved, not copied.
    Unsent(Body),
}

impl OutBody {
    /// The body for one attempt; with `keep`, a copy stays for another
    /// when it can (a body in hand is cloned chunk by chunk into a new
    /// list, so it is moved when no copy is wanted; see
    /// docs/PERFORMANCE.md, "What each decision bought"); a stream is
    /// always moved.
    fn take(&mut self, keep: bool) -> Body {
        match self {
            OutBody::Empty => empty(),
            OutBody::Chunks(c) if keep => ChunksBody::new(c.iter().cloned()).boxed(),
            OutBody::Chunks(c) => {
                let body = ChunksBody::from_vec(std::mem::take(c)).boxed();
                *self = OutBody::Empty;
                body
            }
            OutBody::Stream(_) | OutBody::Early(..) | OutBody::Unsent(_) => {
                match std::mem::replace(self, OutBody::Empty) {
                    OutBody::Stream(b) | OutBody::Early(b, _) | OutBody::Unsent(b) => b,
                    _ => empty(),
                }
            }
        }
    }

    /// Whether a copy of the body can be kept for another attempt: not of
    /// a stream, nor of a body handed back unsent (moved once more).
    fn replayable(&self) -> bool {
        !matches!(
            self,
            OutBody::Stream(_) | OutBody::Early(..) | OutBody::Unsent(_)
        )
    }

    /// For [`OutBody::Early`]: the signal that the body was all handed
    /// over (the stream stays).
    fn take_end(&mut self) -> Option<tokio::sync::oneshot::Receiver<()>> {
        match self {
            OutBody::Early(_, end) => end.take(),
            _ => None,
        }
    }
}

impl Upstream {
    /// Whether `other` is this same client (a clone of it): what a reload
    /// keeps for a backend whose settings did not change.
    pub fn is_same(&self, other: &Upstream) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The client to `backend`, without metrics.
    pub fn new(backend: Arc<Backend>) -> Upstream {
        Upstream::build(backend, None)
    }

    /// The client to `backend`, its replicas counted in `metrics`.
    pub fn with_metrics(backend: Arc<Backend>, metrics: &Metrics) -> Upstream {
        metrics.replicas.init_backend(&backend.name);
        Upstream::build(backend, Some(metrics.replicas.clone()))
    }

    fn build(backend: Arc<Backend>, families: Option<ReplicaFamilies>) -> Upstream {
        let models = Models::new(&backend.models, backend.health.max_checked_models);
        let replicas = match &backend.replicas {
            Replicas::Urls(urls) => urls
                .iter()
                .map(|u| {
                    Arc::new(Replica::at_url(
                        &backend,
                        u,
                        models.slots(),
                        families.as_ref(),
                    ))
                })
                .collect(),
            Replicas::Dns { .. } => Vec::new(),
        };
        if let Some(f) = &families {
            f.replicas
                .with_label_values(&[&backend.name])
                .set(replicas.len() as i64);
        }
        let inner = Arc::new(Inner {
            backend: backend.clone(),
            set: ReplicaSet::new(replicas),
            models,
            budget: Budget::new(&backend.retries),
            early: EarlyCredit::default(),
            ready: ready::ReadyCache::default(),
            families,
            wake: Arc::new(Notify::new()),
            tasks: Mutex::new(Vec::new()),
        });
        start_tasks(&inner);
        Upstream { backend, inner }
    }

    pub fn name(&self) -> &str {
        &self.backend.name
    }

    /// Whether to send a JSON request while it is read (its header a guess,
    /// see `core::backend::EarlySend`): yes while guesses for this backend
    /// mostly hold.
    pub fn early_allowed(&self) -> bool {
        self.inner.early.allowed()
    }

    /// Tells whether a guess held.
    pub fn early_outcome(&self, held: bool) {
        self.inner.early.outcome(held);
    }

    /// The current replicas.
    pub fn replicas(&self) -> Arc<[Arc<Replica>]> {
        self.inner.set.snapshot()
    }

    /// Whether some replica takes traffic now, and each of `models` is
    /// ready on one that does (as far as the checks know).
    pub fn ready_for(&self, models: &[String]) -> bool {
        let now = now_ms();
        let replicas = self.replicas();
        let eligible: Vec<&Arc<Replica>> =
            replicas.iter().filter(|r| r.health.eligible(now)).collect();
        !eligible.is_empty()
            && models.iter().all(|m| match self.inner.models.peek(m) {
                None => true,
                Some(t) => eligible
                    .iter()
                    .any(|r| r.model_state(t.slot) != Some(false)),
            })
    }

    pub fn timeout(&self, limit: Duration) -> UpstreamError {
        UpstreamError::timeout(&self.backend.name, limit)
    }

    /// Maps a failure while reading a backend's body.
    pub fn body_error(&self, e: &(dyn std::error::Error + 'static)) -> UpstreamError {
        if let Some(s) = failure::source_of::<StreamStalled>(e) {
            return self.timeout(s.idle);
        }
        let detail = crate::error::chain(e);
        tracing::warn!(backend = self.name(), detail, "backend body failed");
        UpstreamError::Reset {
            backend: self.backend.name.clone(),
            detail,
        }
    }
}

/// Starts the health checks (when enabled) and DNS resolution (for a DNS
/// backend) on the current runtime; they hold the upstream weakly and are
/// aborted when it is dropped. Without a runtime (a unit test building an
/// upstream in plain code) nothing starts.
fn start_tasks(inner: &Arc<Inner>) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let mut tasks = Vec::new();
    let weak = Arc::downgrade(inner);
    if let Replicas::Dns {
        name,
        interval,
        max_replicas,
    } = &inner.backend.replicas
    {
        let job = dns::Job {
            name: name.clone(),
            interval: *interval,
            max: *max_replicas,
        };
        tasks.push(rt.spawn(dns::run(weak.clone(), job)).abort_handle());
    }
    if let Some(signal) = &inner.backend.queue {
        let job = scrape::run(weak.clone(), signal.clone());
        tasks.push(rt.spawn(job).abort_handle());
    }
    match inner.backend.protocol() {
        // HTTP/1 connections are pooled here; gRPC's HTTP/2 client keeps
        // its own.
        crate::config::Protocol::Http => {
            let every = pool::sweep_interval(inner.backend.pool_idle_timeout);
            let job = pool::sweep_replicas(weak.clone(), every);
            tasks.push(rt.spawn(job).abort_handle());
        }
        crate::config::Protocol::Grpc => {}
    }
    if inner.backend.health.enabled {
        let wake = inner.wake.clone();
        let interval = inner.backend.health.interval;
        tasks.push(rt.spawn(check::run(weak, wake, interval)).abort_handle());
    }
    *inner.tasks.lock().unwrap_or_else(|p| p.into_inner()) = tasks;
}

#[cfg(test)]
mod pooling_tests;
#[cfg(test)]
mod tests;
