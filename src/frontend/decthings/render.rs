//! Every error's class as the official Decthings client reads it
//! (docs/DECTHINGS-CLIENT.md §2). Every RPC error is an **HTTP 200** reply
//! framed like a success — the client turns any 4xx/5xx into an opaque
//! transport error without reading the body — with exactly one top-level
//! member: `{"error": {"code": ...}}` for a call that could not be made, or
//! `{"result": {"failed": {...}}}` for an evaluation that failed. Only a body
//! the client could never send (malformed, a wrong method or encoding) is
//! answered 400 `{"error": {"code": "bad_request", "message": ...}}`.
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
//! answering in time, busy, or with no replica that has the model ready
//! (503 elsewhere) → failed `server_overloaded` (there, but unable to take
//! it now; try again later); the backend unreachable, resetting or
//! answering nonsense → `unknown` (nothing the client did, and nothing it
//! can change); an output the client cannot take, or one breaking the
//! route's output rules or limits → failed `invalid_output`.

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::reply::{framed_json, launcher};
use crate::error::{Class, Error, UpstreamKind};
use crate::http::body::{Body, full, json_response};
use crate::observe::Observation;

/// The reply for `e`.
pub(super) fn render(e: &Error, obs: &Observation) -> Response<Body> {
    let message = e.to_string();
    let class = e.class();
    let body = match class {
        Class::Malformed
        | Class::MethodNotAllowed
        | Class::Unsupported
        | Class::UnsupportedEncoding
        | Class::UnsupportedMediaType
        | Class::NotAcceptable => return bad_request(class.status(), &message),
        Class::NotFound { version: true } => error(json!({"code": "snapshot_not_found"}), &message),
        Class::NotFound { version: false } => error(json!({"code": "model_not_found"}), &message),
        Class::BadTensor { tensor } => invalid_parameter(&tensor, &message),
        Class::TooLarge
        | Class::RateLimited {
            retry_after: None, ..
        } => error(json!({"code": "quota_exceeded"}), &message),
        Class::Overloaded { .. } | Class::RateLimited { .. } => {
            error(json!({"code": "too_many_requests"}), &message)
        }
        Class::Unauthenticated(_) => error(json!({"code": "bad_credentials"}), &message),
        Class::Refused { message: m, .. } => failed(
            obs,
            json!({"code": "exception", "at": "evaluate", "exceptionDetails": m}),
        ),
        Class::Upstream {
            kind: UpstreamKind::Timeout | UpstreamKind::Unavailable | UpstreamKind::Saturated,
            ..
        } => failed(obs, json!({"code": "server_overloaded"})),
        Class::BadOutput { .. } => failed(
            obs,
            json!({"code": "invalid_output", "reason": "invalid", "details": message}),
        ),
        Class::BodyBroken
        | Class::BodyTimeout
        | Class::Forbidden
        | Class::ShuttingDown
        | Class::DeadlineExceeded
        | Class::Upstream { .. }
        | Class::Internal => error(json!({"code": "unknown"}), &message),
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
    json_response(status, body)
}
