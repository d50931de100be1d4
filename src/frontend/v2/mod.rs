//! The V2 frontend: `POST /v2/models/{m}[/versions/{v}]/infer` from JSON,
//! binary-extension and raw binary clients. Reads the request into the
//! core's [`InferRequest`] (zero-copy for binary data, converted while it
//! streams for JSON), and renders the backend's reply the way the client
//! asked — passing binary through and streaming JSON as the backend's bytes
//! arrive where it can. Everything else under `/v2` is passed through by
//! the gateway.

mod json_stream;
mod read;
mod reply;

use std::time::Instant;

use http::{Request, Response, header};
use hyper::body::Incoming;

pub use json_stream::write_values;
use read::EarlyStart;
pub use read::{BinaryLabel, ClientFraming, feed};
pub use reply::Wanted;

use crate::codec::v2::OutputSelection;
use crate::config::ServerConfig;
use crate::gateway::body::Body;
use crate::gateway::client_body::ClientBody;
use crate::gateway::core::backend::EarlySend;
use crate::gateway::core::{Exchange, InferRequest, ModelRef, backend, raw_input};
use crate::gateway::encoding::negotiate;
use crate::gateway::error::GatewayError;
use crate::gateway::headers::{strip_body_headers, strip_credentials, strip_hop_by_hop};

/// Serves one V2 inference request on its route.
pub async fn infer(
    x: Exchange<'_>,
    server: &ServerConfig,
    model: ModelRef,
    req: Request<Incoming>,
) -> Result<Response<Body>, GatewayError> {
    let (parts, body) = req.into_parts();
    let route = x.route;
    let mut body = ClientBody::open(
        &parts.headers,
        body,
        &route.name,
        route.limits.max_body_bytes,
        server.into(),
    )?;
    let framing = ClientFraming::of(route, &parts.headers)?;
    let mut headers = forwarded_headers(&parts.headers);
    if route.auth.is_some() {
        strip_credentials(&mut headers);
    }
    let coding = negotiate(&parts.headers);
    let started = Instant::now();
    let (header, data, label, early) = match framing {
        ClientFraming::Json => {
            let start = EarlyStart {
                x,
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
            x.obs.client_in(body.wire_bytes());
            route
                .rules
                .check_raw(raw.len() as u64)
                .map_err(|violation| GatewayError::Rule {
                    route: route.name.clone(),
                    violation,
                })?;
            raw_input::check(x, &model, raw.len() as u64).await?;
            let sent = backend::send_raw(x, &model, raw, headers).await?;
            let wanted = Wanted {
                outputs: OutputSelection::all_binary(),
                coding,
                label: None,
            };
            return reply::render(x, sent, &wanted).await;
        }
    };
    x.obs.client_in(body.wire_bytes());
    // A malformed `outputs` list is the backend's to refuse, in its words.
    let outputs = OutputSelection::from_request(&header).unwrap_or_default();
    let req = InferRequest {
        model,
        header,
        data,
    };
    x.obs.elements("request", req.element_count());
    let charged = early.as_ref().map_or(0, EarlySend::charged);
    let prepared = backend::prepare_charged(x, req, charged).await?;
    x.obs.translation("request", started.elapsed());
    let sent = prepared.send_after(x, headers, early).await?;
    let wanted = Wanted {
        outputs,
        coding,
        label: Some(label),
    };
    reply::render(x, sent, &wanted).await
}

/// The client's headers as the backend gets them: everything but
/// hop-by-hop and body headers, `Host` and `Expect`.
fn forwarded_headers(client: &http::HeaderMap) -> http::HeaderMap {
    let mut headers = client.clone();
    strip_hop_by_hop(&mut headers);
    strip_body_headers(&mut headers);
    headers.remove(header::HOST);
    headers.remove(header::EXPECT);
    headers
}
