//! Connections that never finish their handshake are closed after
//! `server.handshake_timeout`; HTTP/2 connections that did are kept,
//! pinged, and closed when idle for `header_read_timeout` or when the peer
//! stops answering pings. The backend sees none of the stalled clients.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const HANDSHAKE: Duration = Duration::from_millis(300);
/// Scheduling slack on a shared machine.
const MARGIN: Duration = Duration::from_millis(1500);

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const EMPTY_SETTINGS: &[u8] = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00";

fn server_keys(header_read_timeout: &str) -> String {
    format!(
        "handshake_timeout = \"300ms\"\nheader_read_timeout = \"{header_read_timeout}\"\nshutdown_grace = \"2s\""
    )
}

async fn setup(header_read_timeout: &str) -> (TestBackend, tensorgate::server::Running) {
    let backend = TestBackend::start(|_| async { reply(200, &[], "ok") }).await;
    let gw = gateway(&server_config(
        &backend.url(),
        &server_keys(header_read_timeout),
    ))
    .await;
    (backend, gw)
}

/// Connects, sends `first`, and returns when the gateway closed the
/// connection, failing if it was still open after the handshake timeout
/// and the margin.
async fn closed_after_sending(gw: &tensorgate::server::Running, first: &[u8]) -> Duration {
    closed_after(gw, first, |got| {
        assert!(got.is_empty(), "the gateway answered: {got:?}")
    })
    .await
}

async fn closed_after(
    gw: &tensorgate::server::Running,
    first: &[u8],
    check: impl Fn(&[u8]),
) -> Duration {
    let mut stream = TcpStream::connect(gw.data_addr).await.unwrap();
    let since = Instant::now();
    stream.write_all(first).await.unwrap();
    let (after, got) = until_closed(&mut stream, since, HANDSHAKE + MARGIN)
        .await
        .unwrap_or_else(|| panic!("still open after {:?}: sent {first:?}", HANDSHAKE + MARGIN));
    assert!(after >= HANDSHAKE - Duration::from_millis(20), "{after:?}");
    check(&got);
    after
}

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_handshake_timeout() {
    let (backend, gw) = setup("30s").await;
    closed_after_sending(&gw, b"").await;
    assert!(backend.requests().is_empty());
}

#[tokio::test]
async fn a_client_sending_only_the_http2_request_line_is_closed() {
    let (backend, gw) = setup("30s").await;
    closed_after_sending(&gw, b"PRI * HTTP/2.0\r\n").await;
    // The whole preface but no SETTINGS frame is no handshake either
    // (connection-level frames go out: SETTINGS, WINDOW_UPDATE, maybe a
    // PING; never a response).
    closed_after(&gw, PREFACE, |got| {
        assert!(
            frames(got)
                .iter()
                .all(|&(t, _)| t == SETTINGS || t == WINDOW_UPDATE || t == PING),
            "{got:?}"
        )
    })
    .await;
    assert!(backend.requests().is_empty());
}

