//! The Decthings frontend: the `Model.evaluate` HTTP RPC of the official
//! Decthings clients, at `POST {prefix}/Model/evaluate` (`/v0` by default,
//! per route), served from a V2 backend.
//!
//! `modelId` names the backend model (or is mapped to one by a route's
//! `[routes.decthings.model_ids]`), `snapshotId` its version; each input
//! parameter becomes the V2 input of the same name and each backend output
//! an output parameter of the same name. Numeric tensors travel as slices of
//! the request and of the backend's reply, never copied. What the official
//! client sends and accepts is in docs/DECTHINGS-CLIENT.md; errors are
//! rendered in [`error`].

pub mod error;
mod media;
mod render;
pub mod reply;
pub mod request;
mod stream;

use std::sync::Arc;
use std::time::Instant;

use http::Response;
use http::header::{self, HeaderValue};
use http::request::Parts;

pub use error::{DecthingsError, InputProblem, OutputError, RequestError};
pub use request::{Param, Parsed};

use super::{Call, Frontend, Named, Payload, Routing, Target};
use crate::config::{Config, Route};
use crate::error::Error;
use crate::http::body::{Body, ChunksBody};
use crate::http::headers::trace_headers;
use crate::infer::call::InferCall;
use crate::infer::route::{self, RouteError};
use crate::infer::{InferRequest, ModelRef};
use crate::metrics::Kind;
use crate::observe::{Direction, Observation};

/// `{prefix}/Model/evaluate`: one call of the Decthings RPC. Its body names
/// the model, and so the route: the gateway checks the caller against the
/// keys of every route under the prefix before the body is read, and
/// against the route's own once the body names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evaluate {
    pub prefix: String,
}

/// A call read far enough to name its route: parsed, and when reading
/// it was done (its translation counts from there).
#[derive(Debug)]
pub struct Read {
    parsed: Parsed,
    started: Instant,
}

impl Frontend for Evaluate {
    type Named = Read;

    fn kind(&self) -> Kind {
        Kind::Decthings
    }

    fn route<'c>(&self, config: &'c Config, head: &Parts) -> Result<Routing<'c>, Error> {
        route::require_post(head)?;
        let routes = config.routes.iter().filter(|r| self.serves(r)).collect();
        Ok(Routing::Body { routes })
    }

    /// The call's body read whole and parsed: its `modelId` names the
    /// route (and the backend model).
    async fn name<'c>(
        &self,
        config: &'c Config,
        _head: &Parts,
        body: Payload,
    ) -> Result<Named<'c, Read>, Error> {
        let mut body = body.into_read()?;
        let bytes = body.collect(None).await?;
        let started = Instant::now();
        let parsed = request::parse(&bytes).map_err(DecthingsError::from)?;
        let (route, model) =
            resolve(config, &self.prefix, &parsed.model_id).ok_or_else(|| RouteError::NoRoute {
                model: parsed.model_id.clone(),
            })?;
        Ok(Named {
            route,
            model,
            read: bytes.len() as u64,
            tokens: 1,
            rest: Read { parsed, started },
        })
    }

    /// A parameter over the route's body limit on its own is named.
    fn check_named(&self, route: &Route, read: &Read) -> Result<(), Error> {
        request::check_params(route, &read.parsed.params)
    }

    async fn serve(&self, call: Call<'_, Read>) -> Result<Response<Body>, Error> {
        let (Target::Bound { exchange, model }, Some(read)) = (call.target, call.named) else {
            return Err(RouteError::Internal {
                what: "a Decthings call came without its route".into(),
            }
            .into());
        };
        let (head, obs, route) = (call.head, call.obs, exchange.route);
        let Read { parsed, started } = read;
        let model = ModelRef {
            name: model,
            version: parsed.snapshot_id,
        };
        let inputs = request::to_inputs(route, parsed.params)?;
        let infer = InferRequest::new(model, inputs);
        let sent_at = Instant::now();
        let reply = InferCall::new(exchange, trace_headers(&head.headers), started)
            .reply(infer)
            .await?;
        let head = reply.head(exchange).await?;
        if stream::streamable(route, &head.doc) {
            // Every output's size is in the header: the reply streams as the
            // backend's bytes arrive (evaluate is the time to the backend's
            // answer; the transfer follows).
            let durations = reply::Durations {
                total: obs.elapsed(),
                evaluate: sent_at.elapsed(),
            };
            obs.elements(Direction::Response, head.doc.element_count());
            let body = stream::body(&head.doc, head.after, head.stream.into_inner(), durations)
                .map_err(DecthingsError::from)?;
            let len = http_body::Body::size_hint(&body).exact().unwrap_or(0);
            let mut resp = octet_stream_body(http_body_util::BodyExt::boxed_unsync(body));
            resp.headers_mut()
                .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
            return Ok(resp);
        }
        let (_, reply) = head.collect(exchange).await?;
        let evaluate = sent_at.elapsed();
        let converting = Instant::now();
        obs.elements(Direction::Response, reply.element_count());
        let durations = reply::Durations {
            total: obs.elapsed(),
            evaluate,
        };
        let chunks = reply::success(route, &reply, durations).map_err(DecthingsError::from)?;
        obs.translation(Direction::Response, converting.elapsed());
        Ok(octet_stream(ChunksBody::new(chunks)))
    }

    fn render(&self, e: &Error, obs: &Observation) -> Response<Body> {
        render::render(e, obs)
    }
}

impl Evaluate {
    /// Whether `route` answers Decthings calls under this prefix.
    fn serves(&self, route: &Route) -> bool {
        route.decthings.enabled && route.decthings.prefix == self.prefix
    }
}

/// The route and backend model a call is for, if any route serves
/// `model_id` under `prefix` with the frontend on: a route's own `model_ids`
/// mapping first, else `model_id` as a model name.
pub fn resolve<'a>(
    config: &'a Config,
    prefix: &str,
    model_id: &str,
) -> Option<(&'a Arc<Route>, String)> {
    let call = Evaluate {
        prefix: prefix.to_owned(),
    };
    if let Some((route, model)) = config
        .routes
        .iter()
        .filter(|r| call.serves(r))
        .find_map(|r| r.decthings.model_ids.get(model_id).map(|m| (r, m.clone())))
    {
        return Some((route, model));
    }
    route::for_model(config, model_id, |r| call.serves(r))
        .ok()
        .map(|r| (r, model_id.to_owned()))
}

fn octet_stream(body: ChunksBody) -> Response<Body> {
    let len = body.len();
    let mut resp = octet_stream_body(body.boxed());
    resp.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    resp
}

fn octet_stream_body(body: Body) -> Response<Body> {
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    resp
}

#[cfg(test)]
mod tests;
