//! A small HTTP client for the tests: whole replies ([`send`] and the
//! V2 shortcuts), chunked and streamed bodies, and the bodies' byte forms.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

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

/// INT32 values in little-endian bytes, as a gRPC raw content.
pub fn i32s(values: &[i32]) -> Bytes {
    le_i32(values).into()
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
