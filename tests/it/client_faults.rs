//! Client faults, bounded in time on loopback: a client that goes away
//! mid-upload (the backend request is cancelled: the backend never gets
//! it, or sees it cut off), one that stalls mid-upload (408 after the idle
//! time), and one that stops reading a streamed reply (the backend
//! connection is let go, and the client's stream is never completed).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use faults::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::faults;
use crate::common::*;

fn config(url: &str) -> String {
    format!(
        r#"
[server]
shutdown_grace = "1s"
body_read_timeout = "2s"
[backends.b]
url = "{url}"
connect_timeout = "300ms"
request_timeout = "5s"
stream_idle_timeout = "400ms"
[[routes]]
name = "r"
default = true
backend = "b"
"#
    )
}

/// A backend that reads requests and answers 200, counting what it got.
async fn counting_backend() -> RawBackend {
    RawBackend::closing(|_| response(200, &[], b"{}"), |_| false).await
}

/// Sends a request head announcing `len` body bytes and `sent` of them.
async fn upload(addr: std::net::SocketAddr, path: &str, len: usize, sent: usize) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {len}\r\n\r\n"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let mut body = br#"{"inputs":[{"name":"X","shape":[1],"datatype":"BYTES","data":[""#.to_vec();
    body.resize(sent, b'a');
    s.write_all(&body).await.unwrap();
    s
}

/// Waits until `f` holds, up to `limit`.
async fn eventually(limit: Duration, f: impl Fn() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f()
}

#[tokio::test]
async fn a_client_gone_mid_upload_never_reaches_the_backend_with_an_infer() {
    let backend = counting_backend().await;
    let gw = gateway(&config(&backend.url())).await;
    let s = upload(gw.data_addr, "/v2/models/m/infer", 200_000, 100_000).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(s);
    tokio::time::sleep(Duration::from_millis(500)).await;
    // An infer is read whole before the backend is asked: it saw nothing.
    assert_eq!(backend.counts.get(), (0, 0, 0));
}

#[tokio::test]
async fn a_client_gone_mid_upload_cuts_the_forwarded_request() {
    let backend = counting_backend().await;
    let gw = gateway(&config(&backend.url())).await;
    let s = upload(gw.data_addr, "/v2/models/m/generate", 200_000, 100_000).await;
    let counts = backend.counts.clone();
    assert!(
        eventually(Duration::from_secs(3), || counts
            .connections
            .load(Ordering::SeqCst)
            == 1)
        .await,
        "the upload was not forwarded"
    );
    drop(s);
    assert!(
        eventually(Duration::from_secs(3), || counts
            .partial
            .load(Ordering::SeqCst)
            == 1)
        .await,
        "the backend request was not cut: {:?}",
        backend.counts.get()
    );
    assert_eq!(
        backend.counts.get(),
        (1, 0, 1),
        "the backend got a whole request"
    );
}

#[tokio::test]
async fn a_client_stalling_mid_upload_is_408_and_the_forwarded_request_cut() {
    let backend = counting_backend().await;
    let gw = gateway(&config(&backend.url())).await;
    let mut s = upload(gw.data_addr, "/v2/models/m/generate", 200_000, 100_000).await;
    let started = Instant::now();
    let mut reply = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut reply))
        .await
        .expect("the stalled upload was never cut")
        .ok();
    let text = String::from_utf8_lossy(&reply);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(
        text.ends_with(r#"{"error":"timed out waiting for the rest of the request body"}"#),
        "{text}"
    );
    assert!(started.elapsed() >= Duration::from_millis(400));
    let counts = backend.counts.clone();
    assert!(
        eventually(Duration::from_secs(3), || counts
            .partial
            .load(Ordering::SeqCst)
            == 1)
        .await,
        "{:?}",
        backend.counts.get()
    );
    assert_eq!(backend.counts.get(), (1, 0, 1));
}

#[tokio::test]
async fn a_client_that_stops_reading_frees_the_backend_connection() {
    let (freed_tx, mut freed_rx) = tokio::sync::mpsc::channel::<u64>(1);
    let backend = RawBackend::start(move |mut s, _| {
        let freed_tx = freed_tx.clone();
        async move {
            let mut buf = Vec::new();
            if let Some(Ok(_)) = read_request(&mut s, &mut buf).await {
                let head = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
                let _ = s.write_all(head.as_bytes()).await;
                let mut chunk = format!("{:x}\r\n", 64 << 10).into_bytes();
                chunk.extend_from_slice(&vec![b'x'; 64 << 10]);
                chunk.extend_from_slice(b"\r\n");
                // An endless stream, until the gateway lets go.
                let mut written = 0;
                while s.write_all(&chunk).await.is_ok() {
                    written += chunk.len() as u64;
                }
                let _ = freed_tx.send(written).await;
            }
        }
    })
    .await;
    let gw = gateway(&config(&backend.url())).await;
    let mut s = TcpStream::connect(gw.data_addr).await.unwrap();
    s.write_all(b"GET /v2/models/m/stream HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut first = vec![0u8; 4096];
    let n = s.read(&mut first).await.unwrap();
    assert!(String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"));
    // The client stops reading. The gateway stops reading the backend when
    // buffers fill, and lets the backend connection go after the idle time.
    let written = tokio::time::timeout(Duration::from_secs(10), freed_rx.recv())
        .await
        .expect("the backend connection is still held")
        .unwrap();
    assert!(written < 256 << 20, "{written} bytes");
    eprintln!("backend let go after writing {written} bytes");
    // Reading again: what was buffered, then an abort, never a last chunk.
    let mut rest = first[..n].to_vec();
    tokio::time::timeout(Duration::from_secs(10), async {
        let mut chunk = vec![0u8; 1 << 16];
        while let Ok(n) = s.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            rest.extend_from_slice(&chunk[..n]);
        }
    })
    .await
    .expect("the client's stream neither ended nor was aborted");
    assert!(!chunked_complete(&rest), "completed as if whole");
}
