//! When a request goes to another replica: the policy, apart from the loop
//! that sends ([`Upstream::send`](super::Upstream::send)) and from the
//! budget that bounds how often ([`super::budget`]). A request some of which
//! may have reached a replica is sent again only if it is safe to repeat.

use http::{Method, StatusCode};

use super::Outgoing;
use super::failure::Failure;

/// Whether an answer says the replica, not the request, failed: a gateway
/// error or unavailability from something in front of the model.
pub(super) fn on_status(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::BAD_GATEWAY | StatusCode::SERVICE_UNAVAILABLE | StatusCode::GATEWAY_TIMEOUT
    )
}

/// Whether a failed exchange may go to another replica: always when no
/// connection was made (nothing was sent); after a connect timeout only
/// when another replica is there to try (not the same black hole again);
/// after a connection closed mid-exchange only when the request is safe to
/// repeat.
pub(super) fn after_failure(failure: &Failure, others: bool, out: &Outgoing) -> bool {
    match failure {
        Failure::Connect { .. } => true,
        Failure::ConnectTimeout => others,
        Failure::Closed { .. } => repeatable(out),
        Failure::Parse { .. } | Failure::Body(_) => false,
    }
}

/// Whether the request may be sent again although a replica may have read
/// it: an idempotent method, or a route whose infers are declared safe to
/// repeat (`retry_infer`).
pub(super) fn repeatable(out: &Outgoing) -> bool {
    out.idempotent || matches!(out.method, Method::GET | Method::HEAD | Method::OPTIONS)
}
