//! Configuration reload, on SIGHUP and when a file the configuration was
//! read from changes ([`watch`]): the configuration is loaded and checked
//! again; if it is sound it replaces the running one at once and whole —
//! the gateway (routes, rules, limits, backends, admission) and the data
//! port's TLS settings — while requests in flight finish on the old one.
//! Backends whose settings did not change keep their pools. If it is not
//! sound, or changes what cannot change while running ([`fixed_changes`]),
//! the running configuration stays and every problem is logged with its
//! key. Either way `tensorgate_config_reloads_total{result}` counts it.
//!
//! It never binds, closes or touches a listener.

pub mod source;
mod watch;

use std::time::{Duration, Instant};

use crate::config::{ConfigError, ConfigErrors, ServerConfig};
use crate::gateway::Kept;
use crate::gateway::live::Live;
use crate::metrics::Metrics;
use crate::server::status::{LastReload, ReloadLog};
use crate::server::{Running, TlsSettings};
use std::sync::Arc;

pub use source::{Loaded, Loader, Overrides, Source, WatchedFile, file_hash, load_file};
pub use watch::{Handle, POLL_INTERVAL, spawn};

/// Reloads the configuration of one running server.
#[derive(Debug)]
pub struct Reloader {
    loader: Loader,
    live: Live,
    tls: Option<TlsSettings>,
    metrics: Metrics,
    /// What the status page shows of reloads.
    log: Arc<ReloadLog>,
}

/// A reload that took effect.
#[derive(Clone, Debug)]
pub struct Reloaded {
    pub hash: u64,
    /// The files the new configuration was read from.
    pub files: Vec<WatchedFile>,
    pub kept: Kept,
    /// Reading, validating and building the new configuration.
    pub load: Duration,
    /// Building the new gateway and swapping it (and the TLS settings) in.
    pub swap: Duration,
}

impl Reloader {
    /// A reloader for `running`, started with the configuration whose file
    /// hash is `hash`.
    pub fn new(loader: Loader, running: &Running, hash: u64) -> Reloader {
        let metrics = running.live.current().metrics().clone();
        metrics.config_hash.set(hash as f64);
        Reloader {
            loader,
            live: running.live.clone(),
            tls: running.tls.clone(),
            metrics,
            log: running.reloads.clone(),
        }
    }

    /// Loads the configuration again and, if it can be applied, applies
    /// it. `cause` is for the log.
    pub fn reload(&self, cause: &'static str) -> Result<Reloaded, ConfigErrors> {
        let started = Instant::now();
        let result = self.prepare().map(|(loaded, tls)| {
            let load = started.elapsed();
            let swapping = Instant::now();
            let (next, kept) = self.live.current().reconfigured(loaded.config);
            if let Some(p) = next.pipeline() {
                p.count_in(&self.metrics.trace_export);
            }
            self.live.replace(&next);
            if let (Some(settings), Some(config)) = (&self.tls, tls) {
                settings.replace(config);
            }
            let swap = swapping.elapsed();
            Reloaded {
                hash: loaded.hash,
                files: loaded.files,
                kept,
                load,
                swap,
            }
        });
        self.report(cause, &result);
        result
    }

    /// The new configuration and the data port's new TLS settings, if they
    /// can be applied.
    fn prepare(&self) -> Result<(Loaded, Option<rustls::ServerConfig>), ConfigErrors> {
        let loaded = self.loader.load()?;
        let running = self.live.current();
        let fixed = fixed_changes(&running.config().server, &loaded.config.server);
        if !fixed.is_empty() {
            return Err(ConfigErrors(fixed));
        }
        let tls = match &loaded.config.server.tls {
            Some(t) => Some(crate::tls::server_config(t).map_err(|e| {
                let e = crate::config::ConfigError::new("server.tls", e.to_string());
                ConfigErrors(vec![e])
            })?),
            None => None,
        };
        Ok((loaded, tls))
    }

