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

/// One backend of a route's traffic split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Weighted {
    pub backend: Arc<Backend>,
    /// Relative share of the route's requests; 0 sends none (but the
    /// backend header may still pick it).
    pub weight: u32,
}

/// `shadow = { backend = "next", max_in_flight = 8 }`: every infer is also
/// sent to `backend`, at most `max_in_flight` at once (more are dropped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shadow {
    pub backend: Arc<Backend>,
    pub max_in_flight: usize,
}

impl Shadow {
    /// `max_in_flight` when not set.
    pub const DEFAULT_MAX_IN_FLIGHT: usize = 8;
}

/// `[[routes]]`: which models go where, in what format, under which rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub name: String,
    pub models: Vec<String>,
    pub default: bool,
    /// The primary backend: `backend`, or the first of `backends`.
    pub backend: Arc<Backend>,
    /// Every backend requests may go to, with its weight (`backend = "x"`
    /// is `x` alone with weight 1). At least one weight is above zero.
    pub split: Vec<Weighted>,
    /// Whether `x-tensorgate-backend: NAME` picks one of `split` (testing a
    /// canary by hand). Off by default.
    pub allow_backend_header: bool,
    /// Traffic mirrored to another backend, replies discarded.
    pub shadow: Option<Shadow>,
    /// Whether an infer whose body may have reached a replica is sent again
    /// on another one after a failure (the route's models are idempotent).
    pub retry_infer: bool,
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
    /// models, not the default route, no split, shadow or backend header,
    /// no infer retries, binary format, default limits, no rules, both
    /// frontends on with their defaults, no control endpoints, no keys
    /// needed and no rate limits.
    pub fn new(name: impl Into<String>, backend: Arc<Backend>) -> Route {
        Route {
            name: name.into(),
            models: Vec::new(),
            default: false,
            split: vec![Weighted {
                backend: backend.clone(),
                weight: 1,
            }],
            backend,
            allow_backend_header: false,
            shadow: None,
            retry_infer: false,
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
