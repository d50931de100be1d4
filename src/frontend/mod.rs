//! The protocols clients speak to the gateway. Each frontend reads its
//! protocol into the core's [`InferRequest`](crate::gateway::core::InferRequest)
//! and renders the reply (and errors) in its own shape; routes, rules,
//! limits, backends, metrics and the access log are the gateway's and
//! shared.
//!
//! - [`v2`]: KServe / Triton V2 `infer` (JSON, binary extension, raw).
//!
//! Frontends never open connections themselves: the core's backend client
//! does.

pub mod v2;
