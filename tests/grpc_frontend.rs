//! The gRPC frontend on the data port, with a tonic client, in front of the
//! embedded demo backend over HTTP (gRPC in, binary HTTP out): inference
//! with raw and typed contents, the metadata calls translated from the
//! backend's JSON, health, and the statuses for rule violations, unknown
//! models, oversized messages, control calls and missing keys; requests
//! counted under `kind="grpc"`.

mod common;

use bytes::Bytes;
use common::{gateway, keys_file, metric, scrape_text, simple_config};
use tensorgate::codec::grpc::proto::health::HealthCheckRequest;
use tensorgate::codec::grpc::proto::health::health_check_response::ServingStatus;
use tensorgate::codec::grpc::proto::inference::model_infer_request::InferInputTensor;
use tensorgate::codec::grpc::proto::inference::*;
use tensorgate::server::Running;
use tensorgate_demo as demo;
use tensorgate_demo::grpc::health::health_client::HealthClient;
use tensorgate_demo::grpc::inference::grpc_inference_service_client::GrpcInferenceServiceClient;
use tonic::Code;
use tonic::transport::Channel;

type Client = GrpcInferenceServiceClient<Channel>;

struct Setup {
    _demo: demo::DemoServer,
    gw: Running,
    client: Client,
}

async fn start(route: &str) -> Setup {
    let demo = demo::spawn().await.unwrap();
    let url = format!("http://{}", demo.addr);
    let gw = gateway(&simple_config(&url, route)).await;
    let client = Client::connect(format!("http://{}", gw.data_addr))
        .await
        .unwrap()
        .max_decoding_message_size(64 << 20)
        .max_encoding_message_size(64 << 20);
    Setup {
        _demo: demo,
        gw,
        client,
    }
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

fn simple(a: &[i32], b: &[i32]) -> ModelInferRequest {
    ModelInferRequest {
        model_name: "simple".into(),
        id: "call-1".into(),
        inputs: vec![
            input("INPUT0", "INT32", &[1, 16]),
            input("INPUT1", "INT32", &[1, 16]),
        ],
        raw_input_contents: vec![i32s(a), i32s(b)],
        ..Default::default()
    }
}

fn as_i32(raw: &Bytes) -> Vec<i32> {
    raw.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[tokio::test]
async fn model_infer_reaches_an_http_backend_and_comes_back_raw() {
    let mut s = start("").await;
    let a: Vec<i32> = (0..16).collect();
    let b = vec![1; 16];
    let r = s
        .client
        .model_infer(simple(&a, &b))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.model_name, "simple");
    assert_eq!(r.id, "call-1");
    let names: Vec<&str> = r.outputs.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["OUTPUT0", "OUTPUT1"]);
    assert_eq!(r.outputs[0].shape, [1, 16]);
    assert_eq!(r.outputs[0].datatype, "INT32");
    assert_eq!(r.raw_output_contents.len(), 2);
    let sum: Vec<i32> = (1..17).collect();
    let diff: Vec<i32> = (-1..15).collect();
    assert_eq!(as_i32(&r.raw_output_contents[0]), sum);
    assert_eq!(as_i32(&r.raw_output_contents[1]), diff);

    // Typed contents are converted, the reply is raw as Triton answers.
    let mut typed = simple(&a, &b);
    typed.raw_input_contents.clear();
    typed.inputs[0].contents = Some(InferTensorContents {
        int_contents: a.clone(),
        ..Default::default()
    });
    typed.inputs[1].contents = Some(InferTensorContents {
        int_contents: b.clone(),
        ..Default::default()
    });
    let r = s.client.model_infer(typed).await.unwrap().into_inner();
    assert_eq!(as_i32(&r.raw_output_contents[0]), sum);

    // Counted as gRPC, with the code its status stands for.
    let text = scrape_text(&s.gw).await;
    assert_eq!(
        metric(
            &text,
            r#"tensorgate_requests_total{code="200",kind="grpc",route="r"}"#
        ),
        Some(2.0)
    );
}

