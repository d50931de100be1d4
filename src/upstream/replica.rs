//! One replica of a backend: its own connection pool and slots, the
//! requests outstanding on it (what balancing compares), its health (see
//! [`super::health`]) and which checked models it has ready, and its
//! metric series. A [`Lease`] is one request's hold on a replica, from the
//! moment it is picked until its reply body ends.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::{HeaderValue, Request, Response, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::UpstreamError;
use super::connector::{Connector, connector};
use super::health::Health;
use super::http1::{Http1, Http1Settings, ReplyBody, SendError};
use super::queue::Queue;
use crate::config::{Backend, Protocol, ServerConfig};
use crate::error::UpstreamKind;
use crate::http::body::Body;
use crate::metrics::window::Window;
use crate::metrics::{ReplicaFamilies, ReplicaSeries};

/// A backend replica.
#[derive(Debug)]
pub struct Replica {
    /// Its `replica` label and name in logs: the URL as configured, or
    /// `ip:port` as resolved.
    pub label: String,
    /// `scheme://authority[/prefix]` requests go to.
    pub base: Uri,
    /// `Host` for every request.
    host: HeaderValue,
    /// How requests reach it, with its connection pools.
    transport: Transport,
    slots: Arc<Semaphore>,
    in_flight: AtomicUsize,
    pub health: Health,
    /// Its queue as its own metrics say (with `metrics_url`).
    pub queue: Queue,
    /// Checked models it reported ready / not ready, by model slot.
    ready: Bits,
    not_ready: Bits,
    pub series: Option<ReplicaSeries>,
    /// Its last minute of exchanges, for the status page.
    pub window: Window,
}

/// What the status page says of a replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    /// Takes traffic, every followed model ready (as far as checks know).
    Ready,
    /// Out of rotation: its active checks fail, or it was ejected after
    /// failing requests.
    Ejected,
    /// Up, but a followed model is not ready on it.
    Unready,
}

impl Condition {
    pub const fn label(self) -> &'static str {
        match self {
            Condition::Ready => "ready",
            Condition::Ejected => "ejected",
            Condition::Unready => "unready",
        }
    }
}

impl Replica {
    /// A replica at `base`, sending `host` as `Host`, with room for
    /// `model_slots` checked models.
    pub fn new(
        backend: &Backend,
        label: String,
        base: Uri,
        host: HeaderValue,
        model_slots: usize,
        families: Option<&ReplicaFamilies>,
    ) -> Replica {
        Replica {
            series: families.map(|f| f.replica(&backend.name, &label)),
            transport: Transport::new(backend, &base),
            label,
            base,
            host,
            slots: Arc::new(Semaphore::new(backend.max_connections.max(1))),
            in_flight: AtomicUsize::new(0),
            health: Health::default(),
            queue: Queue::new(model_slots),
            ready: Bits::new(model_slots),
            not_ready: Bits::new(model_slots),
            window: Window::default(),
        }
    }

    /// Its condition now, for the status page (and its health detail:
    /// the state the metrics show).
    pub fn condition(&self) -> (Condition, crate::metrics::ReplicaState) {
        let state = self.health.state(super::now_ms());
        let condition = if state != crate::metrics::ReplicaState::Healthy {
            Condition::Ejected
        } else if self.not_ready.count() > 0 {
            Condition::Unready
        } else {
            Condition::Ready
        };
        (condition, state)
    }

    /// A replica at a configured URL (its authority is the `Host`).
    pub fn at_url(
        backend: &Backend,
        url: &Uri,
        model_slots: usize,
        families: Option<&ReplicaFamilies>,
    ) -> Replica {
        let host = url
            .authority()
            .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
            .unwrap_or(HeaderValue::from_static("localhost"));
        let label = url.to_string();
        let label = label.strip_suffix('/').unwrap_or(&label).to_owned();
        Replica::new(
            backend,
            label,
            transport_uri(url),
            host,
            model_slots,
            families,
        )
    }

