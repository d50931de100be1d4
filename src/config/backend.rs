//! `[backends.NAME]`: an upstream V2 service — one or more replicas given
//! as URLs or found through DNS — its timeouts, health checks, ejection and
//! retry settings with their defaults, and the URL and DNS name checks
//! every way of naming a backend goes through.

use std::time::Duration;

/// `[backends.NAME]`: an upstream V2 service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backend {
    pub name: String,
    /// Where its replicas are.
    pub replicas: Replicas,
    /// Time to establish a TCP connection. Without it a black-holed backend
    /// holds each request until the OS gives up (minutes).
    pub connect_timeout: Duration,
    /// Time until the backend's response headers (and, for translated
    /// replies, the JSON header) have arrived. Without it a hung backend
    /// holds every request slot.
    pub request_timeout: Duration,
    /// How long an idle pooled connection is kept. Below the backend's own
    /// keep-alive (uvicorn: 5 s) so the gateway never reuses a connection
    /// the backend is closing.
    pub pool_idle_timeout: Duration,
    /// Idle pooled connections kept per replica and worker thread (each
    /// worker has its own pool; `server.workers`).
    pub pool_max_idle_per_host: usize,
    /// Open connections to each replica at once; more requests wait.
    /// Without it a burst opens as many connections as there are requests.
    pub max_connections: usize,
    /// Longest pause inside a streamed reply, either side. Without it a
    /// stream that stops moving holds its connection forever.
    pub stream_idle_timeout: Duration,
    /// How long fetched model metadata is cached. Without a cache every
    /// request that needs metadata costs a backend round trip.
    pub metadata_ttl: Duration,
    /// For an `https://` URL: the CAs, client certificate and server name
    /// (all optional).
    pub tls: super::BackendTls,
    /// Active checks of each replica and of the models it serves.
    pub health: HealthChecks,
    /// Passive ejection of replicas that keep failing.
    pub ejection: Ejection,
    /// Sending a request again on another replica, and the budget that
    /// bounds it.
    pub retries: Retries,
    /// Balancing on the replicas' own queues, read from their metrics
    /// endpoints (`metrics_url`); `None`: on this gateway's outstanding
    /// requests alone.
    pub queue: Option<QueueSignal>,
    /// The models the routes sending to this backend list (set by the
    /// loader from `[[routes]]`, not a key of its own): the health checks
    /// follow them from the start.
    pub models: Vec<String>,
}

/// Where a backend's replicas are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replicas {
    /// Fixed replicas (`url` is one, `urls` several): `http://host:port`
    /// with an optional path prefix each.
    Urls(Vec<http::Uri>),
    /// One replica per address `name` resolves to (a Kubernetes headless
    /// Service), resolved again every `interval`, at most `max_replicas`.
    Dns {
        name: DnsName,
        interval: Duration,
        max_replicas: usize,
    },
}

/// `host:port` to resolve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsName {
    pub host: String,
    pub port: u16,
}

impl std::fmt::Display for DnsName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// Active health checks: `GET /v2/health/ready` of each replica and
/// `GET /v2/models/{m}/ready` for the models its routes serve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthChecks {
    /// Whether checks run. Default: on for several replicas or `dns`, off
    /// for a single `url` (nothing to balance to; today's behaviour).
    pub enabled: bool,
    /// Time between two rounds of checks.
    pub interval: Duration,
    /// Longest a check may take; a slower answer is a failure.
    pub timeout: Duration,
    /// Consecutive passed checks that make an unhealthy replica healthy.
    pub healthy_threshold: u32,
    /// Consecutive failed checks that make a healthy replica unhealthy.
    pub unhealthy_threshold: u32,
    /// Most models checked per backend beyond those routes list: models a
    /// default route is asked for, checked from their first request on.
    pub max_checked_models: usize,
}

