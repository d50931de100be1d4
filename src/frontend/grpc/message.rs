//! Reading a unary call's one request message off its body, and what the
//! gRPC frontend refuses. The message's declared length is checked against
//! the route's body limit on its 5-byte prefix, before any of it is
//! buffered; a compressed message is refused (no `grpc-encoding` is
//! offered); more than one message on a unary call is refused.

use bytes::Bytes;
use http::HeaderMap;
use prost::Message;

use crate::codec::grpc::budget::{self, BudgetError, Caps, Schema};
use crate::codec::grpc::status::Code;
use crate::codec::grpc::{self, FrameDecoder, FrameError, FrameLimits};
use crate::config::Route;
use crate::error::{Class, Classified, Classify, Error, Origin, TensorLabel};
use crate::http::client_body::ClientBody;

/// What the gRPC frontend itself refuses.
#[derive(Debug, thiserror::Error)]
pub enum GrpcError {
    #[error("{0}")]
    Frame(#[from] FrameError),
    #[error("the request stream ended without a message")]
    NoMessage,
    #[error("a unary call carries one message; this one carried more")]
    ExtraMessage,
    #[error("invalid {message}: {reason}")]
    Decode {
        message: &'static str,
        reason: String,
    },
    #[error("{0}")]
    Convert(#[from] grpc::InferError),
    /// Refused on its wire form, before it was decoded.
    #[error("{0}")]
    Budget(#[from] BudgetError),
    #[error("grpc-encoding {0:?} is not supported: send messages uncompressed")]
    Encoding(String),
    #[error("unknown method {0}")]
    UnknownMethod(String),
    #[error("{0}")]
    Timeout(#[from] grpc::timeout::TimeoutError),
    #[error("{0} is not served here: {1}")]
    Unimplemented(&'static str, &'static str),
    #[error("the backend's {what} cannot be translated to gRPC: {reason}")]
    Translate { what: &'static str, reason: String },
    #[error("a gRPC call is an HTTP/2 POST with content-type application/grpc")]
    NotGrpc,
    /// A gRPC backend refused the call with its own status.
    #[error("{message}")]
    Backend { code: Code, message: String },
}

impl Classify for GrpcError {
    fn classify(&self) -> Classified {
        let limit = |class: Class| class.violating(TensorLabel::Request, "limit");
        match self {
            GrpcError::Frame(FrameError::TooLarge { .. }) => limit(Class::TooLarge),
            GrpcError::Budget(e) if e.is_malformed() => Class::Malformed.into(),
            GrpcError::Budget(_) => limit(Class::TooLarge),
            GrpcError::Frame(FrameError::CompressedWithoutEncoding) | GrpcError::Encoding(_) => {
                Class::UnsupportedEncoding.into()
            }
            GrpcError::Convert(grpc::InferError::Tensor { subject, .. }) => Class::BadTensor {
                tensor: subject.name.clone().unwrap_or_default(),
            }
            .into(),
            GrpcError::UnknownMethod(_) | GrpcError::Unimplemented(..) | GrpcError::NotGrpc => {
                Class::MethodNotAllowed.into()
            }
            GrpcError::Translate { .. } => Class::BadOutput {
                backend_fault: true,
            }
            .into(),
            GrpcError::Backend { code, message } => Class::Refused {
                origin: Origin::Grpc(*code),
                message: message.clone(),
            }
            .into(),
            _ => Class::Malformed.into(),
        }
    }
}

/// The limits a call's messages are read under.
pub(super) fn limits(headers: &HeaderMap, max: u64) -> Result<FrameLimits, GrpcError> {
    if let Some(enc) = headers.get("grpc-encoding") {
        let enc = enc.to_str().unwrap_or("?");
        if enc != "identity" {
            return Err(GrpcError::Encoding(enc.to_owned()));
        }
    }
    Ok(FrameLimits {
        max_message_bytes: max,
        compression: false,
    })
}

/// The one message of a unary call, read whole (a slice of the body when
/// it came in one piece).
pub(super) async fn read_one(body: &mut ClientBody, limits: FrameLimits) -> Result<Bytes, Error> {
    let mut frames = FrameDecoder::new(limits);
    let mut message = None;
    loop {
        while let Some(frame) = frames.decode().map_err(GrpcError::from)? {
            if message.replace(frame.message).is_some() {
                return Err(GrpcError::ExtraMessage.into());
            }
        }
        match body.next().await? {
            Some(chunk) => frames.push(chunk),
            None => break,
        }
    }
    frames.finish().map_err(GrpcError::from)?;
    Ok(message.ok_or(GrpcError::NoMessage)?)
}

/// A message read under the largest limit of the routes it could be for,
/// against the limit of the route it turned out to be for.
pub(super) fn within_route(route: &Route, message: &Bytes) -> Result<(), GrpcError> {
    let limit = route.limits.max_body_bytes;
    let declared = message.len() as u64;
    if declared > limit {
        return Err(FrameError::TooLarge { declared, limit }.into());
    }
    Ok(())
}

/// Decodes a message of type `M` (of `schema`) once its wire form is
/// within `caps`: nothing is allocated for a message that would decode
/// into more than its caps allow.
pub(super) fn decode_within<M: Message + Default>(
    bytes: Bytes,
    schema: &'static Schema,
    caps: &Caps,
) -> Result<M, GrpcError> {
    budget::check(schema, &bytes, caps)?;
    decode(bytes, schema.name)
}

/// Decodes a small message that no route's limits apply to (one of the
/// calls other than inference), within the default caps.
pub(super) fn decode_small<M: Message + Default>(
    bytes: Bytes,
    name: &'static str,
) -> Result<M, GrpcError> {
    if let Some(schema) = budget::schema(&format!("inference.{name}")) {
        budget::check(schema, &bytes, &Caps::DEFAULT)?;
    }
    decode(bytes, name)
}

/// Decodes a message of type `M`.
pub(super) fn decode<M: Message + Default>(
    bytes: Bytes,
    name: &'static str,
) -> Result<M, GrpcError> {
    M::decode(bytes).map_err(|e| GrpcError::Decode {
        message: name,
        reason: e.to_string(),
    })
}
