//! The V2 frontend: `POST /v2/models/{m}[/versions/{v}]/infer` from JSON,
//! binary-extension and raw binary clients ([`Infer`]), and every other V2
//! endpoint passed through to the route's backend ([`Passthrough`]). An
//! infer request is read into the core's [`InferRequest`] (zero-copy for
//! binary data, converted while it streams for JSON), and the backend's
//! reply rendered the way the client asked — passing binary through and
//! streaming JSON as the backend's bytes arrive where it can.

mod error;
mod json_stream;
mod passthrough;
mod read;
mod reply;

use std::time::Instant;

use http::Response;
use http::header::{self, HeaderName};
use http::request::Parts;

pub use crate::http::body::error_body;
pub use error::{V2Error, WWW_AUTHENTICATE, render};
pub use json_stream::write_values;
pub use passthrough::Passthrough;
use read::EarlyStart;
pub use read::{BinaryLabel, ClientFraming, feed};
pub use reply::Wanted;

use super::{Call, Frontend, Routing, Target};
use crate::codec::v2::OutputSelection;
use crate::config::Config;
use crate::error::Error;
use crate::http::body::Body;
use crate::http::encoding::negotiate;
use crate::http::headers::strip_hop_by_hop;
use crate::infer::call::InferCall;
use crate::infer::route::{self, RouteError};
use crate::infer::{InferError, InferRequest, ModelRef, backend, raw_input};
use crate::metrics::Kind;
use crate::observe::Observation;

/// `POST /v2/models/{m}[/versions/{v}]/infer`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Infer {
    pub model: ModelRef,
}

impl Frontend for Infer {
    type Named = ();

    fn kind(&self) -> Kind {
        Kind::V2
    }

    fn route<'c>(&self, config: &'c Config, head: &Parts) -> Result<Routing<'c>, Error> {
        let route = route::for_path(config, Some(&self.model.name), head.uri.path())?;
        Ok(Routing::Route {
            route,
            model: self.model.name.clone(),
        })
    }

    async fn serve(&self, call: Call<'_>) -> Result<Response<Body>, Error> {
        let Target::Bound { exchange, .. } = call.target else {
            return Err(unbound().into());
        };
        let Call { head, body, .. } = call;
        let mut body = body.into_read()?;
        let route = exchange.route;
        let framing = ClientFraming::of(route, &head.headers)?;
        let headers = forwarded_headers(&head.headers);
        let coding = negotiate(&head.headers);
        let model = self.model.clone();
        let started = Instant::now();
        let (header, data, label, early) = match framing {
            ClientFraming::Json => {
                let start = EarlyStart {
                    exchange,
                    model: &model,
                    headers: &headers,
                };
                let read = read::read_json(route, &mut body, Some(start)).await?;
                (read.header, read.data, BinaryLabel::Ihcl, read.early)
            }
            ClientFraming::Binary { header_len, label } => {
                let (h, d) = read::read_binary(route, &mut body, header_len).await?;
                (h, d, label, None)
            }
            ClientFraming::Raw => {
                let raw = body.collect(None).await?;
                drop(body);
                route
                    .rules
                    .check_raw(raw.len() as u64)
                    .map_err(|violation| InferError::Rule {
                        route: route.name.clone(),
                        violation,
                    })?;
                raw_input::check(exchange, &model, raw.len() as u64).await?;
                let call = InferCall::new(exchange, headers, started);
                let sent = call.send_raw(&model, raw).await?;
                let wanted = Wanted {
                    outputs: OutputSelection::all_binary(),
                    coding,
                    label: None,
                };
                return reply::render(exchange, sent, &wanted).await;
            }
        };
        drop(body);
        // A malformed `outputs` list is the backend's to refuse, in its words.
        let outputs = OutputSelection::from_request(&header).unwrap_or_default();
        let req = InferRequest {
            model,
            header,
            data,
        };
        let sent = InferCall::new(exchange, headers, started)
            .send(req, early)
            .await?;
        let wanted = Wanted {
            outputs,
            coding,
            label: Some(label),
        };
        reply::render(exchange, sent, &wanted).await
    }

    fn render(&self, e: &Error, _obs: &Observation) -> Response<Body> {
        render(e)
    }
}

/// A frontend whose request the gateway did not bind from its head.
fn unbound() -> RouteError {
    RouteError::Internal {
        what: "a request bound from its head came without its route".into(),
    }
}

/// The client's headers as the backend gets them: everything but
/// hop-by-hop and body headers, `Host`, `Expect` and `Accept-Encoding` (the
/// gateway reads the reply itself and asks for it uncompressed). The others
/// are copied one by one: cloning the whole map and removing these cost a
/// hash lookup per removal, for the four headers every JSON client sends
/// and the backend never gets (measurable with scripts/bench/instructions.sh).
fn forwarded_headers(client: &http::HeaderMap) -> http::HeaderMap {
    const LEFT_OUT: [HeaderName; 7] = [
        header::HOST,
        header::EXPECT,
        header::CONTENT_LENGTH,
        header::CONTENT_ENCODING,
        header::CONTENT_TYPE,
        header::ACCEPT_ENCODING,
        backend::IHCL,
    ];
    let mut headers = http::HeaderMap::new();
    for (name, value) in client {
        if !LEFT_OUT.contains(name) {
            headers.append(name.clone(), value.clone());
        }
    }
    // `Connection` was copied: the headers it names go with it.
    strip_hop_by_hop(&mut headers);
    headers
}

#[cfg(test)]
mod tests {
    use http::HeaderMap;

    use super::forwarded_headers;

    /// What the backend gets: every header but hop-by-hop ones (and those
    /// `Connection` names), body headers, `Host`, `Expect` and
    /// `Accept-Encoding`; repeated values kept in order.
    #[test]
    fn forwards_all_but_hop_by_hop_body_host_and_expect() {
        let mut client = HeaderMap::new();
        for (name, value) in [
            ("host", "gateway:8000"),
            ("x-multi", "one"),
            ("content-type", "application/json"),
            ("content-length", "220"),
            ("content-encoding", "gzip"),
            ("inference-header-content-length", "100"),
            ("expect", "100-continue"),
            ("connection", "keep-alive, x-hop"),
            ("keep-alive", "timeout=5"),
            ("x-hop", "dropped"),
            ("te", "trailers"),
            ("accept-encoding", "gzip"),
            ("x-request-id", "abc"),
            ("x-multi", "two"),
        ] {
            client.append(name, value.parse().unwrap());
        }
        let forwarded = forwarded_headers(&client);
        let got: Vec<(&str, &str)> = forwarded
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_str().unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                ("x-multi", "one"),
                ("x-multi", "two"),
                ("x-request-id", "abc"),
            ]
        );
    }
}
