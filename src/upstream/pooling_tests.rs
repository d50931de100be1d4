//! The HTTP/1 client's connection pools against loopback servers that
//! count the connections they accept and see closed: reuse, a pooled
//! connection the server closed, the idle timeout, the cap on idle
//! connections, replies that close their connection, and one pool per
//! worker thread.

use std::convert::Infallible;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::{Response, StatusCode};
use http_body_util::BodyExt;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::http1::Connection;
use super::*;
use crate::http::body::full;

/// A loopback replica counting connections accepted and closed.
struct Counting {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    closed: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Counting {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Counting {
    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    fn closed(&self) -> usize {
        self.closed.load(Ordering::SeqCst)
    }
}

/// How the counting replica answers.
#[derive(Clone, Copy)]
struct Answer {
    /// `Connection: close` on every reply.
    close: bool,
    /// Time before each reply.
    delay: Duration,
    /// The body comes in two parts 300 ms apart (chunked).
    trickle: bool,
}

const KEEP: Answer = Answer {
    close: false,
    delay: Duration::ZERO,
    trickle: false,
};

/// A hyper server answering `{}` with 200 to every request.
async fn counting(answer: Answer) -> Counting {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let closed = Arc::new(AtomicUsize::new(0));
    let (a, c) = (accepted.clone(), closed.clone());
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            a.fetch_add(1, Ordering::SeqCst);
            let c = c.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |_req| async move {
                    tokio::time::sleep(answer.delay).await;
                    let body = if answer.trickle {
                        let (tx, rx) = tokio::sync::mpsc::channel(2);
                        tokio::spawn(async move {
                            let _ = tx
                                .send(Ok(http_body::Frame::data(Bytes::from_static(b"{"))))
                                .await;
                            tokio::time::sleep(Duration::from_millis(300)).await;
                            let _ = tx
                                .send(Ok(http_body::Frame::data(Bytes::from_static(b"}"))))
                                .await;
                        });
                        let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
                        http_body_util::StreamBody::new(stream).boxed_unsync()
                    } else {
                        full(Bytes::from_static(b"{}"))
                    };
                    let mut resp = Response::new(body);
                    if answer.close {
                        resp.headers_mut()
                            .insert(http::header::CONNECTION, "close".parse().unwrap());
                    }
                    Ok::<_, Infallible>(resp)
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
                c.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    Counting {
        addr,
        accepted,
        closed,
        task,
    }
}

fn upstream(addr: SocketAddr, max_idle: usize, idle: Duration) -> Upstream {
    let mut b = Backend::new("b", format!("http://{addr}").parse().unwrap());
    b.health.enabled = false;
    b.connect_timeout = Duration::from_millis(500);
    b.request_timeout = Duration::from_secs(2);
    b.pool_max_idle_per_host = max_idle;
    b.pool_idle_timeout = idle;
    Upstream::new(Arc::new(b))
}

/// One GET through the upstream, its body read to the end.
async fn get(u: &Upstream) -> (StatusCode, Bytes) {
    let resp = u.send(Outgoing::get("/v2/models/m"), None).await.unwrap();
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, body)
}

/// Waits up to a second for `cond`.
async fn eventually(cond: impl Fn() -> bool) -> bool {
    for _ in 0..100 {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cond()
}

#[tokio::test]
async fn sequential_requests_share_one_connection() {
    let s = counting(KEEP).await;
    let u = upstream(s.addr, 8, Duration::from_secs(30));
    for _ in 0..20 {
        assert_eq!(get(&u).await, (StatusCode::OK, Bytes::from_static(b"{}")));
    }
    // Infers with a body too.
    for _ in 0..5 {
        let mut out = Outgoing::get("/v2/models/m/infer");
        out.method = Method::POST;
        out.body = OutBody::Chunks(vec![Bytes::from_static(b"{\"inputs\":[]}")]);
        let resp = u.send(out, None).await.unwrap();
        resp.into_body().collect().await.unwrap();
    }
    assert_eq!(s.accepted(), 1);
    assert_eq!(s.closed(), 0);
}

#[tokio::test]
async fn a_reply_dropped_before_its_end_does_not_return_its_connection() {
    let s = counting(Answer {
        trickle: true,
        ..KEEP
    })
    .await;
    let u = upstream(s.addr, 8, Duration::from_secs(30));
    let resp = u.send(Outgoing::get("/x"), None).await.unwrap();
    let mut body = resp.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(first, "{");
    drop(body);
    assert_eq!(get(&u).await, (StatusCode::OK, Bytes::from_static(b"{}")));
    assert_eq!(s.accepted(), 2, "the cut reply's connection was not reused");
    assert!(eventually(|| s.closed() == 1).await, "and was closed");
    // Read whole, a trickled reply leaves its connection for the next.
    get(&u).await;
    assert_eq!(s.accepted(), 2);
}

/// A reply hyper has read whole, dropped unread (a retried 503, an answer
/// the caller did not need), leaves its connection reusable.
#[tokio::test]
async fn a_reply_read_whole_by_hyper_but_dropped_unread_returns_its_connection() {
    let s = counting(KEEP).await;
    let u = upstream(s.addr, 8, Duration::from_secs(30));
    for _ in 0..3 {
        let resp = u.send(Outgoing::get("/x"), None).await.unwrap();
        // Lets the connection's task finish the exchange.
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(resp);
    }
    assert_eq!(s.accepted(), 1);
}

#[tokio::test]
async fn replies_with_connection_close_are_not_reused() {
    let s = counting(Answer {
        close: true,
        ..KEEP
    })
    .await;
    let u = upstream(s.addr, 8, Duration::from_secs(30));
    for _ in 0..3 {
        assert_eq!(get(&u).await.0, StatusCode::OK);
    }
    assert_eq!(s.accepted(), 3);
}

#[tokio::test]
async fn idle_connections_are_closed_after_the_idle_timeout() {
    let s = counting(KEEP).await;
    let u = upstream(s.addr, 8, Duration::from_millis(200));
    get(&u).await;
    get(&u).await;
    assert_eq!(s.accepted(), 1);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(s.closed(), 0, "not idle long enough yet");
    // The sweep runs every 100 ms: closed by 200 + 100 ms, with margin.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(s.closed(), 1, "closed by the sweep, with no request");
    get(&u).await;
    assert_eq!(s.accepted(), 2, "a new connection after the timeout");
}

#[tokio::test]
async fn at_most_max_idle_connections_are_kept() {
    let s = counting(Answer {
        delay: Duration::from_millis(100),
        ..KEEP
    })
    .await;
    let u = upstream(s.addr, 1, Duration::from_secs(30));
    // Three at once need three connections; one stays idle after.
    let (a, b, c) = tokio::join!(get(&u), get(&u), get(&u));
    assert_eq!([a.0, b.0, c.0], [StatusCode::OK; 3]);
    assert_eq!(s.accepted(), 3);
    assert!(
        eventually(|| s.closed() == 2).await,
        "{} closed",
        s.closed()
    );
    get(&u).await;
    assert_eq!(s.accepted(), 3, "the one kept was reused");
}

/// A replica that closes every connection right after its reply, with
/// keep-alive in the reply: the pooled connection is dead when asked next.
fn closing_after_each_reply() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let a = accepted.clone();
    std::thread::spawn(move || {
        // Bounded: at most 8 connections, then the thread ends.
        for stream in listener.incoming().take(8) {
            let Ok(mut stream) = stream else { return };
            a.fetch_add(1, Ordering::SeqCst);
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n{}",
            );
            // Closed a little later, once the client has pooled it.
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    (addr, accepted)
}

/// The backend's close has arrived but the connection's task has not run
/// yet (the thread was busy): the connection still looks ready when taken.
/// hyper gives the request back unsent; it goes on a new connection and
/// the caller sees no error.
#[tokio::test]
async fn a_pooled_connection_the_server_closed_is_replaced_unseen() {
    let (addr, accepted) = closing_after_each_reply();
    let u = upstream(addr, 8, Duration::from_secs(30));
    for i in 1..=3 {
        assert_eq!(get(&u).await.0, StatusCode::OK, "request {i}");
        // Blocks the runtime: the close is not seen before the next send.
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 3);
    // And when the close was seen first, the dead connection is skipped.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(get(&u).await.0, StatusCode::OK);
    assert_eq!(accepted.load(Ordering::SeqCst), 4);
}

/// The race `retry_canceled_requests` covered: the backend closed a
/// pooled connection, the connection still looked ready when it was
/// taken, and its task saw the close before it wrote the request. hyper
/// hands the request back unsent; it goes on a new connection, and even a
/// POST (never sent again once some of it may have left) succeeds. The
/// pooled connection's task is driven here by hand to order the events.
#[tokio::test]
async fn a_request_handed_back_by_a_closed_pooled_connection_goes_on_a_new_one() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (close_first, close_rx) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        // The first connection is closed when told, unused.
        let (first, _) = listener.accept().unwrap();
        close_rx.recv_timeout(Duration::from_secs(5)).unwrap();
        drop(first);
        // The second answers one request.
        let (mut second, _) = listener.accept().unwrap();
        second
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            match second.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        second
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
            .unwrap();
        String::from_utf8_lossy(&seen).into_owned()
    });

