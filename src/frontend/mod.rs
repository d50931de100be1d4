//! The protocols clients speak to the gateway. Each frontend reads its
//! protocol into the core's [`InferRequest`](crate::gateway::core::InferRequest)
//! and renders the reply (and errors) in its own shape; routes, rules,
//! limits, backends, metrics and the access log are the gateway's and
//! shared.
//!
//! - [`v2`]: KServe / Triton V2 `infer` (JSON, binary extension, raw);
//! - [`decthings`]: the Decthings `Model.evaluate` RPC;
//! - [`sagemaker`]: SageMaker's `/invocations`, `/ping` and the Runtime API
//!   path, for CSV, JSON, JSON Lines and RecordIO-protobuf records.
//!
//! Frontends never open connections themselves: the core's backend client
//! does.

pub mod decthings;
pub mod sagemaker;
pub mod v2;

use http::Response;

use crate::gateway::body::Body;
use crate::gateway::error::GatewayError;
use crate::gateway::observe::Observation;

/// The frontend serving a request: the `kind` label of its metrics and the
/// shape of its errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frontend {
    /// V2 endpoints, and everything passed through.
    V2,
    Decthings,
    /// SageMaker's container paths (`/ping`, `/invocations`,
    /// `/models/{m}/invoke`): `{"error"}` bodies.
    SageMaker,
    /// The SageMaker Runtime API path (`/endpoints/{e}/invocations`):
    /// errors in the AWS shape boto3 parses.
    SageMakerRuntime,
}

impl Frontend {
    pub const fn kind(self) -> &'static str {
        match self {
            Frontend::V2 => "v2",
            Frontend::Decthings => "decthings",
            Frontend::SageMaker | Frontend::SageMakerRuntime => "sagemaker",
        }
    }

    /// The response for an error, in this frontend's protocol.
    pub fn render_error(self, e: GatewayError, obs: &Observation) -> Response<Body> {
        match self {
            Frontend::V2 => e.into_response(),
            Frontend::Decthings => decthings::error::render(e, obs),
            Frontend::SageMaker => sagemaker::error::render(e),
            Frontend::SageMakerRuntime => sagemaker::error::render_aws(e),
        }
    }
}
