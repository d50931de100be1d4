//! The demo backend over gRPC, with a tonic client: every method, every
//! datatype through `identity` (raw and typed contents), requested
//! outputs, the decoupled `repeat` model on `ModelStreamInfer`, health, and
//! the error statuses and messages, compared with what a real Triton 2.51
//! answered for the same faults (tests/fixtures/grpc/triton-2.51/errors.json).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use bytes::Bytes;
use serde_json::Value;
use tensorgate::codec::grpc::proto::health::HealthCheckRequest;
use tensorgate::codec::grpc::proto::health::health_check_response::ServingStatus;
use tensorgate::codec::grpc::proto::inference::infer_parameter::ParameterChoice;
use tensorgate::codec::grpc::proto::inference::model_infer_request::{
    InferInputTensor, InferRequestedOutputTensor,
};
use tensorgate::codec::grpc::proto::inference::*;
use tensorgate_demo::grpc::health::health_client::HealthClient;
use tensorgate_demo::grpc::inference::grpc_inference_service_client::GrpcInferenceServiceClient;
use tensorgate_demo::{DemoGrpcServer, spawn_grpc};
use tokio_stream::StreamExt;
use tonic::Code;
use tonic::transport::Channel;

type Client = GrpcInferenceServiceClient<Channel>;

async fn start() -> (DemoGrpcServer, Client) {
    let server = spawn_grpc(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let client = GrpcInferenceServiceClient::connect(server.url())
        .await
        .unwrap()
        .max_decoding_message_size(64 << 20)
        .max_encoding_message_size(64 << 20);
    (server, client)
}

fn input(name: &str, datatype: &str, shape: &[i64]) -> InferInputTensor {
    InferInputTensor {
        name: name.into(),
        datatype: datatype.into(),
        shape: shape.to_vec(),
        ..Default::default()
    }
}

fn i32s(values: &[i32]) -> Bytes {
    values
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect::<Vec<u8>>()
        .into()
}

fn simple_request(a: &[i32], b: &[i32]) -> ModelInferRequest {
    ModelInferRequest {
        model_name: "simple".into(),
        inputs: vec![
            input("INPUT0", "INT32", &[1, 16]),
            input("INPUT1", "INT32", &[1, 16]),
        ],
        raw_input_contents: vec![i32s(a), i32s(b)],
        ..Default::default()
    }
}

#[tokio::test]
async fn simple_adds_and_subtracts_as_triton_answers() {
    let (_server, mut client) = start().await;
    let a: Vec<i32> = (0..16).collect();
    let b = vec![1; 16];
    let mut request = simple_request(&a, &b);
    request.id = "my-id".into();
    let r = client
        .model_infer(request.clone())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (
            r.model_name.as_str(),
            r.model_version.as_str(),
            r.id.as_str()
        ),
        ("simple", "1", "my-id")
    );
    assert!(r.parameters.is_empty());
    let names: Vec<&str> = r.outputs.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["OUTPUT0", "OUTPUT1"]);
    assert_eq!(
        (
            r.outputs[0].datatype.as_str(),
            r.outputs[0].shape.as_slice()
        ),
        ("INT32", &[1i64, 16][..])
    );
    assert_eq!(r.raw_output_contents[0], i32s(&(1..17).collect::<Vec<_>>()));
    assert_eq!(
        r.raw_output_contents[1],
        i32s(&(-1..15).collect::<Vec<_>>())
    );
    // One requested output: only it comes back.
    request.outputs = vec![InferRequestedOutputTensor {
        name: "OUTPUT1".into(),
        parameters: BTreeMap::new(),
    }];
    let r = client.model_infer(request).await.unwrap().into_inner();
    assert_eq!(r.outputs.len(), 1);
    assert_eq!(r.outputs[0].name, "OUTPUT1");
    assert_eq!(
        r.raw_output_contents,
        vec![i32s(&(-1..15).collect::<Vec<_>>())]
    );
}

