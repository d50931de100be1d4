//! Refusals answered from a request's head (429 over a rate limit, 401
//! without a key, 413 for a declared length over the limit) before its
//! body is read keep the connection usable: a small body is read and
//! thrown away so the next request can follow on the same connection, and
//! when a body is too large to be (or its length unknown) the refusal says
//! `Connection: close`, so a client reusing connections opens a new one
//! instead of writing into one that is closing. A keep-alive client only
//! ever sees real answers, never a broken pipe.

mod common;

use std::time::{Duration, Instant};

use common::raw::{RawResponse, read_response};
use common::*;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const BODY: &str = r#"{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[1]}]}"#;

/// A connection that writes a request's head, then (a moment later, as
/// Python's http.client does in two sends) its body, and reads the
/// response; it reconnects when told the connection closes.
struct KeepAlive {
    addr: std::net::SocketAddr,
    stream: Option<TcpStream>,
    buf: Vec<u8>,
    /// Connections opened, the first included.
    opened: u32,
}

impl KeepAlive {
    fn new(addr: std::net::SocketAddr) -> Self {
        KeepAlive {
            addr,
            stream: None,
            buf: Vec::new(),
            opened: 0,
        }
    }

    /// One request; `Err` for a connection that failed under it (a
    /// broken pipe, a reset, a close before the answer).
    async fn request(&mut self, head: &str, body: &[u8]) -> Result<RawResponse, String> {
        if self.stream.is_none() {
            self.stream = Some(
                TcpStream::connect(self.addr)
                    .await
                    .map_err(|e| e.to_string())?,
            );
            self.buf.clear();
            self.opened += 1;
        }
        let s = self.stream.as_mut().unwrap();
        s.set_nodelay(true).unwrap();
        let exchange = async {
            s.write_all(head.as_bytes()).await?;
            tokio::time::sleep(Duration::from_millis(2)).await;
            s.write_all(body).await?;
            read_response(s, &mut self.buf).await
        };
        let got = tokio::time::timeout(Duration::from_secs(5), exchange).await;
        let resp = match got {
            Ok(Ok(Some(resp))) => resp,
            Ok(Ok(None)) => {
                self.stream = None;
                return Err("closed before the answer".into());
            }
            Ok(Err(e)) => {
                self.stream = None;
                return Err(e.to_string());
            }
            Err(_) => {
                self.stream = None;
                return Err("no answer in 5 s".into());
            }
        };
        if resp.closes() {
            self.stream = None;
        }
        Ok(resp)
    }
}

fn infer_head(extra: &str, len: usize) -> String {
    format!(
        "POST /v2/models/identity/infer HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
         content-length: {len}\r\n{extra}\r\n"
    )
}

/// The issue's reproduction: 150 requests/s over 6 keep-alive connections
/// against a route limited to 50/s. Every answer is a 200 or a 429; no
/// request fails on its connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_clients_over_a_rate_limit_only_see_200_and_429() {
    let backend = tensorgate_demo::spawn().await.unwrap();
    let gw = gateway(&simple_config(
        &backend.url(),
        "[routes.rate_limit]\nrequests_per_second = 50\nburst = 10\n",
    ))
    .await;
    let addr = gw.data_addr;
    let mut clients = Vec::new();
    for _ in 0..6 {
        clients.push(tokio::spawn(async move {
            let mut conn = KeepAlive::new(addr);
            // 25 requests/s each for 3 s.
            let mut tick = tokio::time::interval(Duration::from_millis(40));
            let started = Instant::now();
            let (mut ok, mut limited, mut failed) = (0u32, 0u32, Vec::new());
            while started.elapsed() < Duration::from_secs(3) {
                tick.tick().await;
                match conn
                    .request(&infer_head("", BODY.len()), BODY.as_bytes())
                    .await
                {
                    Ok(r) if r.status == 200 => ok += 1,
                    Ok(r) if r.status == 429 => limited += 1,
                    Ok(r) => failed.push(format!("status {}", r.status)),
                    Err(e) => failed.push(e),
                }
            }
            (ok, limited, failed, conn.opened)
        }));
    }
    let (mut ok, mut limited, mut failed, mut opened) = (0, 0, Vec::new(), 0);
    for c in clients {
        let (o, l, f, n) = c.await.unwrap();
        ok += o;
        limited += l;
        failed.extend(f);
        opened += n;
    }
    eprintln!(
        "{ok} × 200, {limited} × 429, {} failed, {opened} connections",
        failed.len()
    );
    assert!(
        failed.is_empty(),
        "{} failed: {:?}",
        failed.len(),
        &failed[..failed.len().min(5)]
    );
    assert!(ok > 100 && limited > 100, "{ok} × 200, {limited} × 429");
    // Small refused bodies are thrown away: the connections carried on.
    assert_eq!(opened, 6, "connections were reopened");
    gw.shutdown().await;
}

