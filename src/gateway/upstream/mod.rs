//! The pooled HTTP client to one backend: at most `max_connections`
//! exchanges at once (a slot held until the reply body ends), connect and
//! response-head timeouts, one retry when it is safe, bounded pauses in
//! every streamed body ([`body`]), the mapping of failures to gateway
//! errors (`failure`), and the backend's cached model metadata.
//!
//! Clients get short, stable error messages naming the backend; the
//! detail (OS error text, addresses) goes to the log with the request id.
//! It must never retry a request some of which may have reached the
//! backend unless its method is idempotent.

pub mod body;
pub mod connector;
mod failure;
pub mod location;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use body::{Idle, Stalled, StreamCut, StreamStalled, UpstreamBody};
pub use failure::error_chain;

use super::body::{Body, ChunksBody, empty};
use super::core::metadata::MetadataCache;
use super::error::GatewayError;
use super::observe::{Observation, REQUEST_ID};
use crate::config::Backend;
use failure::{Failure, classify};

/// Models whose metadata one backend's cache keeps.
const METADATA_ENTRIES: usize = 256;

/// A backend, its connection pool, its slots and its metadata cache.
#[derive(Clone, Debug)]
pub struct Upstream {
    pub backend: Arc<Backend>,
    client: Client<connector::Connector, Body>,
    slots: Arc<Semaphore>,
    /// The backend's models' metadata, cached for `metadata_ttl`.
    pub metadata: Arc<MetadataCache>,
    /// `Host` for every request: the backend URL's authority.
    host: HeaderValue,
}

/// A request for the backend.
#[derive(Debug)]
pub struct Outgoing {
    pub method: Method,
    /// The path and query on the backend (its URL's prefix is added).
    pub path: String,
    pub headers: HeaderMap,
    pub body: OutBody,
}

/// A request body. One in hand can be sent again; a stream cannot.
#[derive(Debug)]
pub enum OutBody {
    Empty,
    Chunks(Vec<Bytes>),
    Stream(Body),
}

impl OutBody {
    fn take(&mut self) -> Body {
        match self {
            OutBody::Empty => empty(),
            OutBody::Chunks(c) => ChunksBody::new(c.iter().cloned()).boxed(),
            OutBody::Stream(_) => match std::mem::replace(self, OutBody::Empty) {
                OutBody::Stream(b) => b,
                _ => empty(),
            },
        }
    }

    fn replayable(&self) -> bool {
        !matches!(self, OutBody::Stream(_))
    }
}

impl Upstream {
    pub fn new(backend: Arc<Backend>) -> Upstream {
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(backend.pool_idle_timeout)
            .pool_max_idle_per_host(backend.pool_max_idle_per_host)
            // A pooled connection found closed before the request was
            // handed to it is replaced (the default, stated).
            .retry_canceled_requests(true)
            .build(connector::connector(&backend));
        let host = backend
            .url
            .authority()
            .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
            .unwrap_or(HeaderValue::from_static("localhost"));
        Upstream {
            host,
            slots: Arc::new(Semaphore::new(backend.max_connections.max(1))),
            metadata: Arc::new(MetadataCache::new(backend.metadata_ttl, METADATA_ENTRIES)),
            backend,
            client,
        }
    }

    pub fn name(&self) -> &str {
        &self.backend.name
    }

