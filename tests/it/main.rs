//! The integration tests: one test binary, one module per concern. Every
//! test binary links the whole gateway crate, which a 2-core CI machine
//! pays for on every build, so concerns are modules here rather than
//! binaries. Modules start gateways on `127.0.0.1:0` in this process, or
//! the `tensorgate` binary as processes of their own, against scripted or
//! real backends; `common` is their one helper library.
//!
//! Run one concern with a filter on its module path:
//! `cargo test --test it rate_limits::`. libtest runs the tests in name
//! order, as many at once as there are cores, so a module's tests mostly
//! run beside each other.
//!
//! A test that measures or changes something of the whole process lives
//! in a binary of its own instead, saying why in its header:
//! `tests/send_timeout.rs` (a counting `#[global_allocator]`),
//! `tests/grpc_bounds.rs`, `tests/hostile_requests.rs` and
//! `tests/slow_client.rs` (the process's resident memory). Nothing here
//! may install a global allocator, set environment variables, change
//! rlimits or the working directory, signal its own process, or assert on
//! this process's memory. The one global tracing subscriber is
//! `common::access_log`'s: installed by the first test that asks for it,
//! it captures the access lines of every later request in this binary.

mod common;
/// The comparison harness of the conformance modules (`conformance_triton`,
/// `conformance_kserve`, `decthings_client`): only this binary needs it.
mod harness;

mod auth;
mod backend_failures;
mod backend_faults;
mod body_limits;
mod cli_debug;
mod cli_help;
mod client_disconnect;
mod client_faults;
mod config_secrets;
mod conformance_kserve;
mod conformance_triton;
mod connection_limits;
mod cut_replies;
mod decthings_client;
mod decthings_client_codec;
mod decthings_vectors;
mod demo_backend;
mod early_refusals;
mod grpc_backend;
mod grpc_codec_props;
mod grpc_codegen;
mod grpc_deadline;
mod grpc_demo;
mod grpc_frontend;
mod grpc_hostile;
mod grpc_triton_json;
mod grpc_vectors;
mod heavy_work;
mod keep_alive;
mod large_requests;
mod metrics;
mod otel_export;
mod proptest_codecs;
mod queue_balancing;
mod rate_limits;
mod raw_requests;
mod readme;
mod reload;
mod replicas;
mod replicas_triton;
mod rules_and_limits;
mod sagemaker_codec;
mod sagemaker_frontend;
mod send_then_read;
mod shared_limits;
mod shedding;
mod shutdown;
mod slow_bodies;
mod stalled_clients;
mod status;
mod store_faults;
mod streaming;
mod tls;
mod traffic_split;
mod translation;
