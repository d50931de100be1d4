//! tensorgate's lowest floor: the one tensor model ([`tensor`]), the wire
//! formats that decode into it and encode from it ([`codec`]), and the
//! per-route tensor rules checked on tensor heads ([`rules`]).
//!
//! **Nothing here does I/O.** This crate depends on no async runtime and no
//! HTTP library, so a codec cannot read a socket or start a task: callers
//! feed bytes and get values back, with "not enough bytes yet" as a value
//! rather than an error. The gateway crate re-exports these modules at its
//! root (`tensorgate::codec`, `tensorgate::tensor`, `tensorgate::rules`).

// The workspace denies `unsafe`; this crate forbids it outright (the one
// exception is the binary's allocator, in src/main.rs).
#![forbid(unsafe_code)]

pub mod codec;
pub mod rules;
pub mod tensor;
