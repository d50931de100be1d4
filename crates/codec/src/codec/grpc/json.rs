//! The metadata messages between their gRPC form and the JSON Triton's
//! HTTP endpoints answer, for a gateway that serves one protocol from a
//! backend speaking the other:
//!
//! | gRPC | HTTP |
//! | --- | --- |
//! | `ServerMetadata` | `GET /v2` |
//! | `ModelMetadata` | `GET /v2/models/{m}[/versions/{v}]` |
//! | `ModelConfig` (`.config`) | `GET /v2/models/{m}/config` (the config object itself) |
//! | `ModelStatistics` | `GET /v2/models[/{m}]/stats` (`{"model_stats": [...]}`) |
//! | `RepositoryIndex` (`.models`) | `POST /v2/repository/index` (a bare array) |
//! | `ServerLive`, `ServerReady`, `ModelReady` | `/v2/health/live`, `/v2/health/ready`, `/v2/models/{m}/ready`: the status alone, 200 or not ([`ready_from_status`]) |
//!
//! The mapping is protobuf's JSON mapping driven by the messages'
//! descriptors, written the way Triton 2.51 writes it (checked against its
//! captured answers): proto field names, enums by name, 64-bit integers as
//! JSON numbers (strings are accepted when reading, as the protobuf
//! mapping writes them), scalars, lists and maps always present, message
//! fields only when set. Members the messages do not have (the parts of
//! the model configuration left out of `model_config.proto`) are ignored
//! when reading. Never does I/O.

use std::sync::OnceLock;

use prost::Message;
use prost_reflect::{DescriptorPool, DeserializeOptions, DynamicMessage, SerializeOptions};
use serde_json::Value;

use super::proto::inference::{
    ModelConfig, ModelConfigResponse, ModelMetadataResponse, ModelStatisticsResponse,
    RepositoryIndexResponse, ServerMetadataResponse, repository_index_response::ModelIndex,
};

/// The descriptors of `proto/`, generated beside the messages.
const DESCRIPTORS: &[u8] = include_bytes!("generated/descriptors.bin");

/// A metadata message that does not convert.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    #[error("the gRPC descriptors do not load: {0}")]
    Descriptors(String),
    #[error("{message} is not valid JSON: {reason}")]
    Syntax {
        message: &'static str,
        reason: String,
    },
    #[error("{message} does not fit the protocol: {reason}")]
    Invalid {
        message: &'static str,
        reason: String,
    },
}

/// The descriptors of every message of `proto/`, loaded once.
pub(super) fn descriptors() -> Result<&'static DescriptorPool, JsonError> {
    static POOL: OnceLock<Result<DescriptorPool, String>> = OnceLock::new();
    POOL.get_or_init(|| DescriptorPool::decode(DESCRIPTORS).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| JsonError::Descriptors(e.clone()))
}

/// `name`'s dynamic form, for the mapping.
fn descriptor(name: &'static str) -> Result<prost_reflect::MessageDescriptor, JsonError> {
    descriptors()?
        .get_message_by_name(name)
        .ok_or_else(|| JsonError::Descriptors(format!("no message {name}")))
}

/// A message as Triton's JSON. `name` is its full protobuf name.
pub fn to_json<M: Message>(message: &M, name: &'static str) -> Result<Value, JsonError> {
    let invalid = |reason: String| JsonError::Invalid {
        message: name,
        reason,
    };
    let dynamic = DynamicMessage::decode(descriptor(name)?, message.encode_to_vec().as_slice())
        .map_err(|e| invalid(e.to_string()))?;
    let options = SerializeOptions::new()
        .use_proto_field_name(true)
        .stringify_64_bit_integers(false)
        .skip_default_fields(false);
    dynamic
        .serialize_with_options(serde_json::value::Serializer, &options)
        .map_err(|e| invalid(e.to_string()))
}

