//! What went wrong, decided once. Every floor has its own error enum (the
//! request body's [`BodyError`](crate::http::client_body::BodyError), the
//! backend's [`UpstreamError`](crate::upstream::UpstreamError), the core's
//! [`InferError`](crate::infer::InferError), each frontend's own, ...); each
//! says what it *is* through [`Classify`]: one [`Class`], and the rule it
//! broke if a rule refused it. Frontends render the class in their
//! protocol's shape (a V2 `{"error"}` with [`Class::status`], a Decthings
//! RPC error, AWS's error shape, a gRPC status); metrics take their labels
//! from it. Nothing here knows a frontend, a route or a backend.
//!
//! [`Error`] carries any floor's error up to the frontend that renders it:
//! a box, so that a `Result` on the request path stays one word wide.

use std::fmt;

use http::StatusCode;

use crate::auth::AuthFailure;
use crate::codec::grpc::status::Code;

/// What a failure is, for the client and for the metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Class {
    /// A request no correct client of its protocol sends: a bad path, bad
    /// framing, malformed JSON or protobuf, a corrupt compressed body, an
    /// unknown backend named in a header. 400.
    Malformed,
    /// The method is not served on this path. 405.
    MethodNotAllowed,
    /// A call the backend's protocol has no form for (a V2 endpoint
    /// without a gRPC call, to a gRPC backend). 501; gRPC UNIMPLEMENTED.
    Unsupported,
    /// A tensor the request carries breaks a rule of its route, or cannot
    /// be used the way the route needs it. 400, naming the tensor.
    BadTensor { tensor: String },
    /// A request (or part of one) over one of the route's size limits. 413.
    TooLarge,
    /// A `Content-Encoding` the gateway cannot read. 415, with the
    /// encodings it can.
    UnsupportedEncoding,
    /// A request `Content-Type` the frontend does not take. 415.
    UnsupportedMediaType,
    /// An `Accept` the frontend cannot answer in. 406.
    NotAcceptable,
    /// The client's body broke off before its end. 400.
    BodyBroken,
    /// The client's body paused too long, or took too long in all. 408.
    BodyTimeout,
    /// Nothing serves this: no route for the model, no such path, or the
    /// backend does not know the model (`version`: a version was named).
    /// 404.
    NotFound { version: bool },
    /// A control endpoint the route does not allow. 403.
    Forbidden,
    /// Credentials missing or refused. 401.
    Unauthenticated(Credentials),
    /// Over a rate limit: `retry_after` seconds until it would pass (429),
    /// or never (`None`: more than the limit's burst; 413).
    RateLimited {
        unit: LimitUnit,
        retry_after: Option<u64>,
    },
    /// No request slot came free in time: the gateway is shedding load.
    /// 503 with `Retry-After`.
    Overloaded { retry_after: u64 },
    /// The gateway is shutting down. 503.
    ShuttingDown,
    /// The client's own deadline (gRPC's `grpc-timeout`) passed before the
    /// answer was ready. 504; not the backend's fault.
    DeadlineExceeded,
    /// The exchange with the backend failed. 502, 503 or 504 by kind;
    /// `retry_after` seconds for a backend that is busy or has nothing
    /// ready.
    Upstream {
        kind: UpstreamKind,
        retry_after: Option<u64>,
    },
    /// The backend answered the request with an error of its own (its
    /// status or gRPC code, its message): the model refused it.
    Refused { origin: Origin, message: String },
    /// The backend answered, but its outputs cannot be given to this
    /// client: they break the route's output rules, exceed the route's
    /// limits, or the client's protocol cannot carry them. 502.
    /// `backend_fault`: the backend's doing (counted against it).
    BadOutput { backend_fault: bool },
    /// A bug in the gateway. 500.
    Internal,
}

/// Where a backend's refusal came from, kept as it came: an HTTP backend's
/// status, or a gRPC backend's code. A client of the same protocol gets
/// it unchanged (a gRPC backend's FAILED_PRECONDITION stays one); one of
/// the other gets what it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Http(StatusCode),
    Grpc(Code),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Http(status) => fmt::Display::fmt(status, f),
            Origin::Grpc(code) => f.write_str(code.name()),
        }
    }
}

