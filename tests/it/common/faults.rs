//! Raw TCP peers for fault tests: a backend that does exactly what a test
//! scripts on the socket (close after a reply, stop mid-body, answer one
//! byte at a time, never answer), and a client that sees the gateway's
//! bytes as they come off the wire (to tell an aborted chunked body from a
//! complete one).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::{Got, post_json, send};

/// The infer path of model `m`, a one-value request, and a JSON reply.
pub const INFER: &str = "/v2/models/m/infer";
pub const INFER_BODY: &str =
    r#"{"inputs":[{"name":"X","shape":[1],"datatype":"INT32","data":[1]}]}"#;
pub const REPLY: &str =
    r#"{"model_name":"m","outputs":[{"name":"Y","datatype":"INT32","shape":[1],"data":[7]}]}"#;

pub fn config(url: &str, backend_extra: &str) -> String {
    format!(
        r#"
[server]
shutdown_grace = "1s"
[backends.b]
url = "{url}"
connect_timeout = "300ms"
request_timeout = "2s"
stream_idle_timeout = "400ms"
{backend_extra}
[[routes]]
name = "r"
default = true
backend = "b"
"#
    )
}

pub fn json_reply(_: &RawRequest) -> Vec<u8> {
    response(
        200,
        &[("content-type", "application/json")],
        REPLY.as_bytes(),
    )
}

/// An infer (even `i`) or a metadata GET (odd `i`).
pub async fn infer_or_get(addr: std::net::SocketAddr, i: usize) -> Got {
    if i.is_multiple_of(2) {
        post_json(addr, INFER, INFER_BODY).await
    } else {
        send(addr, "GET", "/v2/models/m", &[], "").await
    }
}

pub async fn run_loop(gw: &tensorgate::server::Running, n: usize) -> Vec<(usize, Got)> {
    let mut failed = Vec::new();
    for i in 0..n {
        let got = infer_or_get(gw.data_addr, i).await;
        if got.status != 200 {
            failed.push((i, got));
        }
    }
    failed
}

/// A request as a raw peer read it.
#[derive(Clone, Debug)]
pub struct RawRequest {
    pub head: String,
    pub body: Vec<u8>,
}

impl RawRequest {
    pub fn method(&self) -> &str {
        self.head.split(' ').next().unwrap_or("")
    }

    pub fn path(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or("")
    }
}

/// What a raw peer counted.
#[derive(Debug, Default)]
pub struct Counts {
    pub connections: AtomicU64,
    /// Requests read whole (head and declared body).
    pub requests: AtomicU64,
    /// Requests whose head arrived but whose body did not (cut off).
    pub partial: AtomicU64,
}

impl Counts {
    pub fn get(&self) -> (u64, u64, u64) {
        (
            self.connections.load(Ordering::SeqCst),
            self.requests.load(Ordering::SeqCst),
            self.partial.load(Ordering::SeqCst),
        )
    }
}

