//! The gateway: one configuration's state ([`Shared`]: routes, the backend
//! clients, shadows, request slots, rate-limit buckets) and the one driver
//! every request goes through ([`drive`]). It decides in one place
//! ([`dispatch`]) which frontend serves a request, then runs the
//! frontend's phases: route, bind and observe, check the caller
//! ([`authorize`]), admit, open the body, serve or render the error.
//! Served through [`live::Live`], swapped whole on a reload.

pub(crate) mod authorize;
pub(crate) mod dispatch;
mod drive;
pub(crate) mod live;
pub(crate) mod readiness;
mod whole;

pub(crate) use drive::Handling;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use crate::config::{Config, Route};
use crate::frontend::Health;
use crate::guard::clients::Clients;
use crate::guard::unverified::Unverified;
use crate::guard::{self, admission::Admission};
use crate::http::spool::{DiskBudget, SpoolLimits};
use crate::infer::shadow::Mirror;
use crate::infer::{self, Client};
use crate::metrics::{Metrics, RouteMetrics};
use crate::otel::Pipeline;
use crate::upstream::Upstream;
use std::sync::atomic::{AtomicBool, Ordering};

/// State shared by every request: one configuration and what was built
/// from it. Replaced whole on a reload ([`live`]); a request keeps the one
/// it started with.
#[derive(Debug)]
pub(crate) struct Shared {
    pub config: Config,
    /// Each backend's client, by backend name.
    pub clients: BTreeMap<String, Client>,
    /// Each route's shadow, by route name.
    pub shadows: BTreeMap<String, Mirror>,
    pub metrics: Metrics,
    pub admission: Arc<Admission>,
    /// What a reply may hold for a client not taking it yet, and the disk
    /// every such reply shares.
    pub spool: SpoolLimits,
    /// Requests in flight per client address, when bounded.
    per_client: Option<Arc<Clients>>,
    /// gRPC health watches open per client address.
    watches: Arc<Clients>,
    /// Bytes of signed bodies read before their signature is verified.
    unverified: Arc<Unverified>,
    prefixes: dispatch::Prefixes,
    /// Every rate-limit bucket; outlives configurations (see
    /// [`Gateway::with_registry`]).
    registry: Arc<guard::Registry>,
    /// This configuration's limits, with the registry's buckets.
    limits: guard::Table,
    /// Each route's metric series, by the route's address in
    /// `config.routes`: resolved once for this configuration, by the
    /// route's first request (as before, a route's series appear with its
    /// first request), where a lookup per request hashed the labels and
    /// took a lock.
    series: BTreeMap<usize, OnceLock<Arc<RouteMetrics>>>,
    /// The trace pipeline of `[tracing]`, when on.
    pipeline: Option<Arc<Pipeline>>,
    /// Whether the gateway takes traffic: false from the shutdown signal
    /// on (what `/readyz` and the gRPC health service say). Kept across
    /// reloads.
    serving: Arc<AtomicBool>,
}

/// One client per backend of `config`; the client of a backend whose
/// settings are the same in `before` is taken over (with its pools, replica
/// states, background tasks and metadata cache), and counted in `kept`. An
/// upstream's background tasks (health checks, DNS) stop when it is
/// dropped.
fn clients(
    config: &Config,
    metrics: &Metrics,
    before: Option<&BTreeMap<String, Client>>,
    kept: &mut Kept,
) -> BTreeMap<String, Client> {
    config
        .backends
        .iter()
        .map(|(name, b)| {
            let same = before
                .and_then(|c| c.get(name))
                .filter(|c| *c.upstream.backend == **b);
            let client = match same {
                Some(c) => {
                    kept.upstreams += 1;
                    c.clone()
                }
                None => {
                    kept.rebuilt += 1;
                    Client::new(b.clone(), metrics)
                }
            };
            (name.clone(), client)
        })
        .collect()
}

/// The trace pipeline for `tracing`: `before`'s when its settings are the
/// same, else a new one. One that cannot start is logged, and the gateway
/// runs without traces.
fn pipeline(
    tracing: Option<&crate::config::Tracing>,
    before: Option<&Arc<Pipeline>>,
    kept: &mut Kept,
) -> Option<Arc<Pipeline>> {
    let settings = tracing?;
    if let Some(p) = before.filter(|p| p.settings() == settings) {
        kept.tracing = true;
        return Some(p.clone());
    }
    match Pipeline::start(settings) {
        Ok(p) => {
            tracing::info!(
                endpoint = settings.traces_url(),
                sample_ratio = settings.sample_ratio,
                parent_based = settings.parent_based,
                "tracing: OTLP/HTTP export on"
            );
            Some(p)
        }
        Err(e) => {
            tracing::error!(error = %e, "tracing: cannot start; running without traces");
            None
        }
    }
}

