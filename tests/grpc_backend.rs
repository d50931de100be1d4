//! A backend that speaks gRPC (`grpc://`): the demo backend's gRPC port
//! behind the gateway. V2 JSON and binary clients, SageMaker records and
//! gRPC clients all reach it; the V2 endpoints that are not inference are
//! translated to their calls and answered in the V2 JSON form; health
//! checks of gRPC replicas use `ServerReady` / `ModelReady`; a backend's
//! gRPC status reaches a gRPC client as it is, and an HTTP client as the
//! status it stands for; a gRPC replica's `metrics_url` is read over
//! HTTP/1.1, as Triton serves it.

mod common;

use common::{gateway, post_binary, post_json, send, split_binary};
use serde_json::json;
use tensorgate::codec::grpc::proto::inference::*;
use tensorgate::server::Running;
use tensorgate_demo::grpc::inference::grpc_inference_service_client::GrpcInferenceServiceClient;
use tensorgate_demo::{self as demo, DemoGrpcServer};
use tonic::Code;

async fn start(replicas: usize) -> (Vec<DemoGrpcServer>, Running) {
    let mut demos = Vec::new();
    for _ in 0..replicas {
        demos.push(
            demo::spawn_grpc(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
                .await
                .unwrap(),
        );
    }
    let urls: Vec<String> = demos
        .iter()
        .map(|d| format!("\"grpc://{}\"", d.addr))
        .collect();
    let toml = format!(
        r#"
[backends.b]
urls = [{}]
request_timeout = "5s"
connect_timeout = "1s"
health_interval = "200ms"
health_timeout = "150ms"
[[routes]]
name = "r"
default = true
backend = "b"
"#,
        urls.join(", ")
    );
    let gw = gateway(&toml).await;
    (demos, gw)
}

const SIMPLE: &str = r#"{"id":"j","inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}"#;

#[tokio::test]
async fn json_and_binary_clients_reach_a_grpc_backend() {
    let (_demos, gw) = start(1).await;
    let got = post_json(gw.data_addr, "/v2/models/simple/infer", SIMPLE).await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    let v = got.json();
    assert_eq!(v["id"], "j");
    assert_eq!(v["model_name"], "simple");
    let sum: Vec<i32> = (1..17).collect();
    let diff: Vec<i32> = (-1..15).collect();
    assert_eq!(v["outputs"][0]["name"], "OUTPUT0");
    assert_eq!(v["outputs"][0]["data"], json!(sum));
    assert_eq!(v["outputs"][1]["data"], json!(diff));

    // A binary client gets the backend's raw output bytes as binary data.
    let header = json!({"inputs":[
        {"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},
        {"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}],
        "outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]});
    let a = common::le_i32(&(0..16).collect::<Vec<_>>());
    let b = common::le_i32(&[1; 16]);
    let got = post_binary(gw.data_addr, "/v2/models/simple/infer", &header, &[&a, &b]).await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    let (h, data) = split_binary(&got);
    assert_eq!(h["outputs"][0]["parameters"]["binary_data_size"], 64);
    assert_eq!(&data[..], &common::le_i32(&sum)[..]);
}

#[tokio::test]
async fn sagemaker_records_reach_a_grpc_backend() {
    let (_demos, gw) = start(1).await;
    let got = send(
        gw.data_addr,
        "POST",
        "/models/rowsum/invoke",
        &[("content-type", "text/csv"), ("accept", "application/json")],
        "1,2,3\n4,5,6\n",
    )
    .await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    assert_eq!(
        got.json(),
        json!({"predictions": [
            {"score": 6.0, "OUTPUT0": [1.0, 2.0, 3.0]},
            {"score": 15.0, "OUTPUT0": [4.0, 5.0, 6.0]}
        ]})
    );
}

#[tokio::test]
async fn v2_endpoints_are_translated_to_calls() {
    let (_demos, gw) = start(1).await;
    let get = |path: &'static str| send(gw.data_addr, "GET", path, &[], "");
    assert_eq!(get("/v2/health/ready").await.status, 200);
    assert_eq!(get("/v2/health/live").await.status, 200);
    assert_eq!(get("/v2/models/simple/ready").await.status, 200);
    let meta = get("/v2/models/simple").await;
    assert_eq!(meta.status, 200, "{:?}", meta.body);
    let v = meta.json();
    assert_eq!(v["name"], "simple");
    assert_eq!(v["inputs"][0]["name"], "INPUT0");
    assert_eq!(v["inputs"][0]["shape"], json!([-1, 16]));
    let config = get("/v2/models/simple/config").await;
    assert_eq!(config.status, 200);
    assert_eq!(config.json()["name"], "simple");
    let server = get("/v2").await;
    assert_eq!(server.status, 200);
    assert!(server.json()["name"].is_string());
    // A model the backend does not know: the status NOT_FOUND stands for.
    let unknown = get("/v2/models/nope").await;
    assert_eq!(unknown.status, 404, "{:?}", unknown.body);
    assert!(unknown.error().contains("nope"), "{}", unknown.error());
    // No call for it: 501, saying why.
    let generate = send(
        gw.data_addr,
        "POST",
        "/v2/models/simple/generate",
        &[],
        "{}",
    )
    .await;
    assert_eq!(generate.status, 501);
    assert!(generate.error().contains("gRPC"), "{}", generate.error());
}

#[tokio::test]
async fn grpc_clients_reach_a_grpc_backend_with_its_own_statuses() {
    let (_demos, gw) = start(1).await;
    let mut client = GrpcInferenceServiceClient::connect(format!("http://{}", gw.data_addr))
        .await
        .unwrap();
    let request = ModelInferRequest {
        model_name: "simple".into(),
        inputs: ["INPUT0", "INPUT1"]
            .map(|n| model_infer_request::InferInputTensor {
                name: n.into(),
                datatype: "INT32".into(),
                shape: vec![1, 16],
                ..Default::default()
            })
            .to_vec(),
        raw_input_contents: vec![
            common::le_i32(&(0..16).collect::<Vec<_>>()).into(),
            common::le_i32(&[1; 16]).into(),
        ],
        ..Default::default()
    };
    let r = client
        .model_infer(request.clone())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.raw_output_contents.len(), 2);
    assert_eq!(
        &r.raw_output_contents[0][..],
        &common::le_i32(&(1..17).collect::<Vec<_>>())[..]
    );
    // Metadata passes through untranslated.
    let cfg = client
        .model_config(ModelConfigRequest {
            name: "simple".into(),
            version: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(cfg.config.unwrap().name, "simple");
    let e = client
        .model_metadata(ModelMetadataRequest {
            name: "nope".into(),
            version: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    assert!(e.message().contains("nope"), "{}", e.message());
    let mut bad = request;
    bad.inputs[0].shape = vec![1, 8];
    bad.raw_input_contents[0] = common::le_i32(&[0; 8]).into();
    let e = client.model_infer(bad).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
}

#[tokio::test]
async fn grpc_replicas_are_checked_with_server_ready_and_balanced_per_request() {
    let (demos, gw) = start(2).await;
    // Both replicas take requests (per request, not per connection: one
    // client connection, many requests).
    for _ in 0..40 {
        let got = post_json(gw.data_addr, "/v2/models/simple/infer", SIMPLE).await;
        assert_eq!(got.status, 200);
    }
    let text = common::scrape_text(&gw).await;
    for d in &demos {
        let series = format!(
            "tensorgate_replica_requests_total{{backend=\"b\",replica=\"grpc://{}\"}}",
            d.addr
        );
        let n = common::metric(&text, &series).unwrap_or(0.0);
        assert!(n >= 5.0, "{series} = {n}\n{text}");
    }
    // A replica that stops answering is found by the checks and left out.
    let addr = demos[1].addr;
    drop(demos);
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let text = common::scrape_text(&gw).await;
    let state = format!(
        "tensorgate_replica_state{{backend=\"b\",replica=\"grpc://{addr}\",state=\"healthy\"}}"
    );
    assert_eq!(common::metric(&text, &state), Some(0.0), "{text}");
}

#[tokio::test]
async fn a_grpc_replica_s_metrics_url_is_read_over_http1() {
    // Triton's metrics port speaks HTTP/1.1 only, whatever its inference
    // ports speak: the test backend's server is HTTP/1.1 only too.
    let page = "# TYPE nv_inference_pending_request_count gauge\n\
        nv_inference_pending_request_count{model=\"simple\",version=\"1\"} 3\n";
    let metrics = common::TestBackend::start(move |_| async move {
        common::reply(200, &[("content-type", "text/plain")], page)
    })
    .await;
    let demo = demo::spawn_grpc(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let toml = format!(
        r#"
[backends.b]
url = "grpc://{demo}"
metrics_url = "http://{metrics}/metrics"
metrics_interval = "100ms"
metrics_timeout = "100ms"
[[routes]]
name = "r"
default = true
backend = "b"
"#,
        demo = demo.addr,
        metrics = metrics.addr
    );
    let gw = gateway(&toml).await;
    let replica = format!("backend=\"b\",replica=\"grpc://{}\"", demo.addr);
    let ok = format!("tensorgate_replica_metrics_scrapes_total{{{replica},result=\"ok\"}}");
    let failed = format!("tensorgate_replica_metrics_scrapes_total{{{replica},result=\"failed\"}}");
    let pending = format!("tensorgate_replica_queue_pending{{{replica}}}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let text = loop {
        let text = common::scrape_text(&gw).await;
        if common::metric(&text, &ok).unwrap_or(0.0) >= 3.0 || std::time::Instant::now() > deadline
        {
            break text;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(&replica)).collect();
    assert!(
        common::metric(&text, &ok).unwrap_or(0.0) >= 3.0,
        "{}",
        lines.join("\n")
    );
    assert_eq!(
        common::metric(&text, &failed),
        Some(0.0),
        "{}",
        lines.join("\n")
    );
    assert_eq!(common::metric(&text, &pending), Some(3.0));
    let seen = metrics.requests();
    assert!(
        seen.iter().all(|s| s.path == "/metrics"),
        "{:?}",
        seen.len()
    );
    // Inference still goes to the gRPC port.
    let got = post_json(gw.data_addr, "/v2/models/simple/infer", SIMPLE).await;
    assert_eq!(got.status, 200, "{:?}", got.body);
}
