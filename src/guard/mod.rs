//! Who may call a route, and how often: credentials checked against the
//! route's keys (`[routes.auth]`), and token buckets per route and per key
//! (`[routes.rate_limit]`).
//!
//! Where the checks sit: for V2, passthrough and SageMaker requests the
//! route is known from the request head, so credentials and the request
//! rate are checked **before** the request takes an admission slot or a
//! byte of its body is read. A Decthings call names its model in the body:
//! its key is first checked against every key of the routes under its
//! prefix (before the body; without one, its body is read only as far as
//! the routes that need no key allow), then against the route the body
//! names. A SigV4 request on the SageMaker Runtime API path is checked as
//! far as the head allows (access key, timestamp), then verified once its
//! body has been read — bounded by the route's `max_signed_body_bytes` and
//! by what all unverified bodies may hold ([`unverified`]), and without a
//! request slot until then. Requests in flight per client address are
//! bounded by [`clients`] when configured. Tensor
//! elements are charged when the core prepares the backend request
//! ([`crate::infer::call`]), the first moment they are
//! known.
//!
//! State: the buckets live in [`limits::Registry`], outside the
//! configuration; keys live in the configuration (`RouteAuth::keys`).
//! Reloading: [`crate::config::Config::reload_keys`] re-reads the key files
//! of a configuration (a full reload reads them anyway); a gateway for the
//! new configuration built with
//! [`Gateway::with_registry`](crate::gateway::Gateway::with_registry) and
//! the old gateway's [`registry`](crate::gateway::Gateway::registry) keeps
//! the buckets of every route and key both name (with their tokens), and
//! `Metrics::init_series` gives new key names their zero series.
//!
//! Never logs or renders a key: errors and the access log name keys by
//! their names.

pub mod admission;
mod bucket;
pub mod clients;
mod error;
pub mod limits;
pub mod sigv4;
pub mod store;
pub mod unverified;

use std::sync::Arc;

use http::HeaderMap;

pub use error::{AuthProblem, Unauthorized};
pub use limits::{Refusal, Registry, RouteLimiter, Table, Unit};

use crate::auth::{self, Presented};
use crate::config::Route;

/// Who called, once checked, and the limits they are held to.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    /// The key's name; `None` on routes without keys.
    pub key: Option<Arc<str>>,
    pub limiter: Option<Arc<RouteLimiter>>,
}

/// What the credentials of a request come to on a route.
#[derive(Debug)]
pub enum Checked {
    /// A key of the route (`None`: the route needs none).
    Key(Option<Arc<str>>),
    /// A SigV4 signature to verify once the body is read.
    SigV4(sigv4::Claim),
}

/// Seconds since the epoch, now.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Checks the credentials of `headers` against `route`'s keys. A route
/// without `[routes.auth]` accepts anything (credentials are ignored).
/// SigV4 is taken only where `sigv4_here` (the SageMaker Runtime API path)
/// and the route allows it; its timestamp is checked against `now()`, the
/// clock read only then.
pub fn check(
    route: &Route,
    headers: &HeaderMap,
    sigv4_here: bool,
    now: impl FnOnce() -> i64,
) -> Result<Checked, AuthProblem> {
    let Some(auth) = &route.auth else {
        return Ok(Checked::Key(None));
    };
    match auth::presented(headers) {
        Presented::Nothing => Err(AuthProblem::Missing),
        Presented::Unreadable(what) => Err(AuthProblem::Unreadable(what)),
        Presented::Key(key) => auth
            .keys
            .find(key)
            .map(|name| Checked::Key(Some(name.clone())))
            .ok_or(AuthProblem::UnknownKey),
        Presented::SigV4(_) if !sigv4_here => Err(AuthProblem::SigV4NotHere),
        Presented::SigV4(_) if !auth.sigv4 => Err(AuthProblem::SigV4Off),
        Presented::SigV4(value) => {
            sigv4::Claim::new(&auth.keys, value, headers, now()).map(Checked::SigV4)
        }
    }
}

/// Whether a key in `headers` is one of the keys of `routes` (all of which
/// need keys): the check made on a Decthings call before its body says
/// which route it is for.
pub fn check_any<'a>(
    routes: impl Iterator<Item = &'a Route>,
    headers: &HeaderMap,
) -> Result<(), AuthProblem> {
    match auth::presented(headers) {
        Presented::Nothing => Err(AuthProblem::Missing),
        Presented::Unreadable(what) => Err(AuthProblem::Unreadable(what)),
        Presented::SigV4(_) => Err(AuthProblem::SigV4NotHere),
        Presented::Key(key) => {
            let mut found = false;
            for r in routes {
                found |= r.auth.as_ref().is_some_and(|a| a.keys.find(key).is_some());
            }
            if found {
                Ok(())
            } else {
                Err(AuthProblem::UnknownKey)
            }
        }
    }
}
