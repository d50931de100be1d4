//! The HTTP/1 client of one destination (a replica's `scheme://authority`):
//! hyper's `client::conn::http1` over connections made by the backend's
//! [`Connector`] (TCP with the connect timeout, TLS for `https://`), each
//! driven by a task on the runtime that opened it, and kept between
//! requests in a [`Pool`] per worker thread (a connection is driven by
//! the reactor of the thread that opened it, so a worker reuses only its
//! own; see [`crate::worker`]).
//!
//! A connection goes back to its pool when its reply body has been read to
//! the end and the connection can take another request; one whose reply
//! closes it (`Connection: close`, HTTP/1.0 without keep-alive, an
//! upgrade) or whose body was dropped before its end is closed. A request
//! handed to a pooled connection that turned out closed before it was
//! written (hyper gives it back) goes once more on a new connection.
//!
//! A request's deadline is kept by a timer of its connection's: made with
//! the connection's first request and moved to each next request's
//! deadline (a later deadline only updates the timer's entry, where a new
//! timer per request was registered with the runtime's timer wheel and
//! removed again). It runs on the connection's runtime, whose task drives
//! the connection: a connection whose runtime is gone is closed, never
//! taken from its pool, so its timer is never polled again.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, Uri, Version, header};
use http_body::{Body as _, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

use super::connector::Connector;
use super::pool::{Conn, Pool};
use crate::config::ServerConfig;
use crate::http::body::{Body, BoxError};

pub(super) type Sender = http1::SendRequest<Body>;

/// A connection to the destination: hyper's sender of its requests, and
/// the timer that keeps their deadlines (made with its first request that
/// has one).
#[derive(Debug)]
pub(super) struct Connection {
    tx: Sender,
    timer: Option<Pin<Box<Sleep>>>,
}

impl Connection {
    /// A connection with no timer yet (tests pool their own).
    #[cfg(test)]
    pub(super) fn new(tx: Sender) -> Connection {
        Connection { tx, timer: None }
    }
}

impl Conn for Connection {
    fn usable(&self) -> bool {
        self.tx.is_ready()
    }
}

/// `exchange` (polled where it is pinned: it is not moved), or `None` once
/// `at` has passed, kept by `timer` (made at `at`, or moved there). As
/// `tokio::time::timeout_at`: the exchange is looked at first, so an
/// answer there at the deadline is the request's.
fn by<'a, F: Future + ?Sized>(
    timer: &'a mut Option<Pin<Box<Sleep>>>,
    at: Instant,
    mut exchange: Pin<&'a mut F>,
) -> impl Future<Output = Option<F::Output>> + 'a {
    let timer = match timer {
        Some(t) => {
            t.as_mut().reset(at);
            t
        }
        None => timer.insert(Box::pin(tokio::time::sleep_until(at))),
    };
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(out) = exchange.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
}

/// Why a request got no answer. Never shown as such: [`super::failure`]
/// classifies it into what the client and the retries see.
#[derive(Debug, thiserror::Error)]
pub(super) enum SendError {
    /// No connection could be made (refused, timed out, TLS failed):
    /// nothing of the request was sent. `unsent` is the request, handed
    /// back when the client had it (ours does; hyper-util's does not).
    #[error("connecting to the backend failed")]
    Connect {
        #[source]
        source: BoxError,
        unsent: Option<Box<Request<Body>>>,
    },
    /// The exchange failed on a connection: some of the request may have
    /// been sent.
    #[error("backend exchange failed")]
    Exchange(#[source] BoxError),
    /// No answer by the request's deadline (the caller's to report: it
    /// knows which deadline it gave).
    #[error("no answer by the request's deadline")]
    Deadline,
}

impl SendError {
    /// A failed connect, with no request to hand back.
    fn connect(source: impl Into<BoxError>) -> SendError {
        SendError::Connect {
            source: source.into(),
            unsent: None,
        }
    }

    pub(super) fn is_connect(&self) -> bool {
        matches!(self, SendError::Connect { .. })
    }

