//! Prometheus metrics, registered on a registry the server owns and passed
//! down to the components that record them (never global statics).
//!
//! Label values come from configuration (route, backend, tensor names) or a
//! fixed set (code, kind, side, direction, phase, rule): request data never
//! creates a label value, so cardinality is bounded by the configuration.

mod export;
#[cfg(target_os = "linux")]
mod process;
mod replicas;
mod store;
pub mod window;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

pub use export::{ExportFailure, ExportFamilies};
pub use replicas::{
    REPLICA_STATES, RETRY_OUTCOMES, ReplicaFamilies, ReplicaSeries, ReplicaState, SHADOW_OUTCOMES,
};
pub use store::{STORE_ERROR_KINDS, STORE_POLICIES, StoreFamilies};

use crate::error::UpstreamKind;
use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

/// Latency buckets in seconds: from half a millisecond (a cached small
/// model) to a minute (large generative models), roughly 2.5x apart.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

/// Translation buckets: conversion is sub-millisecond for small tensors and
/// reaches seconds only for tensors of hundreds of megabytes.
pub const TRANSLATION_BUCKETS: &[f64] = &[
    0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
    0.5, 1.0, 2.5,
];

/// The `kind` values of `tensorgate_replica_errors_total`: the upstream
/// kinds that happen on one replica (`unavailable` is about the backend as
/// a whole).
pub const REPLICA_ERROR_KINDS: [UpstreamKind; 6] = [
    UpstreamKind::Refused,
    UpstreamKind::Timeout,
    UpstreamKind::Reset,
    UpstreamKind::Invalid,
    UpstreamKind::Saturated,
    UpstreamKind::ServerError,
];

/// The frontend a request came through: the `kind` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// V2 inference, and every endpoint passed through.
    V2,
    Decthings,
    SageMaker,
    /// gRPC (`inference.GRPCInferenceService`, `grpc.health.v1`).
    Grpc,
}

impl Kind {
    /// Every kind, in label order.
    pub const ALL: [Kind; 4] = [Kind::V2, Kind::Decthings, Kind::SageMaker, Kind::Grpc];

    pub const fn label(self) -> &'static str {
        match self {
            Kind::V2 => "v2",
            Kind::Decthings => "decthings",
            Kind::SageMaker => "sagemaker",
            Kind::Grpc => "grpc",
        }
    }
}

/// One route's series, resolved once: looking a series up by its labels
/// hashes them and takes a lock, which the request path did a dozen times
/// per request (and once per reply frame).
#[derive(Debug)]
pub struct RouteMetrics {
    pub in_flight: IntGauge,
    pub client_in: IntCounter,
    pub backend_out: IntCounter,
    pub backend_in: IntCounter,
    pub client_out: IntCounter,
    /// Upstream latency to each of the route's backends, in the order of
    /// its split (none for `_none`).
    pub upstream: Vec<UpstreamSeries>,
    /// Request duration per kind, in [`Kind::ALL`] order, made on first
    /// use (a route no frontend of a kind reaches shows no series for it).
    duration: [OnceLock<Histogram>; Kind::ALL.len()],
    request_duration: HistogramVec,
    /// `tensorgate_requests_total` per kind and `code` label (by its index,
    /// below [`CODES`]), made on first use like the durations.
    requests: [[OnceLock<IntCounter>; CODES]; Kind::ALL.len()],
    requests_family: IntCounterVec,
    /// Translation time and tensor elements per [`Direction`], made on
    /// first use.
    translation: [OnceLock<Histogram>; 2],
    translation_family: HistogramVec,
    elements: [OnceLock<IntCounter>; 2],
    elements_family: IntCounterVec,
    route: String,
    /// The status page's view of the route (kept across reloads).
    pub tally: Arc<RouteTally>,
}

/// What the status page shows of a route: its last minute, and the
/// requests its rate limits refused since start.
#[derive(Debug, Default)]
pub struct RouteTally {
    pub window: window::Window,
    pub rate_limited: std::sync::atomic::AtomicU64,
}

/// A route's latency series to one of its backends.
#[derive(Debug)]
pub struct UpstreamSeries {
    pub backend: String,
    pub first_byte: Histogram,
    pub total: Histogram,
}

/// How many `code` label values there are: the index of a request's
/// label ([`RouteMetrics::count_request`]) is below it.
pub const CODES: usize = 31;

/// Which way a payload was translated: the `direction` label of the
/// translation metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Request,
    Response,
}

