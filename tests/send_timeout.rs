//! `server.send_timeout`: a client that takes no reply bytes for that long
//! is dropped and its request slot freed (here a passthrough reply of
//! 64 MB, whose backend stream would wait a minute: only send_timeout can
//! end it sooner); a client reading slowly but steadily is never cut,
//! however long the whole reply takes.

mod common;

use std::time::{Duration, Instant};

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const SIZE: usize = 64 << 20;

async fn setup() -> (TestBackend, tensorgate::server::Running) {
    let big = bytes::Bytes::from(vec![7u8; SIZE]);
    let backend = TestBackend::start(move |_| {
        let big = big.clone();
        async move { reply(200, &[("content-type", "application/octet-stream")], big) }
    })
    .await;
    let gw = gateway(&format!(
        r#"
[server]
shutdown_grace = "2s"
send_timeout = "1s"
max_concurrent_requests = 1
queue_timeout = "200ms"
[backends.b]
url = "{}"
stream_idle_timeout = "60s"
[[routes]]
name = "r"
default = true
backend = "b"
"#,
        backend.url()
    ))
    .await;
    (backend, gw)
}

async fn small_window(addr: std::net::SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(64 << 10).unwrap();
    socket.connect(addr).await.unwrap()
}

/// A request for the 64 MB reply, on a connection that reads nothing yet.
async fn ask(addr: std::net::SocketAddr) -> TcpStream {
    let mut s = small_window(addr).await;
    s.write_all(b"GET /v2/models/m/big HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_takes_nothing_is_dropped_after_send_timeout() {
    let (_backend, gw) = setup().await;
    let mut stalled = ask(gw.data_addr).await;
    let asked = Instant::now();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let busy = send(gw.data_addr, "GET", "/v2/health/ready", &[], "").await;
    assert_eq!(busy.status, 503, "the stalled reply holds the only slot");
    let freed = loop {
        if send(gw.data_addr, "GET", "/v2/health/ready", &[], "")
            .await
            .status
            == 200
        {
            break asked.elapsed();
        }
        assert!(asked.elapsed() < Duration::from_secs(6), "slot still held");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(freed >= Duration::from_secs(1), "{freed:?}");
    assert!(freed < Duration::from_secs(4), "{freed:?}");
    // What the client reads now is part of the reply, then the close.
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 20];
    while let Ok(Ok(n @ 1..)) =
        tokio::time::timeout(Duration::from_secs(5), stalled.read(&mut buf)).await
    {
        got += n;
    }
    assert!(got < SIZE, "the whole reply came through: {got} bytes");
    gw.shutdown().await;
}

/// Progress shows where the gateway writes: the kernel wakes a writer only
/// once a third of the socket's send buffer is free (on loopback it grows
/// to megabytes), so "steady" here is 256 KiB every 100 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_steady_reader_is_never_cut() {
    let (_backend, gw) = setup().await;
    let mut s = TcpStream::connect(gw.data_addr).await.unwrap();
    s.write_all(b"GET /v2/models/m/big HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    // The first bytes (the head), and how many came in all.
    let (mut seen, mut total) = (Vec::new(), 0usize);
    let mut buf = vec![0u8; 256 << 10];
    // For 4 s: each pause under send_timeout, the whole far over it.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(4) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed after {total} bytes, {:?}", started.elapsed());
        if seen.len() < 4096 {
            seen.extend_from_slice(&buf[..n]);
        }
        total += n;
    }
    let head = seen.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(seen.starts_with(b"HTTP/1.1 200"));
    // Then it reads the rest at full speed and gets all of it.
    while total < head + SIZE {
        let n = tokio::time::timeout(Duration::from_secs(20), s.read(&mut buf))
            .await
            .expect("stalled")
            .unwrap();
        assert!(n > 0, "closed after {} body bytes", total - head);
        total += n;
    }
    assert_eq!(total, head + SIZE);
    gw.shutdown().await;
}