    /// Sends `req` to the replica (an absolute URI, or for HTTP/1 an
    /// origin-form one, see [`Replica::target`]), or to another port of
    /// its host (its metrics), on a connection of the calling thread's
    /// pool; the future is done once the reply's head is in, or with
    /// [`SendError::Deadline`] once `deadline` (when given) has passed.
    /// Boxed here, the client's own future with no layer around it: it is
    /// large, and each layer would keep (and copy) the request again.
    pub(super) fn request(&self, req: Request<Body>, deadline: Option<Instant>) -> Exchange<'_> {
        match &self.transport {
            Transport::Http1 { main, .. }
                if req.uri().authority().is_none() || main.serves(req.uri()) =>
            {
                // The deadline is kept by the connection's own timer.
                Box::pin(main.send(req, deadline))
            }
            Transport::Http1 { main, other } => {
                Box::pin(by(deadline, elsewhere(main.settings(), other, req)))
            }
            Transport::Http2 {
                pools, settings, ..
            } => {
                let sent = self.http2(pools, settings).request(req);
                Box::pin(by(deadline, async move {
                    Ok(sent.await?.map(ReplyBody::plain))
                }))
            }
        }
    }

    /// Sends `req` to the replica's metrics endpoint (another port of its
    /// host, or its own for an HTTP/1 replica) over HTTP/1.1 whatever the
    /// replica speaks: Triton serves its metrics over HTTP/1.1 only, also
    /// when its inference port is gRPC.
    pub(super) fn request_metrics(&self, req: Request<Body>) -> Exchange<'_> {
        match &self.transport {
            Transport::Http1 { .. } => self.request(req, None),
            Transport::Http2 {
                settings, metrics, ..
            } => {
                let settings = Http1Settings {
                    connector: settings.connector.clone(),
                    max_idle: settings.max_idle,
                    idle_timeout: settings.idle_timeout,
                };
                Box::pin(elsewhere(settings, metrics, req))
            }
        }
    }

    /// The calling thread's HTTP/2 client (hyper-util's pooled client).
    fn http2<'a>(
        &self,
        pools: &'a [OnceLock<Client<Connector, Body>>],
        settings: &PoolSettings,
    ) -> &'a Client<Connector, Body> {
        let slot = &pools[crate::worker::current() % pools.len()];
        slot.get_or_init(|| {
            Client::builder(TokioExecutor::new())
                .pool_timer(TokioTimer::new())
                .pool_idle_timeout(settings.idle_timeout)
                .pool_max_idle_per_host(settings.max_idle)
                // A pooled connection found closed before the request was
                // handed to it is replaced (the default, stated).
                .retry_canceled_requests(true)
                .http2_only(true)
                .timer(TokioTimer::new())
                .build(settings.connector.clone())
        })
    }

    /// Its HTTP/1 client, for tests that reach into its pools.
    #[cfg(test)]
    pub(super) fn http1(&self) -> Option<&Http1> {
        match &self.transport {
            Transport::Http1 { main, .. } => Some(main),
            Transport::Http2 { .. } => None,
        }
    }

    /// Closes the idle HTTP/1 connections that timed out or were closed
    /// (HTTP/2 pools sweep themselves).
    pub(super) fn sweep(&self, now: Instant) {
        if let Transport::Http1 { main, other } = &self.transport {
            main.sweep(now);
            if let Some(other) = other.get() {
                other.sweep(now);
            }
        }
    }

    /// Whether a request that found no connection comes back in its error
    /// ([`SendError::take_unsent`]): HTTP/1's client gives it back,
    /// hyper-util's HTTP/2 one does not.
    pub(super) fn hands_back_unsent(&self) -> bool {
        matches!(self.transport, Transport::Http1 { .. })
    }

    pub fn host(&self) -> &HeaderValue {
        &self.host
    }

    /// Requests picked for this replica whose reply has not ended.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// The URI for a client's path and query: the base's path is a prefix.
    pub fn uri_for(&self, path_and_query: &str) -> Uri {
        let base = &self.base;
        let prefix = base.path().trim_end_matches('/');
        let joined = if prefix.is_empty() {
            path_and_query.parse().ok()
        } else {
            format!("{prefix}{path_and_query}").parse().ok()
        };
        let mut parts = http::uri::Parts::default();
        parts.scheme = base.scheme().cloned();
        parts.authority = base.authority().cloned();
        parts.path_and_query = joined;
        Uri::from_parts(parts).unwrap_or_else(|_| base.clone())
    }

    /// The request target for a client's path and query: origin-form
    /// (`/prefix/path?query`) for an HTTP/1 replica, whose client knows
    /// where it sends; the absolute URI ([`Replica::uri_for`]) for HTTP/2.
    /// An origin-form target this thread made lately is reused (see
    /// [`super::target`]).
    pub fn target(&self, path_and_query: &str) -> Uri {
        if matches!(self.transport, Transport::Http2 { .. }) {
            return self.uri_for(path_and_query);
        }
        let prefix = self.base.path().trim_end_matches('/');
        let made = super::target::origin_form(prefix, path_and_query, || {
            let parsed = if prefix.is_empty() {
                http::uri::PathAndQuery::try_from(path_and_query)
            } else {
                http::uri::PathAndQuery::try_from(format!("{prefix}{path_and_query}"))
            };
            parsed
                .ok()
                .filter(|pq| pq.path().starts_with('/'))
                .map(Uri::from)
        });
        // A path that is not a URI target (never made by the frontends)
        // goes as the absolute URI does.
        made.unwrap_or_else(|| self.uri_for(path_and_query))
    }

    /// A slot for one exchange, waited for up to `wait`.
    pub async fn slot(
        &self,
        backend: &Backend,
        wait: Duration,
    ) -> Result<OwnedSemaphorePermit, UpstreamError> {
        if let Ok(p) = self.slots.clone().try_acquire_owned() {
            return Ok(p);
        }
        match tokio::time::timeout(wait, self.slots.clone().acquire_owned()).await {
            Ok(Ok(p)) => Ok(p),
            _ => {
                self.count_error(UpstreamKind::Saturated);
                Err(UpstreamError::Saturated {
                    backend: backend.name.clone(),
                    limit: backend.max_connections,
                })
            }
        }
    }

    pub fn count_error(&self, kind: UpstreamKind) {
        if let Some(s) = &self.series {
            s.error(kind);
        }
    }

    /// What the last check of model `slot` said: `Some(true)` ready,
    /// `Some(false)` not ready, `None` not known.
    pub fn model_state(&self, slot: usize) -> Option<bool> {
        if self.not_ready.get(slot) {
            Some(false)
        } else if self.ready.get(slot) {
            Some(true)
        } else {
            None
        }
    }

    /// Records what a check of model `slot` said (`None`: forget it).
    pub fn set_model(&self, slot: usize, state: Option<bool>) {
        self.ready.set(slot, state == Some(true));
        self.not_ready.set(slot, state == Some(false));
        if let Some(s) = &self.series {
            s.models_not_ready.set(self.not_ready.count() as i64);
        }
    }
}

