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

pub mod proto;
