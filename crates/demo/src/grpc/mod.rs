//! gRPC for the demo: the services and clients (tonic) for the V2
//! protocol's `inference.GRPCInferenceService` and the standard
//! `grpc.health.v1.Health`, generated from `proto/` (committed under
//! `generated/`; `tests/grpc_codegen.rs` keeps them current), and the
//! demo's server implementing them (`server/`).
//!
//! The generated part is only the tokio-bound glue: the service traits,
//! their tower servers and the clients. The messages they carry are the
//! codec crate's ([`tensorgate_codec::codec::grpc::proto`]), where the
//! framing and the conversions to and from the V2 forms are too. The
//! gateway does not use any of it (it reads and writes the messages with
//! the codec, over hyper's HTTP/2); the demo's server and the tests'
//! clients do.

pub(crate) mod server;

pub use tensorgate_codec::codec::grpc::proto;

/// `inference.GRPCInferenceService`: `grpc_inference_service_server`
/// (the trait a server implements and its tower service) and
/// `grpc_inference_service_client`.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod inference {
    include!("generated/inference.rs");
}

/// `grpc.health.v1.Health`: `health_server` and `health_client`.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod health {
    include!("generated/grpc.health.v1.rs");
}
