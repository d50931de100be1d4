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

/// An HTTP/2 connection whose streams get no window: the client says its
/// streams take 0 bytes and never opens them (hyper's client releases
/// window only as the reply is read, and nothing is read).
async fn no_window(
    addr: std::net::SocketAddr,
) -> hyper::client::conn::http2::SendRequest<http_body_util::Full<bytes::Bytes>> {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (h2, conn) = hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
        .initial_stream_window_size(0)
        .adaptive_window(false)
        .handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    h2
}

/// Finding 4 of the security round: a client giving no HTTP/2 window
/// (and answering PINGs) writes nothing to time out on its socket, and
/// kept its streams, their slots and their buffered replies for ever.
/// The stream is reset after `send_timeout` now, its slot freed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_stream_given_no_window_is_reset_after_send_timeout() {
    let (_backend, gw) = setup().await;
    let mut h2 = no_window(gw.data_addr).await;
    let req = http::Request::get(format!("http://{}/v2/models/m/big", gw.data_addr))
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let asked = Instant::now();
    let resp = tokio::time::timeout(Duration::from_secs(5), h2.send_request(req))
        .await
        .expect("no head")
        .unwrap();
    assert_eq!(resp.status(), 200, "the head is not flow-controlled");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let busy = send(gw.data_addr, "GET", "/v2/health/ready", &[], "").await;
    assert_eq!(busy.status, 503, "the held stream holds the only slot");
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
    // The stream was reset: reading it now is an error, not a reply.
    use http_body_util::BodyExt;
    let mut body = resp.into_body();
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match body.frame().await {
                Some(Ok(_)) => continue,
                Some(Err(e)) => break Err(e),
                None => break Ok(()),
            }
        }
    })
    .await
    .expect("the reset stream hangs");
    let e = read.expect_err("a reset stream is not a whole reply");
    eprintln!("{e:?}");
    gw.shutdown().await;
}

/// Bytes allocated and not yet freed in this test binary: the heap a
/// held reply takes, which the process's RSS would not show going back
/// (glibc keeps small freed blocks).
#[allow(unsafe_code)]
mod live {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicUsize, Ordering};

    pub static BYTES: AtomicUsize = AtomicUsize::new(0);

    pub struct Counting;

    // SAFETY: every call goes to the system allocator with the caller's
    // own arguments; the count is a side effect that allocates nothing.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            BYTES.fetch_add(layout.size(), Ordering::Relaxed);
            // SAFETY: as the caller promised for `alloc`.
            unsafe { System.alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
            // SAFETY: as the caller promised for `dealloc`.
            unsafe { System.dealloc(ptr, layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            BYTES.fetch_add(new_size, Ordering::Relaxed);
            BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
            // SAFETY: as the caller promised for `realloc`.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    /// Live heap bytes, in MiB.
    pub fn mib() -> usize {
        BYTES.load(Ordering::Relaxed) >> 20
    }
}

/// The same for gRPC calls whose replies are held whole (2 connections
/// × 128 `ModelInfer` took all 256 slots and 1.3 GB): 16 calls of 4 MiB
/// replies on a connection that reads none. After `send_timeout` their
/// slots are free and their replies dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_calls_held_by_flow_control_give_back_slots_and_replies() {
    use prost::Message;
    use tensorgate::codec::grpc::frame;
    use tensorgate::codec::grpc::proto::inference::ModelInferRequest;
    use tensorgate::codec::grpc::proto::inference::model_infer_request::InferInputTensor;
    let demo = tensorgate_demo::spawn().await.unwrap();
    let gw = gateway(&format!(
        r#"
[server]
shutdown_grace = "2s"
send_timeout = "3s"
max_concurrent_requests = 16
queue_timeout = "200ms"
[backends.b]
url = "http://{}"
[[routes]]
name = "r"
default = true
backend = "b"
"#,
        demo.addr
    ))
    .await;
    // ramp: 1 Mi FP32 elements, 4 MiB of reply each.
    let message = ModelInferRequest {
        model_name: "ramp".into(),
        inputs: vec![InferInputTensor {
            name: "COUNT".into(),
            datatype: "INT64".into(),
            shape: vec![1],
            ..Default::default()
        }],
        raw_input_contents: vec![(1i64 << 20).to_le_bytes().to_vec().into()],
        ..Default::default()
    }
    .encode_to_vec();
    let body = bytes::Bytes::from(frame::encode(vec![message.into()]).unwrap().concat());
    let before = live::mib();
    let h2 = no_window(gw.data_addr).await;
    let calls = (0..16).map(|_| {
        let mut h2 = h2.clone();
        let req = http::Request::post(format!(
            "http://{}/inference.GRPCInferenceService/ModelInfer",
            gw.data_addr
        ))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(http_body_util::Full::new(body.clone()))
        .unwrap();
        async move { h2.send_request(req).await.unwrap() }
    });
    let held = tokio::time::timeout(Duration::from_secs(10), futures_join(calls))
        .await
        .expect("no heads");
    let asked = Instant::now();
    assert!(held.iter().all(|r| r.status() == 200));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let holding = live::mib();
    let busy = send(gw.data_addr, "GET", "/v2/health/ready", &[], "").await;
    assert_eq!(busy.status, 503, "16 held calls hold the 16 slots");
    let freed = loop {
        if send(gw.data_addr, "GET", "/v2/health/ready", &[], "")
            .await
            .status
            == 200
        {
            break asked.elapsed();
        }
        assert!(
            asked.elapsed() < Duration::from_secs(10),
            "slots still held"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(freed < Duration::from_secs(6), "{freed:?}");
    // Every held call is reset in turn (they started over about a
    // second): reading each now is an error, never a whole reply.
    use http_body_util::BodyExt;
    for resp in held {
        let mut body = resp.into_body();
        let read = tokio::time::timeout(Duration::from_secs(8), async {
            loop {
                match body.frame().await {
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => break Err(e),
                    None => break Ok(()),
                }
            }
        })
        .await
        .expect("a held call was never reset");
        assert!(read.is_err(), "a reset call read as a whole reply");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = live::mib();
    eprintln!(
        "heap: {before} MiB before, {holding} MiB holding 16 replies, {after} MiB after the resets ({freed:?})"
    );
    assert!(
        holding.saturating_sub(after) >= 32,
        "the held replies were not dropped: {before} / {holding} / {after} MiB"
    );
    gw.shutdown().await;
}

/// Every future of `futures`, run at once; their outputs in order.
async fn futures_join<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let tasks: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}
