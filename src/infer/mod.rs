//! The inference core every frontend shares: the request and reply types
//! ([`request`]); which route serves a model ([`route`]) and which of its
//! backends a request goes to ([`split`]); the checks of tensor heads
//! against a route's rules ([`checks`]); the one inference call every
//! frontend's infer goes through ([`call`], its stages in one order); the
//! calls other than infer in neutral types ([`calls`]); the backends
//! behind one interface, one implementation per protocol ([`backend`]);
//! the cache of backend model metadata ([`metadata`]); raw binary requests
//! ([`raw_input`]); shadow copies ([`shadow`]); statistics cut to a route's
//! models ([`stats`]).
//!
//! Nothing here knows which frontend called it: a frontend reads its
//! protocol into an [`InferRequest`], hands it to an
//! [`InferCall`](call::InferCall), and renders the [`InferReply`] (or
//! streams the backend's reply) in its own protocol. The core's own
//! failures are [`InferError`]s; the upstream's and the guard's pass
//! through them unchanged.

pub(crate) mod backend;
pub(crate) mod call;
pub(crate) mod calls;
pub(crate) mod checks;
mod error;
pub(crate) mod metadata;
pub(crate) mod raw_input;
pub(crate) mod request;
pub(crate) mod route;
pub(crate) mod shadow;
pub(crate) mod split;
pub(crate) mod stats;

pub(crate) use error::InferError;
pub(crate) use request::{InferReply, InferRequest, ModelRef, TensorData};

use std::sync::Arc;

use crate::config::Route;
use crate::metrics::Metrics;
use crate::observe::Observation;
use crate::upstream::Upstream;
use metadata::MetadataCache;
use shadow::Mirror;

/// Models whose metadata one backend's cache keeps.
const METADATA_ENTRIES: usize = 256;

/// The core's client of one backend: the upstream that sends to its
/// replicas, and the cache of its models' metadata. Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Client {
    pub upstream: Upstream,
    /// The backend's models' metadata, cached for `metadata_ttl`.
    pub metadata: Arc<MetadataCache>,
}

impl Client {
    /// The client of `backend`, its replicas counted in `metrics`.
    pub(crate) fn new(backend: Arc<crate::config::Backend>, metrics: &Metrics) -> Client {
        let metadata = MetadataCache::new(backend.metadata_ttl, METADATA_ENTRIES);
        Client {
            upstream: Upstream::with_metrics(backend, metrics),
            metadata: Arc::new(metadata),
        }
    }
}

/// One request's place in the gateway, as the core needs it: the route
/// serving it, the backend chosen for it (one of the route's split), the
/// route's shadow, and the request's observation.
#[derive(Clone, Copy, Debug)]
pub struct Exchange<'a> {
    pub route: &'a Arc<Route>,
    pub upstream: &'a Upstream,
    pub metadata: &'a Arc<MetadataCache>,
    pub shadow: Option<&'a Mirror>,
    pub obs: &'a Observation,
}
