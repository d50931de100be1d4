//! Every gateway error, and the one place each becomes an HTTP status and,
//! for metrics, a rule-violation or upstream-error label. How the error is
//! *shown* is the frontend's business (V2 `{"error"}`, a Decthings RPC
//! error, SageMaker's AWS shape): see [`crate::frontend`].

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};

use super::body::{Body, full};
use super::core::ModelRef;
use super::core::backend::ReplyError;
use super::core::raw_input::RawError;
use super::guard::{AuthProblem, Refusal};
use crate::codec::v2::DocError;
use crate::codec::v2::framing::FramingError;
use crate::codec::v2::json_write::WriteError;
use crate::codec::v2::path::{Control, PathError};
use crate::config::Route;
use crate::rules::{RouteRules, Violation};

/// What went wrong while serving a request.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("no route for model \"{model}\" and no default route")]
    NoRoute { model: String },
    #[error("not found: {path}")]
    NotFound { path: String },
    #[error("invalid request path: {source}")]
    BadPath { source: PathError },
    #[error("{} endpoints are not allowed through this gateway (route \"{route}\" does not list \"{}\" in allow_control)", kind.name(), kind.name())]
    ControlDenied { route: String, kind: Control },
    #[error(
        "route \"{route}\": x-tensorgate-backend names \"{backend}\", which is not one of its backends ({choices})"
    )]
    UnknownBackend {
        route: String,
        backend: String,
        choices: String,
    },
    #[error("method {method} is not allowed on {path}")]
    MethodNotAllowed { method: http::Method, path: String },
    #[error("route \"{route}\": {violation}")]
    Rule { route: String, violation: Violation },
    #[error("route \"{route}\": {source}")]
    BadDocument { route: String, source: DocError },
    #[error("route \"{route}\": {source}")]
    BadFraming { route: String, source: FramingError },
    #[error("route \"{route}\": {message}")]
    BadRequest { route: String, message: String },
    #[error("route \"{route}\": input \"{input}\" {problem}")]
    BadInput {
        route: String,
        input: String,
        problem: InputProblem,
    },
    #[error("invalid Decthings request: {0}")]
    Decthings(#[from] Box<crate::frontend::decthings::RequestError>),
    #[error("the Decthings client cannot take the backend's reply: {0}")]
    DecthingsOutput(Box<crate::frontend::decthings::reply::OutputError>),
    #[error("route \"{route}\": {source}")]
    RawRequest {
        route: String,
        source: Box<RawError>,
    },
    #[error("route \"{route}\": request body is larger than the limit of {limit} bytes")]
    BodyTooLarge { route: String, limit: u64 },
    #[error("route \"{route}\": {source}")]
    HeaderTooLarge { route: String, source: FramingError },
    #[error("unsupported Content-Encoding {encoding:?}: use gzip, deflate or identity")]
    UnsupportedEncoding { encoding: String },
    #[error("request body is not valid {encoding} data: {detail}")]
    BadEncoding {
        encoding: &'static str,
        detail: String,
    },
    #[error("reading the request body failed: {detail}")]
    ClientBody { detail: String },
    #[error("timed out waiting for the rest of the request body")]
    ClientTimeout,
    #[error("the request body did not arrive within {}s", limit.as_secs_f64())]
    BodyDeadline { limit: Duration },
    #[error("all {limit} request slots stayed busy for {:.3}s; retry later", waited.as_secs_f64())]
    Overloaded { limit: usize, waited: Duration },
    #[error("route \"{route}\": output \"{output}\": {source}")]
    OutputNotJson {
        route: String,
        output: String,
        source: WriteError,
    },
    #[error("route \"{route}\": input \"{input}\" cannot be sent to a JSON backend: {source}")]
    InputNotJson {
        route: String,
        input: String,
        source: WriteError,
    },
    /// `detail` (the OS error) is for the log, never the client.
    #[error("backend \"{backend}\" refused the connection")]
    BackendRefused { backend: String, detail: String },
    #[error("backend \"{backend}\" did not answer within {seconds:.3}s")]
    BackendTimeout { backend: String, seconds: f64 },
    /// `detail` (the OS or HTTP error) is for the log, never the client.
    #[error("backend \"{backend}\" closed the connection")]
    BackendReset { backend: String, detail: String },
    #[error("backend \"{backend}\" is busy: all {limit} of its connections are in use")]
    BackendSaturated { backend: String, limit: usize },
    /// Every replica of the backend fails its health checks (or, for DNS,
    /// none was found).
    #[error("backend \"{backend}\" has no healthy replica; retry later")]
    NoHealthyReplica { backend: String, retry_after: u64 },
    /// Healthy replicas exist, but none has the model ready.
    #[error("model \"{model}\" is not ready on any replica of backend \"{backend}\"; retry later")]
    ModelNotReady {
        backend: String,
        model: String,
        retry_after: u64,
    },
    #[error("backend \"{backend}\" sent an invalid response: {source}")]
    BadBackendResponse {
        backend: String,
        source: Box<ReplyError>,
    },
    #[error("backend \"{backend}\" sent an invalid response: route \"{route}\": {violation}")]
    OutputRule {
        backend: String,
        route: String,
        violation: Box<Violation>,
    },
    #[error("backend \"{backend}\" has no model \"{}\"{}", model.name, model.version.as_deref().map(|v| format!(" version {v}")).unwrap_or_default())]
    UnknownModel { backend: String, model: ModelRef },
    #[error("backend \"{backend}\" refused the request ({status}): {message}")]
    BackendFailed {
        backend: String,
        status: StatusCode,
        message: String,
    },
    #[error("route \"{route}\": backend response is larger than the limit of {limit} bytes")]
    ResponseTooLarge { route: String, limit: u64 },
    #[error("the gateway is shutting down")]
    ShuttingDown,
    #[error("internal error: {what}")]
    Internal { what: String },
    #[error("{0}")]
    SageMaker(Box<crate::frontend::sagemaker::SageMakerError>),
    #[error("{}{problem}", route.as_deref().map(|r| format!("route \"{r}\": ")).unwrap_or_default())]
    Unauthorized {
        /// `None` before the route is known (a Decthings call's first check).
        route: Option<String>,
        problem: AuthProblem,
    },
    #[error("{0}")]
    RateLimited(Box<Refusal>),
}

