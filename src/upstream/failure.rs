//! What a failed backend exchange means: whether any of the request can
//! have reached the backend (and so whether it may be sent again), the
//! gateway error the client gets, and the detail only the log gets.

use super::http1::SendError;
use crate::error::UpstreamKind;
use crate::http::client_body::BodyError;
use crate::http::encoding::InflateError;
use crate::http::idle::{Stalled, StreamOverdue, StreamStalled};

/// A failed exchange, as far as retrying cares.
#[derive(Debug)]
pub(super) enum Failure {
    /// No connection was made: nothing of the request was sent.
    Connect { detail: String },
    /// Connecting took longer than `connect_timeout`.
    ConnectTimeout,
    /// The connection failed after the request was handed to it: some of
    /// it may have been read by the backend.
    Closed { detail: String },
    /// The backend's reply head was not HTTP.
    Parse { detail: String },
    /// The request's own body failed (limit, stall, client gone): the
    /// client's doing, never retried.
    Body(BodyError),
}

impl Failure {
    /// The kind it is counted under against the replica (none for the
    /// client's own body).
    pub(super) fn kind(&self) -> Option<UpstreamKind> {
        match self {
            Failure::Connect { .. } => Some(UpstreamKind::Refused),
            Failure::ConnectTimeout => Some(UpstreamKind::Timeout),
            Failure::Closed { .. } => Some(UpstreamKind::Reset),
            Failure::Parse { .. } => Some(UpstreamKind::Invalid),
            Failure::Body(_) => None,
        }
    }

    /// The detail for the log (never shown to clients).
    pub(super) fn detail(&self) -> &str {
        match self {
            Failure::Connect { detail }
            | Failure::Closed { detail }
            | Failure::Parse { detail } => detail,
            Failure::ConnectTimeout => "connect timeout",
            Failure::Body(_) => "request body failed",
        }
    }
}

/// Classifies a client error.
pub(super) fn classify(e: &SendError) -> Failure {
    if let Some(body) = request_body_failure(e) {
        return Failure::Body(body);
    }
    let io = source_of::<std::io::Error>(e);
    let detail = io.map_or_else(|| crate::error::chain(e), |io| io.to_string());
    if e.is_connect() {
        if io.is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut) {
            return Failure::ConnectTimeout;
        }
        return Failure::Connect { detail };
    }
    let hyper_err = source_of::<hyper::Error>(e);
    if hyper_err.is_some_and(|h| h.is_parse() || h.is_parse_status()) {
        return Failure::Parse { detail };
    }
    Failure::Closed { detail }
}

/// The error for a request body that failed while it was being forwarded.
/// A body over its limit comes back without route and limit, and a corrupt
/// one without its coding: the caller, which knows them, fills them in.
fn request_body_failure(e: &(dyn std::error::Error + 'static)) -> Option<BodyError> {
    if source_of::<http_body_util::LengthLimitError>(e).is_some() {
        return Some(BodyError::TooLarge {
            route: String::new(),
            limit: 0,
        });
    }
    if let Some(d) = source_of::<InflateError>(e) {
        return Some(match d {
            InflateError::TooLarge => BodyError::TooLarge {
                route: String::new(),
                limit: 0,
            },
            InflateError::Corrupt(detail) => BodyError::BadEncoding {
                encoding: "",
                detail: detail.clone(),
            },
        });
    }
    if source_of::<StreamStalled>(e).is_some_and(|s| s.side == Stalled::Client) {
        return Some(BodyError::Idle);
    }
    if let Some(o) = source_of::<StreamOverdue>(e) {
        return Some(BodyError::Deadline { limit: o.total });
    }
    // The client's own body failed (it went away mid-upload).
    let user = source_of::<hyper::Error>(e).is_some_and(hyper::Error::is_user);
    user.then(|| BodyError::Broken {
        detail: "the request body ended early".into(),
    })
}

pub(super) fn source_of<'a, T: std::error::Error + 'static>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(t) = err.downcast_ref::<T>() {
            return Some(t);
        }
        // `io::Error` hides a custom error behind `get_ref`, not `source`.
        if let Some(inner) = err
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            && let Some(t) = inner.downcast_ref::<T>()
        {
            return Some(t);
        }
        cur = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        let connect = Failure::Connect {
            detail: "refused".into(),
        };
        let closed = Failure::Closed {
            detail: "reset".into(),
        };
        assert_eq!(connect.kind().map(UpstreamKind::label), Some("refused"));
        assert_eq!(closed.kind().map(UpstreamKind::label), Some("reset"));
        assert_eq!(
            Failure::ConnectTimeout.kind().map(UpstreamKind::label),
            Some("timeout")
        );
        let parse = Failure::Parse {
            detail: String::new(),
        };
        assert_eq!(parse.kind().map(UpstreamKind::label), Some("invalid"));
    }

    #[test]
    fn custom_io_errors_are_found() {
        let e = std::io::Error::other(StreamStalled {
            side: Stalled::Client,
            idle: std::time::Duration::from_secs(1),
        });
        assert!(source_of::<StreamStalled>(&e).is_some());
        assert!(matches!(request_body_failure(&e), Some(BodyError::Idle)));
    }
}
