//! What a gRPC message may cost the gateway and where it may go: a
//! message of empty repeated entries (2 bytes on the wire, a struct of
//! hundreds in memory) refused on its wire form before it is decoded,
//! from a client and from a backend; the bound route's body limit held
//! for every message; every message of a stream bound to the route its
//! model names, with that route's keys, rate limits and access-log line;
//! statistics answered only for the caller's route's models.
//!
//! A test binary of its own, not a module of `tests/it`: two tests assert
//! that this process's peak resident memory (`VmHWM`) grew by less than
//! 200 MiB, and a peak raised by any test running beside them would stay
//! raised.

#[path = "it/common/mod.rs"]
mod common;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use common::access_log;
use common::{TestBackend, gateway, i32s, keys_file, metric, reply, scrape_text};
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message;
use tensorgate::codec::grpc::frame;
use tensorgate::codec::grpc::proto::inference::model_infer_request::InferInputTensor;
use tensorgate::codec::grpc::proto::inference::*;
use tensorgate_demo as demo;
use tensorgate_demo::grpc::inference::grpc_inference_service_client::GrpcInferenceServiceClient;
use tonic::transport::Channel;

type Client = GrpcInferenceServiceClient<Channel>;

const PROMPT: Duration = Duration::from_secs(10);
const KEY: &str = "0123456789abcdef0123";

fn simple(model: &str) -> ModelInferRequest {
    let input = |name: &str| InferInputTensor {
        name: name.into(),
        datatype: "INT32".into(),
        shape: vec![1, 16],
        ..Default::default()
    };
    ModelInferRequest {
        model_name: model.into(),
        inputs: vec![input("INPUT0"), input("INPUT1")],
        raw_input_contents: vec![i32s(&[1; 16]), i32s(&[2; 16])],
        ..Default::default()
    }
}

/// `identity` of the demo: one INT32 input, echoed.
fn identity() -> ModelInferRequest {
    ModelInferRequest {
        model_name: "identity".into(),
        inputs: vec![InferInputTensor {
            name: "INPUT0".into(),
            datatype: "INT32".into(),
            shape: vec![4],
            ..Default::default()
        }],
        raw_input_contents: vec![i32s(&[1, 2, 3, 4])],
        ..Default::default()
    }
}

/// A `ModelInferRequest` for `model` followed by `entries` empty `inputs`
/// entries (field 5, length 0: `0x2a 0x00`).
fn empty_inputs(model: &str, entries: usize) -> Vec<u8> {
    let mut m = ModelInferRequest {
        model_name: model.into(),
        ..Default::default()
    }
    .encode_to_vec();
    m.reserve(entries * 2);
    for _ in 0..entries {
        m.extend_from_slice(&[0x2a, 0x00]);
    }
    m
}

/// The process's peak resident memory, in MiB.
fn peak_rss_mib() -> u64 {
    common::procs::status_kib(None, "VmHWM").unwrap() / 1024
}

/// One call sent as it is over HTTP/2 (a tonic client would not send
/// hostile bytes): its `grpc-status` and `grpc-message`; for a stream
/// whose status is OK, its first message's `error_message` instead.
async fn raw_call(addr: SocketAddr, method: &str, message: Vec<u8>) -> (String, String) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut h2, conn) = hyper::client::conn::http2::handshake::<_, _, Full<Bytes>>(
        TokioExecutor::new(),
        TokioIo::new(stream),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    let body = frame::encode(vec![Bytes::from(message)]).unwrap().concat();
    let req = Request::post(format!(
        "http://{addr}/inference.GRPCInferenceService/{method}"
    ))
    .header("content-type", "application/grpc")
    .header("te", "trailers")
    .body(Full::new(Bytes::from(body)))
    .unwrap();
    let resp = tokio::time::timeout(PROMPT, h2.send_request(req))
        .await
        .expect("no answer in time")
        .unwrap();
    let (head, body) = resp.into_parts();
    let collected = tokio::time::timeout(PROMPT, body.collect())
        .await
        .expect("the answer did not end")
        .unwrap();
    let trailers = collected.trailers().cloned().unwrap_or_default();
    let data = collected.to_bytes();
    let at = if trailers.contains_key("grpc-status") {
        &trailers
    } else {
        &head.headers
    };
    let get = |n: &str| {
        at.get(n)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default()
    };
    let (code, message) = (get("grpc-status"), get("grpc-message"));
    if method == "ModelStreamInfer" && code == "0" && data.len() > 5 {
        let m = ModelStreamInferResponse::decode(&data[5..]).unwrap();
        return ("stream".into(), m.error_message);
    }
    (code, message)
}