    let u = upstream(addr, 8, Duration::from_secs(30));
    let replica = u.replicas()[0].clone();
    let client = replica.http1().expect("an HTTP/1 replica");
    // A pooled connection whose task is not spawned: polled once, it is
    // ready for a request.
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (tx, mut conn) =
        hyper::client::conn::http1::handshake::<_, crate::http::body::Body>(TokioIo::new(stream))
            .await
            .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(20), &mut conn)
            .await
            .is_err()
    );
    assert!(tx.is_ready());
    client
        .pool()
        .put(Connection::new(tx), tokio::time::Instant::now());
    // The backend closes it; the runtime sees the close (it parks while
    // sleeping), but the connection's task is not run.
    close_first.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;

    let mut out = Outgoing::get("/v2/models/m/infer");
    out.method = Method::POST;
    out.body = OutBody::Stream(full(Bytes::from_static(b"{}")));
    let u2 = u.clone();
    let sent = tokio::spawn(async move { u2.send(out, None).await.map(|r| r.status()) });
    // The request is queued on the pooled connection...
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!sent.is_finished());
    // ...whose task now runs: it finds the close before the request.
    let _ = tokio::time::timeout(Duration::from_millis(100), &mut conn).await;
    drop(conn);
    let status = tokio::time::timeout(Duration::from_secs(2), sent)
        .await
        .expect("answered")
        .unwrap();
    assert_eq!(status.unwrap(), StatusCode::OK);
    let request = tokio::task::spawn_blocking(move || server.join().unwrap())
        .await
        .unwrap();
    assert!(
        request.starts_with("POST /v2/models/m/infer HTTP/1.1\r\n"),
        "{request}"
    );
}