impl Default for HealthChecks {
    fn default() -> Self {
        HealthChecks {
            enabled: false,
            interval: Duration::from_secs(5),
            timeout: Duration::from_secs(1),
            healthy_threshold: 2,
            unhealthy_threshold: 3,
            max_checked_models: 64,
        }
    }
}

/// Passive ejection: a replica that fails `after` requests in a row
/// (connection failures, timeouts, 5xx) takes no traffic for `base`, twice
/// that the next time, up to `max`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ejection {
    pub after: u32,
    pub base: Duration,
    pub max: Duration,
}

impl Default for Ejection {
    fn default() -> Self {
        Ejection {
            after: 5,
            base: Duration::from_secs(5),
            max: Duration::from_secs(120),
        }
    }
}

/// Retries on another replica, bounded by a budget: over the last
/// [`Retries::WINDOW`], retries may be at most `budget_permille` per
/// thousand requests plus `min_per_second` per second of the window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retries {
    /// Most retries of one request.
    pub max: u32,
    /// Retries allowed per thousand requests (200: 20%).
    pub budget_permille: u32,
    /// Retries allowed per second whatever the traffic.
    pub min_per_second: u32,
}

impl Retries {
    /// The window the budget counts over.
    pub const WINDOW: Duration = Duration::from_secs(10);
}

impl Default for Retries {
    fn default() -> Self {
        Retries {
            max: 2,
            budget_permille: 200,
            min_per_second: 10,
        }
    }
}

/// `metrics_url` and its timing: each replica's Prometheus endpoint is
/// read every `interval` (over HTTP/1.1, whatever the backend's protocol)
/// for Triton's queue metrics per model, which the replica picker adds to
/// its outstanding count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueSignal {
    pub source: MetricsSource,
    /// Time between two scrapes of each replica.
    pub interval: Duration,
    /// Longest a scrape may take; a slower endpoint counts as broken.
    /// Without it one hung endpoint would hold the next round.
    pub timeout: Duration,
    /// Scraped values older than this are ignored (the replica is then
    /// compared on outstanding requests alone). Without it a broken
    /// endpoint's last queue would steer traffic forever.
    pub stale_after: Duration,
}

impl QueueSignal {
    pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(500);
    /// `stale_after` when not set: three intervals.
    pub fn default_stale_after(interval: Duration) -> Duration {
        interval.saturating_mul(3)
    }
}

/// Where each replica's metrics are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetricsSource {
    /// One URL for every replica, `{host}` standing for the replica's host
    /// (`http://{host}:8002/metrics`: Triton's default metrics port).
    Template(String),
    /// One URL per entry of `urls`, in the same order.
    Urls(Vec<http::Uri>),
}

impl MetricsSource {
    /// The metrics URL of the replica at `base`, the `index`th configured
    /// URL (`None` for a DNS replica).
    pub fn url_for(&self, base: &http::Uri, index: Option<usize>) -> Option<http::Uri> {
        match self {
            MetricsSource::Template(t) => {
                let host = base.host()?;
                let host = if host.contains(':') && !host.starts_with('[') {
                    format!("[{host}]")
                } else {
                    host.to_owned()
                };
                t.replace("{host}", &host).parse().ok()
            }
            MetricsSource::Urls(urls) => urls.get(index?).cloned(),
        }
    }
}

impl Backend {
    /// The most replicas a backend may have: bounds connection pools and
    /// the `replica` metric label.
    pub const MAX_REPLICAS: usize = 1024;
    /// `max_replicas` when not set.
    pub const DEFAULT_MAX_REPLICAS: usize = 64;
    /// `dns_interval` when not set.
    pub const DEFAULT_DNS_INTERVAL: Duration = Duration::from_secs(10);

    /// A one-replica backend with every optional key at its default.
    pub fn new(name: impl Into<String>, url: http::Uri) -> Backend {
        Backend::with_replicas(name, Replicas::Urls(vec![url]))
    }

