//! Conformance against a real Triton Inference Server 2.51: the same request
//! goes to Triton directly and through an in-process gateway whose routes
//! send `binary` to that Triton, and the two replies must be the same to a
//! client (status, headers that matter, members, outputs, typed values), or
//! differ exactly as docs/CONFORMANCE.md says and for the reason it gives.
//!
//! Needs `TENSORGATE_TRITON_URL` (`eval "$(scripts/triton-backend.sh start)"`
//! or `bash scripts/conformance.sh`); without it every test prints SKIPPED
//! and passes, except under `CI`, where it fails. Each case is recorded to
//! `$TENSORGATE_CONFORMANCE_RESULTS` (JSON lines) for the report.
//!
//! The matrix lives in `tests/it/conformance_triton/`: datatypes, output
//! selection and compression, errors and rules, streams and passthrough.

mod datatypes;
mod errors;
mod outputs;
mod streams;

use std::net::SocketAddr;

use harness::Req;
use harness::reply::{Reply, Strict, decode_pair, same};
use tensorgate::server::Running;

use crate::common;
use crate::harness;

pub const SUITE: &str = "rust-triton";

/// Tests that read Triton's per-model statistics take this for writing, so
/// no other test moves the counters meanwhile; every other test reads.
pub static STATS: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Triton's address, or return from the test (SKIPPED) when there is none.
#[macro_export]
macro_rules! triton {
    () => {
        match $crate::harness::backend_url("TENSORGATE_TRITON_URL", "scripts/triton-backend.sh") {
            Some(url) => $crate::harness::addr_of(&url),
            None => return,
        }
    };
}

/// A gateway whose only route (the default) sends `binary` to `backend`;
/// it allows the repository endpoints (`/v2/repository/index` is compared
/// with Triton's, and needs `allow_control` like load and unload).
pub async fn plain_gateway(backend: SocketAddr) -> Running {
    common::gateway(&format!(
        r#"
[server]
shutdown_grace = "1s"
[backends.triton]
url = "http://{backend}"
request_timeout = "30s"
[[routes]]
name = "triton"
default = true
backend = "triton"
backend_format = "binary"
allow_control = ["repository"]
"#
    ))
    .await
}

/// Sends `req` to Triton and through the gateway and decodes both replies.
pub async fn exchange(
    triton: SocketAddr,
    gw: SocketAddr,
    req: &Req,
) -> Result<(Reply, Reply), String> {
    let direct = req.send(triton).await;
    let via = req.send(gw).await;
    decode_pair(&direct, &via)
}

/// [`exchange`], and the replies must be [`same`].
pub async fn conforms(
    triton: SocketAddr,
    gw: SocketAddr,
    req: &Req,
    strict: Strict,
) -> Result<(Reply, Reply), String> {
    let (d, v) = exchange(triton, gw, req).await?;
    same(&d, &v, strict)?;
    Ok((d, v))
}
