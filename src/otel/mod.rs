//! The OpenTelemetry pipeline of one `[tracing]` setting: the sampler
//! (a ratio of new traces, following the caller's decision when
//! parent-based), the SDK's batch span processor with its bounded queue
//! (a full queue drops spans, never waits), and the OTLP/HTTP protobuf
//! exporter, which posts through the gateway's own backend connector
//! ([`export`]). A gateway built for a configuration holds the pipeline
//! of its `[tracing]`, taken over by the next one when that is unchanged;
//! a pipeline no configuration holds any more is retired on a thread of
//! its own, sending what it still queues. It never makes a request wait on
//! a collector. Failed exports are counted in the metrics the server hands
//! it ([`Pipeline::count_in`]) and logged once per change.

mod export;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use http::HeaderMap;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracer, SdkTracerProvider,
};

use crate::config::Tracing;
use crate::metrics::ExportFamilies;
use crate::trace::{SPAN_REQUEST, Trace};

/// Why a pipeline could not start.
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    #[error("tracing needs a Tokio runtime to export on")]
    NoRuntime,
    #[error("OTLP exporter: {0}")]
    Exporter(String),
}

/// One `[tracing]` setting's tracer and exporter. Shared by the gateways
/// that keep it.
#[derive(Debug)]
pub struct Pipeline {
    settings: Tracing,
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    retired: AtomicBool,
    outcomes: Arc<export::Outcomes>,
}

impl Pipeline {
    /// Starts exporting as `settings` say, on the current Tokio runtime.
    pub fn start(settings: &Tracing) -> Result<Arc<Pipeline>, OtelError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| OtelError::NoRuntime)?;
        let outcomes = Arc::new(export::Outcomes::new(settings.traces_url()));
        let client = export::Client::new(
            runtime,
            &settings.endpoint,
            settings.export_timeout,
            outcomes.clone(),
        );
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(settings.traces_url())
            .with_timeout(settings.export_timeout)
            .with_headers(settings.headers.clone().into_iter().collect())
            .build()
            .map_err(|e| OtelError::Exporter(e.to_string()))?;
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(settings.max_queue_spans)
            .with_max_export_batch_size(settings.max_batch_spans)
            .with_scheduled_delay(settings.batch_delay)
            .build();
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batch)
            .build();
        let resource = Resource::builder_empty()
            .with_service_name(settings.service_name.clone())
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_sampler(sampler(settings))
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("tensorgate");
        Ok(Arc::new(Pipeline {
            settings: settings.clone(),
            provider,
            tracer,
            retired: AtomicBool::new(false),
            outcomes,
        }))
    }

    /// Counts its failed exports in `families` (the gateway's metrics)
    /// from now on; a pipeline kept across a reload keeps the families it
    /// was first given. (The gateway builds the pipeline without its
    /// metrics; the server and the reloader hand them over right after.)
    pub fn count_in(&self, families: &ExportFamilies) {
        self.outcomes.count_in(families);
    }

    /// The settings it was started with.
    pub fn settings(&self) -> &Tracing {
        &self.settings
    }

    /// The server span of a request with these headers (its caller's
    /// context read from them).
    pub fn request(&self, headers: &HeaderMap) -> Trace {
        Trace::server(&self.tracer, crate::trace::parent(headers), SPAN_REQUEST)
    }

    /// Sends what is queued and stops, within `limit`. Blocks: call it
    /// off the runtime's threads (the export runs on them).
    pub fn shutdown(&self, limit: Duration) {
        if self.retired.swap(true, Ordering::Relaxed) {
            return;
        }
        if let Err(e) = self.provider.shutdown_with_timeout(limit) {
            tracing::warn!(error = %e, "tracing: spans still queued may be lost");
        }
    }
}

/// A pipeline no gateway holds is retired on a thread of its own (its
/// last holder may be a request on a runtime thread, which must not
/// block on the collector).
impl Drop for Pipeline {
    fn drop(&mut self) {
        if self.retired.swap(true, Ordering::Relaxed) {
            return;
        }
        let provider = self.provider.clone();
        let limit = self.settings.export_timeout;
        let spawned = std::thread::Builder::new()
            .name("tensorgate-otel-retire".into())
            .spawn(move || {
                let _ = provider.shutdown_with_timeout(limit);
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "tracing: cannot retire the old exporter");
        }
    }
}

/// The sampler `settings` ask for: a ratio of trace ids, behind the
/// caller's own decision when parent-based.
fn sampler(settings: &Tracing) -> Sampler {
    let ratio = Sampler::TraceIdRatioBased(settings.sample_ratio);
    if settings.parent_based {
        Sampler::ParentBased(Box::new(ratio))
    } else {
        ratio
    }
}