/// A message from JSON, ignoring members it does not have.
pub fn from_json<M: Message + Default>(value: &Value, name: &'static str) -> Result<M, JsonError> {
    let invalid = |reason: String| JsonError::Invalid {
        message: name,
        reason,
    };
    let options = DeserializeOptions::new().deny_unknown_fields(false);
    let dynamic = DynamicMessage::deserialize_with_options(descriptor(name)?, value, &options)
        .map_err(|e| invalid(e.to_string()))?;
    M::decode(dynamic.encode_to_vec().as_slice()).map_err(|e| invalid(e.to_string()))
}

fn parse(body: &[u8], message: &'static str) -> Result<Value, JsonError> {
    serde_json::from_slice(body).map_err(|e| JsonError::Syntax {
        message,
        reason: e.to_string(),
    })
}

fn write(value: &Value) -> Vec<u8> {
    // Writing a Value to a Vec cannot fail.
    serde_json::to_vec(value).unwrap_or_default()
}

const SERVER_METADATA: &str = "inference.ServerMetadataResponse";
const MODEL_METADATA: &str = "inference.ModelMetadataResponse";
const MODEL_CONFIG: &str = "inference.ModelConfig";
const MODEL_STATISTICS: &str = "inference.ModelStatisticsResponse";
const MODEL_INDEX: &str = "inference.RepositoryIndexResponse.ModelIndex";

/// `GET /v2`'s body as `ServerMetadataResponse`.
pub fn server_metadata_from_json(body: &[u8]) -> Result<ServerMetadataResponse, JsonError> {
    from_json(&parse(body, SERVER_METADATA)?, SERVER_METADATA)
}

pub fn server_metadata_to_json(m: &ServerMetadataResponse) -> Result<Vec<u8>, JsonError> {
    Ok(write(&to_json(m, SERVER_METADATA)?))
}

/// `GET /v2/models/{m}`'s body as `ModelMetadataResponse`.
pub fn model_metadata_from_json(body: &[u8]) -> Result<ModelMetadataResponse, JsonError> {
    from_json(&parse(body, MODEL_METADATA)?, MODEL_METADATA)
}

pub fn model_metadata_to_json(m: &ModelMetadataResponse) -> Result<Vec<u8>, JsonError> {
    Ok(write(&to_json(m, MODEL_METADATA)?))
}

/// `GET /v2/models/{m}/config`'s body (the configuration object) as
/// `ModelConfigResponse`.
pub fn model_config_from_json(body: &[u8]) -> Result<ModelConfigResponse, JsonError> {
    let config: ModelConfig = from_json(&parse(body, MODEL_CONFIG)?, MODEL_CONFIG)?;
    Ok(ModelConfigResponse {
        config: Some(config),
    })
}

/// The configuration object of a `ModelConfigResponse` (`{}` when absent).
pub fn model_config_to_json(m: &ModelConfigResponse) -> Result<Vec<u8>, JsonError> {
    Ok(write(&to_json(
        &m.config.clone().unwrap_or_default(),
        MODEL_CONFIG,
    )?))
}

/// `GET /v2/models[/{m}]/stats`'s body as `ModelStatisticsResponse`.
pub fn model_statistics_from_json(body: &[u8]) -> Result<ModelStatisticsResponse, JsonError> {
    from_json(&parse(body, MODEL_STATISTICS)?, MODEL_STATISTICS)
}

pub fn model_statistics_to_json(m: &ModelStatisticsResponse) -> Result<Vec<u8>, JsonError> {
    Ok(write(&to_json(m, MODEL_STATISTICS)?))
}

/// `POST /v2/repository/index`'s body (an array of models) as
/// `RepositoryIndexResponse`.
pub fn repository_index_from_json(body: &[u8]) -> Result<RepositoryIndexResponse, JsonError> {
    let value = parse(body, MODEL_INDEX)?;
    let Value::Array(items) = value else {
        return Err(JsonError::Invalid {
            message: MODEL_INDEX,
            reason: "the repository index must be a JSON array".to_owned(),
        });
    };
    let models = items
        .iter()
        .map(|v| from_json::<ModelIndex>(v, MODEL_INDEX))
        .collect::<Result<_, _>>()?;
    Ok(RepositoryIndexResponse { models })
}