    /// The request of a failed connect, none of which was sent: a caller
    /// that may send it again need not have kept a copy of it.
    pub(super) fn take_unsent(&mut self) -> Option<Box<Request<Body>>> {
        match self {
            SendError::Connect { unsent, .. } => unsent.take(),
            SendError::Exchange(_) | SendError::Deadline => None,
        }
    }
}

impl From<hyper_util::client::legacy::Error> for SendError {
    fn from(e: hyper_util::client::legacy::Error) -> SendError {
        if e.is_connect() {
            SendError::connect(e)
        } else {
            SendError::Exchange(Box::new(e))
        }
    }
}

/// The HTTP/1 client of one destination, with one pool per worker thread.
#[derive(Debug)]
pub(super) struct Http1 {
    /// `scheme://authority/`: what the connector is asked for.
    dest: Uri,
    connector: Connector,
    builder: http1::Builder,
    pools: Box<[OnceLock<Arc<Pool<Connection>>>]>,
    max_idle: usize,
    idle_timeout: Duration,
}

/// What an HTTP/1 client to another destination of a replica's host (its
/// metrics port) is made with: the replica's connector and pool settings.
pub(super) struct Http1Settings {
    pub connector: Connector,
    pub max_idle: usize,
    pub idle_timeout: Duration,
}

impl Http1 {
    /// The client of `uri`'s scheme and authority.
    pub(super) fn new(
        uri: &Uri,
        connector: Connector,
        max_idle: usize,
        idle_timeout: Duration,
    ) -> Http1 {
        let mut parts = http::uri::Parts::default();
        parts.scheme = uri.scheme().cloned();
        parts.authority = uri.authority().cloned();
        parts.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
        Http1 {
            dest: Uri::from_parts(parts).unwrap_or_else(|_| uri.clone()),
            connector,
            builder: http1::Builder::new(),
            pools: (0..=ServerConfig::MAX_WORKERS)
                .map(|_| OnceLock::new())
                .collect(),
            max_idle,
            idle_timeout,
        }
    }

    /// Whether requests to `uri` are this client's to send.
    pub(super) fn serves(&self, uri: &Uri) -> bool {
        uri.scheme() == self.dest.scheme() && uri.authority() == self.dest.authority()
    }

    /// What a client to another destination on the same host is made with.
    pub(super) fn settings(&self) -> Http1Settings {
        Http1Settings {
            connector: self.connector.clone(),
            max_idle: self.max_idle,
            idle_timeout: self.idle_timeout,
        }
    }

    /// The calling thread's pool.
    pub(super) fn pool(&self) -> &Arc<Pool<Connection>> {
        let slot = &self.pools[crate::worker::current() % self.pools.len()];
        slot.get_or_init(|| Arc::new(Pool::new(self.max_idle, self.idle_timeout)))
    }

    /// Closes the idle connections of every worker's pool that timed out
    /// or were closed.
    pub(super) fn sweep(&self, now: Instant) {
        for pool in self.pools.iter().filter_map(OnceLock::get) {
            pool.sweep(now);
        }
    }

    /// Sends `req` (origin-form, or an absolute URI of this destination;
    /// the `Host` is the destination's when missing) on an idle connection
    /// of the calling thread, else on a new one; returns once the reply's
    /// head is in, or with [`SendError::Deadline`] once `deadline` (when
    /// given) has passed, connecting included. A request that found no
    /// connection comes back in the error ([`SendError::take_unsent`]).
    pub(super) async fn send(
        &self,
        mut req: Request<Body>,
        deadline: Option<Instant>,
    ) -> Result<Response<ReplyBody>, SendError> {
        prepare(&mut req, &self.dest);
        let pool = self.pool();
        let mut pooled = pool.take(Instant::now());
        loop {
            let reused = pooled.is_some();
            let mut conn = match pooled.take() {
                Some(conn) => conn,
                None => {
                    let mut timer = None;
                    // Boxed: connecting is the rare path, and its future is
                    // large.
                    let mut connect = Box::pin(self.connect());
                    let made = match deadline {
                        Some(at) => by(&mut timer, at, connect.as_mut()).await,
                        None => Some(connect.await),
                    };
                    match made {
                        Some(Ok(tx)) => Connection { tx, timer },
                        Some(Err(SendError::Connect { source, .. })) => {
                            return Err(SendError::Connect {
                                source,
                                unsent: Some(Box::new(req)),
                            });
                        }
                        Some(Err(e)) => return Err(e),
                        None => return Err(SendError::Deadline),
                    }
                }
            };
            let sent = conn.tx.try_send_request(req);
            tokio::pin!(sent);
            let sent = match deadline {
                Some(at) => by(&mut conn.timer, at, sent.as_mut()).await,
                None => Some(sent.await),
            };
            let Some(sent) = sent else {
                return Err(SendError::Deadline);
            };
            match sent {
                Ok(resp) => return Ok(reply(resp, conn, pool)),
                Err(mut e) => match e.take_message() {
                    // A pooled connection closed before the request was
                    // written: a new connection gets it.
                    Some(back) if reused => req = back,
                    _ => return Err(SendError::Exchange(e.into_error().into())),
                },
            }
        }
    }