impl GatewayError {
    /// The HTTP status for this error. This is the only mapping.
    pub fn status(&self) -> StatusCode {
        use GatewayError::*;
        match self {
            NoRoute { .. } | NotFound { .. } | UnknownModel { .. } => StatusCode::NOT_FOUND,
            BackendFailed { status, .. } => *status,
            ControlDenied { .. } => StatusCode::FORBIDDEN,
            BadDocument {
                source: DocError::MemberTooLarge { .. },
                ..
            } => StatusCode::PAYLOAD_TOO_LARGE,
            MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            BadPath { .. }
            | UnknownBackend { .. }
            | Rule { .. }
            | BadDocument { .. }
            | BadFraming { .. }
            | BadRequest { .. }
            | BadInput { .. }
            | Decthings(_)
            | RawRequest { .. }
            | BadEncoding { .. }
            | ClientBody { .. }
            | OutputNotJson { .. }
            | InputNotJson { .. } => StatusCode::BAD_REQUEST,
            ClientTimeout | BodyDeadline { .. } => StatusCode::REQUEST_TIMEOUT,
            BodyTooLarge { .. } | HeaderTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            UnsupportedEncoding { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            BackendRefused { .. }
            | BackendReset { .. }
            | BadBackendResponse { .. }
            | OutputRule { .. }
            | DecthingsOutput(_)
            | ResponseTooLarge { .. } => StatusCode::BAD_GATEWAY,
            BackendTimeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            ShuttingDown
            | Overloaded { .. }
            | BackendSaturated { .. }
            | NoHealthyReplica { .. }
            | ModelNotReady { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Internal { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            SageMaker(e) => e.status(),
            Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            RateLimited(r) if r.wait.is_none() => StatusCode::PAYLOAD_TOO_LARGE,
            RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
        }
    }

    /// Credentials refused on `route` (or before a route is known).
    pub fn unauthorized(route: Option<&Route>, problem: AuthProblem) -> GatewayError {
        GatewayError::Unauthorized {
            route: route.map(|r| r.name.clone()),
            problem,
        }
    }

    /// The `Retry-After` seconds a refusal for load carries (at least 1);
    /// the gateway adds the header to whatever body the frontend renders.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            GatewayError::Overloaded { waited, .. } => {
                Some((waited.as_secs_f64().ceil() as u64).max(1))
            }
            GatewayError::BackendSaturated { .. } => Some(1),
            GatewayError::NoHealthyReplica { retry_after, .. }
            | GatewayError::ModelNotReady { retry_after, .. } => Some((*retry_after).max(1)),
            GatewayError::RateLimited(r) => r.wait.map(|w| (w.as_secs_f64().ceil() as u64).max(1)),
            _ => None,
        }
    }

