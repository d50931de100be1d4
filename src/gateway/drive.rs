//! The one path every request takes. The frontend says which route a
//! request is for; here it is bound to that route and observed, the route
//! is asked whether it allows the request, the request is counted against
//! its client's bound (`max_requests_per_client`, when set), the caller is
//! checked against the route's keys and rate limits (before a slot is
//! taken or a byte of the body read, wherever the head names the route),
//! a request slot is taken, the body is opened with the route's limits and
//! the server's timeouts, the checked credentials are taken out of the
//! head, and the frontend serves it. A SigV4-signed body is read whole
//! and verified *before* the request takes a slot, within
//! `max_signed_body_bytes` and the server's budget for unverified bodies:
//! a signature is only known good once the body is in, and a forged one
//! with a known key name must cost neither a slot nor unbounded memory.
//! Whatever fails becomes the frontend's rendering of its class, with
//! `Retry-After` where the class says when to retry.
//!
//! The body's total deadline holds here whether or not anything reads the
//! body (the request is raced against it); a body dropped unread says
//! whether the connection can carry another request, and the answer says
//! `Connection: close` when it cannot; a reply to a client that cannot be
//! told of a cut (HTTP/1.0) is held whole first ([`super::whole`]).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use http::request::Parts;
use http::{HeaderMap, HeaderValue, Request, Response, Version, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::Gateway;
use super::dispatch::{self, Endpoint};
use super::whole;
use crate::config::{Config, Route};
use crate::error::{DeadlineExceeded, Error};
use crate::frontend::{
    Binding, BodyPlan, Call, Frontend, Named, Payload, Routing, Services, Target, grpc, v2,
};
use crate::guard::Checked;
use crate::guard::Unauthorized;
use crate::guard::clients::ClientAddr;
use crate::guard::sigv4::Claim;
use crate::http::body::Body;
use crate::http::client_body::{self, BodyError, ClientBody};
use crate::http::headers::strip_credentials;
use crate::http::wire::{BodyClock, Wire};
use crate::infer;
use crate::infer::split;
use crate::observe::{Metered, Observation, Start, ensure_request_id_made, traced_request_id};
use std::future::Future;
use std::pin::Pin;

/// One request being served: the future of its frontend's path alone, boxed
/// once (a future holding every frontend's path would be as large as the
/// largest, and copied whole into its box for every request).
pub(crate) type Handling = Pin<Box<dyn Future<Output = Response<Metered<Body>>> + Send>>;

impl Gateway {
    /// Serves one request from the client at `peer` (when known); every
    /// error becomes its response here, and every request is observed.
    pub fn handle(self, mut req: Request<Incoming>, peer: Option<IpAddr>) -> Handling {
        let endpoint = dispatch::endpoint(&req, &self.shared.prefixes);
        // Only the per-client bounds read it: a request's first extension
        // allocates its map (measurable with scripts/bench/instructions.sh).
        let watch = matches!(&endpoint, Ok(Endpoint::Grpc(r)) if r.method == Some(grpc::Method::HealthWatch));
        if let (true, Some(ip)) = (self.shared.per_client.is_some() || watch, peer) {
            req.extensions_mut().insert(ClientAddr(ip));
        }
        let trace = self
            .shared
            .pipeline
            .as_ref()
            .map(|p| p.request(req.headers()));
        let (request_id, made) = match trace.as_ref().filter(|t| t.sampled()) {
            Some(t) => (traced_request_id(req.headers_mut(), t), false),
            None => ensure_request_id_made(req.headers_mut()),
        };
        let backend_hint = split::take_hint(req.headers_mut());
        let obs = Observation::start(Start {
            metrics: &self.shared.metrics,
            kind: endpoint
                .as_ref()
                .map_or(crate::metrics::Kind::V2, Endpoint::kind),
            request_id,
            method: req.method().clone(),
            path: req.uri().path(),
            backend_hint,
            trace,
        });
        if made {
            obs.id_made();
        }
        let gw = self;
        match endpoint {
            Ok(Endpoint::V2Infer(f)) => boxed(|| gw.drive(f, req, obs)),
            Ok(Endpoint::Passthrough(f)) => boxed(|| gw.drive(f, req, obs)),
            Ok(Endpoint::Decthings(f)) => boxed(|| gw.drive(f, req, obs)),
            Ok(Endpoint::SageMakerPing(f)) => boxed(|| gw.drive(f, req, obs)),
            Ok(Endpoint::SageMaker(f)) => boxed(|| gw.drive(f, req, obs)),
            Ok(Endpoint::Grpc(f)) => boxed(|| gw.drive(f, req, obs)),
            Err(e) => {
                let resp = failed(e.into(), &obs, v2::render);
                Box::pin(std::future::ready(obs.finish(resp)))
            }
        }
    }

    async fn drive<F: Frontend>(
        self,
        f: F,
        req: Request<Incoming>,
        obs: Observation,
    ) -> Response<Metered<Body>> {
        let given = match f.deadline(req.headers()) {
            Ok(given) => given,
            Err(e) => {
                let resp = failed(e, &obs, |e| f.render(e, &obs));
                return obs.finish(resp);
            }
        };
        if let Some(after) = given {
            obs.set_deadline(Instant::now() + after);
        }
        let (mut head, body) = req.into_parts();
        let (version, whole) = (head.version, whole::wanted(&head));
        let timeouts = (&self.shared.config.server).into();
        let clock = BodyClock::for_request(&head.headers, &body, version, timeouts);
        let wire = Wire::new(body, clock.clone());
        // The frontend's future is pinned in this one, not moved into
        // another: each move is one more copy of it per request.
        let served = {
            let serving = std::pin::pin!(async {
                match self.place(&f, &mut head, wire, &obs).await {
                    Ok((target, body, named)) => {
                        // Built where it is handed over: the head is not
                        // moved through the phases (each move a copy).
                        let call = Call {
                            head,
                            body,
                            obs: &obs,
                            target,
                            named,
                            spool: &self.shared.spool,
                            config: &self.shared.config,
                            services: &self,
                        };
                        let serve = std::pin::pin!(f.serve(call));
                        let overdue = std::pin::pin!(clock.overdue());
                        let total = clock.timeouts().total;
                        race(serve, overdue, || {
                            BodyError::Deadline { limit: total }.into()
                        })
                        .await
                    }
                    Err(e) => Err(e),
                }
            });
            match (given, obs.deadline()) {
                (Some(after), Some(at)) => {
                    tokio::select! {
                        biased;
                        served = serving => served,
                        _ = tokio::time::sleep_until(at.into()) => Err(DeadlineExceeded { after }.into()),
                    }
                }
                _ => serving.await,
            }
        };
        let mut resp = match served {
            Ok(resp) => resp,
            Err(e) => failed(e, &obs, |e| f.render(e, &obs)),
        };
        // A reply whose status is in its trailers (gRPC) reads its request
        // stream under the same deadline, and a cut would lose the status.
        // A relayed backend body is metered as the backend's on its own
        // again wherever something comes between it and the client.
        if !clock.ended() && !f.status_in_trailers() {
            resp = obs.unrelay(resp);
            resp = resp.map(|b| clock.bound(b).boxed_unsync());
        }
        if whole && whole::needed(&resp) {
            resp = obs.unrelay(resp);
            resp = match whole::hold(resp, &self.shared.spool).await {
                Ok(resp) => resp,
                Err(e) => failed(e, &obs, |e| f.render(e, &obs)),
            };
        }
        if version < Version::HTTP_2 && !clock.keeps_connection() {
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        obs.finish(resp)
    }

    /// Every phase before the frontend serves: the request bound, checked,
    /// admitted, its body opened; what it is for, its body, and what the
    /// frontend read of it to name its route.
    async fn place<'a, F: Frontend>(
        &'a self,
        f: &F,
        head: &mut Parts,
        body: Wire,
        obs: &'a Observation,
    ) -> Result<(Target<'a>, Payload, Option<F::Named>), Error> {
        Ok(match f.route(&self.shared.config, head)? {
            Routing::Route { route, model } => {
                self.bind_route(route, &model, obs);
                let exchange = self.exchange(route, obs)?;
                f.allowed(route)?;
                let mut claim = None;
                if f.guarded() {
                    self.enter_client(head, obs)?;
                    if self.checks_callers(route) {
                        claim = self
                            .authorize_head(route, &head.headers, f.sigv4(), obs)
                            .await?;
                    }
                    if claim.is_none() {
                        self.admit(obs).await?;
                    }
                }
                let body = match claim {
                    // Verified before it takes a slot.
                    Some(claim) => {
                        let body = self.read_signed(route, &claim, head, body, obs).await?;
                        self.admit(obs).await?;
                        body
                    }
                    None => self.open(head, body, &route.name, f.body(route), obs)?,
                };
                if route.auth.is_some() {
                    strip_credentials(&mut head.headers);
                }
                (Target::Bound { exchange, model }, body, None)
            }
            Routing::Body { routes } => {
                self.enter_client(head, obs)?;
                let keyed = self.precheck(&routes, &head.headers)?;
                self.admit(obs).await?;
                // The largest body any of the routes it may be for takes
                // bounds it while it is read, before it says which route it
                // is for: without a key of one, only the routes that need
                // none.
                let limit = routes
                    .iter()
                    .filter(|r| keyed || r.auth.is_none())
                    .map(|r| match f.body(r) {
                        BodyPlan::Read { limit } | BodyPlan::Forward { limit } => limit,
                        BodyPlan::Ignore => 0,
                    })
                    .max()
                    .unwrap_or(0);
                let plan = BodyPlan::Read { limit };
                let body = self.open(head, body, f.kind().label(), plan, obs)?;
                let named = f.name(&self.shared.config, head, body).await?;
                let exchange = self.bind_named(f, &named, head, obs).await?;
                let model = named.model;
                (
                    Target::Bound { exchange, model },
                    Payload::Empty,
                    Some(named.rest),
                )
            }
            Routing::Gateway { body_limit, watch } => {
                let watch = match watch {
                    true => {
                        obs.not_in_flight();
                        self.enter_watch(head)?
                    }
                    false => None,
                };
                let plan = BodyPlan::Read { limit: body_limit };
                let body = self.open(head, body, f.kind().label(), plan, obs)?;
                let health = self.health();
                (Target::Gateway { health, watch }, body, None)
            }
        })
    }

    /// Binds a request whose body named its route, as one whose head did:
    /// observed under the route, allowed by it, its caller checked against
    /// its keys and its tokens taken, what was read held to the route's
    /// body limit (it was read under the largest of the routes it could be
    /// for); its exchange.
    async fn bind_named<'a, F: Frontend>(
        &'a self,
        f: &F,
        named: &Named<'a, F::Named>,
        head: &Parts,
        obs: &'a Observation,
    ) -> Result<infer::Exchange<'a>, Error> {
        let route = named.route;
        self.bind_route(route, &named.model, obs);
        f.allowed(route)?;
        if self.checks_callers(route) {
            // SigV4 is not taken here: the check gives a key or fails.
            if let Checked::Key(key) = self.check_head(route, &head.headers, false)? {
                self.take_caller(route, key, obs, named.tokens).await?;
            }
        }
        f.check_named(route, &named.rest)?;
        let limit = route.limits.max_body_bytes;
        if named.read > limit {
            return Err(BodyError::TooLarge {
                route: route.name.clone(),
                limit,
            }
            .into());
        }
        Ok(self.exchange(route, obs)?)
    }

    /// Takes a request slot for the rest of the request.
    async fn admit(&self, obs: &Observation) -> Result<(), Error> {
        obs.hold(self.shared.admission.admit().await?);
        Ok(())
    }

    /// Opens the body as `plan` says, with the server's body timeouts; its
    /// wire bytes are counted for the request. Errors name `route`.
    fn open(
        &self,
        head: &Parts,
        body: Wire,
        route: &str,
        plan: BodyPlan,
        obs: &Observation,
    ) -> Result<Payload, Error> {
        Ok(match plan {
            BodyPlan::Read { limit } => {
                let body = ClientBody::open(&head.headers, body, route, limit)?;
                Payload::Read(body.metered(obs.wire_meter()))
            }
            BodyPlan::Forward { limit } => {
                match client_body::forward(&head.headers, body, route, limit)? {
                    Some(b) => Payload::Forward(b),
                    None => Payload::Empty,
                }
            }
            BodyPlan::Ignore => Payload::Empty,
        })
    }

    /// A SigV4-signed body: read whole (bounded by the route's
    /// `max_signed_body_bytes`, at most its `max_body_bytes`), holding its
    /// size of the server's budget for unverified bodies (refused at once
    /// when that is spent), its signature verified over it; then the
    /// caller is known and takes the request's token.
    async fn read_signed(
        &self,
        route: &Route,
        claim: &Claim,
        head: &Parts,
        body: Wire,
        obs: &Observation,
    ) -> Result<Payload, Error> {
        let limits = &route.limits;
        let limit = limits.max_signed_body_bytes.min(limits.max_body_bytes);
        let declared = client_body::check_declared_length(&head.headers, &route.name, limit)?;
        // A compressed body may inflate to the limit whatever it declares.
        let coded = head.headers.contains_key(header::CONTENT_ENCODING);
        let size = declared.filter(|_| !coded).unwrap_or(limit);
        let held = self.shared.unverified.hold(size)?;
        let mut body = ClientBody::open(&head.headers, body, &route.name, limit)?
            .with_wire_digest()
            .metered(obs.wire_meter());
        body.read_whole().await?;
        let digest = body.wire_digest().unwrap_or_default();
        claim
            .verify(head, &digest)
            .map_err(|problem| Unauthorized {
                route: Some(route.name.clone()),
                problem,
            })?;
        drop(held);
        self.admit_caller(route, Some(claim.key().clone()), obs)
            .await?;
        Ok(Payload::Read(body))
    }
}