    /// A new connection, its task spawned on the current runtime.
    async fn connect(&self) -> Result<Sender, SendError> {
        let io = self
            .connector
            .clone()
            .oneshot(self.dest.clone())
            .await
            .map_err(SendError::connect)?;
        let (tx, conn) = self
            .builder
            .handshake(io)
            .await
            .map_err(|e| SendError::Exchange(e.into()))?;
        tokio::spawn(async move {
            if let Err(e) = conn.with_upgrades().await {
                tracing::debug!(error = %e, "backend connection failed");
            }
        });
        Ok(tx)
    }
}

/// What the client sets on every request: the `Host` (that of `dest`
/// when the caller did not set one) and the origin-form target.
fn prepare(req: &mut Request<Body>, dest: &Uri) {
    if crate::http::headers::lacks(req.headers(), &header::HOST)
        && let Some(host) = host_of(dest)
    {
        req.headers_mut().insert(header::HOST, host);
    }
    if req.method() != Method::CONNECT && req.uri().scheme().is_some() {
        let target = match req.uri().path_and_query() {
            Some(pq) if pq.as_str() != "/" => Uri::from(pq.clone()),
            _ => Uri::from_static("/"),
        };
        *req.uri_mut() = target;
    }
}

/// `host[:port]` of `uri`, the port left out when it is the scheme's own.
fn host_of(uri: &Uri) -> Option<HeaderValue> {
    let authority = uri.authority()?;
    let default = match uri.scheme_str() {
        Some("https") => 443,
        _ => 80,
    };
    match authority.port_u16() {
        Some(port) if port != default => HeaderValue::from_str(&format!("{}:{port}", uri.host()?)),
        _ => HeaderValue::from_str(authority.host()),
    }
    .ok()
}

/// The reply with its body, which takes the connection back to `pool` at
/// its end when the reply lets the connection be reused.
fn reply(
    resp: Response<Incoming>,
    conn: Connection,
    pool: &Arc<Pool<Connection>>,
) -> Response<ReplyBody> {
    let back = reusable(&resp).then(|| Checkin {
        conn,
        pool: pool.clone(),
    });
    resp.map(|body| ReplyBody::new(body, back))
}

/// Whether the connection may carry another request after this reply:
/// not after an upgrade, a `Connection: close`, or an HTTP/1.0 reply that
/// did not ask for keep-alive.
fn reusable<B>(resp: &Response<B>) -> bool {
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
        return false;
    }
    if crate::http::headers::lacks(resp.headers(), &header::CONNECTION) {
        return resp.version() != Version::HTTP_10;
    }
    let has = |token: &str| {
        resp.headers()
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    if has("close") {
        return false;
    }
    resp.version() != Version::HTTP_10 || has("keep-alive")
}

/// A connection on its way back to its pool once its reply is read.
#[derive(Debug)]
struct Checkin {
    conn: Connection,
    pool: Arc<Pool<Connection>>,
}

impl Checkin {
    /// Returns the connection to its pool: at once when it can take a
    /// request; when it is still busy (a request body still being written
    /// after an early answer), once it can, within the idle timeout; not
    /// at all when it is closing.
    fn done(self) {
        let Checkin { mut conn, pool } = self;
        if conn.tx.is_ready() {
            pool.put(conn, Instant::now());
            return;
        }
        if conn.tx.is_closed() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        rt.spawn(async move {
            if let Ok(Ok(())) = tokio::time::timeout(pool.timeout(), conn.tx.ready()).await {
                pool.put(conn, Instant::now());
            }
        });
    }
}

/// A backend's reply body: hyper's, and for an HTTP/1 connection that may
/// be reused, the connection, returned to its pool when the body ends.
#[derive(Debug)]
pub(super) struct ReplyBody {
    body: Incoming,
    back: Option<Checkin>,
}

impl ReplyBody {
    fn new(body: Incoming, back: Option<Checkin>) -> ReplyBody {
        let mut reply = ReplyBody { body, back };
        if reply.body.is_end_stream() {
            reply.check_in();
        }
        reply
    }