    /// The `kind` label of `tensorgate_upstream_errors_total`, if this error
    /// is the backend's fault.
    pub fn upstream_kind(&self) -> Option<&'static str> {
        match self {
            GatewayError::BackendRefused { .. } => Some("refused"),
            GatewayError::BackendTimeout { .. } => Some("timeout"),
            GatewayError::BackendReset { .. } => Some("reset"),
            GatewayError::BackendSaturated { .. } => Some("saturated"),
            GatewayError::NoHealthyReplica { .. } | GatewayError::ModelNotReady { .. } => {
                Some("unavailable")
            }
            GatewayError::BadBackendResponse { .. } | GatewayError::ResponseTooLarge { .. } => {
                Some("invalid")
            }
            _ => None,
        }
    }

    /// The `tensor` and `rule` labels of `tensorgate_rule_violations_total`,
    /// if this error is a refusal by a rule or limit. Tensor names the
    /// route's rules do not mention share the label `_unknown`, so request
    /// data never creates a label value.
    pub fn violation_labels(&self, rules: &RouteRules) -> Option<(String, &'static str)> {
        let configured = |name: &str| -> String {
            if rules.inputs.contains_key(name) || rules.outputs.contains_key(name) {
                name.to_owned()
            } else {
                "_unknown".to_owned()
            }
        };
        match self {
            GatewayError::Rule { violation, .. } => Some((
                violation.tensor_label(rules).to_owned(),
                violation.rule_label(),
            )),
            GatewayError::OutputRule { violation, .. } => Some((
                violation.tensor_label(rules).to_owned(),
                violation.rule_label(),
            )),
            GatewayError::BodyTooLarge { .. } | GatewayError::HeaderTooLarge { .. } => {
                Some(("_request".to_owned(), "limit"))
            }
            GatewayError::BadInput {
                input,
                problem: InputProblem::TooLarge { .. },
                ..
            } => Some((configured(input), "limit")),
            GatewayError::BadDocument {
                source:
                    DocError::TooManyDims { subject, .. }
                    | DocError::TooManyElements { subject, .. }
                    | DocError::ShapeTooLong { subject, .. },
                ..
            } => Some((configured(subject.name.as_deref().unwrap_or("")), "limit")),
            GatewayError::BadDocument {
                source: DocError::MemberTooLarge { .. } | DocError::TooManyValues { .. },
                ..
            } => Some(("_request".to_owned(), "limit")),
            _ => None,
        }
    }

    /// The V2 error response: the status and `{"error": "..."}`.
    pub fn into_response(self) -> Response<Body> {
        let status = self.status();
        let mut resp = json_response(status, error_body(&self.to_string()));
        if let GatewayError::UnsupportedEncoding { .. } = self {
            resp.headers_mut().insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_static("gzip, deflate"),
            );
        }
        if matches!(self, GatewayError::Unauthorized { .. }) {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(WWW_AUTHENTICATE),
            );
        }
        resp
    }
}