impl Origin {
    /// The HTTP status it stands for.
    pub fn status(self) -> StatusCode {
        match self {
            Origin::Http(status) => status,
            Origin::Grpc(code) => {
                StatusCode::from_u16(code.http()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
        }
    }

    /// The gRPC code it stands for.
    pub fn code(self) -> Code {
        match self {
            Origin::Http(status) => Code::from_http(status.as_u16()),
            Origin::Grpc(code) => code,
        }
    }
}

/// How an exchange with a backend failed: the `kind` label of
/// `tensorgate_upstream_errors_total` and `tensorgate_replica_errors_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UpstreamKind {
    /// The connection was refused or could not be made.
    Refused,
    /// No answer within the backend's timeout.
    Timeout,
    /// The connection broke mid-exchange.
    Reset,
    /// An answer that is not a valid V2 (or HTTP) reply, or one the
    /// gateway cannot pass on (its outputs break the route's rules or
    /// limits).
    Invalid,
    /// Every connection slot of the chosen replica is in use.
    Saturated,
    /// No replica can take the request now: none healthy, or the model
    /// ready on none.
    Unavailable,
    /// The backend answered with a 5xx status of its own (counted; the
    /// client gets the backend's answer, not an error of the gateway).
    ServerError,
}

impl UpstreamKind {
    /// Every kind, in label order.
    pub const ALL: [UpstreamKind; 7] = [
        UpstreamKind::Refused,
        UpstreamKind::Timeout,
        UpstreamKind::Reset,
        UpstreamKind::Invalid,
        UpstreamKind::Saturated,
        UpstreamKind::Unavailable,
        UpstreamKind::ServerError,
    ];

    /// The `kind` label.
    pub const fn label(self) -> &'static str {
        match self {
            UpstreamKind::Refused => "refused",
            UpstreamKind::Timeout => "timeout",
            UpstreamKind::Reset => "reset",
            UpstreamKind::Invalid => "invalid",
            UpstreamKind::Saturated => "saturated",
            UpstreamKind::Unavailable => "unavailable",
            UpstreamKind::ServerError => "5xx",
        }
    }
}

/// What was wrong with a request's credentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Credentials {
    /// None were sent.
    Missing,
    /// A key, or a SigV4 access key id, that is not one of the route's, or
    /// credentials that cannot be read, or SigV4 where it is not taken.
    Unrecognized,
    /// SigV4 on a route that turned it off.
    SigV4Off,
    /// A SigV4 `Authorization` missing parts (signed headers, date, host).
    SigV4Incomplete,
    /// A SigV4 signature that does not verify.
    SigV4Invalid,
    /// A SigV4 timestamp too far from now.
    SigV4Expired,
}

impl Credentials {
    /// The `reason` label of `tensorgate_auth_failures_total`.
    pub const fn failure(self) -> AuthFailure {
        match self {
            Credentials::Missing => AuthFailure::Missing,
            Credentials::SigV4Invalid => AuthFailure::Signature,
            Credentials::SigV4Expired => AuthFailure::Expired,
            Credentials::Unrecognized | Credentials::SigV4Off | Credentials::SigV4Incomplete => {
                AuthFailure::Invalid
            }
        }
    }
}

/// What a rate limit counts: the `limit` label of
/// `tensorgate_rate_limited_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LimitUnit {
    Requests,
    Elements,
}

impl LimitUnit {
    pub const fn label(self) -> &'static str {
        match self {
            LimitUnit::Requests => "requests",
            LimitUnit::Elements => "elements",
        }
    }
}

