//! Statistics asked for without a model name (`GET /v2/models/stats`,
//! gRPC `ModelStatistics` with an empty name) answer for every model the
//! backend serves; a route answers only for its own models, those whose
//! requests it would serve. Without this a caller of a keyless default
//! route read the statistics of keyed routes' models sharing the backend.

use bytes::Bytes;
use prost::Message;
use serde_json::Value;

use crate::codec::grpc::budget::{self, Caps};
use crate::codec::grpc::proto::inference::ModelStatisticsResponse;
use crate::config::{Config, Route};

/// Whether `route` is the one serving `model` under `config`.
pub(crate) fn serves(config: &Config, route: &Route, model: &str) -> bool {
    config
        .route_for_model(model)
        .is_some_and(|r| std::ptr::eq(&**r, route))
}

/// Why statistics could not be filtered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StatsError {
    #[error("the backend's statistics are not JSON with a \"model_stats\" list: {0}")]
    Json(String),
    #[error("the backend's statistics: {0}")]
    Grpc(String),
}

impl crate::error::Classify for StatsError {
    fn classify(&self) -> crate::error::Classified {
        crate::error::Class::BadOutput {
            backend_fault: true,
        }
        .into()
    }
}

/// Keeps the entries of a V2 statistics document (`{"model_stats":
/// [{"name": ...}, ...]}`) for models `route` serves; an object without
/// that list has none to hide and is kept as it is.
pub(crate) fn retain_json(
    config: &Config,
    route: &Route,
    body: &[u8],
) -> Result<Bytes, StatsError> {
    let mut doc: Value =
        serde_json::from_slice(body).map_err(|e| StatsError::Json(e.to_string()))?;
    if doc.is_object() && doc.get("model_stats").is_none() {
        // No statistics in it to hide (not Triton's document): as it is.
        return Ok(Bytes::copy_from_slice(body));
    }
    let Some(Value::Array(list)) = doc.get_mut("model_stats") else {
        return Err(StatsError::Json("no \"model_stats\" list".into()));
    };
    list.retain(|entry| {
        entry
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| serves(config, route, name))
    });
    serde_json::to_vec(&doc)
        .map(Bytes::from)
        .map_err(|e| StatsError::Json(e.to_string()))
}

/// The same for a `ModelStatisticsResponse` message.
pub(crate) fn retain_grpc(
    config: &Config,
    route: &Route,
    message: &[u8],
) -> Result<Bytes, StatsError> {
    if let Some(schema) = budget::schema("inference.ModelStatisticsResponse") {
        budget::check(schema, message, &Caps::DEFAULT)
            .map_err(|e| StatsError::Grpc(e.to_string()))?;
    }
    let mut stats =
        ModelStatisticsResponse::decode(message).map_err(|e| StatsError::Grpc(e.to_string()))?;
    stats.model_stats.retain(|s| serves(config, route, &s.name));
    Ok(stats.encode_to_vec().into())
}