    /// A body with no connection to return (HTTP/2).
    pub(super) fn plain(body: Incoming) -> ReplyBody {
        ReplyBody { body, back: None }
    }

    fn check_in(&mut self) {
        if let Some(c) = self.back.take() {
            c.done();
        }
    }
}

impl http_body::Body for ReplyBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => this.check_in(),
            // A body of exact length may not be polled past its last byte.
            Poll::Ready(Some(Ok(_))) if this.body.is_end_stream() => this.check_in(),
            // A failed body's connection is not reused.
            Poll::Ready(Some(Err(_))) => this.back = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for ReplyBody {
    fn drop(&mut self) {
        // Read to its end but not polled past it, or read whole by hyper
        // (the connection is ready for another request) and dropped
        // unread. A body dropped before hyper had all of it takes its
        // connection with it (hyper closes it).
        let ready = self.back.as_ref().is_some_and(|b| b.conn.tx.is_ready());
        if ready || self.body.is_end_stream() {
            self.check_in();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(version: Version, status: u16, connection: Option<&str>) -> Response<()> {
        let mut b = Response::builder().version(version).status(status);
        if let Some(c) = connection {
            b = b.header(header::CONNECTION, c);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn which_replies_leave_the_connection_reusable() {
        assert!(reusable(&resp(Version::HTTP_11, 200, None)));
        assert!(reusable(&resp(Version::HTTP_11, 500, Some("keep-alive"))));
        assert!(!reusable(&resp(Version::HTTP_11, 200, Some("close"))));
        assert!(!reusable(&resp(
            Version::HTTP_11,
            200,
            Some("Upgrade, Close")
        )));
        assert!(!reusable(&resp(Version::HTTP_11, 101, Some("upgrade"))));
        assert!(!reusable(&resp(Version::HTTP_10, 200, None)));
        assert!(reusable(&resp(Version::HTTP_10, 200, Some("Keep-Alive"))));
    }

    #[test]
    fn requests_go_in_origin_form_with_a_host() {
        let dest: Uri = "http://10.0.0.1:8000/".parse().unwrap();
        let mut req = Request::new(crate::http::body::empty());
        *req.uri_mut() = "http://10.0.0.1:8000/v2/models/m?x=1".parse().unwrap();
        prepare(&mut req, &dest);
        assert_eq!(req.uri(), "/v2/models/m?x=1");
        assert_eq!(req.headers()[header::HOST], "10.0.0.1:8000");

        let mut req = Request::new(crate::http::body::empty());
        *req.uri_mut() = "/v2/health/ready".parse().unwrap();
        prepare(&mut req, &dest);
        assert_eq!(req.uri(), "/v2/health/ready", "origin-form stays");
        assert_eq!(req.headers()[header::HOST], "10.0.0.1:8000");

        let mut req = Request::new(crate::http::body::empty());
        *req.uri_mut() = "https://triton.internal:443".parse().unwrap();
        req.headers_mut()
            .insert(header::HOST, HeaderValue::from_static("given"));
        prepare(&mut req, &"https://triton.internal:443/".parse().unwrap());
        assert_eq!(req.uri(), "/");
        assert_eq!(
            req.headers()[header::HOST],
            "given",
            "the caller's Host stays"
        );

        assert_eq!(
            host_of(&"http://h:80/".parse().unwrap()).unwrap(),
            "h",
            "the scheme's own port is left out"
        );
        assert_eq!(
            host_of(&"https://h:8443/".parse().unwrap()).unwrap(),
            "h:8443"
        );
    }

    /// A loopback backend answering `ok` at once, but never to `/stall`.
    async fn backend() -> std::net::SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let answer = hyper::service::service_fn(|req: Request<Incoming>| async move {
                    if req.uri().path() == "/stall" {
                        std::future::pending::<()>().await;
                    }
                    Ok::<_, std::convert::Infallible>(Response::new(crate::http::body::full(
                        Bytes::from_static(b"ok"),
                    )))
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), answer),
                );
            }
        });
        addr
    }

