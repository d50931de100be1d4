//! CPU-heavy conversions never hold the runtime's threads: on a
//! current-thread runtime (gateway, backend and clients on one thread),
//! small requests on other connections keep being answered while a 64 MiB
//! reply is assembled and gzipped, and while one small gzip frame inflates
//! to a 32 MB JSON request. Each test checks that many small requests
//! completed meanwhile and that the slowest took a small fraction of the
//! heavy one (were the work inline, one of them would wait for all of it).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tensorgate::http::encoding::{Coding, Decoder, compress};

use crate::common::*;

const BIG: usize = 64 << 20;

/// Sends small metadata requests one after another, 5 ms apart, until
/// `stop`; returns how long each round (pause and request) took, so a
/// runtime blocked during the pause shows as much as one blocked during
/// the request.
async fn small_requests(addr: std::net::SocketAddr, stop: Arc<AtomicBool>) -> Vec<Duration> {
    let mut took = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let got = send(addr, "GET", "/v2/models/m", &[], "").await;
        assert_eq!(got.status, 200);
        took.push(started.elapsed());
    }
    took
}

fn check_meanwhile(heavy: Duration, small: &[Duration]) {
    let slowest = small.iter().max().copied().unwrap_or_default();
    eprintln!(
        "heavy request {heavy:?}; {} small requests meanwhile, slowest round {slowest:?}",
        small.len()
    );
    assert!(small.len() >= 10, "only {} small requests", small.len());
    assert!(
        slowest * 4 < heavy,
        "a small request's round took {slowest:?} during a {heavy:?} heavy one"
    );
}

async fn backend() -> TestBackend {
    let header = format!(
        r#"{{"model_name":"m","outputs":[{{"name":"BIG","datatype":"UINT8","shape":[{BIG}],"parameters":{{"binary_data_size":{BIG}}}}},{{"name":"SMALL","datatype":"INT32","shape":[1],"parameters":{{"binary_data_size":4}}}}]}}"#
    );
    let mut body = header.clone().into_bytes();
    body.resize(body.len() + BIG, 0);
    body.extend_from_slice(&le_i32(&[42]));
    let body = Bytes::from(body);
    let ihcl: &'static str = Box::leak(header.len().to_string().into_boxed_str());
    TestBackend::start(move |seen| {
        let body = body.clone();
        async move {
            if seen.method == "GET" {
                return reply(
                    200,
                    &[("content-type", "application/json")],
                    r#"{"name":"m"}"#,
                );
            }
            if seen.body.len() > 1000 {
                // The heavy request: accepted, nothing to send back.
                return reply(
                    200,
                    &[("content-type", "application/json")],
                    r#"{"outputs":[]}"#,
                );
            }
            reply(200, &[("inference-header-content-length", ihcl)], body)
        }
    })
    .await
}

#[tokio::test]
async fn a_large_gzip_reply_is_built_off_the_runtime() {
    let backend = backend().await;
    let route = "[routes.limits]\nmax_response_bytes = 134217728";
    let gw = gateway(&simple_config(&backend.url(), route)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let small = tokio::spawn(small_requests(gw.data_addr, stop.clone()));
    tokio::time::sleep(Duration::from_millis(50)).await;
    // BIG in binary, SMALL as JSON: a mixed reply, assembled whole, gzipped.
    let request = r#"{"inputs":[{"name":"X","shape":[1],"datatype":"INT32","data":[1]}],"outputs":[{"name":"BIG","parameters":{"binary_data":true}},{"name":"SMALL"}]}"#;
    let started = Instant::now();
    let got = send(
        gw.data_addr,
        "POST",
        "/v2/models/m/infer",
        &[("accept-encoding", "gzip")],
        request,
    )
    .await;
    let heavy = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let small = small.await.unwrap();
    assert_eq!(got.status, 200);
    assert_eq!(got.header("content-encoding"), Some("gzip"));
    let mut d = Decoder::new(Coding::Gzip, 1 << 30).unwrap();
    let mut plain = d.push(&got.body).unwrap().to_vec();
    plain.extend_from_slice(&d.finish().unwrap());
    let n: usize = got
        .header("inference-header-content-length")
        .unwrap()
        .parse()
        .unwrap();
    let header: serde_json::Value = serde_json::from_slice(&plain[..n]).unwrap();
    assert_eq!(header["outputs"][1]["data"], serde_json::json!([42]));
    assert_eq!(plain.len(), n + BIG);
    check_meanwhile(heavy, &small);
}

#[tokio::test]
async fn a_small_frame_inflating_to_a_large_request_is_read_in_steps() {
    let backend = backend().await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    // 16 million zeros as JSON: 32 MB of text, a few tens of KB gzipped.
    let n = 16_000_000;
    let mut text = format!(r#"{{"inputs":[{{"name":"X","shape":[{n}],"datatype":"UINT8","data":["#)
        .into_bytes();
    for i in 0..n {
        text.extend_from_slice(if i + 1 < n { b"0," } else { b"0" });
    }
    text.extend_from_slice(b"]}]}");
    let packed = compress(&text, Coding::Gzip);
    assert!(packed.len() < 256 << 10, "{}", packed.len());
    let stop = Arc::new(AtomicBool::new(false));
    let small = tokio::spawn(small_requests(gw.data_addr, stop.clone()));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    let got = send(
        gw.data_addr,
        "POST",
        "/v2/models/m/infer",
        &[
            ("content-encoding", "gzip"),
            ("content-type", "application/json"),
        ],
        packed,
    )
    .await;
    let heavy = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let small = small.await.unwrap();
    assert_eq!(got.status, 200, "{:?}", got.body);
    let seen = backend.requests();
    let infer = seen.iter().find(|s| s.method == "POST").unwrap();
    let ihcl: usize = infer.headers["inference-header-content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(infer.body.len(), ihcl + n);
    check_meanwhile(heavy, &small);
}
