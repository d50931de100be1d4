//! tensorgate: a streaming reverse proxy for KServe / Triton "V2" inference
//! servers that translates tensor payloads between JSON, the binary tensor
//! data extension and the Decthings tensor format, and enforces tensor rules
//! per route.
//!
//! The crate is layered: [`tensor`] is the one tensor model; [`codec`] holds
//! the wire formats and never does I/O.

pub mod cli;
pub mod codec;
pub mod config;
pub mod demo;
pub mod frontend;
pub mod gateway;
pub mod metrics;
pub mod rules;
pub mod server;
pub mod tensor;