impl Direction {
    pub const fn label(self) -> &'static str {
        match self {
            Direction::Request => "request",
            Direction::Response => "response",
        }
    }
}

impl RouteMetrics {
    /// The request-duration series of this route for `kind`.
    pub fn duration(&self, kind: Kind) -> &Histogram {
        self.duration[kind as usize].get_or_init(|| {
            self.request_duration
                .with_label_values(&[&self.route, kind.label()])
        })
    }

    /// Counts one request of `kind` that ended with the `code` label
    /// `label`, whose index is `code`: the series is looked up by its
    /// labels once per route, not per request.
    pub fn count_request(&self, kind: Kind, code: usize, label: &'static str) {
        let make = || {
            self.requests_family
                .with_label_values(&[&self.route, kind.label(), label])
        };
        match self.requests[kind as usize].get(code) {
            Some(series) => series.get_or_init(make).inc(),
            None => make().inc(),
        }
    }

    /// The translation-time series of this route for `direction`.
    pub fn translation(&self, direction: Direction) -> &Histogram {
        self.translation[direction as usize].get_or_init(|| {
            self.translation_family
                .with_label_values(&[&self.route, direction.label()])
        })
    }

    /// The tensor-elements series of this route for `direction`.
    pub fn elements(&self, direction: Direction) -> &IntCounter {
        self.elements[direction as usize].get_or_init(|| {
            self.elements_family
                .with_label_values(&[&self.route, direction.label()])
        })
    }
}

/// Every metric the gateway exports, behind one `Arc`: every request's
/// observation holds a handle, and cloning ~20 metric families per request
/// would be an atomic increment each, on cache lines every core shares,
/// where the `Arc` is one.
#[derive(Clone, Debug)]
pub struct Metrics(Arc<MetricFamilies>);

impl std::ops::Deref for Metrics {
    type Target = MetricFamilies;

    fn deref(&self) -> &MetricFamilies {
        &self.0
    }
}

/// The metric families themselves (reached through [`Metrics`]).
#[derive(Debug)]
pub struct MetricFamilies {
    /// Resolved series per route name.
    routes: Arc<RwLock<HashMap<String, Arc<RouteMetrics>>>>,
    /// The series of requests no route serves (no backends: never
    /// forgotten).
    unbound: OnceLock<Arc<RouteMetrics>>,
    /// The status page's tallies per route name: unlike the resolved
    /// series, never forgotten on a reload (a route keeps its last minute).
    tallies: std::sync::Mutex<HashMap<String, Arc<RouteTally>>>,
    registry: Registry,
    pub requests: IntCounterVec,
    pub request_duration: HistogramVec,
    pub upstream_duration: HistogramVec,
    pub translation_duration: HistogramVec,
    pub request_bytes: IntCounterVec,
    pub response_bytes: IntCounterVec,
    pub tensor_elements: IntCounterVec,
    pub rule_violations: IntCounterVec,
    pub upstream_errors: IntCounterVec,
    pub in_flight: IntGaugeVec,
    /// Access-log lines dropped because the writer fell behind.
    pub access_log_dropped: prometheus::IntCounter,
    /// Configuration reloads by `result` (`success`, `failure`).
    pub config_reloads: IntCounterVec,
    /// The hash of the configuration file in force (53 bits, exact as a
    /// float); 0 when the configuration came from no file.
    pub config_hash: prometheus::Gauge,
    /// Replicas, retries, DNS and shadow traffic.
    pub replicas: ReplicaFamilies,
    /// The shared rate-limit store.
    pub store: StoreFamilies,
    /// The trace exporter's failures.
    pub trace_export: ExportFamilies,
    /// Requests whose key matched, by route and key name.
    pub authenticated: IntCounterVec,
    /// Requests refused for their credentials, by route and reason.
    pub auth_failures: IntCounterVec,
    /// Requests refused by a rate limit, by route, key and limit.
    pub rate_limited: IntCounterVec,
}

/// The `key` label of requests without a key.
pub const NO_KEY: &str = "_none";

/// The `route` label of requests no route serves.
pub const NO_ROUTE: &str = "_none";

