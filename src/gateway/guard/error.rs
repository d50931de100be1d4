//! Why credentials were refused. Messages never hold a key, a signature or
//! an access key id (a client may put a key there by mistake).

use crate::auth::AuthFailure;
use crate::auth::sigv4::SigV4Error;

/// Why a request's credentials were refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthProblem {
    #[error("no API key: send Authorization: Bearer KEY or x-api-key: KEY")]
    Missing,
    #[error("the API key is not one of the route's keys")]
    UnknownKey,
    #[error("the credentials cannot be read: {0}")]
    Unreadable(&'static str),
    #[error(
        "SigV4 signatures are accepted on /endpoints/{{endpoint}}/invocations only: send Authorization: Bearer KEY or x-api-key: KEY"
    )]
    SigV4NotHere,
    #[error(
        "SigV4 signatures are off on this route ([routes.auth] sigv4 = false): send Authorization: Bearer KEY or x-api-key: KEY"
    )]
    SigV4Off,
    #[error("the access key id is not the name of one of the route's keys")]
    UnknownAccessKey,
    #[error("{0}")]
    SigV4(SigV4Error),
}

impl AuthProblem {
    /// The `reason` label.
    pub fn failure(&self) -> AuthFailure {
        match self {
            AuthProblem::Missing => AuthFailure::Missing,
            AuthProblem::SigV4(e) => e.failure(),
            _ => AuthFailure::Invalid,
        }
    }
}
