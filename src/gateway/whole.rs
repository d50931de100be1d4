//! Replies for clients that cannot be told of a cut. HTTP/1.0 has no
//! chunked encoding: a reply without a length ends when the connection
//! closes, so a reply cut part way (a later SageMaker batch failing, a
//! backend dying mid-stream) would read as whole — a clean-looking 200 with
//! part of the records. The same holds for a client behind a proxy that
//! speaks HTTP/1.0 to the gateway (nginx's default `proxy_http_version`).
//! Such a reply is held (in memory, then on disk: [`crate::http::spool`])
//! until it is whole, then sent with its length; if it breaks off first,
//! the error that cut it is answered instead, before any status line.

use http::request::Parts;
use http::{Method, Response, StatusCode, Version, header};
use http_body::Body as _;
use http_body_util::BodyExt;

use crate::error::{Class, Classified, Classify, Error, chain};
use crate::http::body::{Body, BoxError};
use crate::http::spool::{SpoolLimits, spool};

/// A reply that broke off while it was held whole, for a cause that is not
/// one of the gateway's errors (a backend's stream, a body's I/O).
#[derive(Debug, thiserror::Error)]
#[error("the reply broke off before its end")]
pub(super) struct ReplyCut;

impl Classify for ReplyCut {
    fn classify(&self) -> Classified {
        let class = Class::BadOutput {
            backend_fault: false,
        };
        class.into()
    }
}

/// Whether replies to this request must be whole before they start.
pub(super) fn wanted(head: &Parts) -> bool {
    head.version <= Version::HTTP_10 && head.method != Method::HEAD
}

/// Whether `resp` could be cut without the client seeing it: a body of no
/// known length.
pub(super) fn needed(resp: &Response<Body>) -> bool {
    let status = resp.status();
    let bodiless = status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    !bodiless
        && !resp.headers().contains_key(header::CONTENT_LENGTH)
        && !resp.body().is_end_stream()
        && resp.body().size_hint().exact().is_none()
}

/// `resp` read whole into a spool bounded by `limits`, then answered with
/// its length; the error that cut it, if it broke off.
pub(super) async fn hold(
    resp: Response<Body>,
    limits: &SpoolLimits,
) -> Result<Response<Body>, Error> {
    let (parts, mut body) = resp.into_parts();
    let (mut writer, held) = spool(limits.clone());
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.map_err(cut)?.into_data() {
            writer.push(data).await?;
        }
    }
    writer.finish();
    Ok(Response::from_parts(parts, held.boxed_unsync()))
}

/// The error a reply body broke off with, as the gateway's own when it is
/// one (a frontend cutting its reply sends its [`Error`]).
fn cut(e: BoxError) -> Error {
    match e.downcast::<Error>() {
        Ok(e) => *e,
        Err(e) => {
            tracing::debug!(error = %chain(&*e), "a reply held whole broke off");
            ReplyCut.into()
        }
    }
}