/// The challenge of a 401.
pub const WWW_AUTHENTICATE: &str = "Bearer realm=\"tensorgate\"";

/// What is wrong with one input, beyond the route's rules: problems a
/// frontend finds while turning its protocol's parameters into tensors.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InputProblem {
    #[error("holds no tensor")]
    Empty,
    #[error("is read from a dataset, and tensorgate has no datasets: send its tensors instead")]
    Dataset,
    #[error("holds {count} tensors, and this route takes one tensor per parameter")]
    Several { count: usize },
    #[error("holds tensors that cannot be stacked: {first} and {other}")]
    CannotStack { first: String, other: String },
    #[error("is {bytes} bytes, over the route's limit of {limit} bytes")]
    TooLarge { bytes: u64, limit: u64 },
}

/// A JSON response with a status.
pub fn json_response(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut resp = Response::new(full(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// `{"error": message}` as bytes.
pub fn error_body(message: &str) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 12);
    out.extend_from_slice(b"{\"error\":");
    crate::codec::v2::strings::write_json_string(message.as_bytes(), &mut out);
    out.push(b'}');
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_body() {
        let e = GatewayError::BodyTooLarge {
            route: "r".into(),
            limit: 10,
        };
        assert_eq!(e.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            &error_body(&e.to_string())[..],
            br#"{"error":"route \"r\": request body is larger than the limit of 10 bytes"}"#
        );
        let e = GatewayError::UnsupportedEncoding {
            encoding: "br".into(),
        };
        let resp = e.into_response();
        assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(resp.headers()["accept-encoding"], "gzip, deflate");
        assert_eq!(resp.headers()["content-type"], "application/json");
    }

    #[test]
    fn overloaded_says_when_to_retry() {
        let check = |waited_ms: u64, retry: u64| {
            let e = GatewayError::Overloaded {
                limit: 8,
                waited: Duration::from_millis(waited_ms),
            };
            assert_eq!(e.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(e.retry_after(), Some(retry));
            e.to_string()
        };
        assert_eq!(
            check(5000, 5),
            "all 8 request slots stayed busy for 5.000s; retry later"
        );
        check(300, 1);
        check(1200, 2);
        let e = GatewayError::BodyDeadline {
            limit: Duration::from_millis(1500),
        };
        assert_eq!(e.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(e.to_string(), "the request body did not arrive within 1.5s");
        assert_eq!(e.retry_after(), None);
    }

    #[test]
    fn nothing_ready_is_503_naming_the_model_with_retry_after() {
        let e = GatewayError::ModelNotReady {
            backend: "triton".into(),
            model: "resnet".into(),
            retry_after: 5,
        };
        assert_eq!(e.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(e.retry_after(), Some(5));
        assert_eq!(e.upstream_kind(), Some("unavailable"));
        assert_eq!(
            &error_body(&e.to_string())[..],
            br#"{"error":"model \"resnet\" is not ready on any replica of backend \"triton\"; retry later"}"#
        );
        let e = GatewayError::NoHealthyReplica {
            backend: "triton".into(),
            retry_after: 0,
        };
        assert_eq!(e.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(e.retry_after(), Some(1));
        assert_eq!(
            e.to_string(),
            r#"backend "triton" has no healthy replica; retry later"#
        );
    }

    #[test]
    fn control_denied() {
        let e = GatewayError::ControlDenied {
            route: "default".into(),
            kind: Control::Repository,
        };
        assert_eq!(e.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            e.to_string(),
            r#"repository endpoints are not allowed through this gateway (route "default" does not list "repository" in allow_control)"#
        );
    }
}