#[tokio::test]
async fn half_a_request_line_is_closed_after_the_handshake_timeout() {
    // header_read_timeout is long: the handshake timeout is what closes it.
    let (backend, gw) = setup("30s").await;
    closed_after_sending(&gw, b"GET /v2/hea").await;
    closed_after_sending(&gw, b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n").await;
    assert!(backend.requests().is_empty());
}

#[tokio::test]
async fn a_keep_alive_connection_is_timed_by_header_read_timeout_after_its_first_request() {
    let (backend, gw) = setup("1s").await;
    let mut stream = TcpStream::connect(gw.data_addr).await.unwrap();
    stream
        .write_all(b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let since = Instant::now();
    // Served, then idle: open past the handshake timeout, closed by the
    // header read timeout.
    let (after, got) = until_closed(&mut stream, since, Duration::from_secs(1) + MARGIN)
        .await
        .expect("an idle keep-alive connection stayed open past header_read_timeout");
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(after >= Duration::from_millis(900), "{after:?}");
    assert_eq!(backend.requests().len(), 1);
}

#[tokio::test]
async fn a_second_request_head_that_never_ends_is_closed_after_header_read_timeout() {
    let (backend, gw) = setup("1s").await;
    let mut stream = TcpStream::connect(gw.data_addr).await.unwrap();
    stream
        .write_all(b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\nGET /v2/hea")
        .await
        .unwrap();
    let since = Instant::now();
    // The first request is answered; the second head is never finished
    // and is not answered: the connection is closed without a reply.
    let (after, got) = until_closed(&mut stream, since, Duration::from_secs(1) + MARGIN)
        .await
        .expect("a half-sent second head kept the connection open past header_read_timeout");
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert_eq!(text.matches("HTTP/1.1 ").count(), 1, "{text}");
    assert!(after >= Duration::from_millis(900), "{after:?}");
    assert_eq!(backend.requests().len(), 1);
}

async fn h2_client(
    gw: &tensorgate::server::Running,
) -> (
    hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    tokio::task::JoinHandle<Instant>,
) {
    let stream = TcpStream::connect(gw.data_addr).await.unwrap();
    let (send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    let ended = tokio::spawn(async move {
        let _ = conn.await;
        Instant::now()
    });
    (send, ended)
}

const SIMPLE: &str = r#"{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}"#;

/// An inference on the demo's `simple` model over HTTP/2.
async fn h2_infer(send: &mut hyper::client::conn::http2::SendRequest<Full<Bytes>>) -> (u16, Bytes) {
    let req = http::Request::post("http://localhost/v2/models/simple/infer")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(SIMPLE.as_bytes())))
        .unwrap();
    let resp = send.send_request(req).await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.into_body().collect().await.unwrap().to_bytes())
}

#[tokio::test]
async fn an_http2_connection_past_its_handshake_is_kept_then_closed_when_idle() {
    let demo = tensorgate_demo::spawn().await.unwrap();
    let backend = format!("http://{}", demo.addr);
    let gw = gateway(&server_config(&backend, &server_keys("1s"))).await;
    let (mut send, ended) = h2_client(&gw).await;
    // Well past the handshake timeout, the connection still serves.
    tokio::time::sleep(HANDSHAKE * 2).await;
    let (status, body) = h2_infer(&mut send).await;
    assert_eq!(status, 200, "{body:?}");
    let served = Instant::now();
    // Idle for header_read_timeout: the gateway closes it (GOAWAY).
    let ended = tokio::time::timeout(Duration::from_secs(1) + MARGIN, ended)
        .await
        .expect("an idle HTTP/2 connection stayed open")
        .unwrap();
    let idle = ended - served;
    assert!(idle >= Duration::from_millis(900), "{idle:?}");
}

const SETTINGS: u8 = 0x4;
const WINDOW_UPDATE: u8 = 0x8;
const PING: u8 = 0x6;

/// Splits HTTP/2 frames: (type, flags) of each complete frame.
fn frames(mut bytes: &[u8]) -> Vec<(u8, u8)> {
    let mut out = Vec::new();
    while bytes.len() >= 9 {
        let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
        out.push((bytes[3], bytes[4]));
        bytes = &bytes[(9 + len).min(bytes.len())..];
    }
    out
}

#[tokio::test]
async fn a_dead_http2_peer_is_pinged_and_dropped() {
    let (backend, gw) = setup("30s").await;
    let mut stream = TcpStream::connect(gw.data_addr).await.unwrap();
    let since = Instant::now();
    stream.write_all(PREFACE).await.unwrap();
    stream.write_all(EMPTY_SETTINGS).await.unwrap();
    // The peer then never answers: no SETTINGS ack, no PING ack. Pings go
    // out after handshake_timeout and must be answered within as long.
    let (after, got) = until_closed(&mut stream, since, 2 * HANDSHAKE + MARGIN)
        .await
        .expect("a peer that answers no ping is still connected");
    let kinds = frames(&got);
    assert!(
        kinds.iter().any(|&(t, flags)| t == PING && flags & 1 == 0),
        "no PING before the close: {kinds:?}"
    );
    assert!(
        after >= 2 * HANDSHAKE - Duration::from_millis(20),
        "{after:?}"
    );
    assert!(backend.requests().is_empty());
}