/// An exchange with a replica under way: its reply's head, or why none came.
pub(super) type Exchange<'a> =
    Pin<Box<dyn Future<Output = Result<Response<ReplyBody>, SendError>> + Send + 'a>>;

/// How a replica's requests are sent.
#[derive(Debug)]
enum Transport {
    /// HTTP/1 (V2 backends): tensorgate's own client and pools; `other`
    /// is for a second destination on the replica's host (its metrics
    /// port), made on first use.
    Http1 {
        main: Http1,
        other: OnceLock<Box<Http1>>,
    },
    /// HTTP/2 only (a gRPC backend): hyper-util's pooled client, one per
    /// worker thread (and one for every other thread; see
    /// [`crate::worker::current`]), made on first use. One connection
    /// carries many requests at once; each request still picks its
    /// replica. `metrics` is the HTTP/1 client of its metrics endpoint,
    /// made on first use.
    Http2 {
        pools: Box<[OnceLock<Client<Connector, Body>>]>,
        settings: PoolSettings,
        metrics: OnceLock<Box<Http1>>,
    },
}

impl Transport {
    fn new(backend: &Backend, base: &Uri) -> Transport {
        match backend.protocol() {
            Protocol::Grpc => Transport::Http2 {
                pools: (0..=ServerConfig::MAX_WORKERS)
                    .map(|_| OnceLock::new())
                    .collect(),
                settings: PoolSettings {
                    connector: connector(backend),
                    idle_timeout: backend.pool_idle_timeout,
                    max_idle: backend.pool_max_idle_per_host,
                },
                metrics: OnceLock::new(),
            },
            Protocol::Http => Transport::Http1 {
                main: Http1::new(
                    base,
                    connector(backend),
                    backend.pool_max_idle_per_host,
                    backend.pool_idle_timeout,
                ),
                other: OnceLock::new(),
            },
        }
    }
}

