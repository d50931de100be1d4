//! gRPC statuses: each error class's code, and the responses that carry a
//! status — a reply's messages followed by trailers, or a status alone
//! ("trailers-only": the status in the response head). The HTTP status is
//! always 200; what happened is `grpc-status` and `grpc-message`.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, Response};
use http_body::Frame;

use crate::error::{Class, UpstreamKind};
use crate::http::body::{Body, BoxError};

/// The `grpc-status` header.
pub const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
/// The `grpc-message` header.
pub const GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");
/// The content type of every gRPC response.
pub const CONTENT_TYPE: &str = "application/grpc";

pub use crate::codec::grpc::status::Code;

/// The code of an error class: a rule or malformed input is
/// INVALID_ARGUMENT naming the tensor, credentials UNAUTHENTICATED, a rate
/// limit or a size limit RESOURCE_EXHAUSTED, shedding and an unreachable
/// backend UNAVAILABLE, a backend timeout DEADLINE_EXCEEDED; a backend's own
/// refusal keeps the code its status stands for.
pub fn code_of(class: &Class) -> Code {
    match class {
        Class::Malformed | Class::BadTensor { .. } | Class::BodyBroken => Code::InvalidArgument,
        Class::MethodNotAllowed
        | Class::Unsupported
        | Class::UnsupportedEncoding
        | Class::UnsupportedMediaType
        | Class::NotAcceptable => Code::Unimplemented,
        Class::TooLarge | Class::RateLimited { .. } => Code::ResourceExhausted,
        Class::BodyTimeout | Class::DeadlineExceeded => Code::DeadlineExceeded,
        Class::NotFound { .. } => Code::NotFound,
        Class::Forbidden => Code::PermissionDenied,
        Class::Unauthenticated(_) => Code::Unauthenticated,
        Class::Overloaded { .. } | Class::ShuttingDown => Code::Unavailable,
        Class::Upstream { kind, .. } => match kind {
            UpstreamKind::Timeout => Code::DeadlineExceeded,
            UpstreamKind::Invalid => Code::Internal,
            _ => Code::Unavailable,
        },
        Class::Refused { origin, .. } => origin.code(),
        Class::BadOutput { .. } | Class::Internal => Code::Internal,
    }
}

fn header_value(code: Code) -> HeaderValue {
    HeaderValue::from(u16::from(code as u8))
}

/// A response carrying only a status (and its message).
pub fn status_only(code: Code, message: &str) -> Response<Body> {
    let mut resp = Response::new(crate::http::body::empty());
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    put_status(h, code, message);
    resp
}

/// A successful reply: the messages (already framed), then the trailers
/// saying OK.
pub fn reply(framed: Vec<Bytes>) -> Response<Body> {
    let mut trailers = HeaderMap::new();
    put_status(&mut trailers, Code::Ok, "");
    let body = Unary {
        chunks: framed.into_iter().filter(|c| !c.is_empty()).collect(),
        trailers: Some(trailers),
    };
    let mut resp = Response::new(http_body_util::BodyExt::boxed_unsync(body));
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    resp
}

/// Writes `grpc-status` and, when there is one, `grpc-message`
/// percent-encoded as gRPC says (every byte outside printable ASCII, and
/// `%`).
pub fn put_status(h: &mut HeaderMap, code: Code, message: &str) {
    h.insert(GRPC_STATUS, header_value(code));
    if message.is_empty() {
        return;
    }
    if let Ok(v) = HeaderValue::from_str(&percent_encode(message)) {
        h.insert(GRPC_MESSAGE, v);
    }
}

fn percent_encode(message: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(message.len());
    for &b in message.as_bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        }
    }
    out
}

/// A unary reply body: its pieces, then its trailers.
#[derive(Debug)]
struct Unary {
    chunks: VecDeque<Bytes>,
    trailers: Option<HeaderMap>,
}

impl http_body::Body for Unary {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(c) = self.chunks.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(c))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty() && self.trailers.is_none()
    }
}

#[cfg(test)]
mod tests {
    use http::StatusCode;

    use super::*;

    #[test]
    fn messages_are_percent_encoded_as_grpc_says() {
        assert_eq!(percent_encode("plain text"), "plain text");
        assert_eq!(percent_encode("100% é\n"), "100%25 %C3%A9%0A");
    }

    #[test]
    fn classes_get_the_codes_the_issue_names() {
        use crate::error::{Credentials, LimitUnit};
        let rule = Class::BadTensor {
            tensor: "INPUT0".into(),
        };
        assert_eq!(code_of(&rule), Code::InvalidArgument);
        assert_eq!(
            code_of(&Class::Unauthenticated(Credentials::Missing)),
            Code::Unauthenticated
        );
        let rate = Class::RateLimited {
            unit: LimitUnit::Requests,
            retry_after: Some(1),
        };
        assert_eq!(code_of(&rate), Code::ResourceExhausted);
        assert_eq!(
            code_of(&Class::Overloaded { retry_after: 1 }),
            Code::Unavailable
        );
        let timeout = Class::Upstream {
            kind: UpstreamKind::Timeout,
            retry_after: None,
        };
        assert_eq!(code_of(&timeout), Code::DeadlineExceeded);
        assert_eq!(code_of(&Class::TooLarge), Code::ResourceExhausted);
        let refused = |origin| Class::Refused {
            origin,
            message: "unexpected shape".into(),
        };
        let http = crate::error::Origin::Http(StatusCode::BAD_REQUEST);
        assert_eq!(code_of(&refused(http)), Code::InvalidArgument);
        // A gRPC backend's own code passes as it is.
        for code in [
            Code::FailedPrecondition,
            Code::OutOfRange,
            Code::AlreadyExists,
            Code::Cancelled,
        ] {
            let grpc = crate::error::Origin::Grpc(code);
            assert_eq!(code_of(&refused(grpc)), code);
        }
        assert_eq!(Code::InvalidArgument.http(), 400);
    }

    #[test]
    fn a_status_alone_is_in_the_head() {
        let resp = status_only(Code::NotFound, "no such model");
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()["grpc-status"], "5");
        assert_eq!(resp.headers()["grpc-message"], "no such model");
        assert_eq!(resp.headers()["content-type"], "application/grpc");
    }
}
