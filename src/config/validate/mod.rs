//! Stage 2: the raw structs of stage 1 → the typed [`Config`], collecting
//! every semantic problem with its key: ranges, required keys, references
//! from routes to backends and models, names that must be unique across
//! routes. Defaults come from the typed structs (`Default`, `new`), never
//! from here. Never sees TOML text; reads the TLS files and the key files
//! the configuration names.

mod access;
mod backend;
mod frontends;
mod route;
mod split;
mod store;
mod tls;
mod tracing;
mod unique;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::access::KeyFiles;
use super::raw::{RawBackend, RawConfig, RawLimits, RawServer, Stage1, Table};
use super::{Backend, Config, ConfigError, Limits, Readyz, ServerConfig};

/// Overwrites each field of `$target` that `$raw` sets (raw values are
/// checked newtypes: `.0` is the value).
macro_rules! apply {
    ($target:expr, $raw:expr; $($field:ident),+ $(,)?) => {
        $(if let Some(v) = $raw.$field {
            $target.$field = v.0;
        })+
    };
}
use apply;

/// Turns stage 1's output into a [`Config`], or the problems found.
pub(super) fn config(
    stage1: &Stage1,
    raw: RawConfig,
    base: Option<&Path>,
) -> Result<Config, Vec<ConfigError>> {
    let mut check = Check {
        stage1,
        errors: Vec::new(),
        unique: unique::Unique::default(),
        base,
        key_files: KeyFiles::default(),
        declared: raw.backends.keys().cloned().collect(),
    };
    let server = check.server(raw.server.0);
    let defaults = check.limits("limits", Limits::default(), raw.limits.0);
    let backends = check.backends(raw.backends, server.readyz);
    let store = raw.rate_limit_store.and_then(|t| check.store(t.0));
    if raw.routes.is_empty() {
        check.error("routes", "at least one [[routes]] entry is required");
    }
    let routes: Vec<_> = raw
        .routes
        .into_iter()
        .enumerate()
        .filter_map(|(i, r)| check.route(i, r.0, &backends, defaults))
        .collect();
    let tracing = raw.tracing.and_then(|t| check.tracing(t.0));
    if !check.errors.is_empty() {
        return Err(check.errors);
    }
    let mut config = super::attach::config(server, backends, routes);
    config.tracing = tracing;
    config.rate_limit_store = store;
    Ok(config)
}

/// The problems a [`ServerConfig`] can have on its own; the built-in
/// configurations are checked with this too.
pub(super) fn server_problems(s: &ServerConfig) -> Vec<ConfigError> {
    let mut out = Vec::new();
    if s.listen == s.admin_listen {
        out.push(ConfigError::new(
            "server.admin_listen",
            "must differ from server.listen",
        ));
    }
    if s.workers > ServerConfig::MAX_WORKERS {
        out.push(ConfigError::new(
            "server.workers",
            format!("at most {}, got {}", ServerConfig::MAX_WORKERS, s.workers),
        ));
    }
    if s.reply_disk_bytes > s.reply_disk_total_bytes {
        out.push(ConfigError::new(
            "server.reply_disk_bytes",
            format!(
                "{} is above reply_disk_total_bytes ({}), which every reply shares",
                s.reply_disk_bytes, s.reply_disk_total_bytes
            ),
        ));
    }
    if s.drain_delay >= s.shutdown_grace {
        out.push(ConfigError::new(
            "server.drain_delay",
            format!(
                "{:?} must be shorter than shutdown_grace ({:?})",
                s.drain_delay, s.shutdown_grace
            ),
        ));
    }
    out
}

struct Check<'a> {
    stage1: &'a Stage1,
    errors: Vec<ConfigError>,
    unique: unique::Unique,
    /// The directory relative paths are taken against.
    base: Option<&'a Path>,
    key_files: KeyFiles,
    /// Every `[backends.NAME]` in the file, usable or not: a route naming
    /// one whose own keys are wrong gets no second, misleading error.
    declared: std::collections::BTreeSet<String>,
}

impl Check<'_> {
    fn error(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.errors.push(ConfigError::new(key, message));
    }

    fn server(&mut self, raw: RawServer) -> ServerConfig {
        let mut s = ServerConfig::default();
        apply!(s, raw; listen, admin_listen, shutdown_grace, max_concurrent_requests,
            body_read_timeout, header_read_timeout, max_connections, handshake_timeout,
            queue_timeout, body_total_timeout, send_timeout, reply_memory_bytes,
            reply_disk_bytes, reply_disk_total_bytes, drain_delay, workers,
            max_streams_per_connection, max_unverified_body_bytes);
        s.max_requests_per_client = raw.max_requests_per_client.map(|n| n.0);
        if let Some(r) = raw.readyz {
            s.readyz = r.0;
        }
        if raw.drain_delay.is_none() {
            s.drain_delay = ServerConfig::default_drain_delay(s.shutdown_grace);
        }
        s.tls = raw.tls.and_then(|t| self.server_tls(t.0));
        self.errors.extend(server_problems(&s));
        s
    }

    /// `base` with what `raw` (at `key`) overrides.
    fn limits(&mut self, key: &str, base: Limits, raw: RawLimits) -> Limits {
        let mut limits = base;
        if let Some(n) = raw.max_dims
            && n.0 > Limits::MAX_DIMS
        {
            let message = format!("at most {}, got {}", Limits::MAX_DIMS, n.0);
            self.error(format!("{key}.max_dims"), message);
        }
        apply!(limits, raw; max_body_bytes, max_json_header_bytes, max_elements_per_tensor,
            max_dims, max_response_bytes, max_signed_body_bytes);
        limits
    }

    /// Every backend; `readyz` decides whether health checks are on by
    /// default (see [`Check::backend`]).
    fn backends(
        &mut self,
        raw: BTreeMap<String, Table<RawBackend>>,
        readyz: Readyz,
    ) -> BTreeMap<String, Arc<Backend>> {
        if raw.is_empty() {
            self.error("backends", "at least one backend is required");
        }
        let mut out = BTreeMap::new();
        for (name, Table(b)) in raw {
            if let Some(backend) = self.backend(&name, b, readyz) {
                out.insert(name, Arc::new(backend));
            }
        }
        out
    }
}
