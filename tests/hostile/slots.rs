//! Finding 8: one client could take every request slot of a route without
//! keys (6 HTTP/2 connections × 200 streams announcing a body and sending
//! none held all 1024 slots for `body_read_timeout`). Requests in flight
//! are now bounded per HTTP/2 connection (`max_streams_per_connection`,
//! 128 by default) and, when configured, per client address
//! (`max_requests_per_client`): a second client keeps being served
//! during the attack.

use std::time::Duration;

use bytes::Bytes;

use crate::attack::{ATTACKER, CLIENT, client_from, h2_bodyless, in_flight, post, probe};
use crate::common::gateway;
use crate::replica::simple_infer;

fn config(demo: &str, server_keys: &str) -> String {
    format!(
        r#"
[server]
shutdown_grace = "1s"
drain_delay = "0s"
queue_timeout = "1s"
body_read_timeout = "30s"
{server_keys}
[backends.demo]
url = "{demo}"
[[routes]]
name = "open"
default = true
backend = "demo"
"#
    )
}

/// Waits until the gateway's requests in flight stop changing (the same
/// for 300 ms, within 5 s); returns how many it has then.
async fn settle(admin: std::net::SocketAddr) -> f64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut last = (-1.0, std::time::Instant::now());
    loop {
        let n = in_flight(admin).await;
        if n != last.0 {
            last = (n, std::time::Instant::now());
        } else if last.1.elapsed() >= Duration::from_millis(300) && n > 0.0 {
            return n;
        }
        if std::time::Instant::now() > deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_http2_connection_holds_at_most_max_streams_per_connection() {
    let demo = tensorgate_demo::spawn().await.unwrap();
    let gw = gateway(&config(&demo.url(), "")).await;
    let json = vec![("content-type".to_owned(), "application/json".to_owned())];
    let attack = h2_bodyless(
        gw.data_addr,
        ATTACKER,
        1,
        300,
        "/v2/models/simple/infer",
        json,
    )
    .await;
    let held = settle(gw.admin_addr).await;
    // hyper's default was 200 streams a connection.
    assert_eq!(held, 128.0, "requests in flight from one connection");
    drop(attack);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_client_is_served_while_one_holds_what_it_may() {
    let demo = tensorgate_demo::spawn().await.unwrap();
    let keys = "max_concurrent_requests = 256\nmax_requests_per_client = 64";
    let gw = gateway(&config(&demo.url(), keys)).await;
    let json = vec![("content-type".to_owned(), "application/json".to_owned())];
    let attack = h2_bodyless(
        gw.data_addr,
        ATTACKER,
        6,
        200,
        "/v2/models/simple/infer",
        json.clone(),
    )
    .await;
    let held = settle(gw.admin_addr).await;
    let client = client_from(CLIENT);
    let body = Bytes::from(simple_infer());
    let got = probe(Duration::from_secs(3), Duration::from_millis(10), || {
        post(
            &client,
            gw.data_addr,
            "/v2/models/simple/infer",
            &json,
            body.clone(),
        )
    })
    .await;
    println!(
        "slot attack (6 HTTP/2 connections x 200 body-less streams from one address, \
         max_requests_per_client 64, 256 slots): attacker holds {held}; second client \
         {}/{} ok ({:.4}), p99 {:?}",
        got.ok,
        got.sent,
        got.ratio(),
        got.p99()
    );
    assert_eq!(held, 64.0, "the attacker holds its client's bound");
    assert_eq!(got.ratio(), 1.0, "failures: {:?}", got.failures);
    assert!(
        got.p99() < Duration::from_millis(500),
        "p99 {:?}",
        got.p99()
    );
    drop(attack);
}
