//! The exporter's HTTP client: OTLP requests posted through the same
//! connector the gateway's backend pools use (TCP, and TLS with the
//! system's CAs for an `https://` collector), run as tasks on the
//! gateway's runtime. The SDK's batch processor exports from a thread of
//! its own and waits for the task there, so no export ever runs on, or
//! blocks, a thread serving requests. Each export is bounded by the
//! export timeout, and the collector's reply body by [`MAX_REPLY_BYTES`].

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body_util::{BodyExt, Limited};
use hyper_util::client::legacy::Client as Pool;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use opentelemetry_http::{HttpClient, HttpError};

use crate::config::Backend;
use crate::http::body::{Body, full};
use crate::upstream::{Connector, connector};

/// The most of a collector's reply read (its replies are a few bytes: a
/// partial-success message at most).
const MAX_REPLY_BYTES: usize = 64 << 10;

/// Posts OTLP requests on a runtime.
#[derive(Debug)]
pub struct Client {
    runtime: tokio::runtime::Handle,
    pool: Pool<Connector, Body>,
    timeout: Duration,
}

impl Client {
    /// A client for the collector at `endpoint`, each export within
    /// `timeout`.
    pub fn new(runtime: tokio::runtime::Handle, endpoint: &Uri, timeout: Duration) -> Client {
        let mut collector = Backend::new("otel", endpoint.clone());
        collector.connect_timeout = timeout;
        let pool = Pool::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(2)
            .build(connector(&collector));
        Client {
            runtime,
            pool,
            timeout,
        }
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let pool = self.pool.clone();
        let timeout = self.timeout;
        let exchange = async move {
            let resp = pool.request(request.map(full)).await?;
            let (parts, body) = resp.into_parts();
            let body = Limited::new(body, MAX_REPLY_BYTES).collect().await?;
            Ok::<_, HttpError>(Response::from_parts(parts, body.to_bytes()))
        };
        let task = self
            .runtime
            .spawn(async move { tokio::time::timeout(timeout, exchange).await });
        match task.await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(format!("no answer within {timeout:?}").into()),
            Err(e) => Err(format!("export task: {e}").into()),
        }
    }
}
