//! Everything that is not `infer` is proxied as it is: streaming both ways,
//! hop-by-hop headers removed.

use http::header;
use http::{Request, Response};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use super::body::{Body, BoxError};
use super::error::GatewayError;
use super::headers::strip_hop_by_hop;
use super::upstream::Upstream;

/// Forwards `req` to `upstream`; a request body over `max_body` bytes is cut
/// off (the backend sees an aborted request).
pub async fn forward(
    upstream: &Upstream,
    req: Request<Incoming>,
    max_body: u64,
) -> Result<Response<Body>, GatewayError> {
    let (mut parts, body) = req.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    parts.headers.remove(header::HOST);
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = upstream.uri_for(path);
    let body = Limited::new(body, max_body as usize).boxed_unsync();
    let resp = upstream.send(Request::from_parts(parts, body)).await?;
    let (mut parts, body) = resp.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let body = body.map_err(|e| Box::new(e) as BoxError).boxed_unsync();
    Ok(Response::from_parts(parts, body))
}
