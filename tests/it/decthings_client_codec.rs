//! The official Decthings Rust client (the Rust crate `decthings-api` 0.1.5)
//! against tensorgate's Decthings codec, with no gateway involved:
//! - `request`: the exact bytes `client.model.evaluate` sends (head, JSON,
//!   blobs), captured by a raw loopback server;
//! - `tensors`: tensorgate's encoder -> the client's decoder (and back),
//!   property-tested over every type and shape;
//! - `replies`: reply bodies framed with `rpc::encode_response` and parsed by
//!   the client over HTTP (its parser is private): every error code, every
//!   failure, which fields are required, the status codes it refuses, and
//!   the inputs on which it panics.
//!
//! docs/DECTHINGS-CLIENT.md is written from what these tests pin down.

mod replies;
mod request;
mod tensors;

use crate::common::decthings as dc;
