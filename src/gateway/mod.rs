//! The gateway (served through [`live::Live`]): chooses, in one place
//! ([`dispatch`]), which frontend serves a request, binds it to a route,
//! and observes it; the frontend reads its protocol into the shared
//! inference [`core`] and renders the reply and errors in its own shape.
//! Everything that is not inference is passed through ([`passthrough`]).
//! This is the only layer that knows hyper; codecs below it never do I/O.

pub mod access;
pub mod body;
pub mod client_body;
pub mod core;
pub mod dispatch;
pub mod encoding;
pub mod error;
pub mod guard;
pub mod headers;
pub mod live;
pub mod observe;
pub mod parallel;
pub mod passthrough;
pub mod readiness;
pub mod shadow;
pub mod shed;
pub mod split;
pub mod upstream;

use std::collections::BTreeMap;
use std::sync::Arc;

use http::{Request, Response};
use hyper::body::Incoming;

use crate::config::{Config, Route};
use crate::frontend::Frontend;
use crate::frontend::decthings::Routes;
use crate::metrics::Metrics;
use body::Body;
use core::Exchange;
use dispatch::Endpoint;
use error::GatewayError;
use observe::{Observation, Start, ensure_request_id};
use upstream::Upstream;

/// State shared by every request: one configuration and what was built
/// from it. Replaced whole on a reload ([`live`]); a request keeps the one
/// it started with.
#[derive(Debug)]
pub struct Shared {
    pub config: Config,
    pub upstreams: BTreeMap<String, Upstream>,
    /// Each route's shadow, by route name.
    pub shadows: BTreeMap<String, shadow::Mirror>,
    pub metrics: Metrics,
    pub admission: Arc<shed::Admission>,
    prefixes: dispatch::Prefixes,
    /// Every rate-limit bucket; outlives configurations (see
    /// [`Gateway::with_registry`]).
    registry: Arc<guard::Registry>,
    /// This configuration's limits, with the registry's buckets.
    limits: guard::Table,
}

/// One client per backend of `config`, its replicas counted in `metrics`;
/// the client of a backend whose settings are the same in `before` is
/// taken over (with its pools, replica states and background tasks), and
/// counted in `kept`. An upstream's background tasks (health checks, DNS)
/// stop when it is dropped.
fn upstreams(
    config: &Config,
    metrics: &Metrics,
    before: Option<&BTreeMap<String, Upstream>>,
    kept: &mut Kept,
) -> BTreeMap<String, Upstream> {
    config
        .backends
        .iter()
        .map(|(name, b)| {
            let same = before
                .and_then(|u| u.get(name))
                .filter(|u| *u.backend == **b);
            let upstream = match same {
                Some(u) => {
                    kept.upstreams += 1;
                    u.clone()
                }
                None => {
                    kept.rebuilt += 1;
                    Upstream::with_metrics(b.clone(), metrics)
                }
            };
            (name.clone(), upstream)
        })
        .collect()
}

/// Each route's shadow, sending through `upstreams`.
pub fn shadows(
    config: &Config,
    upstreams: &BTreeMap<String, Upstream>,
    metrics: &Metrics,
    admission: &Arc<shed::Admission>,
) -> BTreeMap<String, shadow::Mirror> {
    config
        .routes
        .iter()
        .filter_map(|r| {
            let s = r.shadow.as_ref()?;
            let upstream = upstreams.get(&s.backend.name)?.clone();
            let mirror = shadow::Mirror::new(&r.name, s, upstream, metrics, admission.clone());
            Some((r.name.clone(), mirror))
        })
        .collect()
}

/// The gateway service for one configuration. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Gateway {
    shared: Arc<Shared>,
}

