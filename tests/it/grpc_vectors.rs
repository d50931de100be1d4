//! Golden vectors from a third-party encoder (`tests/vectors/grpc/`,
//! written by tritonclient[grpc]'s and grpcio-health-checking's own
//! generated Python classes; `generate.py` there).
//!
//! Each vector is decoded with our messages and compared field for field
//! with its description (the protobuf JSON form Python wrote, read with
//! our descriptors), encoded again and compared byte for byte where the
//! encoding is canonical, and, for inference messages, converted to the
//! V2 form, whose data must be each tensor's V2 binary layout.

use std::path::PathBuf;

use base64::Engine;
use bytes::Bytes;
use prost::Message;
use serde_json::Value;
use tensorgate::codec::grpc::proto::health::{HealthCheckRequest, HealthCheckResponse};
use tensorgate::codec::grpc::proto::inference as pb;
use tensorgate::codec::grpc::{self, json};
use tensorgate::codec::v2::DocLimits;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/grpc")
}

fn b64(v: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(v.as_str().expect("base64 string"))
        .expect("base64")
}

/// Decodes vector `name` as `M` and checks it against its description.
fn check<M: Message + Default + PartialEq + std::fmt::Debug>(
    name: &str,
    entry: &Value,
    type_name: &'static str,
) -> Bytes {
    let bin = Bytes::from(std::fs::read(dir().join(format!("{name}.bin"))).unwrap());
    let decoded = M::decode(bin.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let described: M =
        json::from_json(&entry["json"], type_name).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(decoded, described, "{name}: field for field");
    if entry["canonical"] == Value::Bool(true) {
        assert_eq!(decoded.encode_to_vec(), bin, "{name}: byte for byte");
    } else {
        assert!(
            decoded.encode_to_vec().len() < bin.len(),
            "{name}: fields outside the subset dropped"
        );
    }
    bin
}

fn expected_data(name: &str, entry: &Value) -> Vec<Vec<u8>> {
    entry["v2_data"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: v2_data"))
        .iter()
        .map(b64)
        .collect()
}

#[test]
fn every_vector_decodes_field_for_field() {
    let vectors: Value =
        serde_json::from_slice(&std::fs::read(dir().join("vectors.json")).unwrap()).unwrap();
    let vectors = vectors.as_object().unwrap();
    assert_eq!(vectors.len(), 22);
    for (name, entry) in vectors {
        match entry["type"].as_str().unwrap() {
            "inference.ModelInferRequest" => {
                let bin =
                    check::<pb::ModelInferRequest>(name, entry, "inference.ModelInferRequest");
                let v2 = grpc::decode_request(bin, &DocLimits::default())
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                let data: Vec<Vec<u8>> = v2.data.iter().map(|p| p.concat()).collect();
                assert_eq!(data, expected_data(name, entry), "{name}: V2 data");
            }
            "inference.ModelInferResponse" => {
                let bin =
                    check::<pb::ModelInferResponse>(name, entry, "inference.ModelInferResponse");
                let v2 = grpc::decode_response(bin, &DocLimits::default())
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                let data: Vec<Vec<u8>> = v2.data.iter().map(|p| p.concat()).collect();
                assert_eq!(data, expected_data(name, entry), "{name}: V2 data");
            }
            "inference.ModelStreamInferResponse" => {
                check::<pb::ModelStreamInferResponse>(
                    name,
                    entry,
                    "inference.ModelStreamInferResponse",
                );
            }
            "inference.ServerMetadataResponse" => {
                check::<pb::ServerMetadataResponse>(
                    name,
                    entry,
                    "inference.ServerMetadataResponse",
                );
            }
            "inference.ModelMetadataResponse" => {
                check::<pb::ModelMetadataResponse>(name, entry, "inference.ModelMetadataResponse");
            }
            "inference.ModelConfigResponse" => {
                check::<pb::ModelConfigResponse>(name, entry, "inference.ModelConfigResponse");
            }
            "inference.ModelStatisticsResponse" => {
                check::<pb::ModelStatisticsResponse>(
                    name,
                    entry,
                    "inference.ModelStatisticsResponse",
                );
            }
            "inference.RepositoryIndexResponse" => {
                check::<pb::RepositoryIndexResponse>(
                    name,
                    entry,
                    "inference.RepositoryIndexResponse",
                );
            }
            "inference.RepositoryModelLoadRequest" => {
                check::<pb::RepositoryModelLoadRequest>(
                    name,
                    entry,
                    "inference.RepositoryModelLoadRequest",
                );
            }
            "inference.SystemSharedMemoryRegisterRequest" => {
                check::<pb::SystemSharedMemoryRegisterRequest>(
                    name,
                    entry,
                    "inference.SystemSharedMemoryRegisterRequest",
                );
            }
            "inference.CudaSharedMemoryRegisterRequest" => {
                check::<pb::CudaSharedMemoryRegisterRequest>(
                    name,
                    entry,
                    "inference.CudaSharedMemoryRegisterRequest",
                );
            }
            "inference.SystemSharedMemoryStatusResponse" => {
                check::<pb::SystemSharedMemoryStatusResponse>(
                    name,
                    entry,
                    "inference.SystemSharedMemoryStatusResponse",
                );
            }
            "inference.TraceSettingRequest" => {
                check::<pb::TraceSettingRequest>(name, entry, "inference.TraceSettingRequest");
            }
            "inference.LogSettingsResponse" => {
                check::<pb::LogSettingsResponse>(name, entry, "inference.LogSettingsResponse");
            }
            "grpc.health.v1.HealthCheckRequest" => {
                check::<HealthCheckRequest>(name, entry, "grpc.health.v1.HealthCheckRequest");
            }
            "grpc.health.v1.HealthCheckResponse" => {
                check::<HealthCheckResponse>(name, entry, "grpc.health.v1.HealthCheckResponse");
            }
            other => panic!("{name}: no check for {other}"),
        }
    }
}

/// A few values read directly, so that the comparison above cannot pass on
/// two empty messages.
#[test]
fn spot_values() {
    let read = |name: &str| Bytes::from(std::fs::read(dir().join(format!("{name}.bin"))).unwrap());
    let r = pb::ModelInferRequest::decode(read("infer_request_every_type_raw")).unwrap();
    assert_eq!(
        (
            r.model_name.as_str(),
            r.model_version.as_str(),
            r.id.as_str()
        ),
        ("every_type", "2", "req-7")
    );
    assert_eq!(r.inputs.len(), 14);
    assert_eq!(r.inputs[3].shape, vec![2, 3]);
    let v2 = grpc::request_to_v2(r, &DocLimits::default()).unwrap();
    assert_eq!(
        v2.header.member("parameters").unwrap()["sequence_id"],
        Value::from(42)
    );
    assert_eq!(
        v2.header.member("outputs").unwrap()[1]["parameters"]["classification"],
        Value::from(3)
    );
    let c = pb::ModelConfigResponse::decode(read("model_config"))
        .unwrap()
        .config
        .unwrap();
    assert_eq!(c.input[0].dims, vec![-1, 224, 224, 3]);
    let Some(pb::model_config::SchedulingChoice::DynamicBatching(batching)) = c.scheduling_choice
    else {
        panic!("dynamic batching");
    };
    assert_eq!(batching.priority_queue_policy[&2].max_queue_size, 16);
    let h = HealthCheckResponse::decode(read("health_check_response")).unwrap();
    assert_eq!(h.status, 2);
}
