//! The metadata JSON mappings against a real Triton 2.51: for each method,
//! the JSON its HTTP endpoint answered and the message its gRPC port
//! answered for the same question, both captured from one Triton
//! (`tests/fixtures/grpc/capture_triton.py`). Reading the JSON must give
//! the gRPC message field for field, and writing the gRPC message must
//! give the JSON (less the parts of the model configuration that
//! `model_config.proto` leaves out).

use std::path::PathBuf;

use bytes::Bytes;
use prost::Message;
use serde_json::Value;
use tensorgate::codec::grpc::json;
use tensorgate::codec::grpc::proto::inference::{
    ModelConfigResponse, ModelMetadataResponse, ModelStatisticsResponse, RepositoryIndexResponse,
    ServerMetadataResponse,
};

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/grpc/triton-2.51")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn grpc<M: Message + Default>(name: &str) -> M {
    M::decode(Bytes::from(fixture(&format!("{name}.grpc.bin")))).expect("Triton's message decodes")
}

fn http(name: &str) -> Vec<u8> {
    fixture(&format!("{name}.json"))
}

fn value(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap()
}

/// Both directions for one captured case: `read` (HTTP JSON -> message)
/// and `write` (message -> HTTP JSON), `left_out` removed from Triton's
/// JSON before comparing.
fn check<M: Message + Default + PartialEq + std::fmt::Debug>(
    name: &str,
    read: fn(&[u8]) -> Result<M, json::JsonError>,
    write: fn(&M) -> Result<Vec<u8>, json::JsonError>,
    left_out: &[&str],
) {
    let message: M = grpc(name);
    assert_eq!(read(&http(name)).unwrap(), message, "{name}: JSON read");
    let mut expected = value(&http(name));
    if let Value::Object(o) = &mut expected {
        for key in left_out {
            o.remove(*key);
        }
    }
    assert_eq!(
        value(&write(&message).unwrap()),
        expected,
        "{name}: JSON written"
    );
}

#[test]
fn server_metadata() {
    check::<ServerMetadataResponse>(
        "server_metadata",
        json::server_metadata_from_json,
        json::server_metadata_to_json,
        &[],
    );
}

#[test]
fn model_metadata() {
    for model in ["simple", "decoupled_repeat", "identity_bytes"] {
        check::<ModelMetadataResponse>(
            &format!("model_metadata_{model}"),
            json::model_metadata_from_json,
            json::model_metadata_to_json,
            &[],
        );
    }
}

#[test]
fn model_config() {
    for model in ["simple", "decoupled_repeat", "identity_bytes"] {
        // optimization and model_warmup are outside model_config.proto's
        // subset: read past, never written.
        check::<ModelConfigResponse>(
            &format!("model_config_{model}"),
            json::model_config_from_json,
            json::model_config_to_json,
            &["optimization", "model_warmup"],
        );
    }
    let simple: ModelConfigResponse = grpc("model_config_simple");
    let config = simple.config.unwrap();
    assert_eq!(
        (
            config.name.as_str(),
            config.backend.as_str(),
            config.max_batch_size
        ),
        ("simple", "python", 8)
    );
    assert_eq!(config.input[1].dims, vec![16]);
    let decoupled: ModelConfigResponse = grpc("model_config_decoupled_repeat");
    assert!(
        decoupled
            .config
            .unwrap()
            .model_transaction_policy
            .unwrap()
            .decoupled
    );
}

#[test]
fn model_statistics() {
    check::<ModelStatisticsResponse>(
        "model_statistics_rowsum",
        json::model_statistics_from_json,
        json::model_statistics_to_json,
        &[],
    );
}

#[test]
fn repository_index() {
    check::<RepositoryIndexResponse>(
        "repository_index",
        json::repository_index_from_json,
        json::repository_index_to_json,
        &[],
    );
    let index: RepositoryIndexResponse = grpc("repository_index");
    assert_eq!(index.models.len(), 18);
    assert_eq!(index.models[0].state, "READY");
}
