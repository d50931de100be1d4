//! Rate limits per route and per key: the rate over 10 seconds (within
//! 10%), the burst, `Retry-After`, per-key buckets independent of each
//! other, tensor elements charged once the request is read, and the
//! refusal in each frontend's shape (V2 and SageMaker container paths 429
//! `{"error"}`, the Runtime API path 400 `ThrottlingException`, Decthings
//! `too_many_requests` with HTTP 200).

mod common;
#[path = "common/decthings.rs"]
mod dc;

use std::time::{Duration, Instant};

use common::*;
use dc::{arr, client_for, evaluate, param};
use decthings_api::client::DecthingsRpcError;
use decthings_api::client::rpc::model::EvaluateError;
use decthings_api::tensor::DecthingsTensor;
use serde_json::json;
use tensorgate_demo as demo;

async fn ok_backend() -> TestBackend {
    TestBackend::start(|_| async { reply(200, &[], "{}") }).await
}

async fn get(gw: &tensorgate::server::Running, headers: &[(&str, &str)]) -> Got {
    send(gw.data_addr, "GET", "/v2/health/ready", headers, "").await
}

/// Requests paced at twice the limit for 10 s: what passes is the burst
/// plus the rate times the time, within 10%. Modest rates keep the test
/// off the CPU of a loaded machine.
#[tokio::test]
async fn the_rate_holds_over_ten_seconds() {
    const RATE: f64 = 50.0;
    const BURST: u64 = 5;
    let backend = ok_backend().await;
    let gw = gateway(&simple_config(
        &backend.url(),
        &format!("[routes.rate_limit]\nrequests_per_second = {RATE}\nburst = {BURST}\n"),
    ))
    .await;
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    let started = Instant::now();
    let (mut passed, mut refused) = (0u64, 0u64);
    while started.elapsed() < Duration::from_secs(10) {
        tick.tick().await;
        match get(&gw, &[]).await.status.as_u16() {
            200 => passed += 1,
            429 => refused += 1,
            other => panic!("status {other}"),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let rate = (passed - BURST) as f64 / elapsed;
    eprintln!(
        "rate limit {RATE}/s burst {BURST}: {passed} passed, {refused} refused in {elapsed:.2}s: {rate:.2}/s"
    );
    assert!((rate - RATE).abs() <= RATE * 0.1, "measured {rate:.2}/s");
    assert!(refused > 0);
    let text = scrape_text(&gw).await;
    assert_eq!(
        metric(
            &text,
            r#"tensorgate_rate_limited_total{key="_none",limit="requests",route="r"}"#
        ),
        Some(refused as f64)
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn the_burst_passes_at_once_then_retry_after_says_when() {
    let backend = ok_backend().await;
    let gw = gateway(&simple_config(
        &backend.url(),
        "[routes.rate_limit]\nrequests_per_second = 0.5\nburst = 3\n",
    ))
    .await;
    for i in 0..3 {
        assert_eq!(get(&gw, &[]).await.status, 200, "request {i}");
    }
    let got = get(&gw, &[]).await;
    assert_eq!(got.status, 429);
    assert_eq!(got.header("retry-after"), Some("2"));
    let message = got.error();
    assert!(
        message.starts_with(
            "route \"r\": over the route's limit of 0.5 requests per second (burst 3); retry in 1.9"
        ),
        "{message}"
    );
    assert_eq!(backend.requests().len(), 3, "refused before the backend");
    gw.shutdown().await;
}

const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789ab";

#[tokio::test]
async fn each_key_has_its_own_bucket() {
    let backend = ok_backend().await;
    let keys = keys_file(&format!("alice:{ALICE}\nbob:{BOB}\n"));
    let gw = gateway(&simple_config(
        &backend.url(),
        &format!(
            "[routes.auth]\nkeys_file = \"{}\"\n[routes.rate_limit.per_key]\nrequests_per_second = 0.5\nburst = 2\n",
            keys.display()
        ),
    ))
    .await;
    let alice = [("x-api-key", ALICE)];
    let bob = [("x-api-key", BOB)];
    assert_eq!(get(&gw, &alice).await.status, 200);
    assert_eq!(get(&gw, &alice).await.status, 200);
    let got = get(&gw, &alice).await;
    assert_eq!(got.status, 429);
    assert!(
        got.error().contains("over key \"alice\"'s limit"),
        "{}",
        got.error()
    );
    // Alice's bucket is empty; Bob's is full.
    assert_eq!(get(&gw, &bob).await.status, 200);
    assert_eq!(get(&gw, &bob).await.status, 200);
    assert_eq!(get(&gw, &bob).await.status, 429);
    let text = scrape_text(&gw).await;
    for key in ["alice", "bob"] {
        let series =
            format!(r#"tensorgate_rate_limited_total{{key="{key}",limit="requests",route="r"}}"#);
        assert_eq!(metric(&text, &series), Some(1.0), "{series}");
    }
    gw.shutdown().await;
}

fn simple_body(rows: usize) -> String {
    let data: Vec<i32> = (0..rows * 16).map(|i| i as i32).collect();
    json!({"inputs": [
        {"name": "INPUT0", "shape": [rows, 16], "datatype": "INT32", "data": data},
        {"name": "INPUT1", "shape": [rows, 16], "datatype": "INT32", "data": data},
    ]})
    .to_string()
}

/// `simple`'s inputs: 32 elements a row. 32 elements a second, 64 at once.
#[tokio::test]
async fn elements_are_charged_once_the_request_is_read() {
    let backend = demo::spawn().await.unwrap();
    let gw = gateway(&simple_config(
        &backend.url(),
        "[routes.rate_limit]\nelements_per_second = 32\nelements_burst = 64\n",
    ))
    .await;
    let addr = gw.data_addr;
    let infer =
        |rows| async move { post_json(addr, "/v2/models/simple/infer", &simple_body(rows)).await };
    assert_eq!(infer(1).await.status, 200);
    assert_eq!(infer(1).await.status, 200);
    let got = infer(1).await;
    assert_eq!(got.status, 429);
    assert_eq!(got.header("retry-after"), Some("1"));
    assert!(
        got.error()
            .contains("over the route's limit of 32 tensor elements per second")
    );
    let got = infer(4).await;
    assert_eq!(got.status, 413);
    assert_eq!(
        got.error(),
        "route \"r\": the request carries 128 tensor elements, more than the route's burst of 64: it can never pass; send fewer at once"
    );
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(infer(2).await.status, 200, "64 elements after two seconds");
    let text = scrape_text(&gw).await;
    assert_eq!(
        metric(
            &text,
            r#"tensorgate_rate_limited_total{key="_none",limit="elements",route="r"}"#
        ),
        Some(2.0)
    );
    gw.shutdown().await;
}

/// One request a minute after the first: the second is refused.
const ONE_A_MINUTE: &str = "[routes.rate_limit]\nrequests_per_second = 0.0166\nburst = 1\n";

#[tokio::test]
async fn sagemaker_refusals_take_each_paths_shape() {
    let backend = demo::spawn().await.unwrap();
    let gw = gateway(&simple_config(&backend.url(), ONE_A_MINUTE)).await;
    let csv = [("content-type", "text/csv"), ("accept", "application/json")];
    let path = "/endpoints/rowsum/invocations";
    assert_eq!(
        send(gw.data_addr, "POST", path, &csv, "1,2\n").await.status,
        200
    );
    let got = send(gw.data_addr, "POST", path, &csv, "1,2\n").await;
    assert_eq!(got.status, 400);
    assert_eq!(
        got.header("x-amzn-errortype"),
        Some("ThrottlingException:http://internal.amazon.com/coral/com.amazon.sagemaker/")
    );
    assert!(
        got.json()["message"]
            .as_str()
            .unwrap()
            .contains("over the route's limit")
    );
    let retry: u64 = got.header("retry-after").unwrap().parse().unwrap();
    assert!((59..=61).contains(&retry), "{retry}");
    let got = send(gw.data_addr, "POST", "/models/rowsum/invoke", &csv, "1,2\n").await;
    assert_eq!(got.status, 429);
    assert!(got.error().contains("over the route's limit"));
    assert!(got.header("retry-after").is_some());
    gw.shutdown().await;
}

#[tokio::test]
async fn decthings_refusals_are_too_many_requests_and_quota_exceeded() {
    let backend = demo::spawn().await.unwrap();
    let limits = "[routes.rate_limit]\nrequests_per_second = 0.0166\nburst = 1\nelements_per_second = 1000\nelements_burst = 64\n";
    let gw = gateway(&simple_config(&backend.url(), limits)).await;
    let client = client_for(gw.data_addr);
    let call = |rows: usize| {
        let data: Vec<i32> = (0..rows * 16).map(|i| i as i32).collect();
        let t = move || DecthingsTensor::I32(arr(&[rows, 16], data.clone()));
        let params = vec![param("INPUT0", vec![t()]), param("INPUT1", vec![t()])];
        evaluate(&client, "simple", params)
    };
    let over_burst = call(4).await;
    assert!(
        matches!(
            over_burst,
            Err(DecthingsRpcError::Rpc(EvaluateError::QuotaExceeded))
        ),
        "{over_burst:?}"
    );
    // The request token went to the refused call: the next is over the rate.
    let again = call(1).await;
    assert!(
        matches!(
            again,
            Err(DecthingsRpcError::Rpc(EvaluateError::TooManyRequests))
        ),
        "{again:?}"
    );
    gw.shutdown().await;
}
