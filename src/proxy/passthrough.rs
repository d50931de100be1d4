//! Everything that is not `infer` is proxied as it is: streaming both ways,
//! hop-by-hop headers removed.

use http::header;
use http::{Request, Response};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use super::body::Body;
use super::error::GatewayError;
use super::headers::strip_hop_by_hop;
use super::observe::Observation;
use super::upstream::Upstream;

/// Forwards `req` to `upstream`; a request body over `max_body` bytes is cut
/// off (the backend sees an aborted request).
pub async fn forward(
    upstream: &Upstream,
    req: Request<Incoming>,
    max_body: u64,
    obs: &Observation,
) -> Result<Response<Body>, GatewayError> {
    let (mut parts, body) = req.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    parts.headers.remove(header::HOST);
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = upstream.uri_for(path);
    let body = obs
        .forwarded_request(Limited::new(body, max_body as usize))
        .boxed_unsync();
    let sent = std::time::Instant::now();
    let resp = upstream.send(Request::from_parts(parts, body)).await?;
    obs.upstream_first_byte(sent.elapsed());
    let (mut parts, body) = resp.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let body = obs.backend_body(body, sent).boxed_unsync();
    Ok(Response::from_parts(parts, body))
}