/// The array Triton answers: `name`, `version` and `state` of each model,
/// and `reason` only when there is one.
pub fn repository_index_to_json(m: &RepositoryIndexResponse) -> Result<Vec<u8>, JsonError> {
    let mut items = Vec::with_capacity(m.models.len());
    for model in &m.models {
        let mut v = to_json(model, MODEL_INDEX)?;
        if let Value::Object(o) = &mut v
            && model.reason.is_empty()
        {
            o.remove("reason");
        }
        items.push(v);
    }
    Ok(write(&Value::Array(items)))
}

/// `ServerLive`, `ServerReady` and `ModelReady` from the HTTP status of
/// their endpoint: ready (or live) exactly when it is 200.
pub const fn ready_from_status(status: u16) -> bool {
    status == 200
}

/// The HTTP status for a `ready` (or `live`) answer: 200, or 400 as
/// Triton answers a model that is not ready.
pub const fn status_from_ready(ready: bool) -> u16 {
    if ready { 200 } else { 400 }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn config_as_triton_writes_it() {
        let body = br#"{"name":"m","platform":"","backend":"python","max_batch_size":8,
            "input":[{"name":"A","data_type":"TYPE_FP32","dims":["-1", 4],"optional":true}],
            "optimization":{"priority":"PRIORITY_DEFAULT"},
            "dynamic_batching":{"max_queue_delay_microseconds":"100","priority_queue_policy":{"1":{"max_queue_size":2}}},
            "model_transaction_policy":{"decoupled":true}}"#;
        let r = model_config_from_json(body).unwrap();
        let c = r.config.clone().unwrap();
        assert_eq!(c.input[0].dims, vec![-1, 4]);
        assert!(c.input[0].optional);
        assert_eq!(c.max_batch_size, 8);
        let back: Value = serde_json::from_slice(&model_config_to_json(&r).unwrap()).unwrap();
        assert_eq!(back["input"][0]["dims"], json!([-1, 4]));
        assert_eq!(back["input"][0]["data_type"], json!("TYPE_FP32"));
        assert_eq!(back["input"][0]["format"], json!("FORMAT_NONE"));
        assert_eq!(
            back["dynamic_batching"]["max_queue_delay_microseconds"],
            json!(100)
        );
        assert_eq!(
            back["dynamic_batching"]["priority_queue_policy"]["1"]["max_queue_size"],
            json!(2)
        );
        assert_eq!(back["model_transaction_policy"], json!({"decoupled": true}));
        assert_eq!(back["batch_input"], json!([]));
        assert_eq!(back.get("optimization"), None, "left out of the subset");
        assert_eq!(
            back.get("sequence_batching"),
            None,
            "message fields only when set"
        );
    }

    #[test]
    fn errors() {
        assert_eq!(
            model_metadata_from_json(b"{").unwrap_err(),
            JsonError::Syntax {
                message: MODEL_METADATA,
                reason: "EOF while parsing an object at line 1 column 1".into()
            }
        );
        let e = model_metadata_from_json(br#"{"name": 5}"#).unwrap_err();
        assert!(matches!(e, JsonError::Invalid { .. }), "{e}");
        let e = repository_index_from_json(br#"{"models": []}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "inference.RepositoryIndexResponse.ModelIndex does not fit the protocol: the repository index must be a JSON array"
        );
    }

    #[test]
    fn index_leaves_out_an_empty_reason() {
        let r = repository_index_from_json(br#"[{"name":"a","version":"1","state":"READY"},{"name":"b","state":"UNAVAILABLE","reason":"x"}]"#).unwrap();
        assert_eq!(r.models[1].reason, "x");
        assert_eq!(
            String::from_utf8(repository_index_to_json(&r).unwrap()).unwrap(),
            r#"[{"name":"a","version":"1","state":"READY"},{"name":"b","version":"","state":"UNAVAILABLE","reason":"x"}]"#
        );
        assert!(ready_from_status(200) && !ready_from_status(400));
    }
}
