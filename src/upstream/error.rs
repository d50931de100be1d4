//! Why an exchange with a backend failed, as the client is told. Messages
//! name the backend and stay short and stable; the detail (the OS or HTTP
//! error, the replica's address) is kept for the log and never rendered.

use std::time::Duration;

use crate::error::{Class, Classified, Classify, UpstreamKind};
use crate::http::client_body::BodyError;

/// A failed exchange with a backend.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// `detail` (the OS error) is for the log, never the client.
    #[error("backend \"{backend}\" refused the connection")]
    Refused { backend: String, detail: String },
    #[error("backend \"{backend}\" did not answer within {seconds:.3}s")]
    Timeout { backend: String, seconds: f64 },
    /// `detail` (the OS or HTTP error) is for the log, never the client.
    #[error("backend \"{backend}\" closed the connection")]
    Reset { backend: String, detail: String },
    #[error("backend \"{backend}\" is busy: all {limit} of its connections are in use")]
    Saturated { backend: String, limit: usize },
    /// Every replica fails its health checks (or, for DNS, none was found).
    #[error("backend \"{backend}\" has no healthy replica; retry later")]
    NoHealthyReplica { backend: String, retry_after: u64 },
    /// Healthy replicas exist, but none has the model ready.
    #[error("model \"{model}\" is not ready on any replica of backend \"{backend}\"; retry later")]
    ModelNotReady {
        backend: String,
        model: String,
        retry_after: u64,
    },
    /// The client's deadline came before the backend's answer: the
    /// client's doing, not the backend's.
    #[error("deadline exceeded: the client's time ran out before backend \"{backend}\" answered")]
    Deadline { backend: String },
    /// The reply was not HTTP (the HTTP parser's words).
    #[error("backend \"{backend}\" sent an invalid response: {detail}")]
    Invalid { backend: String, detail: String },
    /// The client's own request body failed while it was forwarded (over
    /// its limit, stalled, cut off): the client's doing, not the
    /// backend's.
    #[error(transparent)]
    RequestBody(#[from] BodyError),
}

impl UpstreamError {
    /// A timeout after `limit`.
    pub fn timeout(backend: &str, limit: Duration) -> UpstreamError {
        UpstreamError::Timeout {
            backend: backend.to_owned(),
            seconds: limit.as_secs_f64(),
        }
    }
}

impl Classify for UpstreamError {
    fn classify(&self) -> Classified {
        let (kind, retry_after) = match self {
            UpstreamError::Refused { .. } => (UpstreamKind::Refused, None),
            UpstreamError::Timeout { .. } => (UpstreamKind::Timeout, None),
            UpstreamError::Reset { .. } => (UpstreamKind::Reset, None),
            UpstreamError::Saturated { .. } => (UpstreamKind::Saturated, Some(1)),
            UpstreamError::NoHealthyReplica { retry_after, .. }
            | UpstreamError::ModelNotReady { retry_after, .. } => {
                (UpstreamKind::Unavailable, Some(*retry_after))
            }
            UpstreamError::Invalid { .. } => (UpstreamKind::Invalid, None),
            UpstreamError::RequestBody(e) => return e.classify(),
            UpstreamError::Deadline { .. } => return Class::DeadlineExceeded.into(),
        };
        Class::Upstream { kind, retry_after }.into()
    }
}
