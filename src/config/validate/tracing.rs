//! `[tracing]` → [`Tracing`]: the endpoint is required while tracing is
//! on, a batch is no larger than the queue, export headers are valid HTTP.

use http::{HeaderName, HeaderValue};

use super::Check;
use crate::config::Tracing;
use crate::config::raw::RawTracing;

impl Check<'_> {
    /// The tracing settings, or `None` when off (or wrong: then the errors
    /// say why).
    pub(super) fn tracing(&mut self, raw: RawTracing) -> Option<Tracing> {
        if raw.enabled == Some(false) {
            return None;
        }
        let Some(endpoint) = raw.endpoint else {
            self.error(
                "tracing.endpoint",
                "required while tracing is on (or set enabled = false)",
            );
            return None;
        };
        let mut t = Tracing::new(endpoint.0);
        if let Some(r) = raw.sample_ratio {
            t.sample_ratio = r.0;
        }
        if let Some(p) = raw.parent_based {
            t.parent_based = p;
        }
        if let Some(n) = raw.service_name {
            t.service_name = n.0;
        }
        if let Some(n) = raw.max_queue_spans {
            t.max_queue_spans = n.0;
        }
        if let Some(n) = raw.max_batch_spans {
            t.max_batch_spans = n.0;
        }
        if let Some(d) = raw.batch_delay {
            t.batch_delay = d.0;
        }
        if let Some(d) = raw.export_timeout {
            t.export_timeout = d.0;
        }
        if t.max_batch_spans > t.max_queue_spans {
            self.error(
                "tracing.max_batch_spans",
                format!(
                    "{} is more than max_queue_spans ({})",
                    t.max_batch_spans, t.max_queue_spans
                ),
            );
        }
        for (name, value) in raw.headers {
            if HeaderName::from_bytes(name.as_bytes()).is_err() {
                self.error(
                    format!("tracing.headers.{name}"),
                    "not a valid HTTP header name",
                );
            } else if HeaderValue::from_str(&value).is_err() {
                self.error(
                    format!("tracing.headers.{name}"),
                    "not a valid HTTP header value",
                );
            } else {
                t.headers.insert(name, value);
            }
        }
        Some(t)
    }
}
