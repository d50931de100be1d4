//! The demo server's errors, and the one place that turns them into an HTTP
//! status and a `{"error": "..."}` body, with Triton's statuses and
//! content types (docs/TRITON-FACTS.md §7).

use bytes::Bytes;
use http::header::{ACCEPT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, Response, StatusCode};

use super::respond::{self, Body};

/// Largest request body the demo server reads (after decompression).
pub const MAX_BODY_BYTES: usize = 256 << 20;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("Not Found")]
    NotFound,
    #[error("Method Not Allowed")]
    MethodNotAllowed,
    #[error("Request for unknown model: '{0}' is not found")]
    UnknownModel(String),
    #[error("Request for unknown model: '{model}' version {version} is not found")]
    UnknownVersion { model: String, version: String },
    #[error("Model version not ready")]
    NotReady,
    #[error("HTTP end point doesn't support models with decoupled transaction policy")]
    Decoupled,
    #[error("Unsupported compression type")]
    UnsupportedEncoding,
    #[error("request body is over the demo server's limit of {limit} bytes")]
    TooLarge { limit: usize },
    /// The body's framing is broken before any JSON is read (header length,
    /// BYTES element layout); Triton answers these in `text/plain`.
    #[error("{0}")]
    Framing(String),
    /// The body is malformed or does not fit the protocol.
    #[error("{0}")]
    Invalid(String),
    /// The request does not fit the model; Triton prefixes the request id.
    #[error("[request id: {}] {message}", .id.as_deref().unwrap_or("<id_unknown>"))]
    Rejected { id: Option<String>, message: String },
}

impl DemoError {
    pub fn rejected(id: Option<&str>, message: impl Into<String>) -> Self {
        DemoError::Rejected {
            id: id.map(str::to_owned),
            message: message.into(),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            DemoError::NotFound | DemoError::UnknownModel(_) | DemoError::UnknownVersion { .. } => {
                StatusCode::NOT_FOUND
            }
            DemoError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            DemoError::Decoupled | DemoError::UnsupportedEncoding => StatusCode::NOT_IMPLEMENTED,
            DemoError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            DemoError::NotReady
            | DemoError::Framing(_)
            | DemoError::Invalid(_)
            | DemoError::Rejected { .. } => StatusCode::BAD_REQUEST,
        }
    }

    /// Triton sends these as `text/plain` (with `Content-Length` first);
    /// the rest as `application/json`.
    fn plain_text(&self) -> bool {
        !matches!(
            self,
            DemoError::Invalid(_) | DemoError::Rejected { .. } | DemoError::TooLarge { .. }
        )
    }

    /// The body `{"error":"..."}` (the text only; no status).
    pub fn body(&self) -> Bytes {
        let value = serde_json::json!({ "error": self.to_string() });
        Bytes::from(serde_json::to_vec(&value).unwrap_or_default())
    }

    pub fn into_response(self) -> Response<Body> {
        tracing::debug!(status = %self.status(), error = %self, "demo request failed");
        let body = self.body();
        let mut builder = Response::builder().status(self.status());
        if self.plain_text() {
            builder = builder
                .header(CONTENT_LENGTH, body.len())
                .header(CONTENT_TYPE, "text/plain");
        } else {
            builder = builder
                .header(CONTENT_TYPE, "application/json")
                .header(CONTENT_LENGTH, body.len());
        }
        match self {
            DemoError::MethodNotAllowed => {
                builder = builder.extension(hyper::ext::ReasonPhrase::from_static(b"Not Allowed"));
            }
            DemoError::UnsupportedEncoding => {
                builder =
                    builder.header(ACCEPT_ENCODING, HeaderValue::from_static("gzip, deflate"));
            }
            _ => {}
        }
        respond::finish(builder, respond::full(body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejected_carries_the_request_id() {
        let e = DemoError::rejected(None, "bad");
        assert_eq!(e.to_string(), "[request id: <id_unknown>] bad");
        let e = DemoError::rejected(Some("abc"), "bad");
        assert_eq!(e.to_string(), "[request id: abc] bad");
        assert_eq!(&e.body()[..], br#"{"error":"[request id: abc] bad"}"#);
    }

    #[test]
    fn statuses_and_content_types() {
        let r = DemoError::UnknownModel("nope".into()).into_response();
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        let names: Vec<_> = r.headers().keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["content-length", "content-type"]);
        assert_eq!(r.headers()[CONTENT_TYPE], "text/plain");
        let r = DemoError::Invalid("x".into()).into_response();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert_eq!(r.headers()[CONTENT_TYPE], "application/json");
        let r = DemoError::MethodNotAllowed.into_response();
        let reason = r.extensions().get::<hyper::ext::ReasonPhrase>().unwrap();
        assert_eq!(reason.as_bytes(), b"Not Allowed");
    }
}