    fn client(addr: std::net::SocketAddr) -> Http1 {
        let uri: Uri = format!("http://{addr}").parse().unwrap();
        let backend = crate::config::Backend::new("b", uri.clone());
        Http1::new(
            &uri,
            super::super::connector(&backend),
            4,
            Duration::from_secs(30),
        )
    }

    fn get(path: &str) -> Request<Body> {
        let mut req = Request::new(crate::http::body::empty());
        *req.uri_mut() = path.parse().unwrap();
        req
    }

    /// Sends `path` by `deadline` from now and reads the reply to its end
    /// (the connection goes back to its pool); how long it took.
    async fn exchange(
        c: &Http1,
        path: &str,
        deadline: Duration,
    ) -> (Result<Bytes, SendError>, Duration) {
        let start = Instant::now();
        let sent = c.send(get(path), Some(start + deadline)).await;
        let body = match sent {
            Ok(resp) => Ok(http_body_util::BodyExt::collect(resp.into_body())
                .await
                .unwrap()
                .to_bytes()),
            Err(e) => Err(e),
        };
        (body, start.elapsed())
    }

    /// Requests one after the other on one connection have their deadlines
    /// kept by the connection's one timer.
    #[tokio::test]
    async fn requests_on_one_connection_share_its_timer() {
        let c = client(backend().await);
        let mut timers = Vec::new();
        for _ in 0..3 {
            let (body, _) = exchange(&c, "/", Duration::from_secs(10)).await;
            assert_eq!(body.unwrap(), "ok");
            let conn = c
                .pool()
                .take(Instant::now())
                .expect("the connection pooled");
            let timer = conn.timer.as_ref().expect("a timer made with the request");
            timers.push(std::ptr::from_ref::<Sleep>(timer));
            c.pool().put(conn, Instant::now());
        }
        assert!(timers.windows(2).all(|w| w[0] == w[1]), "{timers:?}");
    }

    /// Each request on a reused connection ends at its own deadline: one
    /// after the timer fired while the connection was idle, one earlier
    /// than the deadline the timer was last moved to.
    #[tokio::test]
    async fn a_reused_connection_keeps_each_requests_deadline() {
        let c = client(backend().await);
        let short = Duration::from_millis(200);
        let (body, _) = exchange(&c, "/", short).await;
        assert_eq!(body.unwrap(), "ok");
        // The first deadline passes while the connection is idle.
        tokio::time::sleep(short + Duration::from_millis(100)).await;
        let (body, _) = exchange(&c, "/", short).await;
        assert_eq!(body.unwrap(), "ok", "a fired timer is moved on");
        let (body, _) = exchange(&c, "/", Duration::from_secs(30)).await;
        assert_eq!(body.unwrap(), "ok");
        // Pooled with its timer at the 30 s deadline: a shorter one counts.
        let (body, took) = exchange(&c, "/stall", short).await;
        assert!(matches!(body, Err(SendError::Deadline)), "{body:?}");
        assert!(took >= short && took < Duration::from_secs(5), "{took:?}");
        // A new connection (the stalled one is dropped) keeps it too.
        let (body, took) = exchange(&c, "/stall", short).await;
        assert!(matches!(body, Err(SendError::Deadline)), "{body:?}");
        assert!(took >= short && took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn serves_only_its_own_scheme_and_authority() {
        let c = Http1::new(
            &"http://127.0.0.1:8000/prefix".parse().unwrap(),
            super::super::connector(&crate::config::Backend::new(
                "b",
                "http://127.0.0.1:8000".parse().unwrap(),
            )),
            4,
            Duration::from_secs(4),
        );
        assert!(c.serves(&"http://127.0.0.1:8000/v2".parse().unwrap()));
        assert!(!c.serves(&"http://127.0.0.1:8002/metrics".parse().unwrap()));
        assert!(!c.serves(&"https://127.0.0.1:8000/v2".parse().unwrap()));
    }
}
