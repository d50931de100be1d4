//! `grpc-timeout`: a gRPC client's deadline is honoured by the gateway
//! (DEADLINE_EXCEEDED once it runs out, whatever the backend's own request
//! timeout) and passed on to a gRPC backend as the time left; a client's
//! short deadline does not count against the backend. A malformed value
//! is INVALID_ARGUMENT.

mod common;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{TestBackend, gateway, reply, send, simple_config};
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message;
use tensorgate::codec::grpc::frame;
use tensorgate::codec::grpc::proto::inference::*;
use tensorgate_demo::grpc::inference::grpc_inference_service_client::GrpcInferenceServiceClient;
use tokio::net::TcpListener;
use tonic::Code;
use tonic::transport::Channel;

type Client = GrpcInferenceServiceClient<Channel>;

/// What the slow backend saw: each call's method and `grpc-timeout`.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A gRPC backend answering readiness at once and `ModelInfer` after
/// `delay`.
async fn slow_grpc_backend(delay: Duration) -> (std::net::SocketAddr, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let seen2 = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = seen2.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<Incoming>| {
                    let seen = seen.clone();
                    async move {
                        let method = req.uri().path().rsplit('/').next().unwrap().to_owned();
                        let timeout = req
                            .headers()
                            .get("grpc-timeout")
                            .map(|v| v.to_str().unwrap().to_owned());
                        seen.lock().unwrap().push((method.clone(), timeout));
                        let _ = req.into_body().collect().await;
                        let message = match method.as_str() {
                            "ServerReady" => ServerReadyResponse { ready: true }.encode_to_vec(),
                            "ModelReady" => ModelReadyResponse { ready: true }.encode_to_vec(),
                            _ => {
                                tokio::time::sleep(delay).await;
                                ModelInferResponse {
                                    model_name: "simple".into(),
                                    ..Default::default()
                                }
                                .encode_to_vec()
                            }
                        };
                        Ok::<_, Infallible>(grpc_reply(message))
                    }
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (addr, seen)
}

/// One message and the OK trailers.
fn grpc_reply(message: Vec<u8>) -> Response<tensorgate::http::body::Body> {
    let framed: Vec<Bytes> = frame::encode(vec![Bytes::from(message)]).unwrap();
    tensorgate::frontend::grpc::status::reply(framed)
}

fn infer_request() -> tonic::Request<ModelInferRequest> {
    let raw: Vec<u8> = (0..16i32).flat_map(i32::to_le_bytes).collect();
    let input = |name: &str| model_infer_request::InferInputTensor {
        name: name.into(),
        datatype: "INT32".into(),
        shape: vec![1, 16],
        ..Default::default()
    };
    tonic::Request::new(ModelInferRequest {
        model_name: "simple".into(),
        inputs: vec![input("INPUT0"), input("INPUT1")],
        raw_input_contents: vec![raw.clone().into(), raw.into()],
        ..Default::default()
    })
}

/// A call sent as it is (tonic would enforce the deadline itself, and a
/// test must see the gateway's): its `grpc-status` and `grpc-message`,
/// from the trailers or the head.
async fn raw_call(
    addr: std::net::SocketAddr,
    method: &str,
    message: Vec<u8>,
    grpc_timeout: Option<&str>,
) -> (String, String) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut h2, conn) = hyper::client::conn::http2::handshake::<_, _, Full<Bytes>>(
        TokioExecutor::new(),
        TokioIo::new(stream),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    let body = frame::encode(vec![Bytes::from(message)]).unwrap().concat();
    let mut req = Request::post(format!(
        "http://{addr}/inference.GRPCInferenceService/{method}"
    ))
    .header("content-type", "application/grpc")
    .header("te", "trailers");
    if let Some(t) = grpc_timeout {
        req = req.header("grpc-timeout", t);
    }
    let resp = h2
        .send_request(req.body(Full::new(body.into())).unwrap())
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let (head, body) = resp.into_parts();
    let trailers = body.collect().await.unwrap().trailers().cloned();
    let at = trailers
        .as_ref()
        .filter(|t| t.contains_key("grpc-status"))
        .unwrap_or(&head.headers);
    let get = |name: &str| {
        at.get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default()
    };
    (get("grpc-status"), get("grpc-message"))
}