async fn client(addr: SocketAddr) -> Client {
    Client::connect(format!("http://{addr}"))
        .await
        .unwrap()
        .max_decoding_message_size(64 << 20)
        .max_encoding_message_size(64 << 20)
}

/// Finding 1: one 4 MiB `ModelInfer` of empty `inputs` entries took the
/// gateway from 27 to 1,173 MiB (a 16 MiB one aborted it). Refused on its
/// wire form now, unary and as a stream's first message, with the peak
/// memory of the whole process still small.
#[tokio::test]
async fn a_message_of_empty_entries_is_refused_before_it_is_decoded() {
    let demo = demo::spawn().await.unwrap();
    let gw = gateway(&common::simple_config(&format!("http://{}", demo.addr), "")).await;
    let before = peak_rss_mib();
    // A stream answers a refused request with an error message and goes
    // on, as Triton does; a unary call with RESOURCE_EXHAUSTED.
    for (method, refused) in [("ModelInfer", "8"), ("ModelStreamInfer", "stream")] {
        // 2 Mi entries: past the 65,536 values a message may hold outside
        // tensor data (the count refuses it first).
        let (code, message) = raw_call(gw.data_addr, method, empty_inputs("simple", 2 << 20)).await;
        assert_eq!(code, refused, "{method}: {message}");
        assert!(
            message.contains("ModelInferRequest holds more than 65536 entries"),
            "{method}: {message}"
        );
        // 60,000 entries (120 KB): within the count, but it would decode
        // into 18 MB, more than 16 times its size.
        let (code, message) = raw_call(gw.data_addr, method, empty_inputs("simple", 60_000)).await;
        assert_eq!(code, refused, "{method}: {message}");
        assert!(message.contains("would take about"), "{method}: {message}");
    }
    let grown = peak_rss_mib().saturating_sub(before);
    eprintln!("peak RSS: {before} MiB before, grew by {grown} MiB");
    assert!(grown < 200, "peak RSS grew by {grown} MiB");
    // Nothing reached the backend, and the gateway still serves.
    let mut c = client(gw.data_addr).await;
    let r = c.model_infer(simple("simple")).await.unwrap().into_inner();
    assert_eq!(r.raw_output_contents[0], i32s(&[3; 16]));
}

/// A scripted gRPC backend answering every `ModelInfer` with `reply`.
async fn grpc_backend(reply_message: Vec<u8>) -> SocketAddr {
    let reply_message = Bytes::from(reply_message);
    scripted_grpc_backend(move |_| Ok(reply_message.clone())).await
}