    /// A backend with every optional key at its default; health checks on
    /// when there may be more than one replica.
    pub fn with_replicas(name: impl Into<String>, replicas: Replicas) -> Backend {
        let several = !matches!(&replicas, Replicas::Urls(u) if u.len() == 1);
        Backend {
            name: name.into(),
            replicas,
            connect_timeout: Duration::from_secs(2),
            request_timeout: Duration::from_secs(60),
            pool_idle_timeout: Duration::from_secs(4),
            pool_max_idle_per_host: 64,
            max_connections: 256,
            stream_idle_timeout: Duration::from_secs(60),
            metadata_ttl: Duration::from_secs(10),
            tls: super::BackendTls::default(),
            health: HealthChecks {
                enabled: several,
                ..HealthChecks::default()
            },
            ejection: Ejection::default(),
            retries: Retries::default(),
            queue: None,
            models: Vec::new(),
        }
    }

    /// The first configured URL (`None` for a DNS backend).
    pub fn first_url(&self) -> Option<&http::Uri> {
        match &self.replicas {
            Replicas::Urls(urls) => urls.first(),
            Replicas::Dns { .. } => None,
        }
    }

    /// Whether the backend is reached over TLS: its URLs are `https://`
    /// or `grpcs://` (validation makes every URL of a backend use one
    /// scheme; a DNS backend is reached over cleartext HTTP).
    pub fn is_https(&self) -> bool {
        self.first_url().is_some_and(is_https)
    }

    /// The protocol the backend speaks: V2 over gRPC for `grpc://` and
    /// `grpcs://` URLs, V2 over HTTP otherwise.
    pub fn protocol(&self) -> Protocol {
        match self.first_url().and_then(http::Uri::scheme_str) {
            Some("grpc" | "grpcs") => Protocol::Grpc,
            _ => Protocol::Http,
        }
    }
}

/// The protocol a backend speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// KServe V2 over HTTP (JSON and the binary tensor extension).
    Http,
    /// KServe V2 over gRPC (`inference.GRPCInferenceService`, HTTP/2).
    Grpc,
}

/// Why a URL with a user part is refused.
pub(super) const CREDENTIALS: &str = "user:password@ in a URL is never sent (and would show in logs, metrics and the status page): take it out";

/// Whether the URL `text` has a user part (`scheme://user:password@host`).
pub(super) fn credentials(text: &str) -> bool {
    let rest = text.split_once("://").map_or(text, |(_, r)| r);
    rest.split(['/', '?', '#'])
        .next()
        .is_some_and(|a| a.contains('@'))
}

/// Checks a backend URL: `http://host:port` or `https://host:port` with an
/// optional path prefix, no query; or `grpc://host:port` /
/// `grpcs://host:port` (no path) for a backend that speaks gRPC; never
/// with a user part ([`CREDENTIALS`]). The file loader and `--backend`
/// both use this.
pub(super) fn parse_url(text: &str) -> Result<http::Uri, String> {
    // `http::Uri` lets some characters RFC 3986 does not allow (`\`, `"`,
    // `{`, ...) through; a backend URL has no use for them.
    let uri_char = |b: u8| b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=%".contains(&b);
    let bad = || {
        format!(
            "{text:?} is not an http://host:port, https://host:port, grpc://host:port or grpcs://host:port URL"
        )
    };
    if !text.bytes().all(uri_char) {
        return Err(bad());
    }
    if credentials(text) {
        return Err(CREDENTIALS.to_owned());
    }
    match text.parse::<http::Uri>() {
        Ok(u)
            if matches!(u.scheme_str(), Some("http" | "https"))
                && u.authority().is_some()
                && u.query().is_none() =>
        {
            Ok(u)
        }
        // gRPC paths are `/package.Service/Method`: no prefix.
        Ok(u)
            if matches!(u.scheme_str(), Some("grpc" | "grpcs"))
                && u.authority().is_some()
                && matches!(u.path(), "" | "/")
                && u.query().is_none() =>
        {
            Ok(u)
        }
        _ => Err(bad()),
    }
}