/// Reads one HTTP/1 request with a `Content-Length`, chunked or no body.
/// `None` when the peer closed before a whole head; `Err(head)` when the
/// body was cut short.
pub async fn read_request(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> Option<Result<RawRequest, String>> {
    let end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i + 4;
        }
        if !fill(s, buf).await {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    };
    buf.drain(..end);
    let body = if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        read_chunked(s, buf).await
    } else {
        let len = header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        read_exact(s, buf, len).await
    };
    Some(
        body.map(|body| RawRequest {
            head: head.clone(),
            body,
        })
        .ok_or(head),
    )
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads more into `buf`; false at the end of the stream (or an error).
async fn fill(s: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = vec![0u8; 65536];
    match s.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

async fn read_exact(s: &mut TcpStream, buf: &mut Vec<u8>, len: usize) -> Option<Vec<u8>> {
    while buf.len() < len {
        if !fill(s, buf).await {
            return None;
        }
    }
    Some(buf.drain(..len).collect())
}

async fn read_chunked(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let eol = loop {
            if let Some(i) = find(buf, b"\r\n") {
                break i;
            }
            if !fill(s, buf).await {
                return None;
            }
        };
        let size_text = String::from_utf8_lossy(&buf[..eol]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        buf.drain(..eol + 2);
        let data = read_exact(s, buf, size + 2).await?;
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(&data[..size]);
    }
}

/// An HTTP/1.1 response with a `Content-Length`.
pub fn response(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\n", body.len());
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// A backend on a raw socket: `serve` gets each connection and the counts.
pub struct RawBackend {
    pub addr: SocketAddr,
    pub counts: Arc<Counts>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RawBackend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RawBackend {
    pub async fn start<F, Fut>(serve: F) -> RawBackend
    where
        F: Fn(TcpStream, Arc<Counts>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        let serve = Arc::new(serve);
        let task = tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                c.connections.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(s, c.clone()));
            }
        });
        RawBackend { addr, counts, task }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A keep-alive backend answering every request with `reply(request)`,
    /// which closes the connection after a reply when `close(n)` says so
    /// (`n` counts replies on the connection), without `Connection: close`.
    pub async fn closing<R, C>(reply: R, close: C) -> RawBackend
    where
        R: Fn(&RawRequest) -> Vec<u8> + Send + Sync + 'static,
        C: Fn(u64) -> bool + Send + Sync + 'static,
    {
        let reply = Arc::new(reply);
        let close = Arc::new(close);
        RawBackend::start(move |mut s, counts| {
            let reply = reply.clone();
            let close = close.clone();
            async move {
                let mut buf = Vec::new();
                let mut n = 0;
                while let Some(req) = read_request(&mut s, &mut buf).await {
                    let Ok(req) = req else {
                        counts.partial.fetch_add(1, Ordering::SeqCst);
                        return;
                    };
                    counts.requests.fetch_add(1, Ordering::SeqCst);
                    n += 1;
                    if s.write_all(&reply(&req)).await.is_err() {
                        return;
                    }
                    if close(n) {
                        return;
                    }
                }
            }
        })
        .await
    }
}

/// A tiny deterministic generator (xorshift) so "random" closes repeat.
#[derive(Debug)]
pub struct Dice(std::sync::Mutex<u64>);

impl Dice {
    pub fn new(seed: u64) -> Dice {
        Dice(std::sync::Mutex::new(seed | 1))
    }

    /// True with probability `p`.
    pub fn roll(&self, p: f64) -> bool {
        let mut x = self.0.lock().unwrap();
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        (*x % 10_000) as f64 / 10_000.0 < p
    }
}

/// Sends raw bytes to `addr` and reads everything until the peer closes or
/// `limit` passes; returns the bytes and whether the read ended in an error
/// (reset) rather than a clean close.
pub async fn raw_exchange(addr: SocketAddr, request: &[u8], limit: Duration) -> (Vec<u8>, bool) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut out = Vec::new();
    let read = async {
        let mut chunk = [0u8; 65536];
        loop {
            match s.read(&mut chunk).await {
                Ok(0) => return false,
                Ok(n) => out.extend_from_slice(&chunk[..n]),
                Err(_) => return true,
            }
        }
    };
    let reset = tokio::time::timeout(limit, read)
        .await
        .expect("the gateway neither finished nor closed the connection");
    (out, reset)
}

/// Whether a chunked body in `raw` (a whole response as read off the wire)
/// ends with the terminating zero-length chunk.
pub fn chunked_complete(raw: &[u8]) -> bool {
    let Some(start) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let mut rest = &raw[start + 4..];
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return false;
        };
        let size_text = std::str::from_utf8(&rest[..eol]).unwrap_or("");
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size_text, 16) else {
            return false;
        };
        rest = &rest[eol + 2..];
        if size == 0 {
            return rest.starts_with(b"\r\n");
        }
        if rest.len() < size + 2 {
            return false;
        }
        rest = &rest[size + 2..];
    }
}
