//! Configuration: TOML in, a validated [`Config`] out.
//!
//! Loading is staged. Stage 1 (`raw`) deserializes the TOML with serde into
//! raw structs that mirror the file key by key, reporting every type error
//! and unknown key with its path. Stage 2 (`validate`) turns those into the
//! typed [`Config`], reporting every semantic problem (ranges, references
//! between backends and routes, duplicates) with its key. Only when both
//! stages found nothing does a [`Config`] come out; the rest of the program
//! trusts it. Configuration never does network I/O and never panics on bad
//! input. Every key is documented in `config/tensorgate.example.toml`.

mod access;
mod attach;
mod backend;
mod build;
mod duration;
mod error;
mod frontends;
mod load;
mod raw;
mod route;
mod server;
mod store;
mod tls;
pub mod tracing;
mod validate;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub use access::{Rate, RateLimit, Rates, RouteAuth};
pub use backend::{
    Backend, DnsName, Ejection, HealthChecks, MetricsSource, Protocol, QueueSignal, Replicas,
    Retries,
};
pub use error::{ConfigError, ConfigErrors};
pub use frontends::{DecthingsRoute, MultipleTensors, SageMakerOutput, SageMakerRoute};
pub use load::{from_str, from_str_in, load_file};
pub use route::{Control, Route, Shadow, Weighted, WireFormat};
pub use server::{DEFAULT_ADMIN_LISTEN, DEFAULT_LISTEN, Limits, Readyz, ServerConfig};
pub use store::{OnStoreError, RateLimitStore, StoreUrl};
pub use tls::{BackendTls, ClientAuth, Identity, PemFile, ServerTls, ServerTlsFiles};
pub use tracing::Tracing;

use access::KeyFiles;

/// The whole, validated configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub server: ServerConfig,
    pub backends: BTreeMap<String, Arc<Backend>>,
    /// Routes in file order; the first one listing a model wins.
    pub routes: Vec<Arc<Route>>,
    /// `[tracing]`: OpenTelemetry traces, when on.
    pub tracing: Option<Tracing>,
    /// `[rate_limit_store]`: the buckets shared with other gateways;
    /// `None`, each gateway keeps its own.
    pub rate_limit_store: Option<RateLimitStore>,
}

impl Config {
    /// The route serving `model`: the first route that lists it, else the
    /// default route.
    pub fn route_for_model(&self, model: &str) -> Option<&Arc<Route>> {
        self.routes
            .iter()
            .find(|r| r.models.iter().any(|m| m == model))
            .or_else(|| self.default_route())
    }

    /// The route for requests that name no model (`/v2`, health, repository).
    pub fn default_route(&self) -> Option<&Arc<Route>> {
        self.routes.iter().find(|r| r.default)
    }

    /// Every file this configuration was read from besides the
    /// configuration file itself (TLS files, key files), with its contents
    /// as read when they are kept: what a reload must watch, since a change
    /// to any of them changes the configuration (a rotated certificate, a
    /// rotated key file).
    pub fn files_read(&self) -> Vec<(PathBuf, Option<Arc<[u8]>>)> {
        let mut pems: Vec<&PemFile> = Vec::new();
        if let Some(tls) = &self.server.tls {
            pems.extend([&tls.cert, &tls.key]);
            pems.extend(&tls.client_ca);
        }
        for b in self.backends.values() {
            pems.extend(&b.tls.ca);
            if let Some(id) = &b.tls.identity {
                pems.extend([&id.cert, &id.key]);
            }
        }
        let mut files: Vec<(PathBuf, Option<Arc<[u8]>>)> = pems
            .into_iter()
            .map(|f| (f.path.clone(), Some(f.pem.clone())))
            .collect();
        // Key files: their contents are not kept (only digests), so the
        // watcher reads them when it starts watching. A rotated key file (a
        // Secret update) reloads the configuration, which reads the keys.
        files.extend(
            self.routes
                .iter()
                .filter_map(|r| r.auth.as_ref())
                .map(|a| (a.keys_file.clone(), None)),
        );
        files.sort_by(|a, b| a.0.cmp(&b.0));
        files.dedup_by(|a, b| a.0 == b.0);
        files
    }

    /// The same configuration with every route's key file read again (the
    /// paths resolved at load time): what a key rotation needs without any
    /// other change. Every unreadable or invalid file is reported at its
    /// route's `auth.keys_file`; the running configuration is untouched.
    pub fn reload_keys(&self) -> Result<Config, ConfigErrors> {
        let mut files = KeyFiles::default();
        let mut errors = Vec::new();
        let mut routes = Vec::with_capacity(self.routes.len());
        for (i, route) in self.routes.iter().enumerate() {
            let Some(auth) = &route.auth else {
                routes.push(route.clone());
                continue;
            };
            let key = format!("routes[{i}].auth.keys_file");
            match files.load(&auth.keys_file, auth.sigv4, &key) {
                Ok(keys) => {
                    let mut r: Route = (**route).clone();
                    r.auth = Some(RouteAuth {
                        keys,
                        ..auth.clone()
                    });
                    routes.push(Arc::new(r));
                }
                Err(e) => errors.extend(e),
            }
        }
        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }
        Ok(Config {
            routes,
            ..self.clone()
        })
    }
}

#[cfg(test)]
mod tests;