/// Whether `url` is an `https://` or `grpcs://` URL (reached over TLS).
pub(super) fn is_https(url: &http::Uri) -> bool {
    matches!(url.scheme_str(), Some("https" | "grpcs"))
}

/// Checks a DNS name to resolve: `host:port`, the host a DNS name of
/// letters, digits, `-` and `.` (an IP address is allowed too).
pub(super) fn parse_dns(text: &str) -> Result<DnsName, String> {
    let bad =
        || format!("{text:?} is not a host:port to resolve (like \"triton-headless.ns.svc:8001\")");
    let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let label_char = |b: u8| b.is_ascii_alphanumeric() || b == b'-';
    let ok = !host.is_empty()
        && host.len() <= 253
        && port != 0
        && host
            .trim_end_matches('.')
            .split('.')
            .all(|l| !l.is_empty() && l.len() <= 63 && l.bytes().all(label_char));
    if !ok {
        return Err(bad());
    }
    Ok(DnsName {
        host: host.to_owned(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            parse_url("http://127.0.0.1:8001/triton").unwrap(),
            "http://127.0.0.1:8001/triton"
        );
        assert_eq!(parse_url("https://x:1/p").unwrap(), "https://x:1/p");
        assert_eq!(
            parse_url("grpc://127.0.0.1:8001").unwrap(),
            "grpc://127.0.0.1:8001"
        );
        assert!(is_https(&parse_url("grpcs://x:1").unwrap()));
        assert!(is_https(&parse_url("https://x").unwrap()));
        assert!(!is_https(&parse_url("http://x").unwrap()));
        for with_user in ["http://u:hunter2@x:1/p", "grpc://u@x:1", "https://@x"] {
            assert_eq!(
                parse_url(with_user).unwrap_err(),
                CREDENTIALS,
                "{with_user}"
            );
        }
        assert!(parse_url("http://x:1/a@b").is_ok(), "@ in the path");
        for bad in [
            "ftp://x",
            "http://x:1/?q=1",
            "127.0.0.1:8000",
            "http://a\"b",
            "\\",
        ] {
            assert!(
                parse_url(bad)
                    .unwrap_err()
                    .contains("is not an http://host:port, https://host:port, grpc://host:port or grpcs://host:port URL"),
                "{bad}"
            );
        }
    }

    #[test]
    fn dns_names() {
        let check = |text: &str, host: &str, port: u16| {
            let d = parse_dns(text).unwrap();
            assert_eq!((d.host.as_str(), d.port), (host, port));
            assert_eq!(d.to_string(), text);
        };
        check(
            "triton-headless.ns.svc:8001",
            "triton-headless.ns.svc",
            8001,
        );
        check("localhost:1", "localhost", 1);
        check("127.0.0.1:8001", "127.0.0.1", 8001);
        check("svc.cluster.local.:80", "svc.cluster.local.", 80);
        for bad in [
            "triton",
            "triton:",
            "triton:0",
            "triton:70000",
            ":8001",
            "http://triton:8001",
            "a..b:1",
            "a b:1",
            "a/b:1",
        ] {
            assert!(
                parse_dns(bad).unwrap_err().contains("is not a host:port"),
                "{bad}"
            );
        }
    }

    #[test]
    fn health_checks_default_on_for_several_replicas() {
        let url = |s: &str| s.parse::<http::Uri>().unwrap();
        assert!(!Backend::new("b", url("http://a:1")).health.enabled);
        let two = Replicas::Urls(vec![url("http://a:1"), url("http://b:1")]);
        assert!(Backend::with_replicas("b", two).health.enabled);
        let dns = Replicas::Dns {
            name: parse_dns("t:1").unwrap(),
            interval: Backend::DEFAULT_DNS_INTERVAL,
            max_replicas: Backend::DEFAULT_MAX_REPLICAS,
        };
        assert!(Backend::with_replicas("b", dns).health.enabled);
    }
}
