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
    route: &str,
    max_body: u64,
    obs: &Observation,
) -> Result<Response<Body>, GatewayError> {
    let (mut parts, body) = req.into_parts();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max_body) {
        return Err(GatewayError::BodyTooLarge {
            route: route.to_owned(),
            limit: max_body,
        });
    }
    strip_hop_by_hop(&mut parts.headers);
    parts.headers.remove(header::HOST);
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = upstream.uri_for(path);
    let body = obs
        .forwarded_request(Limited::new(body, max_body as usize))
        .boxed_unsync();
    let sent = std::time::Instant::now();
    let resp = match upstream.send(Request::from_parts(parts, body)).await {
        Ok(resp) => resp,
        Err(GatewayError::BodyTooLarge { .. }) => {
            return Err(GatewayError::BodyTooLarge {
                route: route.to_owned(),
                limit: max_body,
            });
        }
        Err(e) => return Err(e),
    };
    obs.upstream_first_byte(sent.elapsed());
    let (mut parts, body) = resp.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let body = obs.backend_body(body, sent).boxed_unsync();
    Ok(Response::from_parts(parts, body))
}