/// The series of `route`, whose backends are those of its split.
fn resolve(metrics: &Metrics, route: &Route) -> Arc<RouteMetrics> {
    let backends: Vec<&str> = route
        .split
        .iter()
        .map(|w| w.backend.name.as_str())
        .collect();
    metrics.route(&route.name, &backends)
}

/// The key of a route of the configuration in [`Shared::series`].
fn route_key(route: &Arc<Route>) -> usize {
    Arc::as_ptr(route) as usize
}

/// Each route's shadow, sending through `clients`.
pub(crate) fn shadows(
    config: &Config,
    clients: &BTreeMap<String, Client>,
    metrics: &Metrics,
    admission: &Arc<Admission>,
) -> BTreeMap<String, Mirror> {
    config
        .routes
        .iter()
        .filter_map(|r| {
            let s = r.shadow.as_ref()?;
            let upstream = clients.get(&s.backend.name)?.upstream.clone();
            let mirror = Mirror::new(&r.name, s, upstream, metrics, admission.clone());
            Some((r.name.clone(), mirror))
        })
        .collect()
}

/// The most gRPC health `Watch` streams one client address (an IPv6 /64)
/// may hold open: a probe needs one per service it watches.
pub(crate) const WATCHES_PER_CLIENT: usize = 16;

/// The gateway service for one configuration. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Gateway {
    shared: Arc<Shared>,
}

/// What a reconfigured gateway took over from the one before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// Backends whose client (pool, slots, metadata cache) was kept.
    pub upstreams: usize,
    /// Backends built anew (new or changed).
    pub rebuilt: usize,
    /// Whether the request slots were kept (limits unchanged).
    pub admission: bool,
    /// Whether the trace pipeline was kept (`[tracing]` unchanged).
    pub tracing: bool,
}

impl Gateway {
    pub fn new(config: Config, metrics: Metrics) -> Gateway {
        Gateway::with_registry(config, metrics, Arc::new(guard::Registry::new()))
    }

    /// A gateway whose rate limits use the buckets of `registry`: a gateway
    /// built for a reloaded configuration with the registry of the one it
    /// replaces ([`Gateway::registry`]) keeps every bucket both name, with
    /// the tokens they hold. ([`Gateway::reconfigured`] does that, and
    /// keeps unchanged backends too.)
    pub fn with_registry(
        config: Config,
        metrics: Metrics,
        registry: Arc<guard::Registry>,
    ) -> Gateway {
        Gateway::build(config, metrics, registry, None).0
    }

    /// A gateway for `config` that keeps from this one what did not change:
    /// the client of every backend whose settings are identical (so its
    /// pooled connections, replica states, health checks and metadata
    /// cache live on), the request slots when `max_concurrent_requests` and
    /// `queue_timeout` are unchanged, and the rate-limit buckets of every
    /// route and key both name (with their tokens). Requests in flight keep
    /// this gateway until they end.
    pub fn reconfigured(&self, config: Config) -> (Gateway, Kept) {
        // New routes and key names get their zero series.
        self.shared.metrics.init_series(&config);
        // A route's series name its backends: resolve them again.
        self.shared.metrics.forget_routes();
        let registry = self.shared.registry.clone();
        Gateway::build(
            config,
            self.shared.metrics.clone(),
            registry,
            Some(&self.shared),
        )
    }