/// `exchange`, failed with [`SendError::Deadline`] once `deadline` (when
/// given) has passed.
async fn by<F>(deadline: Option<Instant>, exchange: F) -> Result<Response<ReplyBody>, SendError>
where
    F: Future<Output = Result<Response<ReplyBody>, SendError>>,
{
    match deadline {
        Some(at) => tokio::time::timeout_at(at, exchange)
            .await
            .unwrap_or(Err(SendError::Deadline)),
        None => exchange.await,
    }
}

/// An HTTP/1 request to another destination than the replica's own (its
/// metrics port), through a second client made on first use.
async fn elsewhere(
    settings: Http1Settings,
    other: &OnceLock<Box<Http1>>,
    req: Request<Body>,
) -> Result<Response<ReplyBody>, SendError> {
    let other = other.get_or_init(|| {
        Box::new(Http1::new(
            req.uri(),
            settings.connector.clone(),
            settings.max_idle,
            settings.idle_timeout,
        ))
    });
    if other.serves(req.uri()) {
        return other.send(req, None).await;
    }
    // A third destination (never asked for today): a client of its own,
    // not kept.
    let once = Http1::new(req.uri(), settings.connector, 0, settings.idle_timeout);
    once.send(req, None).await
}

/// What each of a gRPC replica's pools is built with.
#[derive(Debug)]
struct PoolSettings {
    connector: Connector,
    idle_timeout: Duration,
    max_idle: usize,
}

/// The URI requests to a configured URL go to: a `grpc://` replica is
/// reached over cleartext HTTP/2, a `grpcs://` one over TLS.
fn transport_uri(url: &Uri) -> Uri {
    let scheme = match url.scheme_str() {
        Some("grpc") => http::uri::Scheme::HTTP,
        Some("grpcs") => http::uri::Scheme::HTTPS,
        _ => return url.clone(),
    };
    let mut parts = url.clone().into_parts();
    parts.scheme = Some(scheme);
    if parts.path_and_query.is_none() {
        parts.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
    }
    Uri::from_parts(parts).unwrap_or_else(|_| url.clone())
}

/// One request's hold on a replica: counted in its in-flight requests from
/// the pick until dropped (with the reply body), holding a connection slot
/// once it has one.
#[derive(Debug)]
pub(crate) struct Lease {
    pub replica: Arc<Replica>,
    started: Instant,
    permit: Option<OwnedSemaphorePermit>,
    /// The exchange failed (or answered 5xx): an error in the window.
    failed: bool,
}

impl Lease {
    /// A lease on `replica` for an exchange that began at `started`.
    pub(crate) fn start(replica: Arc<Replica>, started: Instant) -> Lease {
        replica.in_flight.fetch_add(1, Ordering::Relaxed);
        if let Some(s) = &replica.series {
            s.in_flight.inc();
        }
        Lease {
            replica,
            started,
            permit: None,
            failed: false,
        }
    }

    /// Marks the exchange failed, for the replica's window.
    pub(crate) fn fail(&mut self) {
        self.failed = true;
    }

    /// Holds the connection slot the request is sent with.
    pub(crate) fn hold(&mut self, permit: OwnedSemaphorePermit) {
        if let Some(s) = &self.replica.series {
            s.requests.inc();
        }
        self.permit = Some(permit);
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.replica.in_flight.fetch_sub(1, Ordering::Relaxed);
        // One clock reading for the duration and the window.
        let now = Instant::now();
        let took = now.saturating_duration_since(self.started);
        if let Some(s) = &self.replica.series {
            s.in_flight.dec();
            s.duration.observe(took.as_secs_f64());
        }
        // A lease that never took a slot sent nothing: not an exchange.
        if self.permit.is_some() {
            self.replica
                .window
                .record_ended(now.into_std(), took, self.failed);
        }
    }
}

