//! `[tracing]`: OpenTelemetry traces sent over OTLP. Off when the table is
//! absent (or `enabled = false`); `--otel-endpoint URL` turns it on with
//! the defaults below. Every key is reloadable: a reload that changes any
//! of them starts a new exporter and retires the old one.

use std::collections::BTreeMap;
use std::time::Duration;

use http::Uri;

/// The path OTLP/HTTP receivers take traces on, under the endpoint.
pub const TRACES_PATH: &str = "/v1/traces";

/// Where and how traces go.
#[derive(Clone, Debug, PartialEq)]
pub struct Tracing {
    /// The OTLP/HTTP receiver's base URL (`http://127.0.0.1:4318`): spans
    /// are sent, as protobuf, to it with [`TRACES_PATH`] appended.
    pub endpoint: Uri,
    /// The share of new traces recorded, from 0 to 1. Without a ratio
    /// below 1 a busy gateway exports a span tree for every request.
    pub sample_ratio: f64,
    /// A request carrying a W3C `traceparent` follows its caller's
    /// decision (sampled or not) instead of the ratio: a trace is then
    /// recorded whole or not at all, across services.
    pub parent_based: bool,
    /// `service.name` of every span.
    pub service_name: String,
    /// Ended spans waiting for export; past that new ones are dropped
    /// (never waited for). Without it a slow collector grows memory.
    pub max_queue_spans: usize,
    /// Spans per export request, at most `max_queue_spans`.
    pub max_batch_spans: usize,
    /// Longest time an ended span waits before its batch is sent.
    pub batch_delay: Duration,
    /// Longest time one export may take. Without it a stalled collector
    /// holds the exporter (and the queue fills).
    pub export_timeout: Duration,
    /// Headers sent with every export (a collector's API key, say).
    pub headers: BTreeMap<String, String>,
}

impl Tracing {
    /// Tracing to `endpoint` with every other key at its default:
    /// parent-based sampling at ratio 1.0.
    pub fn new(endpoint: Uri) -> Tracing {
        Tracing {
            endpoint,
            sample_ratio: 1.0,
            parent_based: true,
            service_name: "tensorgate".to_owned(),
            max_queue_spans: 2048,
            max_batch_spans: 512,
            batch_delay: Duration::from_secs(1),
            export_timeout: Duration::from_secs(10),
            headers: BTreeMap::new(),
        }
    }

    /// The URL spans are posted to: the endpoint with [`TRACES_PATH`].
    pub fn traces_url(&self) -> String {
        let base = self.endpoint.to_string();
        format!("{}{TRACES_PATH}", base.trim_end_matches('/'))
    }
}

/// Checks an OTLP endpoint: an `http://` or `https://` URL with a host,
/// no query (the traces path is appended to it).
pub fn parse_endpoint(text: &str) -> Result<Uri, String> {
    let bad = || format!("{text:?} is not an http://host:port or https://host:port URL");
    if crate::config::backend::credentials(text) {
        return Err(crate::config::backend::CREDENTIALS.to_owned());
    }
    match text.parse::<Uri>() {
        Ok(u)
            if matches!(u.scheme_str(), Some("http" | "https"))
                && u.host().is_some_and(|h| !h.is_empty())
                && u.query().is_none() =>
        {
            Ok(u)
        }
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_path_is_appended_once() {
        let t = Tracing::new(parse_endpoint("http://127.0.0.1:4318").unwrap());
        assert_eq!(t.traces_url(), "http://127.0.0.1:4318/v1/traces");
        let t = Tracing::new(parse_endpoint("https://otel.example:443/tempo/").unwrap());
        assert_eq!(t.traces_url(), "https://otel.example:443/tempo/v1/traces");
        assert!(parse_endpoint("127.0.0.1:4318").is_err());
        assert!(parse_endpoint("ftp://x:1").is_err());
        assert!(parse_endpoint("http://x:1/?a=b").is_err());
        assert_eq!(
            parse_endpoint("https://u:hunter2@otel:4318").unwrap_err(),
            crate::config::backend::CREDENTIALS
        );
    }
}
