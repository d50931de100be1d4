//! Shared test harness: a gateway on 127.0.0.1:0, a scriptable backend that
//! records what it received, and a small HTTP client.
#![allow(dead_code)]

pub mod access_log;
pub mod certs;
pub mod decthings;
pub mod faults;
pub mod procs;
pub mod raw;
pub mod replica;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tensorgate::config;
use tensorgate::http::body::{Body, full};
use tensorgate::server::{self, Running};
use tokio::net::TcpListener;

/// A request as the backend received it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: http::Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

type Handler =
    Arc<dyn Fn(Seen) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>> + Send + Sync>;

/// A backend whose replies the test scripts, and which records requests.
pub struct TestBackend {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Requests whose body ended in an error (never handled).
    pub aborted: Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestBackend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestBackend {
    pub async fn start<F, Fut>(handler: F) -> TestBackend
    where
        F: Fn(Seen) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |s| Box::pin(handler(s)));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        let aborted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let aborted2 = aborted.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let handler = handler.clone();
                let seen = seen2.clone();
                let aborted = aborted2.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req: Request<Incoming>| {
                        let handler = handler.clone();
                        let seen = seen.clone();
                        let aborted = aborted.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            // A request whose body never completes (the
                            // gateway aborted it) is never handled: what a
                            // real backend does.
                            let body = match body.collect().await {
                                Ok(b) => b.to_bytes(),
                                Err(e) => {
                                    aborted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                                    return Err(e);
                                }
                            };
                            let s = Seen {
                                method: parts.method,
                                path: parts
                                    .uri
                                    .path_and_query()
                                    .map(|p| p.to_string())
                                    .unwrap_or_default(),
                                headers: parts.headers,
                                body,
                            };
                            seen.lock().unwrap().push(s.clone());
                            Ok::<_, hyper::Error>(handler(s).await)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        TestBackend {
            addr,
            seen,
            aborted,
            task,
        }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// A response with a body and headers.
pub fn reply(status: u16, headers: &[(&str, &str)], body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(full(body.into()));
    *r.status_mut() = StatusCode::from_u16(status).unwrap();
    for (k, v) in headers {
        r.headers_mut().append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    r
}

/// Starts a gateway on loopback ports chosen by the OS. `toml` may use
/// `{backend}` for a backend URL.
pub async fn gateway(toml: &str) -> Running {
    let config = config::from_str(toml).unwrap_or_else(|e| panic!("config:\n{e}"));
    let data = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = TcpListener::bind("127.0.0.1:0").await.unwrap();
    server::start_on(config, data, admin).unwrap()
}

/// A config with one default route (and optional extra TOML) to `backend`.
pub fn simple_config(backend: &str, extra_route: &str) -> String {
    format!(
        r#"
[server]
shutdown_grace = "2s"
[backends.b]
url = "{backend}"
request_timeout = "2s"
connect_timeout = "1s"
[[routes]]
name = "r"
default = true
backend = "b"
{extra_route}
"#
    )
}

/// A config with one default route to `backend` and these `[server]`
/// keys (TOML lines).
pub fn server_config(backend: &str, server_keys: &str) -> String {
    format!(
        r#"
[server]
{server_keys}
[backends.b]
url = "{backend}"
request_timeout = "20s"
connect_timeout = "1s"
[[routes]]
name = "r"
default = true
backend = "b"
"#
    )
}

/// Reads from `stream` until the peer closes it (end of stream or reset)
/// or `limit` passes; returns how long after `since` it closed and every
/// byte read, or `None` if it was still open at the limit.
pub async fn until_closed(
    stream: &mut tokio::net::TcpStream,
    since: std::time::Instant,
    limit: std::time::Duration,
) -> Option<(std::time::Duration, Vec<u8>)> {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::from_std(since + limit);
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some((since.elapsed(), got)),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// A full response.
#[derive(Debug)]
pub struct Got {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Got {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    pub fn error(&self) -> String {
        self.json()["error"].as_str().unwrap_or_default().to_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

pub fn client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build(HttpConnector::new())
}

/// Sends a request and reads the whole reply.
pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Got {
    let mut req = Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = client()
        .request(req.body(Full::new(body.into())).unwrap())
        .await
        .expect("request failed");
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.expect("body failed").to_bytes();
    Got {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

pub async fn post_json(addr: SocketAddr, path: &str, body: &str) -> Got {
    send(
        addr,
        "POST",
        path,
        &[("content-type", "application/json")],
        body.to_owned(),
    )
    .await
}

/// Builds a binary-extension body: JSON header then chunks; returns the
/// body and the header length.
pub fn binary_body(header: &serde_json::Value, chunks: &[&[u8]]) -> (Vec<u8>, usize) {
    let mut out = serde_json::to_vec(header).unwrap();
    let n = out.len();
    for c in chunks {
        out.extend_from_slice(c);
    }
    (out, n)
}

/// Splits a binary-extension reply into its JSON header and the rest.
pub fn split_binary(got: &Got) -> (serde_json::Value, Bytes) {
    let n: usize = got
        .header("inference-header-content-length")
        .expect("no IHCL header")
        .parse()
        .unwrap();
    let header = serde_json::from_slice(&got.body[..n]).unwrap();
    (header, got.body.slice(n..))
}

pub fn le_i32(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

pub fn le_f32(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A body of chunks with no known length: sent chunked.
pub struct Chunked(pub std::collections::VecDeque<Bytes>);

impl http_body::Body for Chunked {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        std::task::Poll::Ready(self.0.pop_front().map(|c| Ok(hyper::body::Frame::data(c))))
    }
}

/// Sends a body in 1000-byte chunks with no Content-Length (chunked).
pub async fn send_chunked(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Got {
    let chunks = body.chunks(1000).map(Bytes::copy_from_slice).collect();
    let mut req = Request::builder()
        .method("POST")
        .uri(format!("http://{addr}{path}"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let client: Client<HttpConnector, Chunked> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let resp = client
        .request(req.body(Chunked(chunks)).unwrap())
        .await
        .expect("request failed");
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.expect("body failed").to_bytes();
    Got {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

/// A body fed from a channel: the test decides when each frame goes out.
pub struct ChannelBody(pub tokio::sync::mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = tensorgate::http::body::BoxError;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|o| o.map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

/// A streaming response whose frames the test sends through the returned
/// sender.
pub fn channel_reply(
    status: u16,
    headers: &[(&str, &str)],
) -> (tokio::sync::mpsc::Sender<Bytes>, Response<Body>) {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    let mut r = Response::new(ChannelBody(rx).boxed_unsync());
    *r.status_mut() = StatusCode::from_u16(status).unwrap();
    for (k, v) in headers {
        r.headers_mut().append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    (tx, r)
}

/// Sends a request and returns the response head and its streaming body.
pub async fn open(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Response<Incoming> {
    let mut req = Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    client()
        .request(req.body(Full::new(body.into())).unwrap())
        .await
        .expect("request failed")
}

/// Reads the next data frame of a streaming body, with a time bound.
pub async fn next_data(body: &mut Incoming) -> Option<Bytes> {
    loop {
        let frame = tokio::time::timeout(std::time::Duration::from_secs(10), body.frame())
            .await
            .expect("timed out waiting for a frame")?;
        if let Ok(data) = frame.expect("body error").into_data() {
            return Some(data);
        }
    }
}

/// Posts a binary-extension body (JSON header, then `chunks`) with its
/// `Inference-Header-Content-Length`.
pub async fn post_binary(
    addr: SocketAddr,
    path: &str,
    header: &serde_json::Value,
    chunks: &[&[u8]],
) -> Got {
    let (body, n) = binary_body(header, chunks);
    send(
        addr,
        "POST",
        path,
        &[("inference-header-content-length", &n.to_string())],
        body,
    )
    .await
}

/// Writes a key file (`name:key` lines) to a fresh temporary path and
/// returns the path, for `[routes.auth] keys_file`.
pub fn keys_file(lines: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("tg-test-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("keys-{}", N.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&path, lines).unwrap();
    path
}

/// One series of a Prometheus text scrape (`name{labels}` exactly as
/// written by the exposition, labels in registration order).
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

/// Asserts each `(series, value)` of a scrape; a missing series fails
/// naming it.
pub fn assert_series(text: &str, expected: &[(&str, f64)]) {
    for (series, want) in expected {
        let got = metric(text, series).unwrap_or_else(|| panic!("no series {series}"));
        assert_eq!(got, *want, "{series}");
    }
}

/// The admin port's `/metrics` text.
pub async fn scrape_text(gw: &Running) -> String {
    let got = send(gw.admin_addr, "GET", "/metrics", &[], "").await;
    String::from_utf8(got.body.to_vec()).unwrap()
}

/// Says loudly that the running test skips for `reason`, and, when
/// `TENSORGATE_SKIP_LOG` names a file, appends `TEST: reason` to it, so
/// that `scripts/test.sh` lists every skipped test by name in its summary
/// (libtest reports a test that returned early as passed, and captures what
/// a passing test prints).
pub fn skipped(reason: &str) {
    use std::io::Write;
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    let binary = std::env::args()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        })
        .map(|stem| {
            stem.rsplit_once('-')
                .map_or(stem.clone(), |(name, _)| name.to_owned())
        })
        .unwrap_or_default();
    // Straight to the stream: libtest captures eprintln! of passing tests.
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED {binary}::{test}: {reason} ***\n"
    );
    if let Some(path) = std::env::var_os("TENSORGATE_SKIP_LOG") {
        let line = format!(
            "{binary}::{test}: {}\n",
            reason.lines().next().unwrap_or("")
        );
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
    }
}