/// Every datatype with its raw bytes and, where the protocol has one, the
/// same values as typed contents.
fn every_datatype() -> Vec<(&'static str, Vec<u8>, Option<InferTensorContents>)> {
    let c = InferTensorContents::default;
    vec![
        (
            "BOOL",
            vec![1, 0],
            Some(InferTensorContents {
                bool_contents: vec![true, false],
                ..c()
            }),
        ),
        (
            "INT8",
            vec![0x80, 0x7f],
            Some(InferTensorContents {
                int_contents: vec![-128, 127],
                ..c()
            }),
        ),
        (
            "INT16",
            vec![0xff, 0xff, 1, 0],
            Some(InferTensorContents {
                int_contents: vec![-1, 1],
                ..c()
            }),
        ),
        (
            "INT32",
            [7i32, -7].iter().flat_map(|v| v.to_le_bytes()).collect(),
            Some(InferTensorContents {
                int_contents: vec![7, -7],
                ..c()
            }),
        ),
        (
            "INT64",
            [i64::MIN, 3].iter().flat_map(|v| v.to_le_bytes()).collect(),
            Some(InferTensorContents {
                int64_contents: vec![i64::MIN, 3],
                ..c()
            }),
        ),
        (
            "UINT8",
            vec![0, 255],
            Some(InferTensorContents {
                uint_contents: vec![0, 255],
                ..c()
            }),
        ),
        (
            "UINT16",
            vec![0xff, 0xff, 2, 0],
            Some(InferTensorContents {
                uint_contents: vec![65535, 2],
                ..c()
            }),
        ),
        (
            "UINT32",
            [u32::MAX, 9].iter().flat_map(|v| v.to_le_bytes()).collect(),
            Some(InferTensorContents {
                uint_contents: vec![u32::MAX, 9],
                ..c()
            }),
        ),
        (
            "UINT64",
            [u64::MAX, 1].iter().flat_map(|v| v.to_le_bytes()).collect(),
            Some(InferTensorContents {
                uint64_contents: vec![u64::MAX, 1],
                ..c()
            }),
        ),
        ("FP16", vec![0, 0x3c, 0, 0xc0], None),
        ("BF16", vec![0x80, 0x3f, 0, 0xc0], None),
        (
            "FP32",
            [0.5f32, -1e-45]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
            Some(InferTensorContents {
                fp32_contents: vec![0.5, -1e-45],
                ..c()
            }),
        ),
        (
            "FP64",
            [1e300f64, -0.25]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
            Some(InferTensorContents {
                fp64_contents: vec![1e300, -0.25],
                ..c()
            }),
        ),
        (
            "BYTES",
            b"\x01\x00\x00\x00a\x00\x00\x00\x00".to_vec(),
            Some(InferTensorContents {
                bytes_contents: vec![Bytes::from_static(b"a"), Bytes::new()],
                ..c()
            }),
        ),
    ]
}

#[tokio::test]
async fn identity_returns_every_datatype_raw_and_typed() {
    let (_server, mut client) = start().await;
    let cases = every_datatype();
    let raw = ModelInferRequest {
        model_name: "identity".into(),
        inputs: cases
            .iter()
            .map(|(dt, _, _)| input(&format!("IN_{dt}"), dt, &[2]))
            .collect(),
        raw_input_contents: cases
            .iter()
            .map(|(_, bytes, _)| Bytes::from(bytes.clone()))
            .collect(),
        ..Default::default()
    };
    let r = client.model_infer(raw).await.unwrap().into_inner();
    for (i, (dt, bytes, _)) in cases.iter().enumerate() {
        assert_eq!(r.outputs[i].name, format!("OUTPUT{i}"));
        assert_eq!(
            (
                r.outputs[i].datatype.as_str(),
                r.outputs[i].shape.as_slice()
            ),
            (*dt, &[2i64][..])
        );
        assert_eq!(&r.raw_output_contents[i][..], &bytes[..], "{dt} raw");
    }
    let typed_cases: Vec<_> = cases.into_iter().filter(|c| c.2.is_some()).collect();
    let typed = ModelInferRequest {
        model_name: "identity".into(),
        inputs: typed_cases
            .iter()
            .map(|(dt, _, contents)| InferInputTensor {
                contents: contents.clone(),
                ..input(&format!("IN_{dt}"), dt, &[2])
            })
            .collect(),
        ..Default::default()
    };
    let r = client.model_infer(typed).await.unwrap().into_inner();
    assert_eq!(r.raw_output_contents.len(), 12);
    for (i, (dt, bytes, _)) in typed_cases.iter().enumerate() {
        assert_eq!(&r.raw_output_contents[i][..], &bytes[..], "{dt} typed");
    }
}

