//! tensorgate: a streaming reverse proxy for KServe / Triton "V2" inference
//! servers. It translates tensor payloads between JSON and the binary tensor
//! data extension, serves Decthings (`Model.evaluate`) and SageMaker
//! (`/invocations`) clients from V2 backends, and enforces tensor rules per
//! route.
//!
//! The crate is layered: [`tensor`] is the one tensor model; [`codec`] holds
//! the wire formats and never does I/O; [`gateway`] is the HTTP layer with
//! the inference core every [`frontend`] (one per client protocol) shares.

// The workspace denies `unsafe`; the library forbids it outright (the one
// exception is the binary's allocator, in src/main.rs).
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub use tensorgate_codec::{codec, rules, tensor};

pub mod auth;
pub(crate) mod calendar;
pub mod cli;
pub mod config;
pub mod cpu;
pub mod error;
pub(crate) mod file;
pub mod frontend;
pub(crate) mod gateway;
pub mod guard;
pub mod http;
pub(crate) mod infer;
pub mod metrics;
pub mod observe;
pub(crate) mod otel;
pub mod reload;
pub mod server;
pub mod tls;
pub(crate) mod trace;
pub(crate) mod upstream;
pub(crate) mod worker;
