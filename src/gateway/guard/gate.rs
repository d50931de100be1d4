//! The gateway's side of the checks: binding a caller to a request
//! (metrics, access log, limits) and taking its request token.

use std::sync::Arc;
use std::time::Instant;

use http::HeaderMap;

use super::{Caller, Unit, Verdict, check, check_any, sigv4::Claim, unix_now};
use crate::config::Route;
use crate::gateway::Gateway;
use crate::gateway::error::GatewayError;
use crate::gateway::observe::Observation;

impl Gateway {
    /// Checks the credentials in `headers` for `route` (already bound to
    /// `obs`) and, for a key, takes the request's token. A SigV4 signature
    /// (taken only where `sigv4_here`) comes back as a [`Claim`] to verify
    /// over the body, and the token is taken then.
    pub fn authorize_head(
        &self,
        route: &Route,
        headers: &HeaderMap,
        sigv4_here: bool,
        obs: &Observation,
    ) -> Result<Option<Claim>, GatewayError> {
        let verdict = check(route, headers, sigv4_here, unix_now())
            .map_err(|problem| GatewayError::unauthorized(Some(route), problem))?;
        match verdict {
            Verdict::Key(key) => {
                self.admit_caller(route, key, obs)?;
                Ok(None)
            }
            Verdict::SigV4(claim) => Ok(Some(claim)),
        }
    }

    /// Records who is calling on `route` (the `key` label, the access
    /// log) and takes one request token from the route's and the key's
    /// buckets.
    pub fn admit_caller(
        &self,
        route: &Route,
        key: Option<Arc<str>>,
        obs: &Observation,
    ) -> Result<(), GatewayError> {
        let limiter = self.shared.limits.route(&route.name).cloned();
        obs.set_caller(Caller {
            key: key.clone(),
            limiter: limiter.clone(),
        });
        match limiter {
            Some(l) => l
                .admit(key.as_ref(), Unit::Requests, 1, Instant::now())
                .map_err(|r| GatewayError::RateLimited(Box::new(r))),
            None => Ok(()),
        }
    }

    /// A Decthings call under `prefix`, before its body names the route:
    /// when every route under the prefix needs keys, the call must carry a
    /// key of one of them.
    pub fn precheck_prefix(&self, prefix: &str, headers: &HeaderMap) -> Result<(), GatewayError> {
        let routes = || {
            self.shared
                .config
                .routes
                .iter()
                .filter(move |r| r.decthings.enabled && r.decthings.prefix == prefix)
                .map(|r| &**r)
        };
        if routes().any(|r| r.auth.is_none()) {
            return Ok(());
        }
        check_any(routes(), headers).map_err(|problem| GatewayError::unauthorized(None, problem))
    }
}
