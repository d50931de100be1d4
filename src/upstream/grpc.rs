//! One unary call to a gRPC backend (`grpc://`, `grpcs://`): the request
//! message sent as the call's one frame over HTTP/2, and the reply read
//! whole — bounded, its one message and the status from its trailers (or
//! from its head, for a status alone). Replicas, retries and timeouts are
//! [`Upstream::send`](super::Upstream::send)'s, as for HTTP backends.

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, Method};
use http_body_util::BodyExt;

use super::{OutBody, Outgoing};
use crate::codec::grpc::status::Code;
use crate::codec::grpc::{FrameDecoder, FrameError, FrameLimits, frame};
use crate::http::body::BoxError;

/// The content type of every gRPC request.
pub(crate) const CONTENT_TYPE: &str = "application/grpc";
/// The service of the V2 inference calls.
pub(crate) const SERVICE: &str = "/inference.GRPCInferenceService/";

/// The request for a unary call of `method` (`ModelInfer`, `ServerReady`,
/// ...) carrying `message` (its encoded pieces), for `model` if it names
/// one. `headers` are the ones the frontend forwards (request id, trace
/// context).
pub(crate) fn call(
    method: &str,
    message: Vec<Bytes>,
    mut headers: HeaderMap,
    model: Option<String>,
    idempotent: bool,
) -> Result<Outgoing, frame::MessageTooLong> {
    let framed = frame::encode(message)?;
    headers.remove(header::ACCEPT_ENCODING);
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    headers.insert(header::TE, HeaderValue::from_static("trailers"));
    let len: u64 = framed.iter().map(|b| b.len() as u64).sum();
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    Ok(Outgoing {
        method: Method::POST,
        path: format!("{SERVICE}{method}"),
        headers,
        body: OutBody::Chunks(framed),
        model,
        idempotent,
        deadline: None,
    })
}

/// What a gRPC backend answered a unary call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Status OK and the reply message.
    Message(Bytes),
    /// Any other status, with its message.
    Status { code: Code, message: String },
}

/// Why a reply could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("{0}")]
    Body(BoxError),
    #[error("{0}")]
    Frame(#[from] FrameError),
    #[error("OK status without a reply message")]
    NoMessage,
    #[error("a unary reply carried more than one message")]
    ExtraMessage,
    #[error("no grpc-status in the reply's trailers or head")]
    NoStatus,
}

/// Reads a unary call's reply: `head` is the reply's head, `body` its
/// body; the message may be at most `limit` bytes.
pub(crate) async fn read_answer(
    head: &HeaderMap,
    body: &mut (dyn http_body::Body<Data = Bytes, Error = BoxError> + Send + Unpin),
    limit: u64,
) -> Result<Answer, ReadError> {
    // A status alone: in the head, and the body is empty.
    if let Some(code) = status_in(head) {
        return Ok(answer(code, head, None));
    }
    let mut frames = FrameDecoder::new(FrameLimits {
        max_message_bytes: limit,
        compression: false,
    });
    let mut message = None;
    let mut trailers = None;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(ReadError::Body)?;
        match frame.into_data() {
            Ok(data) => {
                frames.push(data);
                while let Some(f) = frames.decode()? {
                    if message.replace(f.message).is_some() {
                        return Err(ReadError::ExtraMessage);
                    }
                }
            }
            Err(frame) => {
                if let Ok(t) = frame.into_trailers() {
                    trailers = Some(t);
                }
            }
        }
        if body.is_end_stream() {
            break;
        }
    }
    frames.finish()?;
    let trailers = trailers.ok_or(ReadError::NoStatus)?;
    let code = status_in(&trailers).ok_or(ReadError::NoStatus)?;
    if code == Code::Ok {
        return message.map(Answer::Message).ok_or(ReadError::NoMessage);
    }
    Ok(answer(code, &trailers, message))
}

fn status_in(h: &HeaderMap) -> Option<Code> {
    let v = h
        .get(GRPC_STATUS)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u8>()
        .ok()?;
    Some(Code::from_u8(v).unwrap_or(Code::Unknown))
}

fn answer(code: Code, h: &HeaderMap, message: Option<Bytes>) -> Answer {
    if code == Code::Ok {
        return Answer::Message(message.unwrap_or_default());
    }
    let text = h
        .get(GRPC_MESSAGE)
        .map(|v| percent_decode(v.as_bytes()))
        .unwrap_or_default();
    Answer::Status {
        code,
        message: text,
    }
}

const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
const GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");

/// `grpc-message` is percent-encoded UTF-8.
fn percent_decode(v: &[u8]) -> String {
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        if v[i] == b'%'
            && i + 2 < v.len()
            && let (Some(h), Some(l)) = (hex(v[i + 1]), hex(v[i + 2]))
        {
            out.push(h << 4 | l);
            i += 3;
            continue;
        }
        out.push(v[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body of data frames, then trailers.
    struct Frames(std::collections::VecDeque<http_body::Frame<Bytes>>);

    impl http_body::Body for Frames {
        type Data = Bytes;
        type Error = BoxError;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
            std::task::Poll::Ready(self.0.pop_front().map(Ok))
        }

        fn is_end_stream(&self) -> bool {
            self.0.is_empty()
        }
    }

    fn trailers_body(chunks: Vec<Bytes>, trailers: HeaderMap) -> Frames {
        let mut frames: std::collections::VecDeque<_> =
            chunks.into_iter().map(http_body::Frame::data).collect();
        frames.push_back(http_body::Frame::trailers(trailers));
        Frames(frames)
    }

    fn status(code: &str, message: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(GRPC_STATUS, code.parse().unwrap());
        if !message.is_empty() {
            h.insert(GRPC_MESSAGE, message.parse().unwrap());
        }
        h
    }

    #[tokio::test]
    async fn a_reply_is_its_message_and_the_status_in_its_trailers() {
        let framed = frame::encode(vec![Bytes::from_static(b"\x08\x01")]).unwrap();
        let mut body = trailers_body(framed, status("0", ""));
        let got = read_answer(&HeaderMap::new(), &mut body, 1 << 20)
            .await
            .unwrap();
        assert_eq!(got, Answer::Message(Bytes::from_static(b"\x08\x01")));

        let mut body = trailers_body(
            vec![],
            status("5", "Request for unknown model: %27x%27 is not found"),
        );
        let got = read_answer(&HeaderMap::new(), &mut body, 1 << 20)
            .await
            .unwrap();
        assert_eq!(
            got,
            Answer::Status {
                code: Code::NotFound,
                message: "Request for unknown model: 'x' is not found".into()
            }
        );
        // A status alone, in the head.
        let got = read_answer(
            &status("3", "bad"),
            &mut trailers_body(vec![], HeaderMap::new()),
            10,
        )
        .await
        .unwrap();
        assert_eq!(
            got,
            Answer::Status {
                code: Code::InvalidArgument,
                message: "bad".into()
            }
        );
    }

    #[tokio::test]
    async fn a_reply_over_the_limit_is_refused_on_its_prefix() {
        let framed = frame::encode(vec![Bytes::from(vec![0u8; 100])]).unwrap();
        let mut body = trailers_body(framed, status("0", ""));
        let e = read_answer(&HeaderMap::new(), &mut body, 10)
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                ReadError::Frame(FrameError::TooLarge {
                    declared: 100,
                    limit: 10
                })
            ),
            "{e:?}"
        );
    }
}