    /// The backend URI for a client's path and query: the backend URL's
    /// path is a prefix.
    pub fn uri_for(&self, path_and_query: &str) -> Uri {
        let base = &self.backend.url;
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

    /// Sends a request; returns once the response head has arrived, within
    /// the backend's request timeout. Waits up to `connect_timeout` for a
    /// free slot. `obs` (when there is a client request) is told about
    /// stalls and gives the request id for logs.
    pub async fn send(
        &self,
        mut out: Outgoing,
        obs: Option<&Observation>,
    ) -> Result<Response<UpstreamBody>, GatewayError> {
        let slot = self.slot().await?;
        let uri = self.uri_for(&out.path);
        // The client would format the backend's `Host` for every request.
        if !out.headers.contains_key(http::header::HOST) {
            out.headers.insert(http::header::HOST, self.host.clone());
        }
        let limit = self.backend.request_timeout;
        let deadline = Instant::now() + limit;
        let mut retried = false;
        loop {
            let mut req = Request::new(out.body.take());
            *req.method_mut() = out.method.clone();
            *req.uri_mut() = uri.clone();
            *req.headers_mut() = if out.body.replayable() && !retried {
                out.headers.clone()
            } else {
                std::mem::take(&mut out.headers)
            };
            let sent = tokio::time::timeout_at(deadline.into(), self.client.request(req)).await;
            let e = match sent {
                Err(_) => return Err(self.timeout(limit)),
                Ok(Ok(resp)) => return Ok(self.reply(resp, slot, obs)),
                Ok(Err(e)) => classify(&e),
            };
            let id = request_id(obs, &out.headers);
            if !retried && out.body.replayable() && e.retryable(&out.method) {
                tracing::debug!(
                    backend = self.name(),
                    request_id = id,
                    detail = e.detail(),
                    "retrying a request the backend did not take"
                );
                retried = true;
                continue;
            }
            if !matches!(e, Failure::Body(_)) {
                tracing::warn!(
                    backend = self.name(),
                    request_id = id,
                    detail = e.detail(),
                    retried,
                    "backend exchange failed"
                );
            }
            return Err(self.error(e));
        }
    }

    /// A slot for one exchange, waited for up to `connect_timeout`.
    async fn slot(&self) -> Result<OwnedSemaphorePermit, GatewayError> {
        if let Ok(p) = self.slots.clone().try_acquire_owned() {
            return Ok(p);
        }
        let wait = self.backend.connect_timeout;
        match tokio::time::timeout(wait, self.slots.clone().acquire_owned()).await {
            Ok(Ok(p)) => Ok(p),
            _ => Err(GatewayError::BackendSaturated {
                backend: self.name().to_owned(),
                limit: self.backend.max_connections,
            }),
        }
    }

    fn reply(
        &self,
        resp: Response<hyper::body::Incoming>,
        slot: OwnedSemaphorePermit,
        obs: Option<&Observation>,
    ) -> Response<UpstreamBody> {
        let (mut parts, body) = resp.into_parts();
        location::localize(&self.backend.url, &mut parts.headers);
        let idle = self.backend.stream_idle_timeout;
        let backend = self.backend.clone();
        let obs = obs.cloned();
        // Only a reply moved by a task can stall unseen; this runs there.
        let on_stall = move |side| {
            let id = obs
                .as_ref()
                .and_then(|o| o.request_id().to_str().ok())
                .unwrap_or("");
            tracing::warn!(
                backend = backend.name,
                request_id = id,
                ?side,
                seconds = idle.as_secs_f64(),
                "stream stalled; cut"
            );
            if let (Stalled::Backend, Some(o)) = (side, &obs) {
                o.error(&GatewayError::BackendTimeout {
                    backend: backend.name.clone(),
                    seconds: idle.as_secs_f64(),
                });
            }
        };
        let body = UpstreamBody::new(body, idle, Some(slot), on_stall);
        Response::from_parts(parts, body)
    }

    pub fn timeout(&self, limit: Duration) -> GatewayError {
        GatewayError::BackendTimeout {
            backend: self.backend.name.clone(),
            seconds: limit.as_secs_f64(),
        }
    }

    fn error(&self, f: Failure) -> GatewayError {
        let backend = self.backend.name.clone();
        match f {
            Failure::Connect { detail } => GatewayError::BackendRefused { backend, detail },
            Failure::ConnectTimeout => GatewayError::BackendTimeout {
                backend,
                seconds: self.backend.connect_timeout.as_secs_f64(),
            },
            Failure::Closed { detail } => GatewayError::BackendReset { backend, detail },
            Failure::Parse { detail } => GatewayError::BadBackendResponse {
                backend,
                source: Box::new(super::core::backend::ReplyError::Http { detail }),
            },
            Failure::Body(e) => e,
        }
    }

    /// Maps a failure while reading a backend's body.
    pub fn body_error(&self, e: &(dyn std::error::Error + 'static)) -> GatewayError {
        if let Some(s) = failure::source_of::<StreamStalled>(e) {
            return self.timeout(s.idle);
        }
        tracing::warn!(
            backend = self.name(),
            detail = error_chain(e),
            "backend body failed"
        );
        GatewayError::BackendReset {
            backend: self.backend.name.clone(),
            detail: error_chain(e),
        }
    }
}

fn request_id<'a>(obs: Option<&'a Observation>, headers: &'a HeaderMap) -> &'a str {
    obs.map(Observation::request_id)
        .or_else(|| headers.get(REQUEST_ID))
        .and_then(|v: &HeaderValue| v.to_str().ok())
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upstream(url: &str) -> Upstream {
        Upstream::new(Arc::new(Backend::new("b", url.parse().unwrap())))
    }

    #[tokio::test]
    async fn joins_prefix_and_path() {
        assert_eq!(
            upstream("http://127.0.0.1:8000").uri_for("/v2/models/m/infer?x=1"),
            "http://127.0.0.1:8000/v2/models/m/infer?x=1"
        );
        assert_eq!(
            upstream("http://127.0.0.1:8000/triton/").uri_for("/v2"),
            "http://127.0.0.1:8000/triton/v2"
        );
    }
}
