//! Backend faults, each bounded in time on loopback: refused, hung,
//! dying mid-reply, stalling mid-reply, answering byte by byte, a backend
//! whose connection slots are all taken, and what of a backend must never
//! reach clients. Keep-alive closes are in `keep_alive.rs`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use faults::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::faults;
use crate::common::*;

#[tokio::test]
async fn refused_is_502_with_no_os_detail() {
    let gw = gateway(&config(&format!("http://127.0.0.1:{}", free_port()), "")).await;
    let started = Instant::now();
    for i in 0..2 {
        let got = infer_or_get(gw.data_addr, i).await;
        assert_eq!(got.status, 502);
        assert_eq!(got.error(), r#"backend "b" refused the connection"#);
    }
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn hung_backend_is_504_and_not_retried() {
    // Reads the request, never answers.
    let backend = RawBackend::start(|mut s, counts| async move {
        let mut buf = Vec::new();
        if let Some(Ok(_)) = read_request(&mut s, &mut buf).await {
            counts.requests.fetch_add(1, Ordering::SeqCst);
        }
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    let gw = gateway(&config(&backend.url(), "")).await;
    for i in 0..2 {
        let started = Instant::now();
        let got = infer_or_get(gw.data_addr, i).await;
        assert_eq!(got.status, 504);
        assert_eq!(got.error(), r#"backend "b" did not answer within 2.000s"#);
        assert!(started.elapsed() < Duration::from_secs(4));
    }
    // A timeout may have been read by the backend: even the GET is not
    // sent again.
    assert_eq!(backend.counts.get(), (2, 2, 0));
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

#[tokio::test]
async fn a_backend_dying_mid_reply_aborts_the_client_stream() {
    // Chunked, passed through: the client's chunked body has no last chunk.
    let backend = dying(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        b"6\r\ndata:1\r\n",
    )
    .await;
    let gw = gateway(&config(&backend.url(), "")).await;
    let (raw, _) = raw_exchange(
        gw.data_addr,
        b"GET /v2/models/m/stream HTTP/1.1\r\nhost: x\r\n\r\n",
        Duration::from_secs(5),
    )
    .await;
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("data:1"), "{text}");
    assert!(!chunked_complete(&raw), "completed as if whole: {text}");

    // With a length: the client gets fewer bytes than announced, then the
    // connection closes.
    let backend = dying(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n",
        b"{\"name\":",
    )
    .await;
    let gw = gateway(&config(&backend.url(), "")).await;
    let (raw, _) = raw_exchange(
        gw.data_addr,
        b"GET /v2/models/m HTTP/1.1\r\nhost: x\r\n\r\n",
        Duration::from_secs(5),
    )
    .await;
    let text = String::from_utf8_lossy(&raw);
    let end = text.find("\r\n\r\n").unwrap() + 4;
    assert!(text[..end].contains("content-length: 100"), "{text}");
    assert!(raw.len() - end < 100, "{text}");

    // A binary reply translated to JSON as it streams (16K values, over
    // the size written whole): aborted too.
    let header = r#"{"outputs":[{"name":"Y","datatype":"INT32","shape":[16384],"parameters":{"binary_data_size":65536}}]}"#;
    let head = format!(
        "HTTP/1.1 200 OK\r\ninference-header-content-length: {}\r\ncontent-length: {}\r\n\r\n{header}",
        header.len(),
        header.len() + 65536
    );
    let backend = dying(Box::leak(head.into_boxed_str()), &[1, 0, 0, 0, 2, 0, 0, 0]).await;
    let gw = gateway(&config(&backend.url(), "")).await;
    let request = format!(
        "POST {INFER} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{INFER_BODY}",
        INFER_BODY.len()
    );
    let (raw, _) = raw_exchange(gw.data_addr, request.as_bytes(), Duration::from_secs(5)).await;
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("transfer-encoding: chunked"), "{text}");
    assert!(!chunked_complete(&raw), "completed as if whole: {text}");
}

#[tokio::test]
async fn a_backend_stalling_mid_reply_is_cut_after_the_idle_time() {
    let (closed_tx, mut closed_rx) = tokio::sync::mpsc::channel::<Instant>(1);
    let backend = RawBackend::start(move |mut s, _| {
        let closed_tx = closed_tx.clone();
        async move {
            let mut buf = Vec::new();
            if let Some(Ok(_)) = read_request(&mut s, &mut buf).await {
                let head = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n6\r\ndata:1\r\n";
                let _ = s.write_all(head.as_bytes()).await;
                // Stalls; notices when the gateway lets go of the connection.
                let mut b = [0u8; 16];
                let _ = s.read(&mut b).await;
                let _ = closed_tx.send(Instant::now()).await;
            }
        }
    })
    .await;
    let gw = gateway(&config(&backend.url(), "")).await;
    let started = Instant::now();
    let resp = open(gw.data_addr, "GET", "/v2/models/m/stream", &[], "").await;
    assert_eq!(resp.status(), 200);
    let mut body = resp.into_body();
    use http_body_util::BodyExt;
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(&first[..], b"data:1");
    let end = tokio::time::timeout(Duration::from_secs(5), body.frame())
        .await
        .expect("the stalled stream was never cut");
    assert!(matches!(end, Some(Err(_))), "ended cleanly: {end:?}");
    let cut = started.elapsed();
    assert!(cut >= Duration::from_millis(400), "{cut:?}");
    // The backend connection was dropped too.
    let closed = tokio::time::timeout(Duration::from_secs(5), closed_rx.recv())
        .await
        .expect("the backend connection was kept")
        .unwrap();
    assert!(closed.duration_since(started) < Duration::from_secs(3));
    let metrics = send(gw.admin_addr, "GET", "/metrics", &[], "").await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains(r#"tensorgate_upstream_errors_total{backend="b",kind="timeout"} 1"#),
        "{text}"
    );
}

/// Writes `bytes` one byte at a time with a pause after each.
async fn trickle(s: &mut tokio::net::TcpStream, bytes: &[u8]) {
    for b in bytes {
        if s.write_all(&[*b]).await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
}

#[tokio::test]
async fn a_reply_sent_byte_by_byte_arrives_whole() {
    let header = r#"{"model_name":"m","outputs":[{"name":"Y","datatype":"FP32","shape":[3],"parameters":{"binary_data_size":12}}]}"#;
    let mut binary = header.as_bytes().to_vec();
    binary.extend_from_slice(&le_f32(&[1.5, -2.0, 0.25]));
    let binary = response(
        200,
        &[("inference-header-content-length", &header.len().to_string())],
        &binary,
    );
    let metadata = response(
        200,
        &[("content-type", "application/json")],
        br#"{"name":"m"}"#,
    );
    let backend = RawBackend::start(move |mut s, _| {
        let (binary, metadata) = (binary.clone(), metadata.clone());
        async move {
            s.set_nodelay(true).unwrap();
            let mut buf = Vec::new();
            while let Some(Ok(req)) = read_request(&mut s, &mut buf).await {
                let reply = if req.method() == "POST" {
                    &binary
                } else {
                    &metadata
                };
                trickle(&mut s, reply).await;
            }
        }
    })
    .await;
    let gw = gateway(&config(&backend.url(), "")).await;
    let got = post_json(gw.data_addr, INFER, INFER_BODY).await;
    assert_eq!(got.status, 200);
    assert_eq!(
        std::str::from_utf8(&got.body).unwrap(),
        r#"{"model_name":"m","outputs":[{"name":"Y","datatype":"FP32","shape":[3],"data":[1.5,-2.0,0.25]}]}"#
    );
    let got = send(gw.data_addr, "GET", "/v2/models/m", &[], "").await;
    assert_eq!(got.status, 200);
    assert_eq!(&got.body[..], br#"{"name":"m"}"#);
}

#[tokio::test]
async fn a_backend_with_every_slot_taken_is_503() {
    let (give, mut take) = tokio::sync::mpsc::channel(1);
    let backend = TestBackend::start(move |_| {
        let give = give.clone();
        async move {
            let (tx, resp) = channel_reply(200, &[("content-type", "text/event-stream")]);
            let _ = give.send(tx).await;
            resp
        }
    })
    .await;
    let gw = gateway(&config(&backend.url(), "max_connections = 1")).await;
    // The first exchange holds the only slot while its reply streams.
    let first = open(gw.data_addr, "GET", "/v2/models/m/stream", &[], "").await;
    assert_eq!(first.status(), 200);
    let feed = take.recv().await.unwrap();
    let started = Instant::now();
    let got = post_json(gw.data_addr, INFER, INFER_BODY).await;
    assert_eq!(got.status, 503);
    assert_eq!(got.header("retry-after"), Some("1"));
    assert_eq!(
        got.error(),
        r#"backend "b" is busy: all 1 of its connections are in use"#
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
    // The slot comes back when the first reply ends.
    feed.send(Bytes::from_static(b"data: end\n\n"))
        .await
        .unwrap();
    drop(feed);
    use http_body_util::BodyExt;
    let body = first.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"data: end\n\n");
    let next = tokio::spawn(send(gw.data_addr, "GET", "/v2/models/m/stream", &[], ""));
    let feed = take.recv().await.unwrap();
    drop(feed);
    assert_eq!(next.await.unwrap().status, 200);
    let metrics = send(gw.admin_addr, "GET", "/metrics", &[], "").await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains(r#"tensorgate_upstream_errors_total{backend="b",kind="saturated"} 1"#),
        "{text}"
    );
}

#[tokio::test]
async fn backend_addresses_never_reach_clients() {
    let backend = TestBackend::start(|seen| async move {
        let here = seen.headers["host"].to_str().unwrap().to_owned();
        let location = format!("http://{here}/v2/models/m/versions/2");
        reply(307, &[("location", &location)], "")
    })
    .await;
    let gw = gateway(&config(&backend.url(), "")).await;
    let got = send(gw.data_addr, "GET", "/v2/models/m", &[], "").await;
    assert_eq!(got.status, 307);
    assert_eq!(got.header("location"), Some("/v2/models/m/versions/2"));
}

/// The backend gets its own address as `Host`, never the client's (which
/// names the gateway): one `Host`, the replica's, whatever the client sent.
#[tokio::test]
async fn the_backend_gets_its_own_host_not_the_clients() {
    let backend = TestBackend::start(|seen| async move {
        let hosts: Vec<String> = seen
            .headers
            .get_all("host")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect();
        reply(200, &[("content-type", "text/plain")], hosts.join(","))
    })
    .await;
    let gw = gateway(&config(&backend.url(), "")).await;
    let own = backend.url();
    let own = own.trim_start_matches("http://").trim_end_matches('/');
    let client_host = [("host", "gateway.example:8000")];
    let got = send(gw.data_addr, "GET", "/v2/models/m", &client_host, "").await;
    assert_eq!(got.status, 200);
    assert_eq!(std::str::from_utf8(&got.body).unwrap(), own);
    let got = send(gw.data_addr, "GET", "/v2/models/m", &[], "").await;
    assert_eq!(std::str::from_utf8(&got.body).unwrap(), own);
}

#[tokio::test]
async fn an_http2_client_is_passed_through_to_an_http1_backend() {
    let backend = TestBackend::start(|_| async {
        reply(
            200,
            &[("content-type", "application/json")],
            r#"{"name":"m"}"#,
        )
    })
    .await;
    let gw = gateway(&config(&backend.url(), "")).await;
    let client: hyper_util::client::legacy::Client<_, http_body_util::Full<Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .http2_only(true)
            .build(hyper_util::client::legacy::connect::HttpConnector::new());
    let req = http::Request::get(format!("http://{}/v2/models/m", gw.data_addr))
        .body(http_body_util::Full::new(Bytes::new()))
        .unwrap();
    let resp = client.request(req).await.unwrap();
    assert_eq!(resp.version(), http::Version::HTTP_2);
    assert_eq!(resp.status(), 200);
    use http_body_util::BodyExt;
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], br#"{"name":"m"}"#);
}
