//! `[rate_limit_store]`: where the rate-limit buckets of every route live
//! when several gateways must share them (a Redis server), how long a
//! decision may wait for it, and what happens to requests while it cannot
//! answer. Without the table each gateway keeps its own buckets.

use std::time::Duration;

/// `[rate_limit_store]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimitStore {
    /// `redis://HOST:PORT[/DB]` or `rediss://` (TLS, rustls with the
    /// system's roots); a password may be given as `redis://:PASSWORD@...`.
    pub url: StoreUrl,
    /// What a request gets while the store does not answer.
    pub on_store_error: OnStoreError,
    /// Longest a decision waits for the store; past it the request gets
    /// `on_store_error` and the store is taken as down until a probe
    /// answers. Without it a slow Redis would hold every request.
    pub timeout: Duration,
    /// Time between two probes of a store taken as down, and between two
    /// announcements of this gateway to the others (what `local` divides
    /// the limits by).
    pub probe_interval: Duration,
    /// Prefix of every key the gateway writes, so several deployments can
    /// share one Redis.
    pub key_prefix: String,
}

impl RateLimitStore {
    /// `timeout` when not set: a Redis next to the gateways answers in well
    /// under a millisecond; 50 ms is a stalled one.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(50);
    /// `probe_interval` when not set.
    pub const DEFAULT_PROBE_INTERVAL: Duration = Duration::from_secs(1);
    /// `key_prefix` when not set.
    pub const DEFAULT_KEY_PREFIX: &'static str = "tensorgate";

    /// A store at `url` with every other key at its default.
    pub fn new(url: StoreUrl) -> RateLimitStore {
        RateLimitStore {
            url,
            on_store_error: OnStoreError::default(),
            timeout: Self::DEFAULT_TIMEOUT,
            probe_interval: Self::DEFAULT_PROBE_INTERVAL,
            key_prefix: Self::DEFAULT_KEY_PREFIX.to_owned(),
        }
    }
}

/// `on_store_error`: the decision while the store cannot be asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnStoreError {
    /// Every request passes (availability first; nothing is limited).
    Allow,
    /// Every request on a limited route is refused (429).
    Deny,
    /// Each gateway limits on its own, to its share: the configured rates
    /// divided by the number of gateways that last announced themselves
    /// in the store (the default).
    #[default]
    Local,
}

impl OnStoreError {
    /// The word in the configuration, logs and metric labels.
    pub fn label(self) -> &'static str {
        match self {
            OnStoreError::Allow => "allow",
            OnStoreError::Deny => "deny",
            OnStoreError::Local => "local",
        }
    }
}

/// A checked store URL. Its `Debug` and `Display` hide a password.
#[derive(Clone, PartialEq, Eq)]
pub struct StoreUrl(String);

impl StoreUrl {
    /// Checks `text`: a `redis://` or `rediss://` URL with a host. The
    /// error does not quote `text`: a URL that does not parse has no
    /// user part to mask, yet may hold a password (`redis://:PASSWORD`).
    pub fn parse(text: &str) -> Result<StoreUrl, String> {
        use redis::IntoConnectionInfo;
        let bad = || {
            "not a redis://HOST:PORT or rediss://HOST:PORT URL (not shown: it may hold a password)"
                .to_owned()
        };
        let scheme_ok = text.starts_with("redis://") || text.starts_with("rediss://");
        let rest = text.split_once("://").map_or("", |(_, r)| r);
        let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
        if !scheme_ok || host.is_empty() || host.starts_with([':', '/']) {
            return Err(bad());
        }
        text.into_connection_info().map_err(|_| bad())?;
        Ok(StoreUrl(text.to_owned()))
    }

    /// The URL as given, password included: only for connecting.
    pub fn secret(&self) -> &str {
        &self.0
    }
}

/// `text` with the password of its user part replaced by `***`.
fn redact(text: &str) -> String {
    match (text.split_once("://"), text.rfind('@')) {
        (Some((scheme, _)), Some(at)) => format!("{scheme}://***@{}", &text[at + 1..]),
        _ => text.to_owned(),
    }
}

impl std::fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&redact(&self.0))
    }
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoreUrl({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_passwords_never_shown() {
        let u = StoreUrl::parse("redis://:hunter2@127.0.0.1:6379/0").unwrap();
        assert_eq!(u.to_string(), "redis://***@127.0.0.1:6379/0");
        assert_eq!(format!("{u:?}"), "StoreUrl(redis://***@127.0.0.1:6379/0)");
        assert_eq!(u.secret(), "redis://:hunter2@127.0.0.1:6379/0");
        assert!(StoreUrl::parse("rediss://cache.internal:6380").is_ok());
        for bad in [
            "http://x:1",
            "redis://",
            "127.0.0.1:6379",
            "redis://:6379",
            "redis:/x",
        ] {
            let e = StoreUrl::parse(bad).unwrap_err();
            assert!(e.starts_with("not a redis://HOST:PORT"), "{bad}: {e}");
        }
        for bad in [
            "redis://:hunter2@",
            "redis://:hunter2",
            "http://u:hunter2@h:1",
        ] {
            let e = StoreUrl::parse(bad).unwrap_err();
            assert!(!e.contains("hunter2"), "{e}");
        }
    }
}