/// A fixed set of flags, one per model slot, readable without a lock.
#[derive(Debug)]
struct Bits(Box<[AtomicU64]>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits((0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    fn get(&self, i: usize) -> bool {
        self.0
            .get(i / 64)
            .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (i % 64)) != 0)
    }

    fn set(&self, i: usize, on: bool) {
        if let Some(w) = self.0.get(i / 64) {
            if on {
                w.fetch_or(1 << (i % 64), Ordering::Relaxed);
            } else {
                w.fetch_and(!(1 << (i % 64)), Ordering::Relaxed);
            }
        }
    }

    fn count(&self) -> u32 {
        self.0
            .iter()
            .map(|w| w.load(Ordering::Relaxed).count_ones())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replica(url: &str) -> Replica {
        let backend = Backend::new("b", url.parse().unwrap());
        Replica::at_url(&backend, &url.parse().unwrap(), 130, None)
    }

    #[tokio::test]
    async fn joins_prefix_and_path() {
        let r = replica("http://127.0.0.1:8000");
        assert_eq!(r.label, "http://127.0.0.1:8000");
        assert_eq!(
            r.uri_for("/v2/models/m/infer?x=1"),
            "http://127.0.0.1:8000/v2/models/m/infer?x=1"
        );
        let r = replica("http://127.0.0.1:8000/triton/");
        assert_eq!(r.label, "http://127.0.0.1:8000/triton");
        assert_eq!(r.uri_for("/v2"), "http://127.0.0.1:8000/triton/v2");
        assert_eq!(r.host(), "127.0.0.1:8000");
        // HTTP/1 requests go in origin-form; gRPC ones absolute.
        assert_eq!(r.target("/v2/models?x=1"), "/triton/v2/models?x=1");
        assert_eq!(replica("http://h:1").target("/v2"), "/v2");
        assert_eq!(
            replica("grpc://127.0.0.1:8001").target("/inference.GRPCInferenceService/ModelInfer"),
            "http://127.0.0.1:8001/inference.GRPCInferenceService/ModelInfer"
        );
    }

    #[tokio::test]
    async fn model_states_per_slot() {
        let r = replica("http://127.0.0.1:1");
        assert_eq!(r.model_state(129), None);
        r.set_model(129, Some(false));
        r.set_model(3, Some(true));
        assert_eq!(r.model_state(129), Some(false));
        assert_eq!(r.model_state(3), Some(true));
        assert_eq!(r.model_state(4), None);
        r.set_model(129, Some(true));
        assert_eq!(r.model_state(129), Some(true));
        r.set_model(129, None);
        assert_eq!(r.model_state(129), None);
        assert_eq!(r.model_state(1000), None, "out of range is unknown");
    }

    #[tokio::test]
    async fn a_lease_counts_until_dropped() {
        let r = Arc::new(replica("http://127.0.0.1:1"));
        let a = Lease::start(r.clone(), Instant::now());
        let b = Lease::start(r.clone(), Instant::now());
        assert_eq!(r.in_flight(), 2);
        drop(a);
        assert_eq!(r.in_flight(), 1);
        drop(b);
        assert_eq!(r.in_flight(), 0);
    }

    /// A lease that held a slot is an exchange in the replica's window,
    /// with the time from its start to its drop; one that never held a
    /// slot is not.
    #[tokio::test]
    async fn a_lease_with_a_slot_is_recorded_in_the_window() {
        let backend = Backend::new("b", "http://127.0.0.1:1".parse().unwrap());
        let r = Arc::new(replica("http://127.0.0.1:1"));
        drop(Lease::start(r.clone(), Instant::now()));
        assert_eq!(r.window.summary().requests, 0);

        let mut ok = Lease::start(r.clone(), Instant::now() - Duration::from_millis(300));
        ok.hold(r.slot(&backend, Duration::ZERO).await.unwrap());
        drop(ok);
        let mut failed = Lease::start(r.clone(), Instant::now());
        failed.hold(r.slot(&backend, Duration::ZERO).await.unwrap());
        failed.fail();
        drop(failed);
        let s = r.window.summary();
        assert_eq!((s.requests, s.errors), (2, 1));
        assert!(s.p99.unwrap() >= Duration::from_millis(250), "{:?}", s.p99);
    }
}
