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
use crate::error::{Class, Classified, Classify, Credentials, Error, UpstreamKind};
use crate::http::body::{Body, json_response};

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

impl Classify for SageMakerError {
    fn classify(&self) -> Classified {
        let class = match self {
            SageMakerError::Record(
                RecordError::BodyTooLarge { .. } | RecordError::DenseTooLarge { .. },
            ) => Class::TooLarge,
            SageMakerError::Media(MediaError::ContentType { .. }) => Class::UnsupportedMediaType,
            SageMakerError::Media(MediaError::Accept { .. }) => Class::NotAcceptable,
            SageMakerError::Reply(_) | SageMakerError::MissingOutput { .. } => Class::BadOutput {
                backend_fault: false,
            },
            _ => Class::Malformed,
        };
        class.into()
    }
}

/// The AWS error shape (the Runtime API path): an `x-amzn-ErrorType` header
/// naming the error, and `{"message": ...}`; `ModelError` (424, with the
/// model's own status and message) when the backend failed.
pub fn render_aws(e: &Error) -> Response<Body> {
    let message = e.to_string();
    let class = e.class();
    let (status, kind, body) = match &class {
        Class::Refused { origin, message: m } => (
            StatusCode::FAILED_DEPENDENCY,
            "ModelError",
            json!({
                "message": format!("Received client error ({}) from model with message \"{m}\"", origin.status().as_u16()),
                "OriginalStatusCode": origin.status().as_u16(),
                "OriginalMessage": m,
                "LogStreamArn": "",
            }),
        ),
        Class::Upstream {
            kind:
                UpstreamKind::Timeout
                | UpstreamKind::Refused
                | UpstreamKind::Reset
                | UpstreamKind::Invalid,
            ..
        }
        | Class::BadOutput { .. } => {
            let original = class.status().as_u16();
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
        Class::Unauthenticated(c) => {
            let (status, kind) = aws_auth_error(*c);
            (status, kind, json!({ "message": message }))
        }
        Class::RateLimited {
            retry_after: Some(_),
            ..
        } => (
            StatusCode::BAD_REQUEST,
            "ThrottlingException",
            json!({ "message": message }),
        ),
        _ => {
            let status = class.status();
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
fn aws_auth_error(c: Credentials) -> (StatusCode, &'static str) {
    let forbidden = StatusCode::FORBIDDEN;
    match c {
        Credentials::Missing => (forbidden, "MissingAuthenticationTokenException"),
        Credentials::SigV4Off => (forbidden, "AccessDeniedException"),
        Credentials::SigV4Incomplete => (StatusCode::BAD_REQUEST, "IncompleteSignatureException"),
        Credentials::SigV4Invalid | Credentials::SigV4Expired => {
            (forbidden, "InvalidSignatureException")
        }
        Credentials::Unrecognized => (forbidden, "UnrecognizedClientException"),
    }
}