fn infer_message() -> Vec<u8> {
    infer_request().into_inner().encode_to_vec()
}

async fn client(addr: std::net::SocketAddr) -> Client {
    Client::connect(format!("http://{addr}")).await.unwrap()
}

#[tokio::test]
async fn a_grpc_backend_is_given_the_time_left_and_the_client_its_deadline() {
    let (backend, seen) = slow_grpc_backend(Duration::from_secs(1)).await;
    let gw = gateway(&simple_config(&format!("grpc://{backend}"), "")).await;
    let started = Instant::now();
    let (code, message) = raw_call(gw.data_addr, "ModelInfer", infer_message(), Some("400m")).await;
    let took = started.elapsed();
    assert_eq!(code, "4", "{message}");
    assert!(message.contains("deadline exceeded"), "{message}");
    assert!(took >= Duration::from_millis(380), "{took:?}");
    assert!(took < Duration::from_millis(900), "{took:?}");
    let calls = seen.lock().unwrap().clone();
    let infer: Vec<_> = calls.iter().filter(|(m, _)| m == "ModelInfer").collect();
    assert_eq!(infer.len(), 1, "{calls:?}");
    let passed = infer[0].1.as_deref().expect("no grpc-timeout passed on");
    let left = tensorgate::codec::grpc::timeout::parse(passed.as_bytes()).unwrap();
    assert!(left <= Duration::from_millis(400), "{passed}");
    assert!(left >= Duration::from_millis(300), "{passed}");
    // The client's deadline is not the backend's fault: no timeout counted
    // against it, and its next call with time to spare is answered.
    let metrics = send(gw.admin_addr, "GET", "/metrics", &[], "").await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains(r#"tensorgate_upstream_errors_total{backend="b",kind="timeout"} 0"#),
        "{text}"
    );
    assert!(
        text.contains(r#"tensorgate_requests_total{code="504",kind="grpc",route="r"} 1"#),
        "{text}"
    );
    let mut c = client(gw.data_addr).await;
    let mut req = infer_request();
    req.set_timeout(Duration::from_secs(8));
    let r = c.model_infer(req).await.unwrap().into_inner();
    assert_eq!(r.model_name, "simple");
}

#[tokio::test]
async fn an_http_backend_is_cut_off_at_the_clients_deadline() {
    let backend = TestBackend::start(|_| async {
        tokio::time::sleep(Duration::from_secs(3)).await;
        reply(200, &[], "{}")
    })
    .await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    let started = Instant::now();
    let (code, message) =
        raw_call(gw.data_addr, "ModelInfer", infer_message(), Some("300000u")).await;
    assert_eq!(code, "4", "{message}");
    assert!(message.contains("deadline exceeded"), "{message}");
    assert!(started.elapsed() < Duration::from_millis(1500));
    // Without a deadline the backend's own request timeout (2 s) applies.
    let started = Instant::now();
    let e = client(gw.data_addr)
        .await
        .model_infer(infer_request())
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::DeadlineExceeded, "{e:?}");
    assert!(
        e.message().contains("did not answer within"),
        "{}",
        e.message()
    );
    assert!(started.elapsed() >= Duration::from_millis(1900));
}

#[tokio::test]
async fn a_malformed_timeout_is_invalid_argument() {
    let (backend, _) = slow_grpc_backend(Duration::ZERO).await;
    let gw = gateway(&simple_config(&format!("grpc://{backend}"), "")).await;
    for bad in ["abc", "123456789m", "10", "5x"] {
        let message = ServerReadyRequest {}.encode_to_vec();
        let (code, message) = raw_call(gw.data_addr, "ServerReady", message, Some(bad)).await;
        assert_eq!(code, "3", "{bad}: {message}");
        assert!(message.contains("malformed grpc-timeout"), "{message}");
    }
    // A good one passes.
    let message = ServerReadyRequest {}.encode_to_vec();
    let (code, message) = raw_call(gw.data_addr, "ServerReady", message, Some("1S")).await;
    assert_eq!(code, "0", "{message}");
}
