//! Every V2 endpoint that is not `infer` (health, metadata, statistics,
//! `generate_stream` events, the control endpoints a route allows) is
//! proxied as it is: streaming both ways, hop-by-hop headers removed,
//! `Location` rewritten off the backend's address. The body is opened by
//! the gateway for forwarding (see
//! [`client_body::forward`](crate::http::client_body::forward)): bounded on
//! the wire and, when compressed, decompressed, by the route's
//! `max_body_bytes`, its pauses and its whole time by the server's body
//! timeouts.

use http::Response;
use http::request::Parts;
use http_body_util::BodyExt;

use super::render;
use crate::codec::v2::path::Control;
use crate::config::Protocol;
use crate::config::{Config, Route};
use crate::error::Error;
use crate::frontend::{BodyPlan, Call, Frontend, Payload, Routing, Target};
use crate::http::body::Body;
use crate::http::client_body::BodyError;
use crate::http::encoding::{Coding, request_coding};
use crate::http::headers::strip_hop_by_hop;
use crate::infer::route::{self, RouteError};
use crate::infer::stats;
use crate::metrics::Kind;
use crate::observe::Observation;
use crate::upstream::{OutBody, Outgoing, UpstreamError};

/// A V2 endpoint passed through to the backend of the route serving the
/// model it names (the default route when it names none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Passthrough {
    pub model: Option<String>,
    /// A control-plane endpoint, allowed only where the route says so.
    pub control: Option<Control>,
    /// `GET /v2/models/stats`: every model's statistics, of which only
    /// those of the route's own models are answered.
    pub all_stats: bool,
}

impl Frontend for Passthrough {
    fn kind(&self) -> Kind {
        Kind::V2
    }

    fn route<'c>(&self, config: &'c Config, head: &Parts) -> Result<Routing<'c>, Error> {
        let route = route::for_path(config, self.model.as_deref(), head.uri.path())?;
        Ok(Routing::Route {
            route,
            model: self.model.clone().unwrap_or_default(),
        })
    }

    fn allowed(&self, route: &Route) -> Result<(), Error> {
        match self.control {
            Some(kind) if !route.allows_control(kind) => Err(RouteError::ControlDenied {
                route: route.name.clone(),
                kind,
            }
            .into()),
            _ => Ok(()),
        }
    }

    fn body(&self, route: &Route) -> BodyPlan {
        BodyPlan::Forward {
            limit: route.limits.max_body_bytes,
        }
    }

    async fn serve(&self, call: Call<'_>) -> Result<Response<Body>, Error> {
        let Target::Bound { exchange, model } = call.target else {
            return Err(RouteError::Internal {
                what: "a passthrough request came without its route".into(),
            }
            .into());
        };
        let (upstream, obs) = (exchange.upstream, exchange.obs);
        if upstream.backend.protocol() == Protocol::Grpc {
            let body = match call.body {
                Payload::Forward(b) => Some(b),
                Payload::Empty | Payload::Read(_) => None,
            };
            return super::grpc_backend::serve(exchange, call.config, call.head, body).await;
        }
        let mut parts = call.head;
        let coding = request_coding(&parts.headers).unwrap_or(Coding::Identity);
        // The client's `Host` stays: the upstream replaces it with the
        // replica's.
        strip_hop_by_hop(&mut parts.headers);
        if self.all_stats {
            // Read here before the client gets it: as plain JSON.
            parts.headers.remove(http::header::ACCEPT_ENCODING);
        }
        let body = match call.body {
            Payload::Forward(b) => OutBody::Stream(obs.forwarded_request(b).boxed_unsync()),
            // Nothing to stream: the request can be sent again if need be.
            Payload::Empty | Payload::Read(_) => OutBody::Empty,
        };
        let out = Outgoing {
            method: parts.method,
            path: parts
                .uri
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .to_owned(),
            headers: parts.headers,
            body,
            model: Some(model).filter(|m| !m.is_empty()),
            idempotent: false,
            deadline: obs.deadline(),
        };
        let sent = std::time::Instant::now();
        let resp = match upstream.send(out, Some(obs.watch())).await {
            Ok(resp) => resp,
            // Over the limit, or corrupt, while it streamed: say which
            // route's limit, and which coding.
            Err(UpstreamError::RequestBody(BodyError::TooLarge { .. })) => {
                return Err(BodyError::TooLarge {
                    route: exchange.route.name.clone(),
                    limit: exchange.route.limits.max_body_bytes,
                }
                .into());
            }
            Err(UpstreamError::RequestBody(BodyError::BadEncoding { detail, .. })) => {
                return Err(BodyError::BadEncoding {
                    encoding: coding.name(),
                    detail,
                }
                .into());
            }
            Err(e) => return Err(e.into()),
        };
        obs.upstream_first_byte(sent.elapsed());
        obs.backend_status(resp.status());
        let (mut parts, body) = resp.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        if self.all_stats && parts.status.is_success() {
            // Every model's statistics: those of the route's own models.
            let body = obs.backend_body(body, sent);
            let limit =
                usize::try_from(exchange.route.limits.max_response_bytes).unwrap_or(usize::MAX);
            let whole = http_body_util::Limited::new(body, limit)
                .collect()
                .await
                .map_err(|e| upstream.body_error(&*e))?
                .to_bytes();
            let kept = stats::retain_json(call.config, exchange.route, &whole)?;
            parts
                .headers
                .insert(http::header::CONTENT_LENGTH, kept.len().into());
            return Ok(Response::from_parts(parts, crate::http::body::full(kept)));
        }
        // Metered once, as the client's reply and the backend's body.
        obs.relay(sent);
        Ok(Response::from_parts(parts, body.boxed_unsync()))
    }

    fn render(&self, e: &Error, _obs: &Observation) -> Response<Body> {
        render(e)
    }
}
