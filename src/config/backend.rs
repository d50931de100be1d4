//! `[backends.NAME]`: an upstream V2 server, its defaults, and the one URL
//! check every way of naming a backend goes through.

use std::time::Duration;

/// `[backends.NAME]`: an upstream V2 server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backend {
    pub name: String,
    /// `http://host:port` with an optional path prefix.
    pub url: http::Uri,
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
    /// Idle pooled connections kept per backend host.
    pub pool_max_idle_per_host: usize,
    /// Open connections to the backend host at once; more requests wait.
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
}

impl Backend {
    /// A backend with every optional key at its default.
    pub fn new(name: impl Into<String>, url: http::Uri) -> Backend {
        Backend {
            name: name.into(),
            url,
            connect_timeout: Duration::from_secs(2),
            request_timeout: Duration::from_secs(60),
            pool_idle_timeout: Duration::from_secs(4),
            pool_max_idle_per_host: 64,
            max_connections: 256,
            stream_idle_timeout: Duration::from_secs(60),
            metadata_ttl: Duration::from_secs(10),
            tls: super::BackendTls::default(),
        }
    }

    /// Whether the backend is reached over TLS (an `https://` URL).
    pub fn is_https(&self) -> bool {
        is_https(&self.url)
    }
}

/// Checks a backend URL: `http://host:port` or `https://host:port` with an
/// optional path prefix, no query. The file loader and `--backend` both
/// use this.
pub fn parse_url(text: &str) -> Result<http::Uri, String> {
    // `http::Uri` lets some characters RFC 3986 does not allow (`\`, `"`,
    // `{`, ...) through; a backend URL has no use for them.
    let uri_char = |b: u8| b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=%".contains(&b);
    let bad = || format!("{text:?} is not an http://host:port or https://host:port URL");
    if !text.bytes().all(uri_char) {
        return Err(bad());
    }
    match text.parse::<http::Uri>() {
        Ok(u)
            if matches!(u.scheme_str(), Some("http" | "https"))
                && u.authority().is_some()
                && u.query().is_none() =>
        {
            Ok(u)
        }
        _ => Err(bad()),
    }
}

/// Whether `url` is an `https://` URL.
pub fn is_https(url: &http::Uri) -> bool {
    url.scheme() == Some(&http::uri::Scheme::HTTPS)
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
        assert!(is_https(&parse_url("https://x").unwrap()));
        assert!(!is_https(&parse_url("http://x").unwrap()));
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
                    .contains("is not an http://host:port or https://host:port URL"),
                "{bad}"
            );
        }
    }
}