/// A replica answering once per connection as HTTP/1.0 without
/// keep-alive, and then keeping the connection open.
fn http10_replica() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let a = accepted.clone();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { return };
            a.fetch_add(1, Ordering::SeqCst);
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n{}");
            open.push(stream);
        }
    });
    (addr, accepted)
}

#[tokio::test]
async fn http10_replies_are_not_reused() {
    let (addr, accepted) = http10_replica();
    let u = upstream(addr, 8, Duration::from_secs(30));
    for _ in 0..3 {
        assert_eq!(get(&u).await.0, StatusCode::OK);
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 3);
}

/// Each worker thread keeps its own connections: a second worker does not
/// take the first one's idle connection (driven by the first's runtime),
/// and each reuses its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn each_worker_thread_has_its_own_pool() {
    let s = counting(KEEP).await;
    let u = upstream(s.addr, 8, Duration::from_secs(30));
    let (first_done, first_done_rx) = std::sync::mpsc::channel::<()>();
    let (second_done, second_done_rx) = std::sync::mpsc::channel::<()>();
    let worker = |n: usize,
                  u: Upstream,
                  wait: Option<std::sync::mpsc::Receiver<()>>,
                  done: std::sync::mpsc::Sender<()>,
                  hold: Option<std::sync::mpsc::Receiver<()>>| {
        std::thread::spawn(move || {
            crate::worker::enter(n);
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            if let Some(w) = wait {
                w.recv_timeout(Duration::from_secs(5)).unwrap();
            }
            rt.block_on(async {
                for _ in 0..3 {
                    assert_eq!(get(&u).await.0, StatusCode::OK);
                }
            });
            done.send(()).unwrap();
            // Keeps its runtime (and its connection) alive meanwhile.
            if let Some(h) = hold {
                h.recv_timeout(Duration::from_secs(5)).unwrap();
            }
        })
    };
    let (release, hold) = std::sync::mpsc::channel::<()>();
    let a = worker(0, u.clone(), None, first_done, Some(hold));
    let b = worker(1, u.clone(), Some(first_done_rx), second_done, None);
    let joined = tokio::task::spawn_blocking(move || {
        second_done_rx.recv_timeout(Duration::from_secs(5)).unwrap();
        release.send(()).unwrap();
        a.join().unwrap();
        b.join().unwrap();
    });
    joined.await.unwrap();
    assert_eq!(s.accepted(), 2, "one connection per worker, each reused");
}