#[tokio::test]
async fn metadata_calls_are_translated_from_the_backends_json() {
    let mut s = start("").await;
    let live = s
        .client
        .server_live(ServerLiveRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(live.live);
    let ready = s
        .client
        .server_ready(ServerReadyRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(ready.ready);
    let model_ready = s
        .client
        .model_ready(ModelReadyRequest {
            name: "simple".into(),
            version: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(model_ready.ready);
    let meta = s
        .client
        .model_metadata(ModelMetadataRequest {
            name: "simple".into(),
            version: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(meta.name, "simple");
    let inputs: Vec<(&str, &str, &[i64])> = meta
        .inputs
        .iter()
        .map(|t| (t.name.as_str(), t.datatype.as_str(), t.shape.as_slice()))
        .collect();
    assert_eq!(
        inputs,
        [
            ("INPUT0", "INT32", &[-1i64, 16][..]),
            ("INPUT1", "INT32", &[-1, 16][..])
        ]
    );
    let server = s
        .client
        .server_metadata(ServerMetadataRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(!server.name.is_empty());
    let config = s
        .client
        .model_config(ModelConfigRequest {
            name: "simple".into(),
            version: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(config.config.unwrap().name, "simple");
    let unknown = s
        .client
        .model_metadata(ModelMetadataRequest {
            name: "nope".into(),
            version: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound, "{unknown:?}");
}

#[tokio::test]
async fn faults_are_the_statuses_the_issue_names() {
    let route = r#"
[routes.limits]
max_body_bytes = 4096
[routes.inputs.INPUT0]
shape = [-1, 16]
[routes.inputs.INPUT1]
shape = [-1, -1]
"#;
    let mut s = start(route).await;
    // A rule: INVALID_ARGUMENT naming the tensor.
    let mut bad = simple(&[0; 8], &[0; 16]);
    bad.inputs[0].shape = vec![1, 8];
    let e = s.client.model_infer(bad).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("INPUT0"), "{}", e.message());
    // Raw sizes that disagree with the shape: INVALID_ARGUMENT.
    let mut short = simple(&[0; 16], &[0; 16]);
    short.raw_input_contents[1] = i32s(&[0; 4]);
    let e = s.client.model_infer(short).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("INPUT1"), "{}", e.message());
    // Over the route's body limit: RESOURCE_EXHAUSTED, not buffered.
    let big = simple(&[0; 16], &vec![0; 4096]);
    let mut big = big;
    big.inputs[1].shape = vec![1, 4096];
    let e = s.client.model_infer(big).await.unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    // A model the backend does not know: NOT_FOUND.
    let mut unknown = simple(&[0; 16], &[0; 16]);
    unknown.model_name = "nope".into();
    let e = s.client.model_infer(unknown).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    // A control call the route does not allow: PERMISSION_DENIED.
    let e = s
        .client
        .repository_model_load(RepositoryModelLoadRequest {
            model_name: "simple".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert!(e.message().contains("allow_control"), "{}", e.message());
}

#[tokio::test]
async fn keys_are_checked_from_metadata() {
    let keys = keys_file("alice:0123456789abcdef0123\n");
    let route = format!("[routes.auth]\nkeys_file = \"{}\"\n", keys.display());
    let mut s = start(&route).await;
    let e = s
        .client
        .model_infer(simple(&[0; 16], &[0; 16]))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
    let mut req = tonic::Request::new(simple(&[0; 16], &[0; 16]));
    req.metadata_mut().insert(
        "authorization",
        "Bearer 0123456789abcdef0123".parse().unwrap(),
    );
    s.client.model_infer(req).await.unwrap();
    let mut req = tonic::Request::new(simple(&[0; 16], &[0; 16]));
    req.metadata_mut()
        .insert("x-api-key", "0123456789abcdef0123".parse().unwrap());
    s.client.model_infer(req).await.unwrap();
}

#[tokio::test]
async fn health_answers_for_the_gateway_and_its_routes() {
    let s = start("").await;
    let mut health = HealthClient::connect(format!("http://{}", s.gw.data_addr))
        .await
        .unwrap();
    let check = |service: &str| HealthCheckRequest {
        service: service.into(),
    };
    let r = health.check(check("")).await.unwrap().into_inner();
    assert_eq!(r.status, ServingStatus::Serving as i32);
    let r = health.check(check("r")).await.unwrap().into_inner();
    assert_eq!(r.status, ServingStatus::Serving as i32);
    let e = health.check(check("no-such-route")).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    let mut watch = health.watch(check("")).await.unwrap().into_inner();
    let first = watch.message().await.unwrap().unwrap();
    assert_eq!(first.status, ServingStatus::Serving as i32);
}

fn repeat_request(text: &str, count: i32) -> ModelInferRequest {
    let mut text_bytes = (text.len() as u32).to_le_bytes().to_vec();
    text_bytes.extend_from_slice(text.as_bytes());
    ModelInferRequest {
        model_name: "repeat".into(),
        inputs: vec![
            input("text_input", "BYTES", &[1]),
            input("count", "INT32", &[1]),
            input("delay_ms", "INT32", &[1]),
        ],
        raw_input_contents: vec![text_bytes.into(), i32s(&[count]), i32s(&[10])],
        ..Default::default()
    }
}

#[tokio::test]
async fn a_stream_to_an_http_backend_is_one_infer_per_request_in_order() {
    let route =
        "[routes.inputs.INPUT0]\nshape = [-1, 16]\n[routes.inputs.INPUT1]\nshape = [-1, 16]\n";
    let mut s = start(route).await;
    let mut bad = simple(&[0; 8], &[0; 16]);
    bad.inputs[0].shape = vec![1, 8];
    let requests = vec![simple(&[1; 16], &[1; 16]), bad, simple(&[5; 16], &[2; 16])];
    let mut replies = s
        .client
        .model_stream_infer(tokio_stream::iter(requests))
        .await
        .unwrap()
        .into_inner();
    let first = replies.message().await.unwrap().unwrap();
    assert_eq!(first.error_message, "");
    let r = first.infer_response.unwrap();
    assert_eq!(as_i32(&r.raw_output_contents[0]), vec![2; 16]);
    // The request that breaks a rule is answered with an error message;
    // the stream goes on.
    let second = replies.message().await.unwrap().unwrap();
    assert!(second.error_message.contains("INPUT0"), "{second:?}");
    let third = replies.message().await.unwrap().unwrap();
    let r = third.infer_response.unwrap();
    assert_eq!(as_i32(&r.raw_output_contents[0]), vec![7; 16]);
    assert_eq!(as_i32(&r.raw_output_contents[1]), vec![3; 16]);
    assert!(replies.message().await.unwrap().is_none(), "OK at the end");

    // A decoupled model cannot answer an HTTP infer: UNIMPLEMENTED, saying so.
    let mut s = start("").await;
    let mut replies = s
        .client
        .model_stream_infer(tokio_stream::iter(vec![repeat_request("hi", 3)]))
        .await
        .unwrap()
        .into_inner();
    let e = loop {
        match replies.message().await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the stream ended OK"),
            Err(e) => break e,
        }
    };
    assert_eq!(e.code(), Code::Unimplemented, "{e:?}");
    assert!(e.message().contains("gRPC backend"), "{}", e.message());
}

#[tokio::test]
async fn a_stream_to_a_grpc_backend_goes_through_both_ways() {
    let demo = demo::spawn_grpc(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let url = format!("grpc://{}", demo.addr);
    let route = "[routes.inputs.text_input]\nshape = [1]\nallowed_types = [\"BYTES\"]\n\
                 [routes.inputs.count]\nshape = [1]\n[routes.inputs.delay_ms]\nshape = [1]\n";
    let gw = gateway(&simple_config(&url, route)).await;
    let mut client = Client::connect(format!("http://{}", gw.data_addr))
        .await
        .unwrap();
    // Two requests of the decoupled model, three responses each, and one
    // that breaks a rule in between.
    let mut bad = repeat_request("no", 2);
    bad.inputs[0].shape = vec![2];
    bad.raw_input_contents[0] = {
        let mut b = Vec::new();
        for t in ["a", "b"] {
            b.extend_from_slice(&1u32.to_le_bytes());
            b.extend_from_slice(t.as_bytes());
        }
        b.into()
    };
    let requests = vec![repeat_request("x", 3), bad, repeat_request("y", 3)];
    let mut replies = client
        .model_stream_infer(tokio_stream::iter(requests))
        .await
        .unwrap()
        .into_inner();
    let mut texts = Vec::new();
    let mut errors = Vec::new();
    while let Some(m) = replies.message().await.unwrap() {
        if !m.error_message.is_empty() {
            errors.push(m.error_message);
            continue;
        }
        let r = m.infer_response.unwrap();
        let raw = &r.raw_output_contents[0];
        texts.push(String::from_utf8_lossy(&raw[4..]).into_owned());
    }
    assert_eq!(texts, ["x0", "x1", "x2", "y0", "y1", "y2"]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("text_input"), "{errors:?}");
}