fn counter(
    r: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> prometheus::Result<IntCounterVec> {
    let c = IntCounterVec::new(Opts::new(name, help), labels)?;
    r.register(Box::new(c.clone()))?;
    Ok(c)
}

fn histogram(
    r: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: &[f64],
) -> prometheus::Result<HistogramVec> {
    let h = HistogramVec::new(
        HistogramOpts::new(name, help).buckets(buckets.to_vec()),
        labels,
    )?;
    r.register(Box::new(h.clone()))?;
    Ok(h)
}

impl Metrics {
    /// Registers every metric (and the process collector) on `registry`.
    pub fn register(registry: &Registry) -> prometheus::Result<Metrics> {
        let r = registry;
        let build_info = IntGaugeVec::new(
            Opts::new(
                "tensorgate_build_info",
                "Build information; the value is always 1.",
            ),
            &["version"],
        )?;
        r.register(Box::new(build_info.clone()))?;
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        #[cfg(target_os = "linux")]
        r.register(Box::new(process::ProcessMetrics::for_self()?))?;
        let in_flight = IntGaugeVec::new(
            Opts::new(
                "tensorgate_in_flight_requests",
                "Requests being served, by route.",
            ),
            &["route"],
        )?;
        r.register(Box::new(in_flight.clone()))?;
        Ok(Metrics(Arc::new(MetricFamilies {
            routes: Arc::default(),
            unbound: OnceLock::new(),
            tallies: std::sync::Mutex::default(),
            registry: registry.clone(),
            requests: counter(
                r,
                "tensorgate_requests_total",
                "Requests served, by route, kind and HTTP status code.",
                &["route", "kind", "code"],
            )?,
            request_duration: histogram(
                r,
                "tensorgate_request_duration_seconds",
                "Time from request start to the last byte of the reply, as the client sees it.",
                &["route", "kind"],
                LATENCY_BUCKETS,
            )?,
            upstream_duration: histogram(
                r,
                "tensorgate_upstream_duration_seconds",
                "Backend latency: phase=first_byte until the response head, phase=total until its last byte.",
                &["route", "backend", "phase"],
                LATENCY_BUCKETS,
            )?,
            translation_duration: histogram(
                r,
                "tensorgate_translation_duration_seconds",
                "Time spent converting tensor payloads, by direction (request or response).",
                &["route", "direction"],
                TRANSLATION_BUCKETS,
            )?,
            request_bytes: counter(
                r,
                "tensorgate_request_bytes_total",
                "Request body bytes: side=client as received, side=backend as sent.",
                &["route", "side"],
            )?,
            response_bytes: counter(
                r,
                "tensorgate_response_bytes_total",
                "Response body bytes: side=backend as received, side=client as sent.",
                &["route", "side"],
            )?,
            tensor_elements: counter(
                r,
                "tensorgate_tensor_elements_total",
                "Tensor elements in translated payloads, by direction (request or response).",
                &["route", "direction"],
            )?,
            rule_violations: counter(
                r,
                "tensorgate_rule_violations_total",
                "Requests refused by a tensor rule or limit, by route, tensor (as configured) and rule.",
                &["route", "tensor", "rule"],
            )?,
            upstream_errors: counter(
                r,
                "tensorgate_upstream_errors_total",
                "Failed backend exchanges: kind=refused, timeout, reset, invalid, saturated (no free connection slot), 5xx or unavailable (no healthy replica with the model ready).",
                &["backend", "kind"],
            )?,
            in_flight,
            authenticated: counter(
                r,
                "tensorgate_authenticated_requests_total",
                "Requests whose API key or signature matched, by route and key name (names from the key files).",
                &["route", "key"],
            )?,
            auth_failures: counter(
                r,
                "tensorgate_auth_failures_total",
                "Requests refused for their credentials, by route (_none before the route is known) and reason: missing, invalid, signature, expired.",
                &["route", "reason"],
            )?,
            rate_limited: counter(
                r,
                "tensorgate_rate_limited_total",
                "Requests refused by a rate limit (route or per key), by route, key name (_none without a key) and limit: requests or elements.",
                &["route", "key", "limit"],
            )?,
            access_log_dropped: {
                let c = prometheus::IntCounter::new(
                    "tensorgate_access_log_dropped_total",
                    "Access-log lines dropped because the log writer fell behind (never waited for).",
                )?;
                r.register(Box::new(c.clone()))?;
                c
            },
            config_reloads: {
                let c = counter(
                    r,
                    "tensorgate_config_reloads_total",
                    "Configuration reloads (SIGHUP or a changed file), by result: success or failure (the running configuration was kept).",
                    &["result"],
                )?;
                for result in ["success", "failure"] {
                    c.with_label_values(&[result]);
                }
                c
            },
            config_hash: {
                let g = prometheus::Gauge::new(
                    "tensorgate_config_hash",
                    "Hash of the configuration file in force (what `tensorgate check-config` prints); 0 without a file.",
                )?;
                r.register(Box::new(g.clone()))?;
                g
            },
            replicas: ReplicaFamilies::register(r)?,
            store: StoreFamilies::register(r)?,
            trace_export: ExportFamilies::register(r)?,
        })))
    }

    /// Creates the zero-valued series every configured route and backend
    /// will have, so dashboards and alerts see 0 rather than nothing.
    pub fn init_series(&self, config: &crate::config::Config) {
        for backend in config.backends.keys() {
            for kind in UpstreamKind::ALL {
                self.upstream_errors
                    .with_label_values(&[backend, kind.label()]);
            }
        }
        for route in &config.routes {
            self.in_flight.with_label_values(&[&route.name]);
            self.init_access_series(route);
        }
    }

    /// Zero series for a route's keys, auth failures and rate limits.
    fn init_access_series(&self, route: &crate::config::Route) {
        let names: Vec<&str> = match &route.auth {
            Some(auth) => {
                for reason in crate::auth::AuthFailure::ALL {
                    self.auth_failures
                        .with_label_values(&[&route.name, reason.label()]);
                }
                auth.keys.names().iter().map(|n| &**n).collect()
            }
            None => vec![NO_KEY],
        };
        let limits = &route.rate_limit;
        for name in &names {
            if route.auth.is_some() {
                self.authenticated
                    .with_label_values(&[route.name.as_str(), name]);
            }
            for (unit, limited) in [
                (
                    "requests",
                    limits.route.requests.or(limits.per_key.requests),
                ),
                (
                    "elements",
                    limits.route.elements.or(limits.per_key.elements),
                ),
            ] {
                if limited.is_some() {
                    self.rate_limited
                        .with_label_values(&[route.name.as_str(), name, unit]);
                }
            }
        }
    }

    /// Drops the resolved route series (the series stay registered): after
    /// a reload a route may have other backends.
    pub fn forget_routes(&self) {
        self.routes
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// The series of requests no route serves ([`NO_ROUTE`]), resolved
    /// once: every request counts under it until its route is known.
    pub fn unbound(&self) -> &Arc<RouteMetrics> {
        self.unbound.get_or_init(|| self.route(NO_ROUTE, &[]))
    }

    /// The resolved series of `route` (whose backends are `backends`, in
    /// the order of its split), made on first use and kept. A gateway
    /// resolves its routes' series once, when it is built for a
    /// configuration; requests use those.
    pub fn route(&self, route: &str, backends: &[&str]) -> Arc<RouteMetrics> {
        if let Some(rm) = self
            .routes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(route)
            .filter(|rm| {
                rm.upstream
                    .iter()
                    .map(|u| u.backend.as_str())
                    .eq(backends.iter().copied())
            })
        {
            return rm.clone();
        }
        let rm = Arc::new(RouteMetrics {
            in_flight: self.in_flight.with_label_values(&[route]),
            client_in: self.request_bytes.with_label_values(&[route, "client"]),
            backend_out: self.request_bytes.with_label_values(&[route, "backend"]),
            backend_in: self.response_bytes.with_label_values(&[route, "backend"]),
            client_out: self.response_bytes.with_label_values(&[route, "client"]),
            upstream: backends
                .iter()
                .map(|b| UpstreamSeries {
                    backend: (*b).to_owned(),
                    first_byte: self
                        .upstream_duration
                        .with_label_values(&[route, b, "first_byte"]),
                    total: self
                        .upstream_duration
                        .with_label_values(&[route, b, "total"]),
                })
                .collect(),
            duration: Default::default(),
            request_duration: self.request_duration.clone(),
            requests: Default::default(),
            requests_family: self.requests.clone(),
            translation: Default::default(),
            translation_family: self.translation_duration.clone(),
            elements: Default::default(),
            elements_family: self.tensor_elements.clone(),
            route: route.to_owned(),
            tally: self
                .tallies
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(route.to_owned())
                .or_default()
                .clone(),
        });
        self.routes
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(route.to_owned(), rm.clone());
        rm
    }

    /// A fresh registry with every metric registered.
    pub fn new() -> prometheus::Result<Metrics> {
        Metrics::register(&Registry::new())
    }

    /// The Prometheus text exposition of every registered metric.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        out
    }
}