/// A 401 from the head: a small body is read and thrown away, and the
/// connection carries the next request; a declared body too large to
/// throw away gets `Connection: close` with the refusal.
#[tokio::test]
async fn a_401_keeps_the_connection_or_says_close() {
    let backend = tensorgate_demo::spawn().await.unwrap();
    let keys = keys_file("alice:alice-key-0123456789\n");
    let gw = gateway(&simple_config(
        &backend.url(),
        &format!("[routes.auth]\nkeys_file = \"{}\"\n", keys.display()),
    ))
    .await;
    let mut conn = KeepAlive::new(gw.data_addr);
    let resp = conn
        .request(&infer_head("", BODY.len()), BODY.as_bytes())
        .await
        .unwrap();
    assert_eq!(resp.status, 401);
    assert!(!resp.closes(), "a small refused body keeps the connection");
    let auth = "authorization: Bearer alice-key-0123456789\r\n";
    let resp = conn
        .request(&infer_head(auth, BODY.len()), BODY.as_bytes())
        .await
        .unwrap();
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(conn.opened, 1);

    // 8 MiB declared: more than is read after a refusal.
    let big = vec![b' '; 8 << 20];
    let mut s = TcpStream::connect(gw.data_addr).await.unwrap();
    s.write_all(infer_head("", big.len()).as_bytes())
        .await
        .unwrap();
    let mut buf = Vec::new();
    let resp = tokio::time::timeout(Duration::from_secs(5), read_response(&mut s, &mut buf))
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(resp.status, 401);
    assert_eq!(resp.header("connection"), Some("close"));
    gw.shutdown().await;
}

/// A declared length over the limit: 413 with `Connection: close`.
#[tokio::test]
async fn a_413_from_the_head_says_close() {
    let backend = tensorgate_demo::spawn().await.unwrap();
    let gw = gateway(&simple_config(
        &backend.url(),
        "[routes.limits]\nmax_body_bytes = 1024\n",
    ))
    .await;
    let mut s = TcpStream::connect(gw.data_addr).await.unwrap();
    s.write_all(infer_head("", 4 << 20).as_bytes())
        .await
        .unwrap();
    let mut buf = Vec::new();
    let resp = tokio::time::timeout(Duration::from_secs(5), read_response(&mut s, &mut buf))
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(resp.status, 413);
    assert_eq!(resp.header("connection"), Some("close"));
    // A small one over the limit is thrown away: the connection carries on.
    let mut conn = KeepAlive::new(gw.data_addr);
    let small = vec![b' '; 2000];
    let resp = conn
        .request(&infer_head("", small.len()), &small)
        .await
        .unwrap();
    assert_eq!(resp.status, 413);
    assert!(!resp.closes());
    let resp = conn
        .request(&infer_head("", BODY.len()), BODY.as_bytes())
        .await
        .unwrap();
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(conn.opened, 1);
    gw.shutdown().await;
}