/// What a reconfigured gateway took over from the one before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// Backends whose upstream (pool, slots, metadata cache) was kept.
    pub upstreams: usize,
    /// Backends built anew (new or changed).
    pub rebuilt: usize,
    /// Whether the request slots were kept (limits unchanged).
    pub admission: bool,
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
    /// the upstream of every backend whose settings are identical (so its
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
        let upstreams = upstreams(&config, &metrics, before.map(|s| &s.upstreams), &mut kept);
        let server = &config.server;
        let admission = match before {
            Some(s)
                if s.config.server.max_concurrent_requests == server.max_concurrent_requests
                    && s.config.server.queue_timeout == server.queue_timeout =>
            {
                kept.admission = true;
                s.admission.clone()
            }
            _ => Arc::new(shed::Admission::new(
                server.max_concurrent_requests,
                server.queue_timeout,
            )),
        };
        let shadows = shadows(&config, &upstreams, &metrics, &admission);
        let shared = Arc::new(Shared {
            prefixes: dispatch::Prefixes::new(&config),
            limits: registry.table(&config),
            registry,
            config,
            upstreams,
            shadows,
            metrics,
            admission,
        });
        (Gateway { shared }, kept)
    }

    /// What `/readyz` should say about the routes (see [`readiness`]).
    pub fn readiness(&self) -> readiness::Readiness {
        readiness::check(&self.shared.config, &self.shared.upstreams)
    }

    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// The upstream of backend `name`.
    pub fn upstream(&self, name: &str) -> Option<&Upstream> {
        self.shared.upstreams.get(name)
    }

    /// The rate-limit buckets, to hand to the gateway of a reloaded
    /// configuration.
    pub fn registry(&self) -> &Arc<guard::Registry> {
        &self.shared.registry
    }

    /// Serves one request; every error becomes its response here, and every
    /// exchange is observed.
    pub async fn handle(&self, mut req: Request<Incoming>) -> Response<Body> {
        let request_id = ensure_request_id(req.headers_mut());
        let backend_hint = split::take_hint(req.headers_mut());
        let endpoint = dispatch::classify(req.method(), req.uri().path(), &self.shared.prefixes);
        let frontend = endpoint.as_ref().map_or(Frontend::V2, Endpoint::frontend);
        let obs = Observation::start(Start {
            metrics: &self.shared.metrics,
            kind: frontend.kind(),
            request_id,
            method: req.method().clone(),
            path: req.uri().path(),
            backend_hint,
        });
        let result = match endpoint {
            Ok(endpoint) => self.serve(endpoint, req, &obs).await,
            Err(e) => Err(e),
        };
        let resp = result.unwrap_or_else(|e| {
            obs.error(&e);
            tracing::debug!(error = %e, status = e.status().as_u16(), "request failed");
            let retry_after = e.retry_after();
            let mut resp = frontend.render_error(e, &obs);
            if let Some(seconds) = retry_after {
                resp.headers_mut()
                    .insert(http::header::RETRY_AFTER, seconds.into());
            }
            resp
        });
        obs.finish(resp)
    }

    /// The route serving `model`, or the default route when no model is
    /// named.
    fn route(&self, model: Option<&str>, path: &str) -> Result<&Arc<Route>, GatewayError> {
        let config = &self.shared.config;
        match model {
            Some(name) => config
                .route_for_model(name)
                .ok_or_else(|| GatewayError::NoRoute {
                    model: name.to_owned(),
                }),
            None => config
                .default_route()
                .ok_or_else(|| GatewayError::NotFound {
                    path: path.to_owned(),
                }),
        }
    }

    async fn serve(
        &self,
        endpoint: Endpoint,
        req: Request<Incoming>,
        obs: &Observation,
    ) -> Result<Response<Body>, GatewayError> {
        // Where the route is known from the head, the caller is checked
        // before the request takes a slot (so floods of bad keys or of
        // requests over a limit cost no slot and no body).
        match endpoint {
            // SageMaker's health check is never shed nor authenticated: a
            // ping refused would have the platform replace a healthy
            // container.
            Endpoint::SageMakerPing => crate::frontend::sagemaker::ping(self, obs).await,
            Endpoint::Decthings { prefix } => {
                require_post(&req)?;
                self.precheck_prefix(&prefix, req.headers())?;
                self.admit(obs).await?;
                crate::frontend::decthings::evaluate(self, &prefix, req, obs).await
            }
            Endpoint::SageMaker(target) => {
                require_post(&req)?;
                let (route, model) = crate::frontend::sagemaker::target::resolve(
                    self.config(),
                    &target,
                    req.headers(),
                )?;
                obs.bind(route, &model);
                let runtime = matches!(target, dispatch::SageMakerTarget::Endpoint(_));
                let claim = self.authorize_head(route, req.headers(), runtime, obs)?;
                self.admit(obs).await?;
                let call = crate::frontend::sagemaker::Call {
                    route,
                    model,
                    claim,
                };
                crate::frontend::sagemaker::invoke(self, call, req, obs).await
            }
            Endpoint::V2Infer { model } => {
                let x = self.bind(Some(&model.name), req.uri().path(), obs)?;
                self.authorize_head(x.route, req.headers(), false, obs)?;
                self.admit(obs).await?;
                crate::frontend::v2::infer(x, &self.shared.config.server, model, req).await
            }
            Endpoint::Passthrough { model, control } => {
                let x = self.bind(model.as_deref(), req.uri().path(), obs)?;
                if let Some(kind) = control
                    && !x.route.allows_control(kind)
                {
                    return Err(GatewayError::ControlDenied {
                        route: x.route.name.clone(),
                        kind,
                    });
                }
                self.authorize_head(x.route, req.headers(), false, obs)?;
                self.admit(obs).await?;
                passthrough::forward(x, req).await
            }
        }
    }

    /// Takes a request slot for the rest of the request.
    async fn admit(&self, obs: &Observation) -> Result<(), GatewayError> {
        obs.hold(self.shared.admission.admit().await?);
        Ok(())
    }

    /// Binds a V2 request to the route serving the model its path names.
    fn bind<'a>(
        &'a self,
        model: Option<&str>,
        path: &str,
        obs: &'a Observation,
    ) -> Result<Exchange<'a>, GatewayError> {
        let route = self.route(model, path)?;
        obs.bind(route, model.unwrap_or(""));
        self.exchange(route, obs)
    }
}

