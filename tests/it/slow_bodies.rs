//! Slow request bodies: a client that pauses longer than
//! `server.body_read_timeout` gets 408, and so does one that keeps sending
//! a byte now and then but has not finished within
//! `server.body_total_timeout`. Either way the backend sees nothing and
//! the request slot is freed.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::common::*;

const KEYS: &str = "body_read_timeout = \"500ms\"\nbody_total_timeout = \"1200ms\"\n\
                    max_concurrent_requests = 1\nqueue_timeout = \"300ms\"";
const BODY: &[u8] = br#"{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[1]}]}"#;

/// Posts `BODY` to an infer endpoint one byte every `every`; returns the
/// status, the error message and how long the reply took.
async fn trickle(addr: std::net::SocketAddr, every: Duration) -> (u16, String, Duration) {
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let feeder = tokio::spawn(async move {
        for b in BODY {
            if tx.send(Bytes::copy_from_slice(&[*b])).await.is_err() {
                return;
            }
            tokio::time::sleep(every).await;
        }
    });
    let client: Client<HttpConnector, ChannelBody> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let req = http::Request::post(format!("http://{addr}/v2/models/simple/infer"))
        .header("content-type", "application/json")
        .body(ChannelBody(rx))
        .unwrap();
    let started = Instant::now();
    let resp = tokio::time::timeout(Duration::from_secs(10), client.request(req))
        .await
        .expect("no reply within 10 s")
        .expect("request failed");
    let took = started.elapsed();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    feeder.abort();
    let error = serde_json::from_slice::<serde_json::Value>(&body).unwrap()["error"]
        .as_str()
        .unwrap()
        .to_owned();
    (status, error, took)
}

async fn setup() -> (TestBackend, tensorgate::server::Running) {
    let backend = TestBackend::start(|_| async { reply(200, &[], "{}") }).await;
    let gw = gateway(&server_config(&backend.url(), KEYS)).await;
    (backend, gw)
}

/// The one request slot is free: a request is served, not refused.
async fn slot_is_free(addr: std::net::SocketAddr) {
    assert_eq!(
        send(addr, "GET", "/v2/health/ready", &[], "").await.status,
        200
    );
}

#[tokio::test]
async fn a_body_trickling_past_body_total_timeout_gets_408() {
    let (backend, gw) = setup().await;
    // Each byte well within body_read_timeout; the whole body (74 bytes)
    // would take 7 s.
    let (status, error, took) = trickle(gw.data_addr, Duration::from_millis(100)).await;
    assert_eq!(status, 408);
    assert_eq!(error, "the request body did not arrive within 1.2s");
    assert!(took >= Duration::from_millis(1150), "{took:?}");
    assert!(took < Duration::from_millis(3000), "{took:?}");
    assert!(backend.requests().is_empty());
    slot_is_free(gw.data_addr).await;
}

#[tokio::test]
async fn a_body_pausing_past_body_read_timeout_gets_408() {
    let (backend, gw) = setup().await;
    let (status, error, took) = trickle(gw.data_addr, Duration::from_secs(3)).await;
    assert_eq!(status, 408);
    assert_eq!(error, "timed out waiting for the rest of the request body");
    assert!(took >= Duration::from_millis(450), "{took:?}");
    assert!(took < Duration::from_millis(1150), "{took:?}");
    assert!(backend.requests().is_empty());
    slot_is_free(gw.data_addr).await;
}

/// The total deadline holds while nothing reads the body: a SageMaker
/// request whose first batch is at a backend that does not answer is not
/// read meanwhile (its batches wait for the backend), and its client,
/// still trickling records, is answered 408 at `body_total_timeout`, not
/// when the backend gives up.
#[tokio::test]
async fn the_total_deadline_holds_while_nothing_reads_the_body() {
    let backend = TestBackend::start(|seen| async move {
        if seen.method == "GET" {
            return reply(
                200,
                &[("content-type", "application/json")],
                r#"{"name":"rowsum","inputs":[{"name":"INPUT0","datatype":"FP32","shape":[-1,-1]}],"outputs":[{"name":"score","datatype":"FP32","shape":[-1]}]}"#,
            );
        }
        tokio::time::sleep(Duration::from_secs(30)).await;
        reply(500, &[], "{}")
    })
    .await;
    let gw = gateway(&format!(
        r#"
[server]
shutdown_grace = "2s"
{KEYS}
[backends.b]
url = "{}"
request_timeout = "6s"
[[routes]]
name = "r"
default = true
backend = "b"
[routes.sagemaker]
default_model = "rowsum"
batch_records = 1
max_batches_in_flight = 1
"#,
        backend.url()
    ))
    .await;
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let feeder = tokio::spawn(async move {
        // One whole record (a batch, sent at once), then a byte every
        // 100 ms: each in time for body_read_timeout, never the end.
        let _ = tx.send(Bytes::from_static(b"1,2\n")).await;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if tx.send(Bytes::from_static(b"3")).await.is_err() {
                return;
            }
        }
    });
    let client: Client<HttpConnector, ChannelBody> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let req = http::Request::post(format!("http://{}/invocations", gw.data_addr))
        .header("content-type", "text/csv")
        .body(ChannelBody(rx))
        .unwrap();
    let started = Instant::now();
    let resp = tokio::time::timeout(Duration::from_secs(10), client.request(req))
        .await
        .expect("no reply within 10 s")
        .expect("request failed");
    let took = started.elapsed();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    feeder.abort();
    assert_eq!(status, 408, "{}", String::from_utf8_lossy(&body));
    assert!(took >= Duration::from_millis(1150), "{took:?}");
    assert!(took < Duration::from_millis(3000), "{took:?}");
    slot_is_free(gw.data_addr).await;
}
