//! The pooled HTTP client to one backend, with connect and response-head
//! timeouts, and the mapping of its failures to gateway errors.

use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response, Uri};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::body::Body;
use super::core::metadata::MetadataCache;
use super::error::GatewayError;
use crate::config::Backend;

/// Most models whose metadata one backend's cache holds.
const METADATA_ENTRIES: usize = 256;

/// A backend, its connection pool, and its models' cached metadata.
#[derive(Clone, Debug)]
pub struct Upstream {
    pub backend: Arc<Backend>,
    client: Client<HttpConnector, Body>,
    pub metadata: Arc<MetadataCache>,
    /// `Host` for every request: the backend URL's authority.
    host: http::HeaderValue,
}

impl Upstream {
    pub fn new(backend: Arc<Backend>) -> Upstream {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(backend.connect_timeout));
        connector.set_nodelay(true);
        connector.enforce_http(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(backend.pool_idle_timeout)
            .pool_max_idle_per_host(backend.pool_max_idle_per_host)
            .build(connector);
        let metadata = Arc::new(MetadataCache::new(backend.metadata_ttl, METADATA_ENTRIES));
        let host = backend
            .url
            .authority()
            .and_then(|a| http::HeaderValue::from_str(a.as_str()).ok())
            .unwrap_or(http::HeaderValue::from_static("localhost"));
        Upstream {
            backend,
            client,
            metadata,
            host,
        }
    }

    pub fn name(&self) -> &str {
        &self.backend.name
    }

    /// The backend URI for a client's path and query: the backend URL's
    /// path is a prefix.
    pub fn uri_for(&self, path_and_query: &str) -> Uri {
        let prefix = self.backend.url.path().trim_end_matches('/');
        let joined = if prefix.is_empty() {
            path_and_query.parse().ok()
        } else {
            format!("{prefix}{path_and_query}").parse().ok()
        };
        self.with_path(joined)
    }

    /// The backend URI for a client's own path and query: no copy or
    /// re-parse when the backend URL has no path prefix (the common case).
    pub fn uri_for_client(&self, client: &Uri) -> Uri {
        match client.path_and_query() {
            Some(pq) if self.backend.url.path().trim_end_matches('/').is_empty() => {
                self.with_path(Some(pq.clone()))
            }
            Some(pq) => self.uri_for(pq.as_str()),
            None => self.uri_for("/"),
        }
    }

    fn with_path(&self, path_and_query: Option<http::uri::PathAndQuery>) -> Uri {
        let base = &self.backend.url;
        let mut parts = http::uri::Parts::default();
        parts.scheme = base.scheme().cloned();
        parts.authority = base.authority().cloned();
        parts.path_and_query = path_and_query;
        Uri::from_parts(parts).unwrap_or_else(|_| base.clone())
    }

    /// Sends a request; returns once the response head has arrived, within
    /// the backend's request timeout.
    pub async fn send(&self, req: Request<Body>) -> Result<Response<Incoming>, GatewayError> {
        self.send_within(req, self.backend.request_timeout).await
    }

    pub async fn send_within(
        &self,
        mut req: Request<Body>,
        limit: Duration,
    ) -> Result<Response<Incoming>, GatewayError> {
        // The client would format the backend's `Host` for every request.
        if !req.headers().contains_key(http::header::HOST) {
            req.headers_mut()
                .insert(http::header::HOST, self.host.clone());
        }
        match tokio::time::timeout(limit, self.client.request(req)).await {
            Err(_) => Err(self.timeout(limit)),
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => Err(self.classify(&e)),
        }
    }

    pub fn timeout(&self, limit: Duration) -> GatewayError {
        GatewayError::BackendTimeout {
            backend: self.backend.name.clone(),
            seconds: limit.as_secs_f64(),
        }
    }

    fn classify(&self, e: &hyper_util::client::legacy::Error) -> GatewayError {
        let backend = self.backend.name.clone();
        // The client's body went over the route's limit while being
        // forwarded; the caller, which knows the route and limit, fills them in.
        if source_of::<http_body_util::LengthLimitError>(e).is_some() {
            return GatewayError::BodyTooLarge {
                route: String::new(),
                limit: 0,
            };
        }
        let io = find_io_error(e);
        let detail = io.map_or_else(|| error_chain(e), |io| io.to_string());
        if e.is_connect() {
            if io.is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut) {
                return GatewayError::BackendTimeout {
                    backend,
                    seconds: self.backend.connect_timeout.as_secs_f64(),
                };
            }
            return GatewayError::BackendRefused { backend, detail };
        }
        let hyper_err = source_of::<hyper::Error>(e);
        if hyper_err.is_some_and(|h| h.is_parse() || h.is_parse_status()) {
            return GatewayError::BadBackendResponse {
                backend,
                source: Box::new(super::core::backend::ReplyError::Http { detail }),
            };
        }
        GatewayError::BackendReset { backend, detail }
    }

    /// Maps a failure while reading a backend's body.
    pub fn body_error(&self, e: &(dyn std::error::Error + 'static)) -> GatewayError {
        GatewayError::BackendReset {
            backend: self.backend.name.clone(),
            detail: error_chain(e),
        }
    }
}

fn source_of<'a, T: std::error::Error + 'static>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(t) = err.downcast_ref::<T>() {
            return Some(t);
        }
        cur = err.source();
    }
    None
}

fn find_io_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a std::io::Error> {
    source_of::<std::io::Error>(e)
}

/// `a: b: c` from an error and its sources.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cur = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upstream(url: &str) -> Upstream {
        Upstream::new(Arc::new(Backend {
            name: "b".into(),
            url: url.parse().unwrap(),
            connect_timeout: Duration::from_secs(1),
            request_timeout: Duration::from_secs(1),
            pool_idle_timeout: Duration::from_secs(1),
            pool_max_idle_per_host: 1,
            max_connections: 1,
            stream_idle_timeout: Duration::from_secs(1),
            metadata_ttl: Duration::from_secs(1),
        }))
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