/// Decthings and SageMaker inference are POSTs only.
fn require_post(req: &Request<Incoming>) -> Result<(), GatewayError> {
    if req.method() == http::Method::POST {
        return Ok(());
    }
    Err(GatewayError::MethodNotAllowed {
        method: req.method().clone(),
        path: req.uri().path().to_owned(),
    })
}

impl crate::frontend::decthings::Routes for Gateway {
    fn config(&self) -> &Config {
        &self.shared.config
    }

    fn authorize(
        &self,
        route: &Route,
        headers: &http::HeaderMap,
        obs: &Observation,
    ) -> Result<(), GatewayError> {
        self.authorize_head(route, headers, false, obs).map(|_| ())
    }

    fn admit_caller(
        &self,
        route: &Route,
        key: Option<Arc<str>>,
        obs: &Observation,
    ) -> Result<(), GatewayError> {
        Gateway::admit_caller(self, route, key, obs)
    }

    fn exchange<'a>(
        &'a self,
        route: &'a Route,
        obs: &'a Observation,
    ) -> Result<Exchange<'a>, GatewayError> {
        let i = split::choose(route, obs.backend_hint())?;
        obs.use_backend(i);
        let name = route
            .split
            .get(i)
            .map_or(&route.backend.name, |w| &w.backend.name);
        // Every route's backend exists: configuration checked it.
        let upstream = self
            .shared
            .upstreams
            .get(name)
            .ok_or_else(|| GatewayError::Internal {
                what: format!("backend {name:?} of route {:?} has no client", route.name),
            })?;
        Ok(Exchange {
            route,
            upstream,
            shadow: self.shared.shadows.get(&route.name),
            obs,
        })
    }
}
