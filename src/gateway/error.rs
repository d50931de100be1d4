//! Every gateway error, and the one place they become HTTP responses:
//! a status code and a `{"error": "..."}` body.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};

use super::body::{Body, full};
use crate::codec::v2::DocError;
use crate::codec::v2::framing::FramingError;
use crate::codec::v2::json_write::WriteError;
use crate::rules::Violation;

/// What went wrong while serving a request.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("no route for model \"{model}\" and no default route")]
    NoRoute { model: String },
    #[error("not found: {path}")]
    NotFound { path: String },
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
    #[error("backend \"{backend}\" refused the connection: {detail}")]
    BackendRefused { backend: String, detail: String },
    #[error("backend \"{backend}\" did not answer within {seconds:.3}s")]
    BackendTimeout { backend: String, seconds: f64 },
    #[error("backend \"{backend}\" closed the connection: {detail}")]
    BackendReset { backend: String, detail: String },
    #[error("backend \"{backend}\" sent an invalid response: {detail}")]
    BadBackendResponse { backend: String, detail: String },
    #[error("route \"{route}\": backend response is larger than the limit of {limit} bytes")]
    ResponseTooLarge { route: String, limit: u64 },
    #[error("the gateway is shutting down")]
    ShuttingDown,
}

impl GatewayError {
    /// The HTTP status for this error. This is the only mapping.
    pub fn status(&self) -> StatusCode {
        use GatewayError::*;
        match self {
            NoRoute { .. } | NotFound { .. } => StatusCode::NOT_FOUND,
            MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Rule { .. }
            | BadDocument { .. }
            | BadFraming { .. }
            | BadRequest { .. }
            | BadEncoding { .. }
            | ClientBody { .. }
            | OutputNotJson { .. }
            | InputNotJson { .. } => StatusCode::BAD_REQUEST,
            ClientTimeout => StatusCode::REQUEST_TIMEOUT,
            BodyTooLarge { .. } | HeaderTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            UnsupportedEncoding { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            BackendRefused { .. }
            | BackendReset { .. }
            | BadBackendResponse { .. }
            | ResponseTooLarge { .. } => StatusCode::BAD_GATEWAY,
            BackendTimeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The `kind` label of upstream errors, for metrics.
    pub fn upstream_kind(&self) -> Option<&'static str> {
        match self {
            GatewayError::BackendRefused { .. } => Some("refused"),
            GatewayError::BackendTimeout { .. } => Some("timeout"),
            GatewayError::BackendReset { .. } => Some("reset"),
            GatewayError::BadBackendResponse { .. } | GatewayError::ResponseTooLarge { .. } => {
                Some("invalid")
            }
            _ => None,
        }
    }

    /// The response sent to the client.
    pub fn into_response(self) -> Response<Body> {
        let status = self.status();
        let body = error_body(&self.to_string());
        let mut resp = Response::new(full(body));
        *resp.status_mut() = status;
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if matches!(self, GatewayError::UnsupportedEncoding { .. }) {
            h.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_static("gzip, deflate"),
            );
        }
        resp
    }
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
}