    fn build(
        config: Config,
        metrics: Metrics,
        registry: Arc<guard::Registry>,
        before: Option<&Shared>,
    ) -> (Gateway, Kept) {
        let mut kept = Kept::default();
        let clients = clients(&config, &metrics, before.map(|s| &s.clients), &mut kept);
        let server = &config.server;
        let admission = match before {
            Some(s)
                if s.config.server.max_concurrent_requests == server.max_concurrent_requests
                    && s.config.server.queue_timeout == server.queue_timeout =>
            {
                kept.admission = true;
                s.admission.clone()
            }
            _ => Arc::new(Admission::new(
                server.max_concurrent_requests,
                server.queue_timeout,
            )),
        };
        let shadows = shadows(&config, &clients, &metrics, &admission);
        // Held replies keep counting against the disk budget they took
        // from; it is kept while its size is.
        let budget = match before {
            Some(s) if s.config.server.reply_disk_total_bytes == server.reply_disk_total_bytes => {
                s.spool.budget.clone()
            }
            _ => DiskBudget::new(server.reply_disk_total_bytes),
        };
        let spool = SpoolLimits {
            memory: server.reply_memory_bytes,
            disk: server.reply_disk_bytes,
            budget,
        };
        // Kept when unchanged, as the request slots are: requests in
        // flight stay counted.
        let per_client = match before {
            Some(s)
                if s.config.server.max_requests_per_client == server.max_requests_per_client =>
            {
                s.per_client.clone()
            }
            _ => server.max_requests_per_client.map(Clients::new),
        };
        let watches = before.map_or_else(
            || Clients::watches(WATCHES_PER_CLIENT),
            |s| s.watches.clone(),
        );
        let unverified = match before {
            Some(s)
                if s.config.server.max_unverified_body_bytes
                    == server.max_unverified_body_bytes =>
            {
                s.unverified.clone()
            }
            _ => Arc::new(Unverified::new(server.max_unverified_body_bytes)),
        };
        let serving = before.map_or_else(|| Arc::new(AtomicBool::new(true)), |s| s.serving.clone());
        let before = before.and_then(|s| s.pipeline.as_ref());
        let pipeline = pipeline(config.tracing.as_ref(), before, &mut kept);
        let series = config
            .routes
            .iter()
            .map(|r| (route_key(r), OnceLock::new()))
            .collect();
        let shared = Arc::new(Shared {
            series,
            pipeline,
            serving,
            prefixes: dispatch::Prefixes::new(&config),
            limits: registry.table(&config, Some(&metrics)),
            registry,
            config,
            clients,
            shadows,
            metrics,
            admission,
            spool,
            per_client,
            watches,
            unverified,
        });
        (Gateway { shared }, kept)
    }

    /// What `/readyz` should say about the routes (see [`readiness`]).
    pub fn readiness(&self) -> readiness::Readiness {
        readiness::check(&self.shared.config, &self.shared.clients)
    }

    /// The flag the server clears when it starts shutting down.
    pub fn serving(&self) -> &Arc<AtomicBool> {
        &self.shared.serving
    }

    /// The gateway's health as the gRPC health service reports it: the
    /// gateway (`""`) is ready while serving and as `/readyz` says; a route
    /// (by name) while it has a ready replica.
    pub fn health(&self) -> Health {
        let gw = self.clone();
        Health::new(move |service| {
            if service.is_empty() {
                return Some(gw.shared.serving.load(Ordering::SeqCst) && gw.readiness().ready());
            }
            let route = gw.shared.config.routes.iter().find(|r| r.name == service)?;
            Some(readiness::route_ready(route, &gw.shared.clients))
        })
    }

    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// The upstream of backend `name`.
    pub fn upstream(&self, name: &str) -> Option<&Upstream> {
        self.shared.clients.get(name).map(|c| &c.upstream)
    }

    /// The shadow of route `name`, when it has one.
    pub fn shadow(&self, name: &str) -> Option<&Mirror> {
        self.shared.shadows.get(name)
    }

    /// The trace pipeline, when tracing is on.
    pub fn pipeline(&self) -> Option<&Arc<Pipeline>> {
        self.shared.pipeline.as_ref()
    }

    /// The rate-limit buckets, to hand to the gateway of a reloaded
    /// configuration.
    pub fn registry(&self) -> &Arc<guard::Registry> {
        &self.shared.registry
    }

    /// Binds the request observed by `obs` to `route` (serving `model`),
    /// with the route's series: resolved by the route's first request on
    /// this gateway, and kept.
    fn bind_route(&self, route: &Arc<Route>, model: &str, obs: &crate::observe::Observation) {
        let resolved = || resolve(&self.shared.metrics, route);
        match self.shared.series.get(&route_key(route)) {
            Some(series) => obs.bind(route, model, series.get_or_init(resolved)),
            // Not one of this configuration's routes.
            None => obs.bind(route, model, &resolved()),
        }
    }

    /// The exchange for a request bound to `route`: the backend chosen for
    /// it (by weight, or the one `x-tensorgate-backend` names where
    /// allowed), its client and the route's shadow.
    fn exchange<'a>(
        &'a self,
        route: &'a Arc<Route>,
        obs: &'a crate::observe::Observation,
    ) -> Result<infer::Exchange<'a>, infer::route::RouteError> {
        let i = infer::split::choose(route, obs.backend_hint())?;
        obs.use_backend(i);
        let name = route
            .split
            .get(i)
            .map_or(&route.backend.name, |w| &w.backend.name);
        // Every route's backend exists: configuration checked it.
        let client =
            self.shared
                .clients
                .get(name)
                .ok_or_else(|| infer::route::RouteError::Internal {
                    what: format!("backend {name:?} of route {:?} has no client", route.name),
                })?;
        Ok(infer::Exchange {
            route,
            upstream: &client.upstream,
            metadata: &client.metadata,
            shadow: self.shared.shadows.get(&route.name),
            obs,
        })
    }
}
