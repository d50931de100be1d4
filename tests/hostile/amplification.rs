//! Finding 4: a 192 KB SageMaker JSON body of 3000 sparse instances with
//! `"shape": [65536]` became a 786 MB dense backend request. What sparse
//! records densify to is held, for the whole request and before any of it
//! is densified or sent, to the route's `max_elements_per_tensor` and
//! `max_body_bytes`: 413 naming the limit, nothing reaches the backend.
//! The same bound holds for JSON Lines (a stream: at most one batch's worth
//! goes before the record that crosses the bound is read).

use super::recorder;
use crate::common::{TestBackend, gateway, send};

fn sagemaker_config(backend: &TestBackend, limits: &str) -> String {
    format!(
        r#"
[server]
shutdown_grace = "2s"
[backends.b]
url = "{}"
[[routes]]
name = "r"
models = ["m"]
backend = "b"
{limits}
[routes.sagemaker]
default_model = "m"
input = "INPUT0"
datatype = "FP32"
"#,
        backend.url()
    )
}

const SPARSE: &str = r#"{"data": {"features": {"values": [1.5], "keys": [7], "shape": [65536]}}}"#;

#[tokio::test]
async fn sparse_records_cannot_amplify_a_request() {
    let backend = recorder().await;
    let gw = gateway(&sagemaker_config(&backend, "")).await;
    let body = format!("{{\"instances\": [{}]}}", vec![SPARSE; 3000].join(","));
    assert!(body.len() < 250_000, "{} bytes", body.len());
    let json = [("content-type", "application/json")];
    let got = send(gw.data_addr, "POST", "/invocations", &json, body).await;
    assert_eq!(got.status, 413, "{:?}", String::from_utf8_lossy(&got.body));
    assert_eq!(
        got.error(),
        "instance 256: the sparse records of this request densify to more than 16777216 elements, the route's max_elements_per_tensor"
    );
    assert!(backend.requests().is_empty(), "the backend saw a request");
    // JSON Lines streams: the first batch (one tensor's worth, within the
    // bound) may go before the record that crosses it is read; the
    // request is then refused, and nothing more is densified or sent.
    let lines = vec![SPARSE; 3000].join("\n");
    let jsonl = [("content-type", "application/jsonlines")];
    let got = send(gw.data_addr, "POST", "/invocations", &jsonl, lines).await;
    assert_eq!(got.status, 413, "{:?}", String::from_utf8_lossy(&got.body));
    assert_eq!(
        got.error(),
        "line 257: the sparse records of this request densify to more than 16777216 elements, the route's max_elements_per_tensor"
    );
    let sent: usize = backend.requests().iter().map(|s| s.body.len()).sum();
    assert!(
        backend.requests().len() <= 1,
        "{} batches sent",
        backend.requests().len()
    );
    assert!(sent <= (64 << 20) + 4096, "{sent} bytes sent");

    // The byte bound: a route with a smaller max_body_bytes.
    let backend = recorder().await;
    let gw = gateway(&sagemaker_config(
        &backend,
        "[routes.limits]\nmax_body_bytes = 1048576",
    ))
    .await;
    let body = format!("{{\"instances\": [{}]}}", [SPARSE; 5].join(","));
    let got = send(gw.data_addr, "POST", "/invocations", &json, body).await;
    assert_eq!(got.status, 413, "{:?}", String::from_utf8_lossy(&got.body));
    assert_eq!(
        got.error(),
        "instance 4: the sparse records of this request densify to more than 1048576 bytes, the route's max_body_bytes"
    );
    assert!(backend.requests().is_empty(), "the backend saw a request");
}

/// Batches are backend tensors: held to the route's
/// `max_elements_per_tensor` by being cut to it.
#[tokio::test]
async fn batches_are_cut_to_the_element_limit() {
    let backend = TestBackend::start(|seen| async move {
        // Answer each batch with its own input as OUTPUT0.
        let n: usize = std::str::from_utf8(
            seen.headers
                .get("inference-header-content-length")
                .map(|v| v.as_bytes())
                .unwrap_or(b"0"),
        )
        .unwrap()
        .parse()
        .unwrap();
        let header: serde_json::Value = serde_json::from_slice(&seen.body[..n]).unwrap();
        let shape = header["inputs"][0]["shape"].clone();
        let out = serde_json::json!({"outputs": [{"name": "OUTPUT0", "datatype": "FP32", "shape": shape, "parameters": {"binary_data_size": seen.body.len() - n}}]});
        let mut body = serde_json::to_vec(&out).unwrap();
        let h = body.len().to_string();
        body.extend_from_slice(&seen.body[n..]);
        crate::common::reply(
            200,
            &[("inference-header-content-length", h.as_str())],
            body,
        )
    })
    .await;
    let gw = gateway(&sagemaker_config(
        &backend,
        "[routes.limits]\nmax_elements_per_tensor = 10",
    ))
    .await;
    let csv = "1,2,3,4\n".repeat(7);
    let got = send(
        gw.data_addr,
        "POST",
        "/invocations",
        &[("content-type", "text/csv"), ("accept", "text/csv")],
        csv,
    )
    .await;
    assert_eq!(got.status, 200, "{:?}", String::from_utf8_lossy(&got.body));
    assert_eq!(got.body, "1.0,2.0,3.0,4.0\n".repeat(7));
    let shapes: Vec<String> = backend
        .requests()
        .iter()
        .map(|s| {
            let n: usize = s.headers["inference-header-content-length"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            let h: serde_json::Value = serde_json::from_slice(&s.body[..n]).unwrap();
            h["inputs"][0]["shape"].to_string()
        })
        .collect();
    // Two records of four features per batch: 8 elements, within 10.
    assert_eq!(shapes, ["[2,4]", "[2,4]", "[2,4]", "[1,4]"]);
}
