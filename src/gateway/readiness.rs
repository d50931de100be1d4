//! Whether each route can serve now: a route is ready when one of its
//! backends (with a weight above 0) has a replica taking traffic, and each
//! model the route lists is ready on such a replica (as far as the health
//! checks know). What `/readyz` does with this depends on `server.readyz`.

use std::collections::BTreeMap;

use crate::config::{Config, Readyz, Route};
use crate::infer::Client;

/// The routes' readiness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readiness {
    pub mode: Readyz,
    /// Names of the routes that cannot serve now.
    pub not_ready: Vec<String>,
    pub routes: usize,
}

impl Readiness {
    /// Whether `/readyz` should answer 200 (draining aside).
    pub fn ready(&self) -> bool {
        match self.mode {
            Readyz::Process => true,
            Readyz::AnyRoute => self.not_ready.len() < self.routes,
            Readyz::AllRoutes => self.not_ready.is_empty(),
        }
    }
}

/// Whether one of `route`'s backends (with a weight above 0) has a replica
/// taking traffic with each of the route's models ready.
pub(crate) fn route_ready(route: &Route, clients: &BTreeMap<String, Client>) -> bool {
    route.split.iter().filter(|w| w.weight > 0).any(|w| {
        clients
            .get(&w.backend.name)
            .is_some_and(|c| c.upstream.ready_for(&route.models))
    })
}

/// Checks every route (nothing when `server.readyz = "process"`).
pub(crate) fn check(config: &Config, clients: &BTreeMap<String, Client>) -> Readiness {
    let mode = config.server.readyz;
    let mut not_ready = Vec::new();
    if mode != Readyz::Process {
        for r in &config.routes {
            if !route_ready(r, clients) {
                not_ready.push(r.name.clone());
            }
        }
    }
    Readiness {
        mode,
        not_ready,
        routes: config.routes.len(),
    }
}
