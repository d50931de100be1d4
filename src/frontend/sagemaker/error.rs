//! SageMaker's errors: the frontend's own ([`SageMakerError`]) and how any
//! gateway error is shown — `{"error": ...}` on the container paths, and on
//! the Runtime API path the AWS shape boto3 parses: an `x-amzn-ErrorType`
//! header naming the error and `{"message": ...}`, with `ModelError` (424,
//! `OriginalStatusCode`, `OriginalMessage`) when the model failed, AWS's
//! authentication errors (403 `MissingAuthenticationTokenException`,
//! `UnrecognizedClientException`, `InvalidSignatureException`; 400
//! `IncompleteSignatureException`) for refused credentials and 400
//! `ThrottlingException` over a rate limit.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{Response, StatusCode};
use serde_json::json;

use crate::codec::sagemaker::{ConfigError, MediaError, RecordError, ReplyError};
use crate::gateway::body::Body;
use crate::gateway::error::{GatewayError, json_response};
use crate::gateway::guard::AuthProblem;

/// What the SageMaker frontend itself refuses.
#[derive(Debug, thiserror::Error)]
pub enum SageMakerError {
    #[error("{0}")]
    Record(#[from] RecordError),
    #[error("{0}")]
    Media(#[from] MediaError),
    #[error(
        "no model named: send the X-Amzn-SageMaker-Target-Model header, or call /models/{{model}}/invoke or /endpoints/{{endpoint}}/invocations"
    )]
    NoModel,
    #[error(
        "model \"{model}\": {why}; set input and datatype in [routes.sagemaker] of route \"{route}\""
    )]
    Input {
        model: String,
        route: String,
        why: String,
    },
    #[error("route \"{route}\": {source}")]
    Config { route: String, source: ConfigError },
    #[error("the backend's outputs cannot be written as the reply: {0}")]
    Reply(#[from] ReplyError),
    #[error(
        "output \"{name}\" named in [routes.sagemaker] outputs is not among the backend's outputs"
    )]
    MissingOutput { name: String },
}

impl SageMakerError {
    /// The status of each refusal (the gateway's one mapping defers here).
    pub fn status(&self) -> StatusCode {
        match self {
            SageMakerError::Record(RecordError::BodyTooLarge { .. }) => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            SageMakerError::Media(MediaError::ContentType { .. }) => {
                StatusCode::UNSUPPORTED_MEDIA_TYPE
            }
            SageMakerError::Media(MediaError::Accept { .. }) => StatusCode::NOT_ACCEPTABLE,
            SageMakerError::Reply(_) | SageMakerError::MissingOutput { .. } => {
                StatusCode::BAD_GATEWAY
            }
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

/// `{"error": message}` with the error's status (container paths).
pub fn render(e: GatewayError) -> Response<Body> {
    e.into_response()
}

/// The AWS error shape (Runtime API path).
pub fn render_aws(e: GatewayError) -> Response<Body> {
    let message = e.to_string();
    let (status, kind, body) = match &e {
        GatewayError::BackendFailed {
            status, message: m, ..
        } => (
            StatusCode::FAILED_DEPENDENCY,
            "ModelError",
            json!({
                "message": format!("Received client error ({}) from model with message \"{m}\"", status.as_u16()),
                "OriginalStatusCode": status.as_u16(),
                "OriginalMessage": m,
                "LogStreamArn": "",
            }),
        ),
        GatewayError::BackendTimeout { .. }
        | GatewayError::BackendRefused { .. }
        | GatewayError::BackendReset { .. }
        | GatewayError::BadBackendResponse { .. }
        | GatewayError::OutputRule { .. }
        | GatewayError::ResponseTooLarge { .. } => {
            let original = e.status().as_u16();
            (
                StatusCode::FAILED_DEPENDENCY,
                "ModelError",
                json!({
                    "message": format!("Received server error ({original}) from model with message \"{message}\""),
                    "OriginalStatusCode": original,
                    "OriginalMessage": message,
                    "LogStreamArn": "",
                }),
            )
        }
        GatewayError::Unauthorized { problem, .. } => {
            let (status, kind) = aws_auth_error(problem);
            (status, kind, json!({ "message": message }))
        }
        GatewayError::RateLimited(r) if r.wait.is_some() => (
            StatusCode::BAD_REQUEST,
            "ThrottlingException",
            json!({ "message": message }),
        ),
        _ => {
            let status = e.status();
            let kind = match status {
                StatusCode::SERVICE_UNAVAILABLE => "ServiceUnavailable",
                s if s.is_server_error() => "InternalFailure",
                _ => "ValidationError",
            };
            (status, kind, json!({ "message": message }))
        }
    };
    let body = Bytes::from(serde_json::to_vec(&body).unwrap_or_default());
    let mut resp = json_response(status, body);
    let h = resp.headers_mut();
    let value = format!("{kind}:http://internal.amazon.com/coral/com.amazon.sagemaker/");
    if let Ok(v) = HeaderValue::from_str(&value) {
        h.insert(HeaderName::from_static("x-amzn-errortype"), v);
    }
    resp
}

/// The status and error type AWS answers for refused credentials (what
/// boto3 raises as `ClientError` with that code).
fn aws_auth_error(problem: &AuthProblem) -> (StatusCode, &'static str) {
    use crate::auth::sigv4::SigV4Error;
    let forbidden = StatusCode::FORBIDDEN;
    match problem {
        AuthProblem::Missing => (forbidden, "MissingAuthenticationTokenException"),
        AuthProblem::SigV4Off => (forbidden, "AccessDeniedException"),
        AuthProblem::SigV4(
            SigV4Error::Malformed { .. } | SigV4Error::NoDate | SigV4Error::HostNotSigned,
        ) => (StatusCode::BAD_REQUEST, "IncompleteSignatureException"),
        AuthProblem::SigV4(_) => (forbidden, "InvalidSignatureException"),
        AuthProblem::UnknownKey
        | AuthProblem::UnknownAccessKey
        | AuthProblem::Unreadable(_)
        | AuthProblem::SigV4NotHere => (forbidden, "UnrecognizedClientException"),
    }
}
