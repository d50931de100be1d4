//! A client that goes away before the response headers (its request is
//! waiting on a slow backend) leaves no trace in the in-flight gauge: it
//! is counted once with status 499, written once to the access log, and
//! frees its request slot.

use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::common::access_log::{self, lines as access_lines};
use crate::common::*;

/// Sends `request` on a raw connection, waits until the backend has it,
/// then closes the connection before any reply.
async fn send_and_vanish(gw: &tensorgate::server::Running, backend: &TestBackend, request: &str) {
    let mut stream = TcpStream::connect(gw.data_addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while backend.requests().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the backend never got the request"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(stream);
}

async fn check_gone(gw: &tensorgate::server::Running, request_id: &str, kind: &str) {
    // The gateway notices the close while waiting for the backend (10 s).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let scrape = send(gw.admin_addr, "GET", "/metrics", &[], "").await;
        let text = String::from_utf8(scrape.body.to_vec()).unwrap();
        let in_flight = metric(&text, "tensorgate_in_flight_requests{route=\"r\"}");
        let abandoned = metric(
            &text,
            &format!("tensorgate_requests_total{{code=\"499\",kind=\"{kind}\",route=\"r\"}}"),
        );
        if in_flight == Some(0.0) && abandoned == Some(1.0) {
            assert_eq!(
                metric(&text, "tensorgate_in_flight_requests{route=\"_none\"}"),
                Some(0.0)
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "in flight {in_flight:?}, 499s {abandoned:?}:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let lines = access_lines(request_id);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["status"], 499);
    assert_eq!(lines[0]["completed"], false);
    // The slot is free: with one slot, the next request is served.
    let got = send(gw.data_addr, "GET", "/v2/health/live", &[], "").await;
    assert_eq!(got.status, 200);
}

async fn slow_backend() -> TestBackend {
    TestBackend::start(|seen| async move {
        if seen.path.contains("slow") {
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
        reply(200, &[("content-type", "application/json")], "{}")
    })
    .await
}

const KEYS: &str = "max_concurrent_requests = 1\nqueue_timeout = \"300ms\"";

#[tokio::test]
async fn a_passthrough_client_gone_before_the_headers_leaves_the_gauge_at_zero() {
    access_log::start();
    let backend = slow_backend().await;
    let gw = gateway(&server_config(&backend.url(), KEYS)).await;
    let id = "gone-before-headers-passthrough";
    let request = format!("GET /v2/models/slow HTTP/1.1\r\nHost: x\r\nx-request-id: {id}\r\n\r\n");
    send_and_vanish(&gw, &backend, &request).await;
    check_gone(&gw, id, "v2").await;
}

#[tokio::test]
async fn an_infer_client_gone_before_the_headers_leaves_the_gauge_at_zero() {
    access_log::start();
    let backend = slow_backend().await;
    let gw = gateway(&server_config(&backend.url(), KEYS)).await;
    let id = "gone-before-headers-infer";
    let body = r#"{"inputs":[{"name":"X","shape":[1],"datatype":"INT32","data":[1]}]}"#;
    let request = format!(
        "POST /v2/models/slow/infer HTTP/1.1\r\nHost: x\r\nx-request-id: {id}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    send_and_vanish(&gw, &backend, &request).await;
    check_gone(&gw, id, "v2").await;
}
