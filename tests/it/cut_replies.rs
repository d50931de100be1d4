//! No reply looks whole when it is not. A client that cannot be told of a
//! cut (HTTP/1.0: no chunked encoding, the close ends the body; or any
//! client behind nginx's default `proxy_http_version 1.0`) gets a reply
//! that is complete, with its length, or an error status — never a 200
//! whose body simply stops. A rate limit decides before any status line,
//! for every client: the SageMaker frontend charges each batch's elements
//! as it starts it, and holds the status until every batch has started.

use std::time::Duration;

use faults::{RawBackend, read_request};
use http_body_util::BodyExt;
use serde_json::json;
use tokio::io::AsyncWriteExt;

use crate::common::faults;
use crate::common::raw::{RawResponse, exchange};
use crate::common::*;

const METADATA: &str = r#"{"name":"rowsum","inputs":[{"name":"INPUT0","datatype":"FP32","shape":[-1,-1]}],"outputs":[{"name":"score","datatype":"FP32","shape":[-1]}]}"#;

/// A `rowsum` stand-in: answers each batch with zero scores, except the
/// batch whose first record's first value is `fail_at`, answered 500.
async fn batches_backend(fail_at: f32) -> TestBackend {
    TestBackend::start(move |seen| async move {
        if seen.method == "GET" {
            return reply(200, &[("content-type", "application/json")], METADATA);
        }
        let n: usize = seen.headers["inference-header-content-length"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let header: serde_json::Value = serde_json::from_slice(&seen.body[..n]).unwrap();
        let records = header["inputs"][0]["shape"][0].as_u64().unwrap() as usize;
        let first = f32::from_le_bytes(seen.body[n..n + 4].try_into().unwrap());
        if first == fail_at {
            return reply(
                500,
                &[("content-type", "application/json")],
                r#"{"error":"batch 3 failed"}"#,
            );
        }
        let out = json!({"model_name": "rowsum", "outputs": [
            {"name": "score", "datatype": "FP32", "shape": [records], "data": vec![0.0; records]}
        ]});
        reply(
            200,
            &[("content-type", "application/json")],
            out.to_string(),
        )
    })
    .await
}

fn sagemaker_config(backend: &str, extra: &str) -> String {
    format!(
        r#"
[server]
shutdown_grace = "2s"
[backends.b]
url = "{backend}"
[[routes]]
name = "r"
default = true
backend = "b"
[routes.sagemaker]
default_model = "rowsum"
batch_records = 10
max_batches_in_flight = 3
{extra}
"#
    )
}

/// Records `i,1` for `i` in `0..n`: batch 3 starts at 20.
fn csv(n: usize) -> String {
    (0..n).map(|i| format!("{i},1\n")).collect()
}

fn invocation(version: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /invocations {version}\r\nhost: x\r\ncontent-type: text/csv\r\naccept: application/jsonlines\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn raw(addr: std::net::SocketAddr, request: &[u8]) -> RawResponse {
    exchange(addr, request, Duration::from_secs(10))
        .await
        .expect("no reply")
}

/// The last batch fails at the backend after the reply has started: an
/// HTTP/1.1 client sees the chunked reply cut (no last chunk); an HTTP/1.0
/// client, which could not tell, gets the backend's error instead of a
/// 200 with two thirds of the records.
#[tokio::test]
async fn a_batch_failing_after_the_status_never_looks_whole() {
    let backend = batches_backend(20.0).await;
    let gw = gateway(&sagemaker_config(&backend.url(), "")).await;
    let body = csv(30);

    let resp = raw(gw.data_addr, &invocation("HTTP/1.1", &body)).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
    assert!(!resp.complete, "completed as if whole: {}", resp.text());

    let resp = raw(gw.data_addr, &invocation("HTTP/1.0", &body)).await;
    assert_eq!(resp.status, 500, "{}", resp.text());
    assert!(
        resp.json()["error"]
            .as_str()
            .unwrap()
            .contains("batch 3 failed"),
        "{}",
        resp.text()
    );
    gw.shutdown().await;
}

/// An HTTP/1.0 client's whole reply comes with its length.
#[tokio::test]
async fn an_http10_reply_is_whole_with_its_length() {
    let backend = batches_backend(-1.0).await;
    let gw = gateway(&sagemaker_config(&backend.url(), "")).await;
    let resp = raw(gw.data_addr, &invocation("HTTP/1.0", &csv(1000))).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.version, "HTTP/1.0");
    let len: usize = resp
        .header("content-length")
        .expect("no length")
        .parse()
        .unwrap();
    assert_eq!(len, resp.body.len());
    assert_eq!(resp.text().lines().count(), 1000);
    gw.shutdown().await;
}

/// The element rate limit runs out at the third batch: refused with 429
/// and `Retry-After` before any status line, for HTTP/1.1 and HTTP/1.0.
#[tokio::test]
async fn an_element_limit_running_out_part_way_is_429_before_the_status() {
    let backend = batches_backend(-1.0).await;
    let limits = "[routes.rate_limit]\nelements_per_second = 1\nelements_burst = 50\n";
    let gw = gateway(&sagemaker_config(&backend.url(), limits)).await;
    let body = csv(30);
    // 20 elements a batch: two pass, the third would overdraw.
    let req = http::Request::post(format!("http://{}/invocations", gw.data_addr))
        .header("content-type", "text/csv")
        .header("accept", "application/jsonlines")
        .body(http_body_util::Full::new(bytes::Bytes::from(body.clone())))
        .unwrap();
    let resp = client().request(req).await.unwrap();
    assert_eq!(resp.status(), 429);
    assert!(resp.headers().contains_key("retry-after"));
    let text = resp.into_body().collect().await.unwrap().to_bytes();
    assert!(
        String::from_utf8_lossy(&text).contains("elements"),
        "{text:?}"
    );

    let resp = raw(gw.data_addr, &invocation("HTTP/1.0", &body)).await;
    assert_eq!(resp.status, 429, "{}", resp.text());
    gw.shutdown().await;
}

/// Answers every request with `head` and `partial` body bytes, then closes.
async fn dying(head: &'static str, partial: &'static [u8]) -> RawBackend {
    RawBackend::start(move |mut s, _| async move {
        let mut buf = Vec::new();
        if let Some(Ok(_)) = read_request(&mut s, &mut buf).await {
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(partial).await;
        }
    })
    .await
}

/// A backend dying mid-reply: the HTTP/1.0 client gets 502, whether the
/// reply was being translated to JSON or passed through.
#[tokio::test]
async fn a_backend_dying_mid_reply_is_an_error_for_an_http10_client() {
    let header = r#"{"outputs":[{"name":"Y","datatype":"INT32","shape":[16384],"parameters":{"binary_data_size":65536}}]}"#;
    let head = format!(
        "HTTP/1.1 200 OK\r\ninference-header-content-length: {}\r\ncontent-length: {}\r\n\r\n{header}",
        header.len(),
        header.len() + 65536
    );
    let backend = dying(Box::leak(head.into_boxed_str()), &[1, 0, 0, 0, 2, 0, 0, 0]).await;
    let gw = gateway(&faults::config(&backend.url(), "")).await;
    let request = format!(
        "POST {} HTTP/1.0\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{}",
        faults::INFER,
        faults::INFER_BODY.len(),
        faults::INFER_BODY
    );
    let resp = raw(gw.data_addr, request.as_bytes()).await;
    assert_eq!(resp.status, 502, "{}", resp.text());
    assert_eq!(resp.json()["error"], "the reply broke off before its end");

    let backend = dying(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        b"6\r\ndata:1\r\n",
    )
    .await;
    let gw = gateway(&faults::config(&backend.url(), "")).await;
    let resp = raw(gw.data_addr, b"GET /v2/models/m/stream HTTP/1.0\r\n\r\n").await;
    assert_eq!(resp.status, 502, "{}", resp.text());
}