/// A scripted gRPC backend: ready, and answering every other call with
/// what `answer` says of its request message (a message, or a status
/// code and its message).
async fn scripted_grpc_backend<F>(answer: F) -> SocketAddr
where
    F: Fn(Bytes) -> Result<Bytes, (u8, &'static str)> + Clone + Send + Sync + 'static,
{
    use tensorgate::frontend::grpc::status;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<Incoming>| {
                    let answer = answer.clone();
                    async move {
                        let method = req.uri().path().rsplit('/').next().unwrap().to_owned();
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        let message = match method.as_str() {
                            "ServerReady" => {
                                Ok(ServerReadyResponse { ready: true }.encode_to_vec().into())
                            }
                            "ModelReady" => {
                                Ok(ModelReadyResponse { ready: true }.encode_to_vec().into())
                            }
                            _ => answer(body.slice(5.min(body.len())..)),
                        };
                        let resp = match message {
                            Ok(m) => status::reply(frame::encode(vec![m]).unwrap()),
                            Err((code, text)) => {
                                status::status_only(status::Code::from_u8(code).unwrap(), text)
                            }
                        };
                        Ok::<_, std::convert::Infallible>(resp)
                    }
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

/// Finding 1, the backend's side: 4 MiB of empty `outputs` took the
/// gateway from 28 to 1,222 MiB. Refused before it is decoded: 502 to a
/// V2 client, INTERNAL to a gRPC client.
#[tokio::test]
async fn a_backends_reply_of_empty_entries_is_refused_before_it_is_decoded() {
    let mut reply_message = ModelInferResponse {
        model_name: "simple".into(),
        ..Default::default()
    }
    .encode_to_vec();
    for _ in 0..(2 << 20) {
        reply_message.extend_from_slice(&[0x2a, 0x00]);
    }
    let backend = grpc_backend(reply_message).await;
    let gw = gateway(&common::simple_config(
        &format!("grpc://{backend}"),
        "[routes.limits]\nmax_response_bytes = 16777216\n",
    ))
    .await;
    let before = peak_rss_mib();
    let body = r#"{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}"#;
    let got = common::post_json(gw.data_addr, "/v2/models/simple/infer", body).await;
    assert_eq!(got.status, 502, "{:?}", got.body);
    assert!(got.error().contains("ModelInferResponse"), "{:?}", got.body);
    let mut c = client(gw.data_addr).await;
    let e = c.model_infer(simple("simple")).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::Internal, "{e:?}");
    let grown = peak_rss_mib().saturating_sub(before);
    eprintln!("peak RSS: {before} MiB before, grew by {grown} MiB");
    assert!(grown < 200, "peak RSS grew by {grown} MiB");
}

/// Two routes: `small` (model `simple`, 1 KiB bodies) and the default
/// route `big`, keyless; `keyed` serves `repeat` with a key and 2/s.
fn two_routes(backend: &str, keys: &std::path::Path) -> String {
    format!(
        r#"
[server]
shutdown_grace = "2s"
[backends.b]
url = "{backend}"
request_timeout = "5s"
[[routes]]
name = "big"
default = true
backend = "b"
[[routes]]
name = "small"
models = ["simple"]
backend = "b"
[routes.limits]
max_body_bytes = 1024
[[routes]]
name = "keyed"
models = ["rowsum"]
backend = "b"
[routes.auth]
keys_file = "{}"
[routes.rate_limit]
requests_per_second = 2
burst = 2
"#,
        keys.display()
    )
}

/// Finding 5: a route's `max_body_bytes` holds for a gRPC message named
/// in its body (read under the largest limit of the routes it could be
/// for), unary and on a stream.
#[tokio::test]
async fn the_bound_routes_body_limit_holds_for_grpc_messages() {
    let demo = demo::spawn().await.unwrap();
    let keys = keys_file(&format!("alice:{KEY}\n"));
    let gw = gateway(&two_routes(&format!("http://{}", demo.addr), &keys)).await;
    let mut big = simple("simple");
    big.id = "x".repeat(2000);
    let mut c = client(gw.data_addr).await;
    let e = c.model_infer(big.clone()).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e:?}");
    assert!(
        e.message().contains("limit of 1024 bytes"),
        "{}",
        e.message()
    );
    // Within it, served.
    c.model_infer(simple("simple")).await.unwrap();
    // A stream: the message over its route's limit is refused; the rest
    // of the stream is served.
    let mut replies = c
        .model_stream_infer(tokio_stream::iter(vec![identity(), big, simple("simple")]))
        .await
        .unwrap()
        .into_inner();
    let first = replies.message().await.unwrap().unwrap();
    assert_eq!(first.error_message, "");
    let second = replies.message().await.unwrap().unwrap();
    assert!(
        second.error_message.contains("limit of 1024 bytes"),
        "{second:?}"
    );
    let third = replies.message().await.unwrap().unwrap();
    assert_eq!(third.error_message, "");
    assert!(replies.message().await.unwrap().is_none());
}

/// `rowsum` of the demo: one FP32 [1, 4] input.
fn rowsum() -> ModelInferRequest {
    ModelInferRequest {
        model_name: "rowsum".into(),
        inputs: vec![InferInputTensor {
            name: "INPUT0".into(),
            datatype: "FP32".into(),
            shape: vec![1, 4],
            ..Default::default()
        }],
        raw_input_contents: vec![
            [1f32, 2., 3., 4.]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        ],
        ..Default::default()
    }
}

/// A stream's replies: (answered, error messages).
async fn drain(
    c: &mut Client,
    requests: Vec<ModelInferRequest>,
    key: Option<&str>,
    request_id: &str,
) -> (usize, Vec<String>) {
    let mut req = tonic::Request::new(tokio_stream::iter(requests));
    req.metadata_mut()
        .insert("x-request-id", request_id.parse().unwrap());
    if let Some(k) = key {
        req.metadata_mut()
            .insert("authorization", format!("Bearer {k}").parse().unwrap());
    }
    let mut replies = c.model_stream_infer(req).await.unwrap().into_inner();
    let (mut answered, mut errors) = (0, Vec::new());
    while let Some(m) = tokio::time::timeout(PROMPT, replies.message())
        .await
        .expect("the stream stalled")
        .unwrap()
    {
        if m.error_message.is_empty() {
            answered += 1;
        } else {
            errors.push(m.error_message);
        }
    }
    (answered, errors)
}

/// Findings 2 and 3: a stream opened on the keyless default route named
/// a keyed route's model afterwards and was answered 50 of 50 times
/// without a key, and a stream was charged one token for 2,000 messages.
/// Every message now goes through its own route's keys and rate limit,
/// with an access-log line of its own; to an HTTP and a gRPC backend.
#[tokio::test]
async fn every_stream_message_takes_its_routes_keys_and_tokens() {
    access_log::start();
    let keys = keys_file(&format!("alice:{KEY}\n"));
    let http_demo = demo::spawn().await.unwrap();
    let grpc_demo = demo::spawn_grpc(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    for (backend, tag) in [
        (format!("http://{}", http_demo.addr), "http"),
        (format!("grpc://{}", grpc_demo.addr), "grpc"),
    ] {
        let gw = gateway(&two_routes(&backend, &keys)).await;
        let mut c = client(gw.data_addr).await;
        // No key: the first message's route needs none; 50 for the keyed
        // route's model are refused, each.
        let mut requests = vec![identity()];
        requests.extend((0..50).map(|_| rowsum()));
        requests.push(identity());
        let id = format!("nokey-{tag}");
        let (answered, errors) = drain(&mut c, requests, None, &id).await;
        assert_eq!(answered, 2, "{tag}: {errors:?}");
        assert_eq!(errors.len(), 50, "{tag}");
        assert!(
            errors
                .iter()
                .all(|e| e.contains("route \"keyed\": no API key")),
            "{tag}: {errors:?}"
        );
        // Each message has its own access-log line, under its own route.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let second = access_log::line(&format!("{id}.2"));
        assert_eq!(second["model"], "rowsum", "{second}");
        assert_eq!(second["route"], "keyed", "{second}");
        assert_eq!(second["status"], 401, "{second}");
        let first = access_log::line(&format!("{id}.1"));
        assert_eq!(first["route"], "big", "{first}");
        assert_eq!(first["status"], 200, "{first}");

        // With the key, a stream on the keyed route: 2/s, burst 2. Of 200
        // messages sent at once, the burst (and what refills meanwhile).
        let before = scrape_text(&gw).await;
        let requests: Vec<_> = (0..200).map(|_| rowsum()).collect();
        let (answered, errors) = drain(&mut c, requests, Some(KEY), &format!("key-{tag}")).await;
        assert!((2..=4).contains(&answered), "{tag}: {answered} answered");
        assert_eq!(answered + errors.len(), 200);
        assert!(
            errors
                .iter()
                .all(|e| e.contains("limit of 2 requests per second")),
            "{tag}: {:?}",
            &errors[..3]
        );
        let after = scrape_text(&gw).await;
        let limited =
            r#"tensorgate_rate_limited_total{key="alice",limit="requests",route="keyed"}"#;
        let refused =
            metric(&after, limited).unwrap_or(0.0) - metric(&before, limited).unwrap_or(0.0);
        assert_eq!(refused as usize, errors.len(), "{tag}");
        // Each message counted as a request of the keyed route.
        let counted = |text: &str| -> f64 {
            text.lines()
                .filter(|l| {
                    l.starts_with("tensorgate_requests_total{") && l.contains(r#"route="keyed""#)
                })
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum()
        };
        let requests = counted(&after) - counted(&before);
        assert!(requests >= 200.0, "{tag}: {requests} requests counted");
    }
}

/// A backend's statistics for every model: `simple` (route `small`),
/// `rowsum` (route `keyed`) and `identity` (the default route's).
async fn stats_backend() -> TestBackend {
    TestBackend::start(|seen| async move {
        match seen.path.as_str() {
            "/v2/models/stats" => reply(
                200,
                &[("content-type", "application/json")],
                r#"{"model_stats":[{"name":"simple","version":"1","inference_count":3},{"name":"rowsum","version":"1","inference_count":5},{"name":"identity","version":"1","inference_count":7}]}"#,
            ),
            "/v2/health/ready" => reply(200, &[], ""),
            _ => reply(404, &[], r#"{"error":"no"}"#),
        }
    })
    .await
}

/// Finding 12: statistics asked for without a model name, on a keyless
/// default route, answered for every route's models (the keyed route's
/// too). Only the default route's own models now, over HTTP and gRPC.
#[tokio::test]
async fn statistics_without_a_model_answer_for_the_routes_own_models() {
    let backend = stats_backend().await;
    let keys = keys_file(&format!("alice:{KEY}\n"));
    let gw = gateway(&two_routes(&backend.url(), &keys)).await;
    let got = common::send(gw.data_addr, "GET", "/v2/models/stats", &[], "").await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    let doc = got.json();
    let names: Vec<&str> = doc["model_stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["identity"]);
    let mut c = client(gw.data_addr).await;
    let stats = c
        .model_statistics(ModelStatisticsRequest::default())
        .await
        .unwrap()
        .into_inner();
    let names: Vec<&str> = stats.model_stats.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["identity"]);
    assert_eq!(stats.model_stats[0].inference_count, 7);
}

/// Finding 10: one address held 12,800 health `Watch` streams beside
/// `max_requests_per_client = 64`, each counted in
/// `tensorgate_in_flight_requests{route="_none"}` (what autoscaling reads).
/// A client may hold 16 now, and none counts as a request in flight.
#[tokio::test]
async fn health_watches_are_bounded_per_client_and_not_in_flight() {
    use tensorgate::codec::grpc::proto::health::HealthCheckRequest;
    use tensorgate_demo::grpc::health::health_client::HealthClient;
    let demo = demo::spawn().await.unwrap();
    let gw = gateway(&common::server_config(
        &format!("http://{}", demo.addr),
        "max_requests_per_client = 64\n",
    ))
    .await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", gw.data_addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut held = Vec::new();
    for i in 0..16usize {
        let mut health = HealthClient::new(channel.clone());
        let mut watch = health
            .watch(HealthCheckRequest::default())
            .await
            .unwrap_or_else(|e| panic!("watch {i}: {e:?}"))
            .into_inner();
        let first = tokio::time::timeout(PROMPT, watch.message())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(first.status, 1, "SERVING");
        held.push(watch);
    }
    let mut health = HealthClient::new(channel.clone());
    let refused = match health.watch(HealthCheckRequest::default()).await {
        Ok(resp) => resp.into_inner().message().await.unwrap_err(),
        Err(e) => e,
    };
    assert_eq!(refused.code(), tonic::Code::Unavailable, "{refused:?}");
    assert!(
        refused.message().contains("16 health watches open"),
        "{}",
        refused.message()
    );
    let text = scrape_text(&gw).await;
    let in_flight = text
        .lines()
        .filter(|l| l.starts_with("tensorgate_in_flight_requests{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>();
    assert_eq!(in_flight, 0.0, "watches counted in flight");
    // A check still answers, and a watch given up makes room for another.
    let r = health.check(HealthCheckRequest::default()).await.unwrap();
    assert_eq!(r.into_inner().status, 1);
    drop(held.pop());
    let again = tokio::time::timeout(PROMPT, async {
        loop {
            if let Ok(resp) = health.watch(HealthCheckRequest::default()).await {
                let mut w = resp.into_inner();
                if let Ok(Some(m)) = w.message().await {
                    break (m, w);
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the freed place was not given back");
    assert_eq!(again.0.status, 1);
}

/// Issue 37's first bug: a gRPC backend's refusal was carried as the HTTP
/// status its code stands for, so a gRPC client got another code
/// (FAILED_PRECONDITION and OUT_OF_RANGE became INVALID_ARGUMENT, CANCELLED
/// UNKNOWN, ALREADY_EXISTS ABORTED). A refusal keeps its origin now: the
/// backend's code reaches a gRPC client unchanged, and a V2 client gets
/// the status it stands for.
#[tokio::test]
async fn a_grpc_backends_refusal_reaches_a_grpc_client_with_its_own_code() {
    use tensorgate::codec::grpc::status::Code;
    for (code, name) in [
        (9u8, tonic::Code::FailedPrecondition),
        (11, tonic::Code::OutOfRange),
        (6, tonic::Code::AlreadyExists),
        (1, tonic::Code::Cancelled),
    ] {
        let backend = scripted_grpc_backend(move |_| Err((code, "the model says no"))).await;
        let gw = gateway(&common::simple_config(&format!("grpc://{backend}"), "")).await;
        let mut c = client(gw.data_addr).await;
        let e = c.model_infer(simple("simple")).await.unwrap_err();
        assert_eq!(e.code(), name, "{e:?}");
        assert!(e.message().contains("the model says no"), "{}", e.message());
        // A V2 client: the status the code stands for, with the message.
        let body = r#"{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}"#;
        let got = common::post_json(gw.data_addr, "/v2/models/simple/infer", body).await;
        let expected = Code::from_u8(code).unwrap().http();
        assert_eq!(got.status.as_u16(), expected, "{:?}", got.body);
        assert_eq!(got.error(), "the model says no");
    }
}
