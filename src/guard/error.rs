//! Why credentials were refused. Messages never hold a key, a signature or
//! an access key id (a client may put a key there by mistake).

use crate::auth::sigv4::SigV4Error;
use crate::error::{Class, Classified, Classify, Credentials};

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
    /// What kind of refusal it is, as errors are classified.
    pub fn credentials(&self) -> Credentials {
        match self {
            AuthProblem::Missing => Credentials::Missing,
            AuthProblem::SigV4Off => Credentials::SigV4Off,
            AuthProblem::SigV4(
                SigV4Error::Malformed { .. } | SigV4Error::NoDate | SigV4Error::HostNotSigned,
            ) => Credentials::SigV4Incomplete,
            AuthProblem::SigV4(SigV4Error::Expired { .. } | SigV4Error::Early { .. }) => {
                Credentials::SigV4Expired
            }
            AuthProblem::SigV4(_) => Credentials::SigV4Invalid,
            AuthProblem::UnknownKey
            | AuthProblem::UnknownAccessKey
            | AuthProblem::Unreadable(_)
            | AuthProblem::SigV4NotHere => Credentials::Unrecognized,
        }
    }
}

/// Credentials refused on a route (or, for a Decthings call checked before
/// its body names the route, on every route under its prefix).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{problem}", route.as_deref().map(|r| format!("route \"{r}\": ")).unwrap_or_default())]
pub struct Unauthorized {
    /// `None` before the route is known.
    pub route: Option<String>,
    pub problem: AuthProblem,
}

impl Classify for Unauthorized {
    fn classify(&self) -> Classified {
        let class = Class::Unauthenticated(self.problem.credentials());
        class.into()
    }
}
