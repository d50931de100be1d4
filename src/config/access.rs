//! `[routes.auth]` and `[routes.rate_limit]`: who may call a route, and how
//! often. Carried in the typed configuration; the checks themselves are the
//! gateway's (`gateway::guard`), and the rate limiters' state lives outside
//! the configuration so a new configuration keeps it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ConfigError;
use crate::auth::{KeyFileError, KeySet};

/// `[routes.auth]`: requests on the route must carry one of the keys of
/// `keys_file`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteAuth {
    /// The key file, as resolved when the configuration was loaded
    /// (relative paths against the configuration file's directory).
    pub keys_file: PathBuf,
    /// Whether SigV4 signatures are accepted on the SageMaker Runtime API
    /// path. SigV4 signs with the key itself, so the keys are then held in
    /// memory beside their digests; without it only digests are held.
    pub sigv4: bool,
    /// The keys, read from `keys_file`.
    pub keys: Arc<KeySet>,
}

/// A token bucket: `per_second` tokens a second, at most `burst` saved.
#[derive(Clone, Copy, Debug)]
pub struct Rate {
    pub per_second: f64,
    pub burst: u64,
}

impl PartialEq for Rate {
    fn eq(&self, other: &Rate) -> bool {
        self.per_second.to_bits() == other.per_second.to_bits() && self.burst == other.burst
    }
}

impl Eq for Rate {}

impl Rate {
    /// The burst when none is configured: one second's worth, at least 1.
    pub fn default_burst(per_second: f64) -> u64 {
        (per_second.ceil() as u64).max(1)
    }
}

/// Limits on requests and on tensor elements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rates {
    /// Requests (each costs one token).
    pub requests: Option<Rate>,
    /// Tensor elements of the inputs (a request costs its element count).
    pub elements: Option<Rate>,
}

impl Rates {
    pub fn is_empty(&self) -> bool {
        self.requests.is_none() && self.elements.is_none()
    }
}

/// `[routes.rate_limit]`: limits for the route as a whole, and
/// `[routes.rate_limit.per_key]` for each key separately.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateLimit {
    pub route: Rates,
    pub per_key: Rates,
}

impl RateLimit {
    pub fn is_empty(&self) -> bool {
        self.route.is_empty() && self.per_key.is_empty()
    }
}

/// Key files read while loading one configuration, each once per way of
/// holding it (with or without the keys themselves).
#[derive(Debug, Default)]
pub(super) struct KeyFiles {
    read: BTreeMap<(PathBuf, bool), Option<Arc<KeySet>>>,
}

impl KeyFiles {
    /// The keys of `path`; the first failure to read a file is reported at
    /// `key`, later uses of the same file only get `None`.
    pub(super) fn load(
        &mut self,
        path: &Path,
        sigv4: bool,
        key: &str,
    ) -> Result<Arc<KeySet>, Option<ConfigError>> {
        if let Some(done) = self.read.get(&(path.to_owned(), sigv4)) {
            return done.clone().ok_or(None);
        }
        let loaded = KeySet::load(path, sigv4).map(Arc::new);
        self.read
            .insert((path.to_owned(), sigv4), loaded.as_ref().ok().cloned());
        loaded.map_err(|e: KeyFileError| Some(ConfigError::new(key, e.to_string())))
    }
}

/// `path` against `base` when relative.
pub(super) fn resolve(path: &Path, base: Option<&Path>) -> PathBuf {
    match base {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_owned(),
    }
}