#[tokio::test]
async fn messages_past_tonic_default_4_mib() {
    let (_server, mut client) = start().await;
    let data = Bytes::from(vec![7u8; 8 << 20]);
    let request = ModelInferRequest {
        model_name: "identity".into(),
        inputs: vec![input("X", "UINT8", &[8 << 20])],
        raw_input_contents: vec![data.clone()],
        ..Default::default()
    };
    let r = client.model_infer(request).await.unwrap().into_inner();
    assert_eq!(r.raw_output_contents[0], data);
}

fn triton_errors() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/grpc/triton-2.51/errors.json"
    );
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A status code's canonical gRPC name, as Python's `grpc.StatusCode`
/// spells it.
fn code_name(code: Code) -> &'static str {
    match code {
        Code::NotFound => "NOT_FOUND",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Unavailable => "UNAVAILABLE",
        Code::Internal => "INTERNAL",
        other => panic!("no fixture uses {other:?}"),
    }
}

/// The demo's status for a fault must be Triton's: same code, same message.
async fn same_as_triton(case: &str, status: tonic::Status) {
    let expected = &triton_errors()[case];
    assert_eq!(
        code_name(status.code()),
        expected["code"].as_str().unwrap(),
        "{case}: code"
    );
    assert_eq!(
        status.message(),
        expected["message"].as_str().unwrap(),
        "{case}: message"
    );
}

#[tokio::test]
async fn errors_are_triton_statuses() {
    let (_server, mut client) = start().await;
    let ok16 = || (0..16).collect::<Vec<i32>>();
    let mut unknown = simple_request(&ok16(), &ok16());
    unknown.model_name = "nope".into();
    same_as_triton(
        "unknown_model",
        client.model_infer(unknown).await.unwrap_err(),
    )
    .await;
    let version = ModelInferRequest {
        model_name: "simple".into(),
        model_version: "7".into(),
        ..Default::default()
    };
    same_as_triton(
        "unknown_version",
        client.model_infer(version).await.unwrap_err(),
    )
    .await;
    let mut bad_shape = simple_request(&ok16(), &ok16()[..8]);
    bad_shape.inputs[1].shape = vec![1, 8];
    same_as_triton(
        "bad_shape",
        client.model_infer(bad_shape).await.unwrap_err(),
    )
    .await;
    let mut wrong_type = simple_request(&ok16(), &ok16());
    wrong_type.inputs[1].datatype = "FP32".into();
    same_as_triton(
        "wrong_datatype",
        client.model_infer(wrong_type).await.unwrap_err(),
    )
    .await;
    let mut missing = simple_request(&ok16(), &ok16());
    missing.inputs.pop();
    missing.raw_input_contents.pop();
    same_as_triton(
        "missing_input",
        client.model_infer(missing).await.unwrap_err(),
    )
    .await;
    let big = vec![0; 144];
    let mut batch = simple_request(&big, &big);
    batch.inputs[0].shape = vec![9, 16];
    batch.inputs[1].shape = vec![9, 16];
    same_as_triton(
        "batch_too_large",
        client.model_infer(batch).await.unwrap_err(),
    )
    .await;
    let short = simple_request(&ok16(), &ok16()[..8]);
    same_as_triton(
        "raw_size_mismatch",
        client.model_infer(short).await.unwrap_err(),
    )
    .await;
    let mut unknown_output = simple_request(&ok16(), &ok16());
    unknown_output.outputs = vec![InferRequestedOutputTensor {
        name: "NOPE".into(),
        parameters: BTreeMap::new(),
    }];
    same_as_triton(
        "unknown_output",
        client.model_infer(unknown_output).await.unwrap_err(),
    )
    .await;
    let decoupled = ModelInferRequest {
        model_name: "repeat".into(),
        inputs: vec![input("text_input", "BYTES", &[1])],
        raw_input_contents: vec![Bytes::from_static(b"\x02\x00\x00\x00hi")],
        ..Default::default()
    };
    let e = client.model_infer(decoupled).await.unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented);
    assert_eq!(
        e.message(),
        triton_errors()["decoupled_on_model_infer"]["message"]
            .as_str()
            .unwrap()
    );
    let nope = || ModelMetadataRequest {
        name: "nope".into(),
        version: String::new(),
    };
    same_as_triton(
        "model_metadata_unknown",
        client.model_metadata(nope()).await.unwrap_err(),
    )
    .await;
    let e = client
        .model_config(ModelConfigRequest {
            name: "nope".into(),
            version: String::new(),
        })
        .await
        .unwrap_err();
    same_as_triton("model_config_unknown", e).await;
    let e = client
        .model_statistics(ModelStatisticsRequest {
            name: "nope".into(),
            version: String::new(),
        })
        .await
        .unwrap_err();
    same_as_triton("model_statistics_unknown", e).await;
    // Typed contents of the wrong kind: the codec's message, naming the tensor.
    let mut typed = simple_request(&[], &[]);
    typed.raw_input_contents.clear();
    for i in &mut typed.inputs {
        i.contents = Some(InferTensorContents {
            fp32_contents: vec![0.0; 16],
            ..Default::default()
        });
    }
    let e = client.model_infer(typed).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(
        e.message(),
        "input \"INPUT0\": INT32 data must be in int_contents, not fp32_contents"
    );
}

