//! The KServe V2 protocol over gRPC (`inference.GRPCInferenceService`),
//! sans-I/O: the generated messages ([`proto`]), the gRPC length-prefixed
//! message framing, and the conversions between `ModelInferRequest` /
//! `ModelInferResponse` and the V2 document and binary-layout pieces the
//! gateway's core works with.
//!
//! **Never does I/O** and knows nothing of HTTP/2, tonic or tokio: callers
//! feed `Bytes` and get messages, documents and pieces back. Every length
//! read from the wire is checked against a limit before anything is
//! allocated for it, and tensor data stays in `Bytes` slices of what came
//! in.

pub mod budget;
pub mod contents;
pub mod error;
pub mod frame;
mod head;
pub mod json;
pub mod params;
pub mod proto;
pub mod request;
pub mod response;
pub mod status;
pub mod timeout;
pub mod wire;

pub use error::{InferError, TensorProblem};
pub use frame::{Frame, FrameDecoder, FrameError, FrameLimits};
pub use head::{HTTP_ONLY_TENSOR_PARAMS, SHARED_MEMORY_REGION};
pub use request::{V2Request, decode_request, encode_request, request_to_v2};
pub use response::{
    V2Response, decode_response, encode_response, encode_stream_error, encode_stream_response,
    response_to_v2,
};
