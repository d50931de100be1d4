//! `[[routes]]`: which models go where, in what format, under which rules,
//! and what the frontends may do on them.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::Deserialize;

use super::{Backend, DecthingsRoute, Limits, RateLimit, RouteAuth, SageMakerRoute};
pub use crate::codec::v2::path::Control;
use crate::rules::RouteRules;

/// How the gateway talks to a route's backend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireFormat {
    /// The binary tensor data extension (Triton, KServe with binary support).
    #[default]
    Binary,
    /// Plain JSON `data` (servers without the extension).
    Json,
}

/// `[[routes]]`: which models go where, in what format, under which rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub name: String,
    pub models: Vec<String>,
    pub default: bool,
    pub backend: Arc<Backend>,
    pub backend_format: WireFormat,
    pub limits: Limits,
    pub rules: RouteRules,
    /// `[routes.decthings]`: the Decthings frontend on this route.
    pub decthings: DecthingsRoute,
    /// `[routes.sagemaker]`: the SageMaker frontend on this route.
    pub sagemaker: SageMakerRoute,
    /// Triton control endpoints allowed on the data port (default none).
    pub allow_control: BTreeSet<Control>,
    /// `[routes.auth]`: the keys requests must carry (default: none needed).
    pub auth: Option<RouteAuth>,
    /// `[routes.rate_limit]` (default: no limit).
    pub rate_limit: RateLimit,
}

impl Route {
    /// A route to `backend` with every optional key at its default: no
    /// models, not the default route, binary format, default limits, no
    /// rules, both frontends on with their defaults, no control endpoints,
    /// no keys needed and no rate limits.
    pub fn new(name: impl Into<String>, backend: Arc<Backend>) -> Route {
        Route {
            name: name.into(),
            models: Vec::new(),
            default: false,
            backend,
            backend_format: WireFormat::default(),
            limits: Limits::default(),
            rules: RouteRules {
                allow_unknown_inputs: true,
                ..RouteRules::default()
            },
            decthings: DecthingsRoute::default(),
            sagemaker: SageMakerRoute::default(),
            allow_control: BTreeSet::new(),
            auth: None,
            rate_limit: RateLimit::default(),
        }
    }
}

impl Route {
    /// Whether this route passes `kind` control endpoints through.
    pub fn allows_control(&self, kind: Control) -> bool {
        self.allow_control.contains(&kind)
    }
}
