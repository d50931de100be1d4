//! The protocols clients speak to the gateway, one module each:
//!
//! - [`v2`]: KServe / Triton V2 `infer` (JSON, binary extension, raw), and
//!   every other V2 endpoint passed through ([`v2::Passthrough`]);
//! - [`decthings`]: the Decthings `Model.evaluate` RPC;
//! - [`sagemaker`]: SageMaker's `/invocations`, `/ping` and the Runtime API
//!   path, for CSV, JSON, JSON Lines and RecordIO-protobuf records.
//!
//! Each implements [`Frontend`], whose phases the gateway drives the same
//! way for every request: the frontend says from the request's head which
//! route it is for ([`Frontend::route`]) and how its body is to be opened;
//! the gateway binds the request to that route, checks the caller against
//! the route's keys and rate limits, takes a request slot, opens the body
//! with the route's limits and the server's timeouts, strips the checked
//! credentials, and observes the request; the frontend then reads its
//! protocol into the core's [`InferRequest`](crate::infer::InferRequest)
//! and answers ([`Frontend::serve`]), or renders an error in its protocol's
//! shape ([`Frontend::render`]). Frontends never open connections: the
//! core's backend client does. They never see another frontend.

pub mod decthings;
pub mod grpc;
pub mod sagemaker;
pub mod v2;

use std::future::Future;
use std::sync::Arc;

use http::request::Parts;
use http::{HeaderMap, Response};

use crate::config::{Config, Route};
use crate::error::Error;
use crate::guard::clients::ClientSlot;
use crate::http::body::Body;
use crate::http::client_body::ClientBody;
use crate::http::spool::SpoolLimits;
use crate::infer::Exchange;
use crate::infer::route::RouteError;
use crate::metrics::Kind;
use crate::observe::Observation;

/// A client protocol, as the gateway drives it.
pub trait Frontend: Sync {
    /// What reading a request far enough to name its route gave, for a
    /// request whose body names it ([`Frontend::name`]): the rest of the
    /// request, which [`Frontend::serve`] goes on with. `()` for frontends
    /// whose requests' heads name their route.
    type Named: Send;

    /// The `kind` label of its requests.
    fn kind(&self) -> Kind;

    /// The route the request is for, and its model, as far as its head
    /// says; or the routes it may be for when only its body names one.
    fn route<'c>(&self, config: &'c Config, head: &Parts) -> Result<Routing<'c>, Error>;

    /// Reads the body of a request whose body names its route
    /// ([`Routing::Body`]) as far as it takes to name it; the gateway
    /// then binds the request to that route as it binds one its head
    /// names. Frontends whose heads name the route never get here.
    fn name<'c>(
        &self,
        _config: &'c Config,
        _head: &Parts,
        _body: Payload,
    ) -> impl Future<Output = Result<Named<'c, Self::Named>, Error>> + Send {
        std::future::ready(Err(RouteError::Internal {
            what: "a request whose head names its route was asked to name it".into(),
        }
        .into()))
    }

    /// Checks what naming the route read against that route, before the
    /// body's size is held to the route's limit (a frontend naming what
    /// is too large in its own terms).
    fn check_named(&self, _route: &Route, _named: &Self::Named) -> Result<(), Error> {
        Ok(())
    }

    /// Whether its replies end with their status in trailers (gRPC): a
    /// reply cut by the body's deadline would lose it, so the request's
    /// body deadline is not put on the reply.
    fn status_in_trailers(&self) -> bool {
        false
    }

    /// Whether the bound route allows this request at all (checked before
    /// its credentials).
    fn allowed(&self, _route: &Route) -> Result<(), Error> {
        Ok(())
    }

    /// Whether the request's caller is checked and the request takes a
    /// slot. SageMaker's `/ping` is neither: a ping refused would have the
    /// platform replace a healthy container.
    fn guarded(&self) -> bool {
        true
    }

    /// Whether a SigV4 signature is taken as credentials. A signed request
    /// is read whole (bounded by the route's `max_signed_body_bytes`) and
    /// verified before it takes a request slot and the frontend sees it.
    fn sigv4(&self) -> bool {
        false
    }

    /// The time the client gives the request, when its protocol carries
    /// one (gRPC's `grpc-timeout`): the request is given up once it runs
    /// out, and backend exchanges are bounded by it.
    fn deadline(&self, _head: &http::HeaderMap) -> Result<Option<std::time::Duration>, Error> {
        Ok(None)
    }

    /// How the body is opened on `route`.
    fn body(&self, route: &Route) -> BodyPlan {
        BodyPlan::Read {
            limit: route.limits.max_body_bytes,
        }
    }

    /// Reads the request, sends it through the core, and answers.
    fn serve(
        &self,
        call: Call<'_, Self::Named>,
    ) -> impl Future<Output = Result<Response<Body>, Error>> + Send;

    /// An error, in this protocol's shape.
    fn render(&self, e: &Error, obs: &Observation) -> Response<Body>;
}

