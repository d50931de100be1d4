//! The proxy: a tower service that routes V2 requests to backends,
//! translating `infer` payloads and passing everything else through. This is
//! the only layer that knows hyper; codecs below it never do I/O.

pub mod body;
pub mod client_body;
pub mod encoding;
pub mod error;
pub mod headers;
pub mod infer;
pub mod observe;
pub mod passthrough;
pub mod path;
pub mod upstream;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Method, Request, Response};
use hyper::body::Incoming;

use crate::config::{Config, Route};
use crate::metrics::Metrics;
use body::Body;
use error::GatewayError;
use observe::{Observation, Start, ensure_request_id};
use path::V2Path;
use upstream::Upstream;

/// State shared by every request.
#[derive(Debug)]
pub struct Shared {
    pub config: Config,
    pub upstreams: BTreeMap<String, Upstream>,
    pub metrics: Metrics,
}

/// The gateway service. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Gateway {
    shared: Arc<Shared>,
}

impl Gateway {
    pub fn new(config: Config, metrics: Metrics) -> Gateway {
        let upstreams = config
            .backends
            .iter()
            .map(|(name, b)| (name.clone(), Upstream::new(b.clone())))
            .collect();
        Gateway {
            shared: Arc::new(Shared {
                config,
                upstreams,
                metrics,
            }),
        }
    }

    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// Serves one request; every error becomes its response here, and every
    /// exchange is observed.
    pub async fn handle(&self, mut req: Request<Incoming>) -> Response<Body> {
        let request_id = ensure_request_id(req.headers_mut());
        let path = V2Path::parse(req.uri().path());
        let route = self.select(&path, req.uri().path());
        let (route_name, backend) = match &route {
            Ok(r) => (r.name.as_str(), Some(r.backend.name.as_str())),
            Err(_) => ("_none", None),
        };
        let obs = Observation::start(Start {
            metrics: &self.shared.metrics,
            route: route_name,
            backend,
            kind: "v2",
            request_id,
            method: req.method().clone(),
            path: req.uri().path(),
            model: path.model(),
        });
        let result = match route {
            Ok(route) => self.serve(route, &path, req, &obs).await,
            Err(e) => Err(e),
        };
        let resp = match result {
            Ok(resp) => {
                obs.backend_status(resp.status());
                resp
            }
            Err(e) => {
                let rules = self.select(&path, "").ok().map(|r| &r.rules);
                obs.error(&e, rules);
                tracing::debug!(error = %e, status = e.status().as_u16(), "request failed");
                e.into_response()
            }
        };
        obs.finish(resp)
    }

    fn select(&self, path: &V2Path, raw: &str) -> Result<&Arc<Route>, GatewayError> {
        let config = &self.shared.config;
        match path {
            V2Path::Model { name, .. } => {
                config
                    .route_for_model(name)
                    .ok_or_else(|| GatewayError::NoRoute {
                        model: name.clone(),
                    })
            }
            V2Path::Other => config
                .default_route()
                .ok_or_else(|| GatewayError::NotFound {
                    path: raw.to_owned(),
                }),
        }
    }

    async fn serve(
        &self,
        route: &Route,
        path: &V2Path,
        req: Request<Incoming>,
        obs: &Observation,
    ) -> Result<Response<Body>, GatewayError> {
        // Every route's backend exists: configuration checked it.
        let upstream = &self.shared.upstreams[&route.backend.name];
        if path.is_infer() && req.method() == Method::POST {
            return infer::handle(&self.shared.config.server, route, upstream, req, obs).await;
        }
        passthrough::forward(upstream, req, &route.name, route.limits.max_body_bytes, obs).await
    }
}

impl tower::Service<Request<Incoming>> for Gateway {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Incoming>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(req).await) })
    }
}
