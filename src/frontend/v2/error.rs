//! What the V2 frontend itself refuses (a malformed document or framing, a
//! header or member over the route's limits, an output the client asked
//! for as JSON that JSON cannot carry), and how any error is shown to a V2
//! client: the class's status and `{"error": "..."}` naming the route,
//! tensor and rule. The SageMaker container paths and every endpoint passed
//! through answer errors the same way.

use http::{HeaderValue, Response, header};

use crate::codec::v2::DocError;
use crate::codec::v2::framing::FramingError;
use crate::codec::v2::json_write::WriteError;
use crate::error::{Class, Classified, Classify, Error, TensorLabel};
use crate::http::body::{Body, error_body, json_response};

/// The challenge of a 401.
pub const WWW_AUTHENTICATE: &str = "Bearer realm=\"tensorgate\"";

/// A V2 request (or the reply it asked for) the frontend refuses.
#[derive(Debug, thiserror::Error)]
pub enum V2Error {
    #[error("route \"{route}\": {source}")]
    Document { route: String, source: DocError },
    #[error("route \"{route}\": {source}")]
    Framing { route: String, source: FramingError },
    /// A binary-extension header over `max_json_header_bytes`.
    #[error("route \"{route}\": {source}")]
    HeaderTooLarge { route: String, source: FramingError },
    /// BYTES data that is not whole, well-framed elements.
    #[error("route \"{route}\": input \"{input}\": {detail}")]
    BadBytes {
        route: String,
        input: String,
        detail: String,
    },
    #[error("route \"{route}\": output \"{output}\": {source}")]
    OutputNotJson {
        route: String,
        output: String,
        source: WriteError,
    },
}

impl Classify for V2Error {
    fn classify(&self) -> Classified {
        match self {
            V2Error::Document {
                source: DocError::MemberTooLarge { .. },
                ..
            }
            | V2Error::HeaderTooLarge { .. } => {
                Class::TooLarge.violating(TensorLabel::Request, "limit")
            }
            // Past the values a document may hold outside tensor data:
            // malformed for the client (400, as Triton refuses a document
            // it cannot parse), a limit for the metrics.
            V2Error::Document {
                source: DocError::TooManyValues { .. },
                ..
            } => Class::Malformed.violating(TensorLabel::Request, "limit"),
            V2Error::Document {
                source:
                    DocError::TooManyDims { subject, .. }
                    | DocError::TooManyElements { subject, .. }
                    | DocError::ShapeTooLong { subject, .. },
                ..
            } => {
                let tensor = subject.name.clone().unwrap_or_default();
                Class::BadTensor {
                    tensor: tensor.clone(),
                }
                .violating(TensorLabel::Named(tensor), "limit")
            }
            V2Error::Document { .. } | V2Error::Framing { .. } | V2Error::BadBytes { .. } => {
                Class::Malformed.into()
            }
            V2Error::OutputNotJson { output, .. } => Class::BadTensor {
                tensor: output.clone(),
            }
            .into(),
        }
    }
}

/// The V2 error response: the class's status and `{"error": message}`
/// (with `Accept-Encoding` for an encoding refused, and the challenge for
/// refused credentials).
pub fn render(e: &Error) -> Response<Body> {
    let class = e.class();
    let mut resp = json_response(class.status(), error_body(&e.to_string()));
    let h = resp.headers_mut();
    match class {
        Class::UnsupportedEncoding => {
            h.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_static("gzip, deflate"),
            );
        }
        Class::Unauthenticated(_) => {
            h.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(WWW_AUTHENTICATE),
            );
        }
        _ => {}
    }
    resp
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http::StatusCode;

    use super::*;
    use crate::codec::v2::path::Control;
    use crate::guard::admission::AdmissionError;
    use crate::http::client_body::BodyError;
    use crate::http::encoding::UnsupportedCoding;
    use crate::infer::route::RouteError;
    use crate::upstream::UpstreamError;

    #[test]
    fn statuses_and_body() {
        let e = Error::from(BodyError::TooLarge {
            route: "r".into(),
            limit: 10,
        });
        assert_eq!(e.class().status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            &error_body(&e.to_string())[..],
            br#"{"error":"route \"r\": request body is larger than the limit of 10 bytes"}"#
        );
        let e = Error::from(BodyError::from(UnsupportedCoding {
            encoding: "br".into(),
        }));
        let resp = render(&e);
        assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(resp.headers()["accept-encoding"], "gzip, deflate");
        assert_eq!(resp.headers()["content-type"], "application/json");
    }

    #[test]
    fn overloaded_says_when_to_retry() {
        let check = |waited_ms: u64, retry: u64| {
            let e = Error::from(AdmissionError::Overloaded {
                limit: 8,
                waited: Duration::from_millis(waited_ms),
            });
            assert_eq!(e.class().status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(e.class().retry_after(), Some(retry));
            e.to_string()
        };
        assert_eq!(
            check(5000, 5),
            "all 8 request slots stayed busy for 5.000s; retry later"
        );
        check(300, 1);
        check(1200, 2);
        let e = Error::from(BodyError::Deadline {
            limit: Duration::from_millis(1500),
        });
        assert_eq!(e.class().status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(e.to_string(), "the request body did not arrive within 1.5s");
        assert_eq!(e.class().retry_after(), None);
    }

    #[test]
    fn nothing_ready_is_503_naming_the_model_with_retry_after() {
        let e = Error::from(UpstreamError::ModelNotReady {
            backend: "triton".into(),
            model: "resnet".into(),
            retry_after: 5,
        });
        let class = e.class();
        assert_eq!(class.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(class.retry_after(), Some(5));
        assert_eq!(
            class.upstream_kind().map(|k| k.label()),
            Some("unavailable")
        );
        assert_eq!(
            &error_body(&e.to_string())[..],
            br#"{"error":"model \"resnet\" is not ready on any replica of backend \"triton\"; retry later"}"#
        );
        let e = Error::from(UpstreamError::NoHealthyReplica {
            backend: "triton".into(),
            retry_after: 0,
        });
        assert_eq!(e.class().status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(e.class().retry_after(), Some(1));
        assert_eq!(
            e.to_string(),
            r#"backend "triton" has no healthy replica; retry later"#
        );
    }

    #[test]
    fn control_denied() {
        let e = Error::from(RouteError::ControlDenied {
            route: "default".into(),
            kind: Control::Repository,
        });
        assert_eq!(e.class().status(), StatusCode::FORBIDDEN);
        assert_eq!(
            e.to_string(),
            r#"repository endpoints are not allowed through this gateway (route "default" does not list "repository" in allow_control)"#
        );
    }
}
