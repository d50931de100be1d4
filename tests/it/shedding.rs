//! Admission: with every request slot busy, a request waits at most
//! `server.queue_timeout`, then gets 503 with `Retry-After` and the V2
//! error body — and the backend never sees it. A slot is held until the
//! reply body has ended or been dropped, so streamed replies count.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;

use crate::common::*;

const KEYS: &str = "max_concurrent_requests = 2\nqueue_timeout = \"300ms\"";

/// A backend that answers `/v2/models/slow` after `delay` and everything
/// else at once.
async fn slow_backend(delay: Duration) -> TestBackend {
    TestBackend::start(move |seen| async move {
        if seen.path.starts_with("/v2/models/slow") {
            tokio::time::sleep(delay).await;
        }
        reply(200, &[("content-type", "application/json")], "{}")
    })
    .await
}

#[tokio::test]
async fn a_request_finding_no_slot_within_queue_timeout_gets_503_with_retry_after() {
    let backend = slow_backend(Duration::from_millis(2500)).await;
    let gw = gateway(&server_config(&backend.url(), KEYS)).await;
    let addr = gw.data_addr;
    let slow: Vec<_> = (0..2)
        .map(|_| tokio::spawn(async move { send(addr, "GET", "/v2/models/slow", &[], "").await }))
        .collect();
    // Both slots taken.
    let deadline = Instant::now() + Duration::from_secs(5);
    while backend.requests().len() < 2 {
        assert!(Instant::now() < deadline, "the slow requests never arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let started = Instant::now();
    let refused = send(addr, "GET", "/v2/models/fast", &[], "").await;
    let waited = started.elapsed();
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(refused.header("content-type"), Some("application/json"));
    assert!(
        refused
            .error()
            .starts_with("all 2 request slots stayed busy for 0.3"),
        "{}",
        refused.error()
    );
    assert!(refused.header("x-request-id").is_some());
    assert!(waited >= Duration::from_millis(290), "{waited:?}");
    assert!(waited < Duration::from_millis(2000), "{waited:?}");
    // The backend never saw the refused request.
    assert_eq!(backend.requests().len(), 2);

    // Once the slow requests are done, requests are served again.
    for s in slow {
        assert_eq!(s.await.unwrap().status, 200);
    }
    let served = send(addr, "GET", "/v2/models/fast", &[], "").await;
    assert_eq!(served.status, 200);
    assert_eq!(backend.requests().len(), 3);
}

/// A backend whose `/v2/models/stream` replies stream from a channel the
/// test holds.
async fn streaming_backend() -> (
    TestBackend,
    Arc<Mutex<Vec<tokio::sync::mpsc::Sender<Bytes>>>>,
) {
    let senders = Arc::new(Mutex::new(Vec::new()));
    let s2 = senders.clone();
    let backend = TestBackend::start(move |seen| {
        let senders = s2.clone();
        async move {
            if seen.path.starts_with("/v2/models/stream") {
                let (tx, resp) = channel_reply(200, &[("content-type", "text/event-stream")]);
                tx.send(Bytes::from_static(b"data: 1\n\n")).await.unwrap();
                senders.lock().unwrap().push(tx);
                return resp;
            }
            reply(200, &[], "{}")
        }
    })
    .await;
    (backend, senders)
}

#[tokio::test]
async fn a_streamed_reply_holds_its_slot_until_it_ends() {
    let (backend, senders) = streaming_backend().await;
    let keys = "max_concurrent_requests = 1\nqueue_timeout = \"300ms\"";
    let gw = gateway(&server_config(&backend.url(), keys)).await;
    let addr = gw.data_addr;

    // The headers and a first event are out; the reply is still going.
    let resp = open(addr, "GET", "/v2/models/stream", &[], "").await;
    assert_eq!(resp.status(), 200);
    let mut body = resp.into_body();
    assert_eq!(next_data(&mut body).await.unwrap(), "data: 1\n\n");
    // The slot is still taken.
    let refused = send(addr, "GET", "/v2/models/other", &[], "").await;
    assert_eq!(refused.status, 503);

    // The reply ends: the slot is free again.
    let tx = senders.lock().unwrap().pop().unwrap();
    tx.send(Bytes::from_static(b"data: 2\n\n")).await.unwrap();
    drop(tx);
    let rest = body.collect().await.unwrap().to_bytes();
    assert_eq!(rest, "data: 2\n\n");
    assert_eq!(
        send(addr, "GET", "/v2/models/other", &[], "").await.status,
        200
    );
}

#[tokio::test]
async fn a_streamed_reply_the_client_drops_frees_its_slot() {
    let (backend, senders) = streaming_backend().await;
    let keys = "max_concurrent_requests = 1\nqueue_timeout = \"300ms\"";
    let gw = gateway(&server_config(&backend.url(), keys)).await;
    let addr = gw.data_addr;

    let resp = open(addr, "GET", "/v2/models/stream", &[], "").await;
    let mut body = resp.into_body();
    assert_eq!(next_data(&mut body).await.unwrap(), "data: 1\n\n");
    assert_eq!(
        send(addr, "GET", "/v2/models/other", &[], "").await.status,
        503
    );
    // The client goes away mid-stream (the backend would stream forever).
    drop(body);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let got = send(addr, "GET", "/v2/models/other", &[], "").await;
        if got.status == 200 {
            break;
        }
        assert_eq!(got.status, 503);
        assert!(Instant::now() < deadline, "the slot was never freed");
    }
    drop(senders);
}
