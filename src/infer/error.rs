//! What the inference core refuses or finds wrong: the route's rules on a
//! request's tensors, a request the backend format cannot carry, and the
//! backend's reply (invalid, too large, breaking the route's output rules,
//! or the backend refusing the request). Failures of the exchange itself
//! are the upstream's ([`UpstreamError`]), and rate-limit refusals the
//! guard's ([`Refusal`]); both pass through unchanged.

use super::ModelRef;
use crate::codec::v2::DocError;
use crate::codec::v2::framing::FramingError;
use crate::codec::v2::json_write::WriteError;
use crate::error::{Class, Classified, Classify, Origin, TensorLabel, UpstreamKind};
use crate::guard::Refusal;
use crate::rules::Violation;
use crate::tensor::{BytesLayoutError, DataType};
use crate::upstream::UpstreamError;

/// A failure of the inference core.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InferError {
    /// A request tensor breaks one of its route's rules.
    #[error("route \"{route}\": {violation}")]
    Rule { route: String, violation: Violation },
    /// A raw binary request that cannot be checked against the rules.
    #[error("route \"{route}\": {source}")]
    Raw {
        route: String,
        source: Box<RawError>,
    },
    #[error("route \"{route}\": the request cannot be sent to a gRPC backend: {reason}")]
    NotGrpc { route: String, reason: String },
    #[error("route \"{route}\": input \"{input}\" cannot be sent to a JSON backend: {source}")]
    InputNotJson {
        route: String,
        input: String,
        source: WriteError,
    },
    #[error("backend \"{backend}\" sent an invalid response: {source}")]
    BadReply {
        backend: String,
        source: Box<MalformedReply>,
    },
    /// A backend output breaks one of the route's output rules.
    #[error("backend \"{backend}\" sent an invalid response: route \"{route}\": {violation}")]
    OutputRule {
        backend: String,
        route: String,
        violation: Box<Violation>,
    },
    #[error("route \"{route}\": backend response is larger than the limit of {limit} bytes")]
    ReplyTooLarge { route: String, limit: u64 },
    #[error("backend \"{backend}\" has no model \"{}\"{}", model.name, model.version.as_deref().map(|v| format!(" version {v}")).unwrap_or_default())]
    UnknownModel { backend: String, model: ModelRef },
    /// The backend answered the request with an error of its own (an
    /// HTTP status, or a gRPC code, as it came).
    #[error("backend \"{backend}\" refused the request ({origin}): {message}")]
    Refused {
        backend: String,
        origin: Origin,
        message: String,
    },
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    #[error(transparent)]
    RateLimited(#[from] Refusal),
}

/// What was wrong with a backend's reply.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MalformedReply {
    /// The HTTP exchange itself was malformed (the HTTP parser's words).
    #[error("{detail}")]
    Http { detail: String },
    #[error("{0}")]
    Framing(#[from] FramingError),
    #[error("JSON header of {len} bytes is over the limit of {limit}")]
    HeaderTooLarge { len: u64, limit: u64 },
    #[error("body ended {got} bytes into a {len}-byte JSON header")]
    HeaderCutShort { got: u64, len: u64 },
    #[error("unparsable JSON header: {0}")]
    Header(DocError),
    #[error("unparsable JSON reply: {0}")]
    Document(DocError),
    #[error("binary output sizes add up to more than 2^64 bytes")]
    SizeOverflow,
    #[error("output \"{output}\" is missing {missing} bytes")]
    ShortOutput { output: String, missing: u64 },
    #[error("output \"{output}\": {source}")]
    BytesLayout {
        output: String,
        source: BytesLayoutError,
    },
}

/// Why a raw binary request was refused before it reached the backend.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RawError {
    #[error(
        "a raw binary request (Inference-Header-Content-Length: 0) cannot be checked against this route's input rules: the metadata of model \"{model}\" is unavailable ({reason}); send a JSON or binary-extension request that names the input"
    )]
    NoMetadata { model: String, reason: String },
    #[error(
        "a raw binary request (Inference-Header-Content-Length: 0) is the model's single input, but the metadata of model \"{model}\" lists {count} inputs; send a JSON or binary-extension request that names each input"
    )]
    Inputs { model: String, count: usize },
    #[error(
        "raw binary body of {size} bytes cannot be input \"{name}\" of model \"{model}\" ({dtype} with shape {shape}): {reason}"
    )]
    Size {
        model: String,
        name: String,
        size: u64,
        dtype: DataType,
        shape: String,
        reason: &'static str,
    },
}

impl Classify for InferError {
    fn classify(&self) -> Classified {
        match self {
            InferError::Rule { violation, .. } => Class::BadTensor {
                tensor: violation.tensor_name().to_owned(),
            }
            .violating(
                TensorLabel::Named(violation.tensor_name().to_owned()),
                violation.rule_label(),
            ),
            InferError::Raw { .. } | InferError::NotGrpc { .. } => Class::Malformed.into(),
            InferError::InputNotJson { input, .. } => Class::BadTensor {
                tensor: input.clone(),
            }
            .into(),
            InferError::BadReply { .. } => Class::Upstream {
                kind: UpstreamKind::Invalid,
                retry_after: None,
            }
            .into(),
            InferError::OutputRule { violation, .. } => Class::BadOutput {
                backend_fault: true,
            }
            .violating(
                TensorLabel::Named(violation.tensor_name().to_owned()),
                violation.rule_label(),
            ),
            InferError::ReplyTooLarge { .. } => Class::BadOutput {
                backend_fault: true,
            }
            .into(),
            InferError::UnknownModel { model, .. } => Class::NotFound {
                version: model.version.is_some(),
            }
            .into(),
            InferError::Refused {
                origin, message, ..
            } => Class::Refused {
                origin: *origin,
                message: message.clone(),
            }
            .into(),
            InferError::Upstream(e) => e.classify(),
            InferError::RateLimited(r) => r.classify(),
        }
    }
}
