//! The proxy: a tower service that routes V2 requests to backends,
//! translating `infer` payloads and passing everything else through. This is
//! the only layer that knows hyper; codecs below it never do I/O.

pub mod body;
pub mod client_body;
pub mod encoding;
pub mod error;
pub mod headers;
pub mod infer;
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
use body::Body;
use error::GatewayError;
use path::V2Path;
use upstream::Upstream;

/// State shared by every request.
#[derive(Debug)]
pub struct Shared {
    pub config: Config,
    pub upstreams: BTreeMap<String, Upstream>,
}

/// The gateway service. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Gateway {
    shared: Arc<Shared>,
}

impl Gateway {
    pub fn new(config: Config) -> Gateway {
        let upstreams = config
            .backends
            .iter()
            .map(|(name, b)| (name.clone(), Upstream::new(b.clone())))
            .collect();
        Gateway {
            shared: Arc::new(Shared { config, upstreams }),
        }
    }

    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// Serves one request; every error becomes its response here.
    pub async fn handle(&self, req: Request<Incoming>) -> Response<Body> {
        match self.dispatch(req).await {
            Ok(resp) => resp,
            Err(e) => {
                tracing::debug!(error = %e, status = e.status().as_u16(), "request failed");
                e.into_response()
            }
        }
    }

    fn upstream(&self, route: &Route) -> &Upstream {
        // Every route's backend exists: configuration checked it.
        &self.shared.upstreams[&route.backend.name]
    }

    async fn dispatch(&self, req: Request<Incoming>) -> Result<Response<Body>, GatewayError> {
        let config = &self.shared.config;
        let path = V2Path::parse(req.uri().path());
        let route = match &path {
            V2Path::Model { name, .. } => {
                config
                    .route_for_model(name)
                    .ok_or_else(|| GatewayError::NoRoute {
                        model: name.clone(),
                    })?
            }
            V2Path::Other => config
                .default_route()
                .ok_or_else(|| GatewayError::NotFound {
                    path: req.uri().path().to_owned(),
                })?,
        };
        let upstream = self.upstream(route);
        if path.is_infer() && req.method() == Method::POST {
            let mut stats = infer::InferStats::default();
            return infer::handle(&config.server, route, upstream, req, &mut stats).await;
        }
        passthrough::forward(upstream, req, route.limits.max_body_bytes).await
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
