//! The gateway's side of the checks: binding a caller to a request
//! (metrics, access log, limits) and taking its request token.

use std::sync::Arc;
use std::time::Instant;

use http::HeaderMap;
use http::request::Parts;

use crate::config::Route;
use crate::error::Error;
use crate::gateway::Gateway;
use crate::guard::Unauthorized;
use crate::guard::clients::{ClientAddr, ClientSlot};
use crate::guard::{Caller, Checked, Unit, check, check_any, sigv4::Claim, unix_now};
use crate::observe::Observation;

impl Gateway {
    /// Checks the credentials in `headers` for `route` (already bound to
    /// `obs`) and, for a key, takes the request's token. A SigV4 signature
    /// (taken only where `sigv4_here`) comes back as a [`Claim`] to verify
    /// over the body, and the token is taken then.
    pub async fn authorize_head(
        &self,
        route: &Route,
        headers: &HeaderMap,
        sigv4_here: bool,
        obs: &Observation,
    ) -> Result<Option<Claim>, Error> {
        match self.check_head(route, headers, sigv4_here)? {
            Checked::Key(key) => {
                self.admit_caller(route, key, obs).await?;
                Ok(None)
            }
            Checked::SigV4(claim) => Ok(Some(claim)),
        }
    }

    /// Whether `route` checks its callers at all: keys to check, or rate
    /// limits to charge. A request on a route with neither has no caller
    /// to record ([`Gateway::admit_caller`] records none) and skips the
    /// check (measurable with scripts/bench/instructions.sh).
    pub fn checks_callers(&self, route: &Route) -> bool {
        route.auth.is_some() || self.shared.limits.route(&route.name).is_some()
    }

    /// What the credentials in `headers` come to on `route`.
    pub fn check_head(
        &self,
        route: &Route,
        headers: &HeaderMap,
        sigv4_here: bool,
    ) -> Result<Checked, Error> {
        // The clock is read only for a signature, whose date it checks.
        check(route, headers, sigv4_here, unix_now).map_err(|problem| {
            Unauthorized {
                route: Some(route.name.clone()),
                problem,
            }
            .into()
        })
    }

    /// Records who is calling on `route` (the `key` label, the access
    /// log) and takes one request token from the route's and the key's
    /// buckets.
    pub async fn admit_caller(
        &self,
        route: &Route,
        key: Option<Arc<str>>,
        obs: &Observation,
    ) -> Result<(), Error> {
        self.take_caller(route, key, obs, 1).await
    }

    /// Records who is calling on `route`, as [`Gateway::admit_caller`]
    /// does, and takes `tokens` request tokens (none for a stream, whose
    /// messages each take their own).
    pub async fn take_caller(
        &self,
        route: &Route,
        key: Option<Arc<str>>,
        obs: &Observation,
        tokens: u64,
    ) -> Result<(), Error> {
        let limiter = self.shared.limits.route(&route.name).cloned();
        if key.is_none() && limiter.is_none() {
            // Nothing to record: no key names the caller, no limit counts
            // it (what an unset caller means to the access log, the
            // metrics and the element limits alike).
            return Ok(());
        }
        obs.set_caller(Caller {
            key: key.clone(),
            limiter: limiter.clone(),
        });
        match limiter {
            Some(l) if tokens > 0 => Ok(l
                .admit(key.as_ref(), Unit::Requests, tokens, Instant::now())
                .await?),
            _ => Ok(()),
        }
    }

    /// A request whose body will name its route, one of `routes`: whether
    /// its head carries a key of one of them. Without one it can only be
    /// for a route that needs no key: refused at once when there is none,
    /// else read as far as those routes allow (and refused when its body
    /// names a route with keys).
    pub fn precheck(&self, routes: &[&Arc<Route>], headers: &HeaderMap) -> Result<bool, Error> {
        match check_any(routes.iter().map(|r| &***r), headers) {
            Ok(()) => Ok(true),
            Err(_) if routes.iter().any(|r| r.auth.is_none()) => Ok(false),
            Err(problem) => Err(Unauthorized {
                route: None,
                problem,
            }
            .into()),
        }
    }

    /// A place among its client's gRPC health watches, refused past
    /// [`super::WATCHES_PER_CLIENT`] (none when the client's address is
    /// not known).
    pub fn enter_watch(&self, head: &Parts) -> Result<Option<ClientSlot>, Error> {
        let Some(ClientAddr(ip)) = head.extensions.get::<ClientAddr>() else {
            return Ok(None);
        };
        Ok(Some(self.shared.watches.enter(*ip)?))
    }

    /// Counts the request against its client's requests in flight
    /// (`server.max_requests_per_client`), refusing it past the bound.
    pub fn enter_client(&self, head: &Parts, obs: &Observation) -> Result<(), Error> {
        let (Some(clients), Some(ClientAddr(ip))) =
            (&self.shared.per_client, head.extensions.get::<ClientAddr>())
        else {
            return Ok(());
        };
        obs.hold_client(clients.enter(*ip)?);
        Ok(())
    }
}
