//! Clients that send their whole request before they read a byte of the
//! reply (Python's http.client, requests and boto3 all do), against the
//! demo's `rowsum` through the SageMaker frontend, whose replies are made
//! batch by batch while the request is still read. The gateway must keep
//! reading: the reply made meanwhile is held (memory, then a temporary
//! file) and the client gets all of it; a reply outgrowing what may be
//! held is a 413 before any status line; a client that then never reads
//! is dropped after `send_timeout`, its slot freed. The client's receive
//! buffer is kept small, so the reply cannot hide in it.

mod common;

use std::time::{Duration, Instant};

use common::raw::{RawResponse, read_response};
use common::*;
use tensorgate_demo as demo;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

/// Records in the CSV (28 MB; its JSON Lines reply, each record's score
/// and features echoed, is 82 MB). The request must outgrow what the
/// kernel buffers on loopback (the gateway's receive buffer grows to
/// `tcp_rmem`'s maximum, 32 MB here, while it reads): with 400,000 records
/// (7 MB) the old code got through; with these it hung (checked).
const ROWS: usize = 1_500_000;
/// Records where the size does not matter beyond a few megabytes.
const FEW_ROWS: usize = 400_000;
/// The most a test waits for a reply (a gateway that deadlocks never
/// sends one).
const LIMIT: Duration = Duration::from_secs(120);

fn config(backend: &str, server_keys: &str) -> String {
    format!(
        r#"
[server]
shutdown_grace = "2s"
{server_keys}
[backends.demo]
url = "{backend}"
[[routes]]
name = "r"
default = true
backend = "demo"
[routes.sagemaker]
default_model = "rowsum"
batch_records = 4096
"#
    )
}

/// `rows` records of three features; row `i` sums to `3i + 0.5`.
fn csv(rows: usize) -> Vec<u8> {
    let mut out = String::with_capacity(rows * 24);
    for i in 0..rows {
        out.push_str(&format!("{i},{},0.5\n", 2 * i));
    }
    out.into_bytes()
}

/// A connection whose receive buffer is 64 KiB (asked before connecting,
/// so the window is small from the start).
async fn small_window(addr: std::net::SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(64 << 10).unwrap();
    socket.connect(addr).await.unwrap()
}

/// Writes the whole request, then reads one response.
async fn send_then_read(
    addr: std::net::SocketAddr,
    path: &str,
    extra: &str,
    body: &[u8],
) -> RawResponse {
    let mut s = small_window(addr).await;
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: text/csv\r\naccept: application/jsonlines\r\n\
         content-length: {}\r\nconnection: close\r\n{extra}\r\n",
        body.len()
    );
    let exchange = async {
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body).await.unwrap();
        let mut buf = Vec::new();
        read_response(&mut s, &mut buf).await.unwrap()
    };
    tokio::time::timeout(LIMIT, exchange)
        .await
        .expect("no reply: the gateway stopped reading while the client was still sending")
        .expect("connection closed before a reply")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_sending_every_record_before_reading_gets_the_whole_reply() {
    let backend = demo::spawn().await.unwrap();
    // A small memory bound, so most of the reply goes through the file.
    let gw = gateway(&config(&backend.url(), "reply_memory_bytes = 262144")).await;
    let body = csv(ROWS);
    let started = Instant::now();
    let resp = send_then_read(gw.data_addr, "/invocations", "", &body).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert!(resp.complete, "the reply ended early");
    let text = resp.text();
    let mut n = 0usize;
    for (i, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            v["score"].as_f64(),
            Some((3 * i) as f64 + 0.5),
            "record {i}"
        );
        n += 1;
    }
    assert_eq!(n, ROWS);
    eprintln!(
        "{} bytes of CSV, {} of JSON Lines, in {:?}",
        body.len(),
        resp.body.len(),
        started.elapsed()
    );
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_reply_past_its_bounds_is_413_before_any_status() {
    let backend = demo::spawn().await.unwrap();
    let keys = "reply_memory_bytes = 65536\nreply_disk_bytes = 262144";
    let gw = gateway(&config(&backend.url(), keys)).await;
    let resp = send_then_read(gw.data_addr, "/invocations", "", &csv(FEW_ROWS)).await;
    assert_eq!(resp.status, 413, "{}", resp.text());
    assert_eq!(
        resp.json()["error"],
        "the reply is larger than the 327680 bytes the gateway holds for a client that has not taken it yet"
    );
    // The Runtime API path says it in AWS's shape.
    let resp = send_then_read(
        gw.data_addr,
        "/endpoints/rowsum/invocations",
        "",
        &csv(FEW_ROWS),
    )
    .await;
    assert_eq!(resp.status, 413, "{}", resp.text());
    assert!(
        resp.json()["message"]
            .as_str()
            .unwrap()
            .contains("327680 bytes")
    );
    gw.shutdown().await;
}

