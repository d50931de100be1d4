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
mod validate;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use access::{Rate, RateLimit, Rates, RouteAuth};
pub use backend::{Backend, DnsName, Ejection, HealthChecks, Replicas, Retries};
pub use error::{ConfigError, ConfigErrors};
pub use frontends::{DecthingsRoute, MultipleTensors, SageMakerOutput, SageMakerRoute};
pub use load::{from_str, from_str_in, load_file};
pub use route::{Control, Route, Shadow, Weighted, WireFormat};
pub use server::{DEFAULT_ADMIN_LISTEN, DEFAULT_LISTEN, Limits, Readyz, ServerConfig};

/// The whole, validated configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub server: ServerConfig,
    pub backends: BTreeMap<String, Arc<Backend>>,
    /// Routes in file order; the first one listing a model wins.
    pub routes: Vec<Arc<Route>>,
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
}

#[cfg(test)]
mod tests;
