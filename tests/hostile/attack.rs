//! Tools for the slot and flood attacks of findings 3 and 8: HTTP/2
//! connections whose streams announce a body and never send it, a client
//! bound to its own loopback address (so that per-address bounds tell it
//! from the attacker's), and a probe measuring what a well-behaved client
//! gets while an attack runs.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinSet;

/// The attacker's and the well-behaved client's source addresses (both
/// loopback; the gateway listens on 127.0.0.1).
pub const ATTACKER: &str = "127.0.0.3";
pub const CLIENT: &str = "127.0.0.2";

/// A request body that never sends a byte.
pub struct Never;

impl http_body::Body for Never {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Pending
    }
}

/// A TCP connection to `addr` from `from`.
pub async fn connect_from(addr: SocketAddr, from: &str) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from.parse::<IpAddr>().unwrap(), 0))?;
    socket.connect(addr).await
}

/// `conns` HTTP/2 connections from `from`, each starting `streams` POSTs
/// of `path` announcing `content-length: 1000` and sending nothing, with
/// `headers`. They stay open until the returned set is dropped.
pub async fn h2_bodyless(
    addr: SocketAddr,
    from: &'static str,
    conns: usize,
    streams: usize,
    path: &'static str,
    headers: Vec<(String, String)>,
) -> JoinSet<()> {
    let mut set = JoinSet::new();
    for _ in 0..conns {
        let stream = connect_from(addr, from).await.unwrap();
        let (send, conn) = hyper::client::conn::http2::handshake::<_, _, Never>(
            TokioExecutor::new(),
            TokioIo::new(stream),
        )
        .await
        .unwrap();
        set.spawn(async move {
            let _ = conn.await;
        });
        for _ in 0..streams {
            let mut send = send.clone();
            let mut req = http::Request::post(format!("http://{addr}{path}"))
                .header("content-length", "1000");
            for (k, v) in &headers {
                req = req.header(k.as_str(), v.as_str());
            }
            let req = req.body(Never).unwrap();
            set.spawn(async move {
                if send.ready().await.is_ok() {
                    let _ = send.send_request(req).await;
                }
            });
        }
    }
    set
}

/// What a well-behaved client got during an attack.
#[derive(Debug, Default)]
pub struct Probe {
    pub sent: usize,
    pub ok: usize,
    pub latencies: Vec<Duration>,
    /// Statuses other than 200 (0: no response).
    pub failures: Vec<u16>,
}

impl Probe {
    pub fn ratio(&self) -> f64 {
        self.ok as f64 / self.sent.max(1) as f64
    }

    /// The 99th percentile latency (nearest rank).
    pub fn p99(&self) -> Duration {
        let mut l = self.latencies.clone();
        l.sort();
        if l.is_empty() {
            return Duration::ZERO;
        }
        let rank = (l.len() * 99).div_ceil(100).max(1);
        l[rank - 1]
    }

    pub fn record(&mut self, status: u16, took: Duration) {
        self.sent += 1;
        self.latencies.push(took);
        if status == 200 {
            self.ok += 1;
        } else {
            self.failures.push(status);
        }
    }
}

/// Calls `request` (one request; its status) from now for `length`, one
/// at a time with `gap` between them.
pub async fn probe<F, Fut>(length: Duration, gap: Duration, mut request: F) -> Probe
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = u16>,
{
    let mut p = Probe::default();
    let end = Instant::now() + length;
    while Instant::now() < end {
        let started = Instant::now();
        let status = tokio::time::timeout(Duration::from_secs(10), request())
            .await
            .unwrap_or(0);
        p.record(status, started.elapsed());
        tokio::time::sleep(gap).await;
    }
    p
}

/// A client whose connections come from `from`.
pub fn client_from(
    from: &str,
) -> hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    http_body_util::Full<Bytes>,
> {
    let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
    connector.set_local_address(Some(from.parse().unwrap()));
    hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector)
}

/// POSTs `body` to `path` with `headers` through `client`; the status (0
/// when no response came).
pub async fn post(
    client: &hyper_util::client::legacy::Client<
        hyper_util::client::legacy::connect::HttpConnector,
        http_body_util::Full<Bytes>,
    >,
    addr: SocketAddr,
    path: &str,
    headers: &[(String, String)],
    body: Bytes,
) -> u16 {
    use http_body_util::BodyExt;
    let mut req = http::Request::post(format!("http://{addr}{path}"));
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let req = req.body(http_body_util::Full::new(body)).unwrap();
    match client.request(req).await {
        Ok(resp) => {
            let status = resp.status().as_u16();
            match resp.into_body().collect().await {
                Ok(_) => status,
                Err(_) => 0,
            }
        }
        Err(_) => 0,
    }
}

/// Requests in flight on every route, from the admin port's scrape.
pub async fn in_flight(admin: SocketAddr) -> f64 {
    let text = crate::common::scrape(admin).await;
    crate::common::metric_sum(&text, "tensorgate_in_flight_requests", &[])
}
