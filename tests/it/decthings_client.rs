//! End to end with the official Decthings Rust client (the crate
//! `decthings-api` 0.1.5) against the gateway's Decthings frontend
//! (`POST /v0/Model/evaluate` on the data port; the client is aimed at
//! `http://127.0.0.1:PORT/v0`).
//!
//! The gateway runs the demo configuration (`Config::demo`) in front of the
//! embedded demo backend: `modelId` is the backend model's name, each input
//! parameter is the V2 input of the same name, each backend output comes back
//! as an output parameter of the same name holding one tensor. The
//! `triton_*` tests do the same against a real Triton when
//! `TENSORGATE_TRITON_URL` is set (SKIPPED otherwise, a failure under `CI`).
//!
//! What the client sends and accepts, byte for byte: docs/DECTHINGS-CLIENT.md.

mod errors;
mod triton;
mod types;

use dc::*;
use decthings_api::client::rpc::model::EvaluateResult;
use tensorgate::server::Running;
use tensorgate_demo::{self as demo, DemoServer};

use crate::common;
use crate::common::decthings as dc;
use crate::common::demo_gateway;

/// The demo configuration plus a route for `identity` whose output rule
/// names a media type, so BYTES outputs come back as that media type.
pub async fn media_gateway(media: &str) -> (DemoServer, Running) {
    let backend = demo::spawn().await.unwrap();
    let gw = common::gateway(&format!(
        r#"
[server]
shutdown_grace = "2s"
[backends.demo]
url = "{}"
[[routes]]
name = "media"
models = ["identity"]
backend = "demo"
[routes.outputs.OUTPUT0]
allowed_types = ["{media}"]
[[routes]]
name = "default"
default = true
backend = "demo"
"#,
        backend.url()
    ))
    .await;
    (backend, gw)
}

/// Success replies carry the durations and launcher the contract promises,
/// and one blob per output (checked by the client: a count mismatch is
/// `InvalidMessage`).
pub fn assert_success_shape(outcome: &EvalOutcome) {
    match outcome {
        Ok(EvaluateResult::Success {
            total_duration,
            durations,
            output,
            ..
        }) => {
            assert!(durations.evaluate <= *total_duration, "{outcome:?}");
            assert!(!output.is_empty(), "{outcome:?}");
        }
        other => panic!("expected a successful evaluation, got {other:?}"),
    }
}
