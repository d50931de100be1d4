//! Everything that is not `infer` is proxied as it is: streaming both ways,
//! hop-by-hop headers removed, `Location` rewritten off the backend's
//! address. A request body is bounded twice: its bytes on the wire by the
//! route's `max_body_bytes`, and — when it is gzip or deflate — its
//! decompressed size by the same limit, counted while it is forwarded, so
//! a decompression bomb stops at the limit instead of reaching the backend.
//! A coding the gateway cannot read is passed on for the backend to refuse.

use http::header;
use http::{Request, Response};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use super::body::Body;
use super::client_body::check_declared_length;
use super::core::Exchange;
use super::encoding::{Coding, Inflated, request_coding};
use super::error::GatewayError;
use super::headers::{strip_credentials, strip_hop_by_hop};
use super::upstream::{Idle, OutBody, Outgoing, Stalled};

/// Forwards `req` to the route's backend; a request body over the route's
/// `max_body_bytes` is cut off (the backend sees an aborted request).
pub async fn forward(
    x: Exchange<'_>,
    req: Request<Incoming>,
) -> Result<Response<Body>, GatewayError> {
    let (upstream, obs) = (x.upstream, x.obs);
    let route = x.route.name.as_str();
    let max_body = x.route.limits.max_body_bytes;
    let (mut parts, body) = req.into_parts();
    check_declared_length(&parts.headers, route, max_body)?;
    let coding = request_coding(&parts.headers).unwrap_or(Coding::Identity);
    strip_hop_by_hop(&mut parts.headers);
    if x.route.auth.is_some() {
        strip_credentials(&mut parts.headers);
    }
    parts.headers.remove(header::HOST);
    let body = if http_body::Body::is_end_stream(&body) {
        // Nothing to stream: the request can be sent again if need be.
        OutBody::Empty
    } else {
        let idle = Idle::new(body, upstream.backend.stream_idle_timeout, Stalled::Client);
        let limited = Limited::new(idle, usize::try_from(max_body).unwrap_or(usize::MAX));
        let counted = match Inflated::new(limited, coding, max_body) {
            Ok(inflated) => obs.forwarded_request(inflated).boxed_unsync(),
            Err(limited) => obs.forwarded_request(limited).boxed_unsync(),
        };
        OutBody::Stream(counted)
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
        model: Some(obs.model())
            .filter(|m| !m.is_empty())
            .map(str::to_owned),
        idempotent: false,
    };
    let sent = std::time::Instant::now();
    let resp = match upstream.send(out, Some(obs)).await {
        Ok(resp) => resp,
        Err(GatewayError::BodyTooLarge { .. }) => {
            return Err(GatewayError::BodyTooLarge {
                route: route.to_owned(),
                limit: max_body,
            });
        }
        Err(GatewayError::BadEncoding { detail, .. }) => {
            return Err(GatewayError::BadEncoding {
                encoding: coding.name(),
                detail,
            });
        }
        Err(e) => return Err(e),
    };
    obs.upstream_first_byte(sent.elapsed());
    obs.backend_status(resp.status());
    let (mut parts, body) = resp.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let body = obs.backend_body(body, sent).boxed_unsync();
    Ok(Response::from_parts(parts, body))
}