#[tokio::test]
async fn health_metadata_config_statistics_index() {
    let (server, mut client) = start().await;
    assert!(
        client
            .server_live(ServerLiveRequest {})
            .await
            .unwrap()
            .into_inner()
            .live
    );
    assert!(
        client
            .server_ready(ServerReadyRequest {})
            .await
            .unwrap()
            .into_inner()
            .ready
    );
    let ready = |name: &str, version: &str| ModelReadyRequest {
        name: name.into(),
        version: version.into(),
    };
    assert!(
        client
            .model_ready(ready("simple", ""))
            .await
            .unwrap()
            .into_inner()
            .ready
    );
    assert!(
        client
            .model_ready(ready("simple", "1"))
            .await
            .unwrap()
            .into_inner()
            .ready
    );
    assert!(
        !client
            .model_ready(ready("simple", "2"))
            .await
            .unwrap()
            .into_inner()
            .ready
    );
    assert!(
        !client
            .model_ready(ready("nope", ""))
            .await
            .unwrap()
            .into_inner()
            .ready
    );
    let m = client
        .server_metadata(ServerMetadataRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(m.name, "tensorgate-demo");
    assert!(m.extensions.contains(&"binary_tensor_data".to_owned()));
    let meta = client
        .model_metadata(ModelMetadataRequest {
            name: "simple".into(),
            version: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (
            meta.name.as_str(),
            meta.versions.as_slice(),
            meta.platform.as_str()
        ),
        ("simple", &["1".to_owned()][..], "tensorgate_demo")
    );
    assert_eq!(
        (
            meta.inputs[0].name.as_str(),
            meta.inputs[0].datatype.as_str(),
            meta.inputs[0].shape.as_slice()
        ),
        ("INPUT0", "INT32", &[-1i64, 16][..])
    );
    let config = client
        .model_config(ModelConfigRequest {
            name: "repeat".into(),
            version: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap();
    assert!(config.model_transaction_policy.unwrap().decoupled);
    assert_eq!(config.input[0].data_type, DataType::TypeString as i32);
    assert!(config.input[1].optional);
    // Statistics count what was served.
    let ok16: Vec<i32> = (0..16).collect();
    client
        .model_infer(simple_request(&ok16, &ok16))
        .await
        .unwrap();
    let mut failing = simple_request(&ok16, &ok16);
    failing.inputs[1].datatype = "FP32".into();
    client.model_infer(failing).await.unwrap_err();
    let stats = client
        .model_statistics(ModelStatisticsRequest {
            name: "simple".into(),
            version: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let s = &stats.model_stats[0];
    assert_eq!(
        (
            s.name.as_str(),
            s.version.as_str(),
            s.inference_count,
            s.execution_count
        ),
        ("simple", "1", 1, 1)
    );
    let infer = s.inference_stats.as_ref().unwrap();
    assert_eq!(
        (infer.success.unwrap().count, infer.fail.unwrap().count),
        (1, 1)
    );
    assert!(s.last_inference > 1_700_000_000_000);
    let all = client
        .model_statistics(ModelStatisticsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(all.model_stats.len(), 5);
    let e = client
        .model_statistics(ModelStatisticsRequest {
            name: "simple".into(),
            version: "3".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        e.message(),
        "requested model version is not available for model 'simple'"
    );
    let index = client
        .repository_index(RepositoryIndexRequest::default())
        .await
        .unwrap()
        .into_inner();
    let names: Vec<&str> = index.models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["simple", "identity", "repeat", "ramp", "rowsum"]);
    assert!(
        index
            .models
            .iter()
            .all(|m| m.state == "READY" && m.version == "1")
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn control_methods_as_triton_answers_them() {
    let (_server, mut client) = start().await;
    let e = client
        .repository_model_load(RepositoryModelLoadRequest::default())
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (
            Code::Unavailable,
            "explicit model load / unload is not allowed if polling is enabled"
        )
    );
    let e = client
        .repository_model_unload(RepositoryModelUnloadRequest::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unavailable);
    assert!(
        client
            .system_shared_memory_status(SystemSharedMemoryStatusRequest::default())
            .await
            .unwrap()
            .into_inner()
            .regions
            .is_empty()
    );
    let e = client
        .system_shared_memory_status(SystemSharedMemoryStatusRequest { name: "zz".into() })
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (
            Code::NotFound,
            "Unable to find system shared memory region: 'zz'"
        )
    );
    let register = SystemSharedMemoryRegisterRequest {
        name: "r".into(),
        key: "/k".into(),
        offset: 0,
        byte_size: 64,
    };
    let e = client
        .system_shared_memory_register(register)
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (Code::Internal, "Unable to open shared memory region: '/k'")
    );
    client
        .system_shared_memory_unregister(SystemSharedMemoryUnregisterRequest::default())
        .await
        .unwrap();
    let e = client
        .cuda_shared_memory_register(CudaSharedMemoryRegisterRequest::default())
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (
            Code::InvalidArgument,
            "failed to register shared memory region: invalid args"
        )
    );
    let e = client
        .cuda_shared_memory_status(CudaSharedMemoryStatusRequest { name: "zz".into() })
        .await
        .unwrap_err();
    assert_eq!(
        e.message(),
        "Unable to find cuda shared memory region: 'zz'"
    );
    client
        .cuda_shared_memory_unregister(CudaSharedMemoryUnregisterRequest::default())
        .await
        .unwrap();
    let trace = client
        .trace_setting(TraceSettingRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(trace.settings["trace_level"].value, vec!["OFF"]);
    assert_eq!(trace.settings["trace_rate"].value, vec!["1000"]);
    let mut change = TraceSettingRequest::default();
    change.settings.insert(
        "trace_rate".into(),
        trace_setting_request::SettingValue {
            value: vec!["5".into()],
        },
    );
    let trace = client.trace_setting(change).await.unwrap().into_inner();
    assert_eq!(trace.settings["trace_rate"].value, vec!["5"]);
    let e = client
        .trace_setting(TraceSettingRequest {
            model_name: "nope".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (Code::InvalidArgument, "Request for unknown model : nope")
    );
    let logs = client
        .log_settings(LogSettingsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(logs.settings.len(), 6);
    let mut bad = LogSettingsRequest::default();
    bad.settings.insert(
        "log_info".into(),
        log_settings_request::SettingValue {
            parameter_choice: Some(
                log_settings_request::setting_value::ParameterChoice::StringParam("x".into()),
            ),
        },
    );
    let e = client.log_settings(bad).await.unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (Code::InvalidArgument, "expect boolean for 'log_info'")
    );
}

fn repeat_request(text: &str, count: i32, id: &str) -> ModelInferRequest {
    let mut t = Vec::from((text.len() as u32).to_le_bytes());
    t.extend_from_slice(text.as_bytes());
    ModelInferRequest {
        model_name: "repeat".into(),
        id: id.into(),
        inputs: vec![
            input("text_input", "BYTES", &[1]),
            input("count", "INT32", &[1]),
            input("delay_ms", "INT32", &[1]),
        ],
        raw_input_contents: vec![t.into(), i32s(&[count]), i32s(&[0])],
        ..Default::default()
    }
}

fn final_flag(r: &ModelInferResponse) -> Option<bool> {
    match r.parameters.get("triton_final_response")?.parameter_choice {
        Some(ParameterChoice::BoolParam(b)) => Some(b),
        _ => None,
    }
}

#[tokio::test]
async fn stream_infer_decoupled_and_not() {
    let (_server, mut client) = start().await;
    let ok16: Vec<i32> = (0..16).collect();
    let mut unknown = simple_request(&ok16, &ok16);
    unknown.model_name = "nope".into();
    let requests = vec![
        repeat_request("hi", 3, "a"),
        unknown,
        simple_request(&ok16, &ok16),
        repeat_request("x", 0, ""),
    ];
    let mut responses = client
        .model_stream_infer(tokio_stream::iter(requests))
        .await
        .unwrap()
        .into_inner();
    let mut got = Vec::new();
    while let Some(r) = responses.next().await {
        got.push(r.unwrap());
    }
    assert_eq!(
        got.len(),
        5,
        "three repeats, one error, one simple; count 0 sends nothing"
    );
    for (i, r) in got[..3].iter().enumerate() {
        let inner = r.infer_response.as_ref().unwrap();
        assert_eq!(
            (inner.id.as_str(), inner.model_name.as_str()),
            ("a", "repeat")
        );
        let text = format!("hi{i}");
        let mut expected = Vec::from((text.len() as u32).to_le_bytes());
        expected.extend_from_slice(text.as_bytes());
        assert_eq!(
            inner.raw_output_contents,
            vec![Bytes::from(expected), i32s(&[i as i32])]
        );
        assert_eq!(final_flag(inner), Some(i == 2));
    }
    assert_eq!(
        got[3].error_message,
        "Request for unknown model: 'nope' is not found"
    );
    assert!(got[3].infer_response.is_none());
    let simple = got[4].infer_response.as_ref().unwrap();
    assert_eq!(
        simple.raw_output_contents[0],
        i32s(&(0..16).map(|v| v * 2).collect::<Vec<_>>())
    );
    assert_eq!(final_flag(simple), Some(true));
}

#[tokio::test]
async fn health_check_and_watch() {
    let (server, _client) = start().await;
    let mut health = HealthClient::connect(server.url()).await.unwrap();
    for service in ["", "inference.GRPCInferenceService"] {
        let r = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.status, ServingStatus::Serving as i32, "{service:?}");
    }
    let e = health
        .check(HealthCheckRequest {
            service: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    let mut watch = health
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        watch.next().await.unwrap().unwrap().status,
        ServingStatus::Serving as i32
    );
    let mut unknown = health
        .watch(HealthCheckRequest {
            service: "nope".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        unknown.next().await.unwrap().unwrap().status,
        ServingStatus::ServiceUnknown as i32
    );
    // Shutdown ends the open watches instead of waiting for them.
    let stopped = tokio::time::timeout(std::time::Duration::from_secs(3), server.shutdown()).await;
    assert!(matches!(stopped, Ok(Ok(()))), "{stopped:?}");
    let end = tokio::time::timeout(std::time::Duration::from_secs(3), watch.next())
        .await
        .unwrap();
    assert!(end.is_none_or(|r| r.is_err()));
}