/// Which route a request is for.
#[derive(Debug)]
pub enum Routing<'c> {
    /// The head names it.
    Route {
        route: &'c Arc<Route>,
        model: String,
    },
    /// The body will: one of these routes.
    Body { routes: Vec<&'c Arc<Route>> },
    /// None: the gateway answers itself (gRPC health). Not bound, not
    /// checked, no slot; a body of at most `body_limit` bytes is read.
    /// A `watch` lasts as long as its client likes: it is not counted as
    /// a request in flight, and takes a place among its client's watches.
    Gateway { body_limit: u64, watch: bool },
}

/// How a request body is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyPlan {
    /// Read by the frontend: decompressed, at most `limit` bytes.
    Read { limit: u64 },
    /// Forwarded to the backend as it is, at most `limit` bytes (and, when
    /// compressed, at most `limit` decompressed).
    Forward { limit: u64 },
    /// Not opened: the frontend does not read it.
    Ignore,
}

/// What naming a request's route from its body came to.
#[derive(Debug)]
pub struct Named<'c, N> {
    pub route: &'c Arc<Route>,
    pub model: String,
    /// Bytes of the body read to name it: held to the route's body limit.
    pub read: u64,
    /// Request tokens it takes from the route's rate limits: one, or none
    /// for a stream, whose every message takes its own.
    pub tokens: u64,
    /// The rest of the request, for [`Frontend::serve`].
    pub rest: N,
}

/// One request, handed to the frontend once the gateway has bound,
/// checked and admitted it.
#[derive(Debug)]
pub struct Call<'a, N = ()> {
    /// The request head, the checked credentials taken out.
    pub head: Parts,
    pub body: Payload,
    pub obs: &'a Observation,
    pub target: Target<'a>,
    /// What [`Frontend::name`] read, for a request whose body named its
    /// route.
    pub named: Option<N>,
    /// What a reply may hold for a client not taking it yet.
    pub spool: &'a SpoolLimits,
    /// The configuration the request is served under.
    pub config: &'a Config,
    /// The gateway, for what binds after the request was: each message of
    /// a stream.
    pub services: &'a dyn Services,
}

/// The body as the frontend gets it. Made once per request and moved once:
/// boxing the read body (224 bytes) would cost an allocation per request.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Payload {
    Read(ClientBody),
    Forward(Body),
    /// A forwarded request that has no body.
    Empty,
}

impl Payload {
    /// The body to read: what a frontend whose plan is
    /// [`BodyPlan::Read`] always gets.
    pub fn into_read(self) -> Result<ClientBody, RouteError> {
        match self {
            Payload::Read(b) => Ok(b),
            Payload::Forward(_) | Payload::Empty => Err(RouteError::Internal {
                what: "a body opened for forwarding was to be read".into(),
            }),
        }
    }
}

/// Where the request goes.
#[derive(Debug)]
pub enum Target<'a> {
    /// Bound to its route (named by its head or its body): its exchange
    /// and model.
    Bound {
        exchange: Exchange<'a>,
        model: String,
    },
    /// Answered by the gateway itself, from its readiness; a watch holds
    /// its place among its client's watches for as long as it lasts.
    Gateway {
        health: Health,
        watch: Option<ClientSlot>,
    },
}

/// Whether the gateway, or one of its routes, can serve: `ready("")` for
/// the gateway as `/readyz` says (not while draining), `ready(route)` for
/// the route of that name; `None` for a name that is no route's.
#[derive(Clone)]
pub struct Health(Arc<ReadyFn>);

type ReadyFn = dyn Fn(&str) -> Option<bool> + Send + Sync;

impl Health {
    pub fn new(f: impl Fn(&str) -> Option<bool> + Send + Sync + 'static) -> Health {
        Health(Arc::new(f))
    }

    pub fn ready(&self, service: &str) -> Option<bool> {
        (self.0)(service)
    }
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Health")
    }
}

/// What the gateway lends a frontend for what binds after its request
/// was: the messages of a stream.
pub trait Services: Send + Sync + std::fmt::Debug {
    fn config(&self) -> &Config;

    /// Binds one message of a stream, observed by `obs` (its own), to the
    /// route its model names, like a unary call: its caller checked with
    /// the stream's `headers` against the route's keys, one token taken,
    /// its backend chosen.
    fn bind_message<'a>(
        &'a self,
        route: &'a Arc<Route>,
        model: &str,
        headers: &HeaderMap,
        obs: &'a Observation,
    ) -> Binding<'a>;

    /// The same services, owned: for a stream's task, which outlives the
    /// call that started it.
    fn owned(&self) -> Arc<dyn Services>;
}

/// What [`Services::bind_message`] comes to: the exchange, once the caller's
/// limits (which may be shared with other gateways) have answered.
pub type Binding<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Exchange<'a>, Error>> + Send + 'a>>;
