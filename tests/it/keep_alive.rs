//! Backends closing keep-alive connections: after every reply, at random,
//! and just after the gateway wrote its next request (the race a backend's
//! keep-alive timer creates). What may be sent again is, and only that.

use std::sync::atomic::Ordering;
use std::time::Duration;

use faults::*;
use tokio::io::AsyncWriteExt;

use crate::common::faults;
use crate::common::*;

#[tokio::test]
async fn keep_alive_closed_after_every_reply_costs_no_request() {
    let backend = RawBackend::closing(json_reply, |_| true).await;
    let gw = gateway(&config(&backend.url(), "")).await;
    let failed = run_loop(&gw, 300).await;
    assert!(
        failed.is_empty(),
        "{} failed: {:?}",
        failed.len(),
        failed.first()
    );
    assert_eq!(backend.counts.get(), (300, 300, 0));
}

#[tokio::test]
async fn keep_alive_closed_at_random_costs_no_request() {
    let dice = Dice::new(0x5eed);
    let backend = RawBackend::closing(json_reply, move |_| dice.roll(0.5)).await;
    let gw = gateway(&config(&backend.url(), "")).await;
    let failed = run_loop(&gw, 300).await;
    assert!(
        failed.is_empty(),
        "{} failed: {:?}",
        failed.len(),
        failed.first()
    );
    let (connections, requests, _) = backend.counts.get();
    assert_eq!(requests, 300);
    assert!(connections > 100 && connections < 250, "{connections}");
}

/// A backend that answers one request per connection and closes it a
/// moment later, so the gateway's next request may already be on its way:
/// the race a backend's keep-alive timeout creates.
#[tokio::test]
async fn keep_alive_closed_late_retries_only_what_is_safe() {
    let backend = RawBackend::start(|mut s, counts| async move {
        let mut buf = Vec::new();
        if let Some(Ok(req)) = read_request(&mut s, &mut buf).await {
            counts.requests.fetch_add(1, Ordering::SeqCst);
            let _ = s.write_all(&json_reply(&req)).await;
            tokio::time::sleep(Duration::from_micros(300)).await;
        }
        // Closes with whatever arrived meanwhile unread: a reset.
    })
    .await;
    let gw = gateway(&config(&backend.url(), "")).await;
    let failed = run_loop(&gw, 200).await;
    // Metadata reads are idempotent: retried on a fresh connection.
    assert!(
        failed.iter().all(|(i, _)| i % 2 == 0),
        "a GET failed: {:?}",
        failed.iter().find(|(i, _)| i % 2 == 1)
    );
    // An infer written to the closing connection may have been read, so it
    // is not sent again: it fails, and the backend never saw it twice.
    for (_, got) in &failed {
        assert_eq!(got.status, 502);
        assert_eq!(got.error(), r#"backend "b" closed the connection"#);
    }
    let (_, requests, _) = backend.counts.get();
    assert_eq!(
        requests as usize,
        200 - failed.len(),
        "backend saw nothing of a failed infer"
    );
}
