//! `POST .../infer`: read and check the client's request, send it to the
//! backend in the route's format, and turn the reply into what the client
//! asked for.

mod build;
mod json_reply;
mod prefs;
mod read;
mod reply;

use std::time::Instant;

use http::header::{self, HeaderValue};
use http::{Request, Response};
use hyper::body::Incoming;

pub use prefs::OutputPrefs;
use read::{ParsedRequest, read_binary, read_json};
use reply::{ClientFraming, ReplyPlan, reply};

use super::body::{Body, ChunksBody};
use super::client_body::ClientBody;
use super::encoding::{Coding, negotiate, request_coding};
use super::error::GatewayError;
use super::headers::{strip_body_headers, strip_hop_by_hop};
use super::observe::Observation;
use super::upstream::Upstream;
use crate::codec::v2::framing::{self, IHCL_HEADER};
use crate::config::{Route, ServerConfig};

/// How the client framed its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    Json,
    Binary(u64, ClientFraming),
    Raw,
}

fn client_framing(route: &Route, headers: &http::HeaderMap) -> Result<Framing, GatewayError> {
    let bad = |source| GatewayError::BadFraming {
        route: route.name.clone(),
        source,
    };
    if let Some(v) = headers.get(IHCL_HEADER) {
        return match framing::parse_ihcl(v.as_bytes()).map_err(bad)? {
            0 => Ok(Framing::Raw),
            n => Ok(Framing::Binary(n, ClientFraming::Standard)),
        };
    }
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    match ct.and_then(framing::sagemaker_header_size) {
        Some(size) => Ok(Framing::Binary(
            size.map_err(bad)?,
            ClientFraming::SageMaker,
        )),
        None => Ok(Framing::Json),
    }
}

pub async fn handle(
    server: &ServerConfig,
    route: &Route,
    upstream: &Upstream,
    req: Request<Incoming>,
    obs: &Observation,
) -> Result<Response<Body>, GatewayError> {
    let (parts, body) = req.into_parts();
    let limits = &route.limits;
    let coding = request_coding(&parts.headers)?;
    let content_length = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|_| coding == Coding::Identity);
    if content_length.is_some_and(|n| n > limits.max_body_bytes) {
        return Err(GatewayError::BodyTooLarge {
            route: route.name.clone(),
            limit: limits.max_body_bytes,
        });
    }
    let framing = client_framing(route, &parts.headers)?;
    let mut body = ClientBody::new(
        body,
        coding,
        &route.name,
        limits.max_body_bytes,
        server.body_read_timeout,
    );
    let started = Instant::now();
    let (parsed, prefs, client_framing) = match framing {
        Framing::Json => {
            let p = read_json(route, &mut body).await?;
            let prefs = OutputPrefs::from_request(&p.doc);
            (p, prefs, ClientFraming::Standard)
        }
        Framing::Binary(n, cf) => {
            let p = read_binary(route, &mut body, n, content_length).await?;
            let prefs = OutputPrefs::from_request(&p.doc);
            (p, prefs, cf)
        }
        Framing::Raw => {
            let raw = body.collect(None).await?;
            obs.client_in(body.wire_bytes());
            route
                .rules
                .check_raw(raw.len() as u64)
                .map_err(|violation| GatewayError::Rule {
                    route: route.name.clone(),
                    violation,
                })?;
            let backend_body = build::BackendBody {
                chunks: vec![raw],
                header_len: Some(0),
                content_type: "application/octet-stream",
            };
            return forward(
                upstream,
                route,
                &parts,
                backend_body,
                &OutputPrefs::all_binary(),
                ClientFraming::Raw,
                obs,
            )
            .await;
        }
    };
    obs.client_in(body.wire_bytes());
    obs.elements("request", parsed.element_count());
    let backend_body = build::build(&route.name, &parsed, route.backend_format)?;
    obs.translation("request", started.elapsed());
    drop::<ParsedRequest>(parsed);
    forward(
        upstream,
        route,
        &parts,
        backend_body,
        &prefs,
        client_framing,
        obs,
    )
    .await
}

async fn forward(
    upstream: &Upstream,
    route: &Route,
    client: &http::request::Parts,
    body: build::BackendBody,
    prefs: &OutputPrefs,
    framing: ClientFraming,
    obs: &Observation,
) -> Result<Response<Body>, GatewayError> {
    let path = client.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut req = Request::new(ChunksBody::new(body.chunks.iter().cloned()).boxed());
    *req.method_mut() = http::Method::POST;
    *req.uri_mut() = upstream.uri_for(path);
    let mut headers = client.headers.clone();
    strip_hop_by_hop(&mut headers);
    strip_body_headers(&mut headers);
    headers.remove(header::HOST);
    headers.remove(header::EXPECT);
    // The gateway reads the reply itself: ask for it uncompressed.
    headers.remove(header::ACCEPT_ENCODING);
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(body.content_type),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    if let Some(n) = body.header_len {
        headers.insert(IHCL_HEADER, HeaderValue::from(n));
    }
    *req.headers_mut() = headers;
    obs.backend_out(body.len());
    let sent = Instant::now();
    let resp = upstream.send(req).await?;
    obs.upstream_first_byte(sent.elapsed());
    let plan = ReplyPlan {
        route,
        upstream,
        prefs,
        coding: negotiate(&client.headers),
        framing,
        deadline: sent + upstream.backend.request_timeout,
        obs,
        sent,
    };
    reply(&plan, resp).await
}
