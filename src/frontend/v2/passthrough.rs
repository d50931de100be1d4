//! Every V2 endpoint that is not `infer` (health, metadata, statistics,
//! `generate_stream` events, the control endpoints a route allows) is a
//! call of the core's ([`calls`](crate::infer::calls)): to a backend that
//! speaks HTTP it is proxied as it is — streaming both ways, hop-by-hop
//! headers removed, `Location` rewritten off the backend's address — and
//! to one that speaks gRPC it is translated to the call that stands for
//! it, answered here in the V2 JSON form. The body is opened by the
//! gateway for forwarding (see
//! [`client_body::forward`](crate::http::client_body::forward)): bounded on
//! the wire and, when compressed, decompressed, by the route's
//! `max_body_bytes`, its pauses and its whole time by the server's body
//! timeouts.

use http::Response;
use http::request::Parts;

use super::render;
use crate::codec::v2::path::Control;
use crate::config::{Config, Route};
use crate::error::Error;
use crate::frontend::{BodyPlan, Call, Frontend, Payload, Routing, Target};
use crate::http::body::{Body, error_body, json_response};
use crate::infer::calls::{self, Answer, Origin};
use crate::infer::route::{self, RouteError};
use crate::metrics::Kind;
use crate::observe::Observation;

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
    type Named = ();

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
        let Target::Bound { exchange, .. } = call.target else {
            return Err(RouteError::Internal {
                what: "a passthrough request came without its route".into(),
            }
            .into());
        };
        let mut parts = call.head;
        if self.all_stats {
            // Read before the client gets it: as plain JSON.
            parts.headers.remove(http::header::ACCEPT_ENCODING);
        }
        let body = match call.body {
            Payload::Forward(b) => Some(b),
            Payload::Empty | Payload::Read(_) => None,
        };
        let request = calls::Call {
            origin: Origin::Http { parts, body },
            all_stats: self.all_stats,
        };
        match crate::infer::backend::call(exchange, call.config, request).await? {
            Answer::Http(resp) => Ok(resp),
            Answer::Translated(translated) => Ok(translated.1.to_http()?),
            // A gRPC backend's refusal of a call made for this request:
            // the status its code stands for, with its message.
            Answer::Refused { code, message } => {
                let status = http::StatusCode::from_u16(code.http())
                    .unwrap_or(http::StatusCode::BAD_GATEWAY);
                Ok(json_response(status, error_body(&message)))
            }
            Answer::Grpc(_) => Err(RouteError::Internal {
                what: "a V2 request was answered in gRPC".into(),
            }
            .into()),
        }
    }

    fn render(&self, e: &Error, _obs: &Observation) -> Response<Body> {
        render(e)
    }
}
