//! Everything that is not `infer` is proxied as it is: streaming both ways,
//! hop-by-hop headers removed.

use http::header;
use http::{Request, Response};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use super::body::Body;
use super::client_body::check_declared_length;
use super::core::Exchange;
use super::error::GatewayError;
use super::headers::{strip_credentials, strip_hop_by_hop};

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
    strip_hop_by_hop(&mut parts.headers);
    if x.route.auth.is_some() {
        strip_credentials(&mut parts.headers);
    }
    parts.headers.remove(header::HOST);
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = upstream.uri_for(path);
    // The backend client speaks HTTP/1.1, whatever the client spoke.
    parts.version = http::Version::HTTP_11;
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
    obs.backend_status(resp.status());
    let (mut parts, body) = resp.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let body = obs.backend_body(body, sent).boxed_unsync();
    Ok(Response::from_parts(parts, body))
}
