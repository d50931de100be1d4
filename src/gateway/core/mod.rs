//! The inference core every frontend shares: the request and reply types
//! ([`request`]), the checks of tensor heads against a route's rules
//! ([`checks`]), the one client for V2 backends ([`backend`]), the cache
//! of backend model metadata ([`metadata`]) and the checks of raw binary
//! requests that need it ([`raw_input`]).
//!
//! Nothing here knows which frontend called it: a frontend reads its
//! protocol into an [`InferRequest`], hands it to [`backend::prepare`], and
//! renders the [`InferReply`] (or streams the backend's reply) in its own
//! protocol. Errors are [`GatewayError`](super::error::GatewayError)s; each
//! frontend renders them in its own shape.

pub mod backend;
pub mod checks;
pub mod metadata;
pub mod raw_input;
pub mod request;

pub use request::{InferReply, InferRequest, ModelRef, TensorData};

use crate::config::Route;
use crate::gateway::observe::Observation;
use crate::gateway::shadow::Mirror;
use crate::gateway::upstream::Upstream;

/// One request's place in the gateway, as the core needs it: the route
/// serving it, the backend chosen for it (one of the route's split), the
/// route's shadow, and the request's observation.
#[derive(Clone, Copy, Debug)]
pub struct Exchange<'a> {
    pub route: &'a Route,
    pub upstream: &'a Upstream,
    pub shadow: Option<&'a Mirror>,
    pub obs: &'a Observation,
}
