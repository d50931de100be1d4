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
pub mod reply;
pub mod request;
mod stream;

use std::sync::Arc;
use std::time::Instant;

use http::header::{self, HeaderValue};
use http::{Request, Response};
use hyper::body::Incoming;

pub use request::{Call, Param, RequestError};

use crate::config::{Config, Route};
use crate::gateway::body::{Body, ChunksBody};
use crate::gateway::client_body::ClientBody;
use crate::gateway::core::backend::{self, Sent};
use crate::gateway::core::{Exchange, InferRequest, ModelRef};
use crate::gateway::error::GatewayError;
use crate::gateway::headers::trace_headers;
use crate::gateway::observe::Observation;

/// What the gateway lends the frontend: the configuration, a way to make
/// an [`Exchange`] for the route it chooses, and the checks of who calls.
pub trait Routes {
    fn config(&self) -> &Config;
    /// The exchange for a request bound to `route`: the backend chosen
    /// for it (by weight, or the one `x-tensorgate-backend` names where
    /// allowed).
    fn exchange<'a>(
        &'a self,
        route: &'a Route,
        obs: &'a Observation,
    ) -> Result<Exchange<'a>, GatewayError>;
    /// Checks the caller's key (from `headers`) against `route`'s and takes
    /// the request's token (`gateway::guard`); SigV4 is not taken.
    fn authorize(
        &self,
        route: &Route,
        headers: &http::HeaderMap,
        obs: &Observation,
    ) -> Result<(), GatewayError>;
    /// Records `key` as the caller on `route` and takes the request's token
    /// (after a signature over the body verified).
    fn admit_caller(
        &self,
        route: &Route,
        key: Option<Arc<str>>,
        obs: &Observation,
    ) -> Result<(), GatewayError>;
}

/// The route and backend model a call is for, if any route serves
/// `model_id` under `prefix` with the frontend on: a route's own `model_ids`
/// mapping first, else `model_id` as a model name.
pub fn resolve<'a>(
    config: &'a Config,
    prefix: &str,
    model_id: &str,
) -> Option<(&'a Arc<Route>, String)> {
    let serves = |r: &Route| r.decthings.enabled && r.decthings.prefix == prefix;
    if let Some((route, model)) = config
        .routes
        .iter()
        .filter(|r| serves(r))
        .find_map(|r| r.decthings.model_ids.get(model_id).map(|m| (r, m.clone())))
    {
        return Some((route, model));
    }
    config
        .route_for_model(model_id)
        .filter(|r| serves(r))
        .map(|r| (r, model_id.to_owned()))
}

/// The largest body any Decthings route accepts: the bound while the body
/// is read, before the call says which route it is for.
pub fn body_limit(config: &Config) -> u64 {
    config
        .routes
        .iter()
        .filter(|r| r.decthings.enabled)
        .map(|r| r.limits.max_body_bytes)
        .max()
        .unwrap_or(0)
}

/// Serves one `Model.evaluate` call.
pub async fn evaluate<R: Routes>(
    routes: &R,
    prefix: &str,
    req: Request<Incoming>,
    obs: &Observation,
) -> Result<Response<Body>, GatewayError> {
    let config = routes.config();
    let (parts, body) = req.into_parts();
    let mut body = ClientBody::open(
        &parts.headers,
        body,
        "decthings",
        body_limit(config),
        (&config.server).into(),
    )?;
    let bytes = body.collect(None).await?;
    let started = Instant::now();
    let call = request::parse(&bytes).map_err(Box::new)?;
    let (route, model) =
        resolve(config, prefix, &call.model_id).ok_or_else(|| GatewayError::NoRoute {
            model: call.model_id.clone(),
        })?;
    obs.bind(route, &model);
    obs.client_in(body.wire_bytes());
    // The key was checked against every route under the prefix before the
    // body was read; now against the route the call is for.
    routes.authorize(route, &parts.headers, obs)?;
    request::check_size(route, &call.params, bytes.len() as u64)?;
    let x = routes.exchange(route, obs)?;
    let model = ModelRef {
        name: model,
        version: call.snapshot_id,
    };
    let inputs = request::to_inputs(route, call.params)?;
    let infer = InferRequest::new(model.clone(), inputs);
    obs.elements("request", infer.element_count());
    let prepared = backend::prepare(x, infer).await?;
    obs.translation("request", started.elapsed());
    let sent_at = Instant::now();
    let reply = match prepared.send(x, trace_headers(&parts.headers)).await? {
        Sent::Failed(resp) => return Err(backend::refusal(x, &model, resp).await),
        Sent::Reply(reply) => reply,
    };
    let head = reply.head(x).await?;
    if stream::streamable(route, &head.doc) {
        // Every output's size is in the header: the reply streams as the
        // backend's bytes arrive (evaluate is the time to the backend's
        // answer; the transfer follows).
        let durations = reply::Durations {
            total: obs.elapsed(),
            evaluate: sent_at.elapsed(),
        };
        obs.elements("response", head.doc.element_count());
        let body = stream::body(&head.doc, head.after, head.stream.into_inner(), durations)
            .map_err(|e| GatewayError::DecthingsOutput(Box::new(e)))?;
        let len = http_body::Body::size_hint(&body).exact().unwrap_or(0);
        let mut resp = octet_stream_body(http_body_util::BodyExt::boxed_unsync(body));
        resp.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
        return Ok(resp);
    }
    let (_, reply) = head.collect(x).await?;
    let evaluate = sent_at.elapsed();
    let converting = Instant::now();
    obs.elements("response", reply.element_count());
    let durations = reply::Durations {
        total: obs.elapsed(),
        evaluate,
    };
    let chunks = reply::success(route, &reply, durations)
        .map_err(|e| GatewayError::DecthingsOutput(Box::new(e)))?;
    obs.translation("response", converting.elapsed());
    Ok(octet_stream(ChunksBody::new(chunks)))
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