    fn report(&self, cause: &'static str, result: &Result<Reloaded, ConfigErrors>) {
        self.log.record(LastReload {
            at: std::time::SystemTime::now(),
            cause,
            applied: result.is_ok(),
            problems: match result {
                Ok(_) => Vec::new(),
                Err(errors) => errors.0.iter().map(ToString::to_string).collect(),
            },
        });
        match result {
            // Logged before counted: whoever sees the counter move finds
            // the reason already in the log.
            Ok(r) => {
                tracing::info!(
                    cause,
                    hash = r.hash,
                    backends_kept = r.kept.upstreams,
                    backends_new = r.kept.rebuilt,
                    load_ms = millis(r.load),
                    swap_us = micros(r.swap),
                    "configuration reloaded"
                );
                self.metrics.config_hash.set(r.hash as f64);
                self.metrics
                    .config_reloads
                    .with_label_values(&["success"])
                    .inc();
            }
            Err(errors) => {
                for e in &errors.0 {
                    tracing::error!(cause, key = %e.key, "configuration reload: {}", e.message);
                }
                tracing::error!(
                    cause,
                    problems = errors.0.len(),
                    "configuration reload failed; the running configuration is kept"
                );
                self.metrics
                    .config_reloads
                    .with_label_values(&["failure"])
                    .inc();
            }
        }
    }
}

/// `d` in milliseconds to the microsecond, for logs: an integer count
/// divided by 1,000 is the double nearest that decimal, so it prints as
/// `0.179`, never `0.17970599999999998`.
fn millis(d: Duration) -> f64 {
    d.as_micros() as f64 / 1e3
}

/// `d` in microseconds to the nanosecond, for logs (as [`millis`]).
fn micros(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e3
}

/// What a reload may not change, each at its key: the listeners'
/// addresses, whether the data port speaks TLS, the connection cap, the
/// handshake and header timeouts and the streams per connection (built
/// into the listeners when they start) and the worker threads. A restart
/// applies them.
pub fn fixed_changes(running: &ServerConfig, next: &ServerConfig) -> Vec<ConfigError> {
    let mut out = Vec::new();
    let mut check = |key: &str, was: String, now: String| {
        if was != now {
            let message = format!(
                "cannot change while running (running: {was}, new: {now}); restart to apply it"
            );
            out.push(ConfigError::new(format!("server.{key}"), message));
        }
    };
    check(
        "listen",
        running.listen.to_string(),
        next.listen.to_string(),
    );
    check(
        "admin_listen",
        running.admin_listen.to_string(),
        next.admin_listen.to_string(),
    );
    let on = |tls: bool| if tls { "on" } else { "off" }.to_owned();
    check("tls", on(running.tls.is_some()), on(next.tls.is_some()));
    check(
        "max_connections",
        running.max_connections.to_string(),
        next.max_connections.to_string(),
    );
    check(
        "handshake_timeout",
        format!("{:?}", running.handshake_timeout),
        format!("{:?}", next.handshake_timeout),
    );
    check(
        "header_read_timeout",
        format!("{:?}", running.header_read_timeout),
        format!("{:?}", next.header_read_timeout),
    );
    check(
        "workers",
        running.workers.to_string(),
        next.workers.to_string(),
    );
    check(
        "max_streams_per_connection",
        running.max_streams_per_connection.to_string(),
        next.max_streams_per_connection.to_string(),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logged_durations_print_short() {
        let d = Duration::from_nanos(179_706);
        assert_eq!(format!("{}", d.as_secs_f64() * 1e3), "0.17970599999999998");
        assert_eq!(format!("{}", millis(d)), "0.179");
        assert_eq!(format!("{}", micros(d)), "179.706");
        assert_eq!(format!("{}", millis(Duration::from_millis(1234))), "1234");
        assert_eq!(format!("{}", micros(Duration::from_nanos(2_100))), "2.1");
    }

    #[test]
    fn only_fixed_keys_are_refused() {
        let running = ServerConfig::default();
        let mut next = running.clone();
        next.queue_timeout = Duration::from_secs(1);
        next.drain_delay = Duration::ZERO;
        next.max_concurrent_requests = 3;
        next.max_requests_per_client = Some(4);
        next.max_unverified_body_bytes = 1 << 20;
        assert_eq!(fixed_changes(&running, &next), []);
        next.listen = "127.0.0.1:1".parse().unwrap();
        next.header_read_timeout = Duration::from_secs(1);
        next.workers = running.workers + 1;
        next.max_streams_per_connection = 16;
        let keys: Vec<String> = fixed_changes(&running, &next)
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            keys,
            [
                "server.listen: cannot change while running (running: 127.0.0.1:8000, new: 127.0.0.1:1); restart to apply it",
                "server.header_read_timeout: cannot change while running (running: 30s, new: 1s); restart to apply it",
                format!(
                    "server.workers: cannot change while running (running: {}, new: {}); restart to apply it",
                    running.workers,
                    running.workers + 1
                )
                .as_str(),
                "server.max_streams_per_connection: cannot change while running (running: 128, new: 16); restart to apply it",
            ]
        );
    }
}
