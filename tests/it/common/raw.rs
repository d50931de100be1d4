//! Raw HTTP/1 responses off a socket, read the way a plain client reads
//! them: the status line and headers as sent, the body framed by chunks, a
//! length, or the connection's close — so a test sees what a client would
//! believe (a close-delimited body cut part way looks complete).
#![allow(dead_code)]

use std::io;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// One response as a client read it.
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// `HTTP/1.1` or `HTTP/1.0`.
    pub version: String,
    pub status: u16,
    /// Names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body's framing said it ended: the last chunk, the whole
    /// `Content-Length`, or (no framing) the connection's close.
    pub complete: bool,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the server said it closes the connection after this one.
    pub fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
            || (self.version == "HTTP/1.0"
                && !self
                    .header("connection")
                    .is_some_and(|v| v.eq_ignore_ascii_case("keep-alive")))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A connection whose receive buffer is 64 KiB (asked before connecting,
/// so the window is small from the start): a reply cannot hide in it.
pub async fn small_window(addr: std::net::SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(64 << 10).unwrap();
    socket.connect(addr).await.unwrap()
}

/// Reads more into `buf`; false at the end of the stream.
async fn fill(s: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<bool> {
    let mut chunk = vec![0u8; 256 << 10];
    let n = s.read(&mut chunk).await?;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n > 0)
}

/// Reads one response; `buf` keeps the bytes after it. `Ok(None)` when the
/// connection closed before a whole head.
pub async fn read_response(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> io::Result<Option<RawResponse>> {
    let end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i + 4;
        }
        if !fill(s, buf).await? {
            return Ok(None);
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    buf.drain(..end);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default().to_owned();
    let status = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        })
        .collect();
    let mut resp = RawResponse {
        version,
        status,
        headers,
        body: Vec::new(),
        complete: false,
    };
    let chunked = resp
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let length: Option<usize> = resp.header("content-length").and_then(|v| v.parse().ok());
    if chunked {
        read_chunked(s, buf, &mut resp).await?;
    } else if let Some(len) = length {
        while buf.len() < len {
            if !fill(s, buf).await.unwrap_or(false) {
                break;
            }
        }
        let n = len.min(buf.len());
        resp.body = buf.drain(..n).collect();
        resp.complete = n == len;
    } else if status == 204 || status == 304 || (100..200).contains(&status) {
        resp.complete = true;
    } else {
        // Delimited by the close: whatever came, a client takes as whole.
        while fill(s, buf).await.unwrap_or(false) {}
        resp.body = std::mem::take(buf);
        resp.complete = true;
    }
    Ok(Some(resp))
}

async fn read_chunked(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    resp: &mut RawResponse,
) -> io::Result<()> {
    loop {
        let eol = loop {
            if let Some(i) = find(buf, b"\r\n") {
                break i;
            }
            if !fill(s, buf).await.unwrap_or(false) {
                return Ok(());
            }
        };
        let size_text = String::from_utf8_lossy(&buf[..eol]).into_owned();
        let Ok(size) = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
        else {
            return Ok(());
        };
        buf.drain(..eol + 2);
        while buf.len() < size + 2 {
            if !fill(s, buf).await.unwrap_or(false) {
                resp.body.append(buf);
                return Ok(());
            }
        }
        resp.body.extend(buf.drain(..size));
        buf.drain(..2);
        if size == 0 {
            resp.complete = true;
            return Ok(());
        }
    }
}

/// Sends `request` whole on a new connection, then reads one response
/// within `limit`; `None` if none came in time.
pub async fn exchange(
    addr: std::net::SocketAddr,
    request: &[u8],
    limit: Duration,
) -> Option<RawResponse> {
    use tokio::io::AsyncWriteExt;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(limit, read_response(&mut s, &mut buf))
        .await
        .ok()
        .and_then(Result::ok)
        .flatten()
}