impl Services for Gateway {
    fn config(&self) -> &Config {
        &self.shared.config
    }

    fn bind_message<'a>(
        &'a self,
        route: &'a Arc<Route>,
        model: &str,
        headers: &HeaderMap,
        obs: &'a Observation,
    ) -> Binding<'a> {
        self.bind_route(route, model, obs);
        let checked = self.check_head(route, headers, false);
        Box::pin(async move {
            // SigV4 is not taken here: the check gives a key or fails.
            if let Checked::Key(key) = checked? {
                self.admit_caller(route, key, obs).await?;
            }
            Ok(self.exchange(route, obs)?)
        })
    }

    fn owned(&self) -> Arc<dyn Services> {
        Arc::new(self.clone())
    }
}

/// The future `make` returns, built in its box. `Box::pin(make())` builds
/// it on the stack and copies all of it into the box, though a future not
/// yet polled holds only its arguments: a request's future has room for
/// every phase of its frontend (the V2 infer's runs to kilobytes, all of
/// them copied for every request; see docs/PERFORMANCE.md, "What each
/// decision bought"). Allocated first, the box is where the optimizer
/// builds it.
fn boxed<F>(make: impl FnOnce() -> F) -> Handling
where
    F: Future<Output = Response<Metered<Body>>> + Send + 'static,
{
    let slot = Box::<F>::new_uninit();
    let built: Box<F> = Box::write(slot, make());
    Box::into_pin(built)
}

/// `serve` unless `overdue` comes first; then `late()`. Polled in place: the
/// frontend's future is not moved into another.
async fn race<S, O>(
    mut serve: Pin<&mut S>,
    mut overdue: Pin<&mut O>,
    late: impl Fn() -> Error,
) -> Result<Response<Body>, Error>
where
    S: Future<Output = Result<Response<Body>, Error>>,
    O: Future<Output = ()>,
{
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(r) = serve.as_mut().poll(cx) {
            return std::task::Poll::Ready(r);
        }
        overdue.as_mut().poll(cx).map(|()| Err(late()))
    })
    .await
}

/// The response for a failed request: counted, logged at debug, rendered
/// by the frontend, with `Retry-After` when its class says when to retry.
fn failed(
    e: Error,
    obs: &Observation,
    render: impl FnOnce(&Error) -> Response<Body>,
) -> Response<Body> {
    obs.error(&e);
    let class = e.class();
    tracing::debug!(error = %e, status = class.status().as_u16(), "request failed");
    let mut resp = render(&e);
    if let Some(seconds) = class.retry_after() {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, seconds.into());
    }
    resp
}