impl Class {
    /// The HTTP status of each class: the one mapping (frontends whose
    /// protocol answers errors differently — Decthings' HTTP 200 RPC
    /// errors, AWS's shapes, gRPC — say so in their renderers).
    pub fn status(&self) -> StatusCode {
        match self {
            Class::Malformed | Class::BadTensor { .. } | Class::BodyBroken => {
                StatusCode::BAD_REQUEST
            }
            Class::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Class::Unsupported => StatusCode::NOT_IMPLEMENTED,
            Class::TooLarge
            | Class::RateLimited {
                retry_after: None, ..
            } => StatusCode::PAYLOAD_TOO_LARGE,
            Class::UnsupportedEncoding | Class::UnsupportedMediaType => {
                StatusCode::UNSUPPORTED_MEDIA_TYPE
            }
            Class::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
            Class::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Class::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
            Class::NotFound { .. } => StatusCode::NOT_FOUND,
            Class::Forbidden => StatusCode::FORBIDDEN,
            Class::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Class::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Class::Overloaded { .. } | Class::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            Class::Upstream { kind, .. } => match kind {
                UpstreamKind::Saturated | UpstreamKind::Unavailable => {
                    StatusCode::SERVICE_UNAVAILABLE
                }
                UpstreamKind::Timeout => StatusCode::GATEWAY_TIMEOUT,
                _ => StatusCode::BAD_GATEWAY,
            },
            Class::BadOutput { .. } => StatusCode::BAD_GATEWAY,
            Class::Refused { origin, .. } => origin.status(),
            Class::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The `Retry-After` seconds a refusal for load carries (at least 1).
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Class::Overloaded { retry_after }
            | Class::RateLimited {
                retry_after: Some(retry_after),
                ..
            }
            | Class::Upstream {
                retry_after: Some(retry_after),
                ..
            } => Some((*retry_after).max(1)),
            _ => None,
        }
    }

    /// The `kind` label of `tensorgate_upstream_errors_total` when the
    /// backend is at fault.
    pub fn upstream_kind(&self) -> Option<UpstreamKind> {
        match self {
            Class::Upstream { kind, .. } => Some(*kind),
            Class::BadOutput {
                backend_fault: true,
            } => Some(UpstreamKind::Invalid),
            _ => None,
        }
    }
}

/// The client's deadline passed: the request is given up, wherever it
/// was (reading its body, waiting for a slot, at the backend).
#[derive(Debug, thiserror::Error)]
#[error("deadline exceeded: the client's {} ms ran out", .after.as_millis())]
pub struct DeadlineExceeded {
    /// The time the client gave.
    pub after: std::time::Duration,
}

impl Classify for DeadlineExceeded {
    fn classify(&self) -> Classified {
        Class::DeadlineExceeded.into()
    }
}

/// The rule (or limit) a refused request broke: the labels of
/// `tensorgate_rule_violations_total`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violated {
    pub tensor: TensorLabel,
    /// `shape`, `datatype`, `required`, `unknown_input`, `duplicate`,
    /// `limit`.
    pub rule: &'static str,
}

/// Which tensor a violation is counted under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TensorLabel {
    /// The request as a whole (`_request`).
    Request,
    /// A tensor by name: counted under its name when the route's rules name
    /// it, else under `_unknown` (request data never makes a label).
    Named(String),
}

/// An error that knows what it is. Every floor's error enum implements it.
pub trait Classify: std::error::Error + Send + Sync + 'static {
    /// What it is and, when a rule or limit refused the request, which:
    /// decided in one match, so the class and the violation counted never
    /// disagree.
    fn classify(&self) -> Classified;

    /// What it is.
    fn class(&self) -> Class {
        self.classify().class
    }
}

/// What an error is ([`Class`]) and the rule or limit it broke, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classified {
    pub class: Class,
    pub violated: Option<Violated>,
}

impl From<Class> for Classified {
    fn from(class: Class) -> Classified {
        Classified {
            class,
            violated: None,
        }
    }
}

impl Class {
    /// The class of a request that broke `rule` of `tensor`.
    pub fn violating(self, tensor: TensorLabel, rule: &'static str) -> Classified {
        Classified {
            class: self,
            violated: Some(Violated { tensor, rule }),
        }
    }
}

/// Any floor's error on its way to the frontend that renders it.
pub struct Error(Box<dyn Classify>);

impl Error {
    pub fn classify(&self) -> Classified {
        self.0.classify()
    }

    pub fn class(&self) -> Class {
        self.0.classify().class
    }

    /// The floor's own error, when it is an `E`.
    pub fn downcast_ref<E: Classify>(&self) -> Option<&E> {
        let inner: &(dyn std::error::Error + 'static) = &*self.0;
        inner.downcast_ref::<E>()
    }
}

impl<E: Classify> From<E> for Error {
    fn from(e: E) -> Error {
        Error(Box::new(e))
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// `a: b: c` from an error and its sources (a source whose text the
/// message already holds is left out).
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cur = s.source();
    }
    out
}
