//! The exporter's HTTP client: OTLP requests posted through the same
//! connector the gateway's backend pools use (TCP, and TLS with the
//! system's CAs for an `https://` collector), run as tasks on the
//! gateway's runtime. The SDK's batch processor exports from a thread of
//! its own and waits for the task there, so no export ever runs on, or
//! blocks, a thread serving requests. Each export is bounded by the
//! export timeout, and the collector's reply body by [`MAX_REPLY_BYTES`].
//!
//! What each export comes to is recorded by the task itself ([`Outcomes`]),
//! so an export the SDK stops waiting for is still counted: a failure in
//! `tensorgate_trace_export_failures_total{reason}`, and each change
//! between failing and working logged once (the SDK logs nothing here).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body_util::{BodyExt, Limited};
use hyper_util::client::legacy::Client as Pool;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use opentelemetry_http::{HttpClient, HttpError};

use crate::config::Backend;
use crate::http::body::{Body, full};
use crate::metrics::{ExportFailure, ExportFamilies};
use crate::upstream::{Connector, connector};

/// The most of a collector's reply read (its replies are a few bytes: a
/// partial-success message at most).
const MAX_REPLY_BYTES: usize = 64 << 10;

/// Why one export request failed.
#[derive(Debug, thiserror::Error)]
enum ExportError {
    #[error("cannot connect: {0}")]
    Connect(hyper_util::client::legacy::Error),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("the collector answered {0}")]
    Status(http::StatusCode),
    #[error("{0}")]
    Io(HttpError),
}

impl ExportError {
    fn reason(&self) -> ExportFailure {
        match self {
            ExportError::Connect(_) => ExportFailure::Connect,
            ExportError::Timeout(_) => ExportFailure::Timeout,
            ExportError::Status(_) => ExportFailure::Status,
            ExportError::Io(_) => ExportFailure::Io,
        }
    }
}

/// What the exports of one pipeline come to: failures counted in the
/// gateway's metrics once they are attached, and each change between
/// failing and working logged once.
#[derive(Debug)]
pub(super) struct Outcomes {
    /// The collector's traces URL, for the log.
    collector: String,
    /// Whether the last export failed.
    failing: AtomicBool,
    families: OnceLock<ExportFamilies>,
}

impl Outcomes {
    pub(super) fn new(collector: String) -> Outcomes {
        Outcomes {
            collector,
            failing: AtomicBool::new(false),
            families: OnceLock::new(),
        }
    }

    /// Counts failures in `families` from now on (the first given stay).
    pub(super) fn count_in(&self, families: &ExportFamilies) {
        let _ = self.families.set(families.clone());
    }

    fn failed(&self, e: &ExportError) {
        let reason = e.reason();
        if let Some(f) = self.families.get() {
            f.failed(reason);
        }
        if !self.failing.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                collector = self.collector,
                reason = reason.label(),
                error = %e,
                "tracing: span exports fail; their spans are dropped until the collector takes them again"
            );
        }
    }

    fn worked(&self) {
        if self.failing.swap(false, Ordering::Relaxed) {
            tracing::info!(
                collector = self.collector,
                "tracing: span exports work again"
            );
        }
    }
}

/// Posts OTLP requests on a runtime.
#[derive(Debug)]
pub(super) struct Client {
    runtime: tokio::runtime::Handle,
    pool: Pool<Connector, Body>,
    timeout: Duration,
    outcomes: Arc<Outcomes>,
}

impl Client {
    /// A client for the collector at `endpoint`, each export within
    /// `timeout`, what each comes to recorded in `outcomes`.
    pub(super) fn new(
        runtime: tokio::runtime::Handle,
        endpoint: &Uri,
        timeout: Duration,
        outcomes: Arc<Outcomes>,
    ) -> Client {
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
            outcomes,
        }
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let pool = self.pool.clone();
        let timeout = self.timeout;
        let outcomes = self.outcomes.clone();
        let exchange = async move {
            let resp = pool
                .request(request.map(full))
                .await
                .map_err(|e| match e.is_connect() {
                    true => ExportError::Connect(e),
                    false => ExportError::Io(e.into()),
                })?;
            let (parts, body) = resp.into_parts();
            let body = Limited::new(body, MAX_REPLY_BYTES)
                .collect()
                .await
                .map_err(ExportError::Io)?;
            Ok(Response::from_parts(parts, body.to_bytes()))
        };
        let task = self.runtime.spawn(async move {
            let answer = tokio::time::timeout(timeout, exchange)
                .await
                .unwrap_or(Err(ExportError::Timeout(timeout)));
            // A status that is not 2xx goes to the exporter as it came (it
            // decides on retries by it), and counts as a failure here.
            match &answer {
                Ok(r) if r.status().is_success() => outcomes.worked(),
                Ok(r) => outcomes.failed(&ExportError::Status(r.status())),
                Err(e) => outcomes.failed(e),
            }
            answer
        });
        match task.await {
            Ok(answer) => answer.map_err(Into::into),
            Err(e) => Err(format!("export task: {e}").into()),
        }
    }
}
