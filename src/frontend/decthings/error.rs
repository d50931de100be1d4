//! Gateway errors as the official Decthings client reads them
//! (docs/DECTHINGS-CLIENT.md §2). Every RPC error is an **HTTP 200** reply
//! framed like a success — the client turns any 4xx/5xx into an opaque
//! transport error without reading the body — with exactly one top-level
//! member: `{"error": {"code": ...}}` for a call that could not be made, or
//! `{"result": {"failed": {...}}}` for an evaluation that failed. Only a body
//! the client could never send is answered 400 `{"error": {"code":
//! "bad_request", "message": ...}}`.
//!
//! Mapping: unknown model → `model_not_found` (`snapshot_not_found` when a
//! snapshot was named); a rule violation or an unusable parameter →
//! `invalid_parameter` naming it; too large a body → `quota_exceeded`; the
//! gateway shedding load (no request slot within `queue_timeout`) →
//! `too_many_requests`; credentials missing or not a key of the route →
//! `bad_credentials`; over a rate limit → `too_many_requests` (with
//! `Retry-After`), more tensor elements than a limit's burst ever allows →
//! `quota_exceeded`; the backend refusing valid
//! input → failed `exception` with the backend's message; the backend not
//! answering in time, or no replica with the model ready (503 elsewhere)
//! → failed `server_overloaded` (there, but unable to take it now; try
//! again later); the backend unreachable, resetting or answering
//! nonsense → `unknown` (nothing the client did, and nothing it can change);
//! an output the client cannot take → failed `invalid_output`.

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::reply::{framed_json, launcher};
use crate::gateway::body::{Body, full};
use crate::gateway::error::GatewayError;
use crate::gateway::observe::Observation;

/// The reply for `e`.
pub fn render(e: GatewayError, obs: &Observation) -> Response<Body> {
    let message = e.to_string();
    let body = match e {
        GatewayError::Decthings(_)
        | GatewayError::BadPath { .. }
        | GatewayError::UnknownBackend { .. }
        | GatewayError::MethodNotAllowed { .. }
        | GatewayError::UnsupportedEncoding { .. }
        | GatewayError::BadEncoding { .. } => return bad_request(e.status(), &message),
        GatewayError::NoRoute { .. } | GatewayError::NotFound { .. } => {
            error(json!({"code": "model_not_found"}), &message)
        }
        GatewayError::UnknownModel { model, .. } if model.version.is_some() => {
            error(json!({"code": "snapshot_not_found"}), &message)
        }
        GatewayError::UnknownModel { .. } => error(json!({"code": "model_not_found"}), &message),
        GatewayError::Rule { violation, .. } => {
            invalid_parameter(violation.tensor_name(), &message)
        }
        GatewayError::BadInput { input, .. } => invalid_parameter(&input, &message),
        GatewayError::BodyTooLarge { .. } => error(json!({"code": "quota_exceeded"}), &message),
        GatewayError::Overloaded { .. } => error(json!({"code": "too_many_requests"}), &message),
        GatewayError::Unauthorized { .. } => error(json!({"code": "bad_credentials"}), &message),
        GatewayError::RateLimited(r) if r.wait.is_none() => {
            error(json!({"code": "quota_exceeded"}), &message)
        }
        GatewayError::RateLimited(_) => error(json!({"code": "too_many_requests"}), &message),
        GatewayError::BackendFailed { message: m, .. } => failed(
            obs,
            json!({"code": "exception", "at": "evaluate", "exceptionDetails": m}),
        ),
        GatewayError::BackendTimeout { .. }
        | GatewayError::NoHealthyReplica { .. }
        | GatewayError::ModelNotReady { .. } => failed(obs, json!({"code": "server_overloaded"})),
        GatewayError::DecthingsOutput(_)
        | GatewayError::OutputRule { .. }
        | GatewayError::ResponseTooLarge { .. } => failed(
            obs,
            json!({"code": "invalid_output", "reason": "invalid", "details": message}),
        ),
        _ => error(json!({"code": "unknown"}), &message),
    };
    rpc_reply(body)
}

/// `{"error": {...}}`, with a human-readable `message` the client ignores.
fn error(mut code: Value, message: &str) -> Value {
    code["message"] = Value::from(message);
    json!({ "error": code })
}

fn invalid_parameter(name: &str, reason: &str) -> Value {
    json!({"error": {"code": "invalid_parameter", "parameterName": name, "reason": reason}})
}

/// `{"result": {"failed": {...}}}`: every member the client requires.
fn failed(obs: &Observation, error: Value) -> Value {
    let total = u64::try_from(obs.elapsed().as_millis()).unwrap_or(u64::MAX);
    json!({"result": {"failed": {
        "totalDuration": total,
        "durations": {},
        "executedOnLauncher": launcher(),
        "error": error,
    }}})
}

fn rpc_reply(value: Value) -> Response<Body> {
    let json = serde_json::to_vec(&value).unwrap_or_default();
    let mut resp = Response::new(full(framed_json(&json)));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    resp
}

/// What the official client could never send: a plain JSON error.
fn bad_request(status: StatusCode, message: &str) -> Response<Body> {
    let value = json!({"error": {"code": "bad_request", "message": message}});
    let body = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
    let status = if status.is_client_error() {
        status
    } else {
        StatusCode::BAD_REQUEST
    };
    crate::gateway::error::json_response(status, body)
}