/// The issue's other half: a client that sends everything and then reads
/// nothing holds its slot only until `send_timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_the_reply_is_dropped_after_send_timeout() {
    let backend = demo::spawn().await.unwrap();
    let keys = "send_timeout = \"1s\"\nmax_concurrent_requests = 1\nqueue_timeout = \"200ms\"";
    let gw = gateway(&config(&backend.url(), keys)).await;
    let body = csv(FEW_ROWS);
    let mut s = small_window(gw.data_addr).await;
    let head = format!(
        "POST /invocations HTTP/1.1\r\nhost: x\r\ncontent-type: text/csv\r\naccept: application/jsonlines\r\n\
         content-length: {}\r\n\r\n",
        body.len()
    );
    tokio::time::timeout(LIMIT, async {
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(&body).await.unwrap();
    })
    .await
    .expect("the gateway stopped reading the request");
    let sent = Instant::now();
    // The reply is stuck in the socket: its slot is taken...
    let busy = send(gw.data_addr, "GET", "/v2/health/ready", &[], "").await;
    assert_eq!(busy.status, 503, "the slot should still be held");
    // ...until send_timeout has passed with nothing taken.
    loop {
        let got = send(gw.data_addr, "GET", "/v2/health/ready", &[], "").await;
        if got.status == 200 {
            break;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(10),
            "slot still held {:?} after the request was sent",
            sent.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let freed = sent.elapsed();
    assert!(freed >= Duration::from_millis(900), "{freed:?}");
    // The client reading now gets a cut reply: part of it, then the end.
    let mut buf = Vec::new();
    let resp = tokio::time::timeout(Duration::from_secs(30), read_response(&mut s, &mut buf))
        .await
        .unwrap();
    if let Ok(Some(resp)) = resp {
        assert_eq!(resp.status, 200);
        assert!(!resp.complete, "a dropped reply must not look whole");
    }
    gw.shutdown().await;
}

/// The V2 JSON path reads the whole request before it answers (the reply
/// streams only after): a send-then-read client is no problem there, and
/// stays none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v2_json_client_sending_before_reading_gets_its_reply() {
    let backend = demo::spawn().await.unwrap();
    let gw = gateway(&config(&backend.url(), "")).await;
    let n = 1_000_000;
    let data: Vec<String> = (0..n).map(|i| (i % 1000).to_string()).collect();
    let body = format!(
        r#"{{"inputs":[{{"name":"X","shape":[{n}],"datatype":"INT32","data":[{}]}}]}}"#,
        data.join(",")
    );
    let mut s = small_window(gw.data_addr).await;
    let head = format!(
        "POST /v2/models/identity/infer HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let resp = tokio::time::timeout(LIMIT, async {
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        read_response(&mut s, &mut buf).await.unwrap().unwrap()
    })
    .await
    .expect("no reply");
    assert_eq!(resp.status, 200);
    assert!(resp.complete);
    let out = resp.json();
    let values = out["outputs"][0]["data"].as_array().unwrap();
    assert_eq!(values.len(), n);
    assert_eq!(values[999], 999);
    gw.shutdown().await;
}
