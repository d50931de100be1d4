//! The admin port: `/healthz`, `/readyz` (503 from the shutdown signal
//! on, and — with `server.readyz` set so — while routes have no ready
//! replica), `/metrics`, the status page `/` and its JSON `/status`
//! ([`super::status`]). HTTP/1 only, at most [`MAX_CONNECTIONS`] connections,
//! each closed if it sends no request head within the handshake timeout;
//! accept errors back off like the data port's. Never touches the data
//! path.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use super::accept::{Backoff, admit};
use super::conn::until_true;
use super::status::{Board, PAGE, status};
use crate::gateway::live::Live;
use crate::http::body::{Body, full};
use crate::metrics::Metrics;

/// Admin connections open at once: enough for probes and scrapers, few
/// enough that the admin port cannot exhaust descriptors the data port
/// needs.
pub const MAX_CONNECTIONS: usize = 32;

/// How long admin connections may finish once the data port is done.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// What the admin endpoints report.
#[derive(Clone, Debug)]
pub(super) struct AdminState {
    pub ready: Arc<AtomicBool>,
    pub metrics: Metrics,
    /// Asked whether its routes can serve (`server.readyz`), and what the
    /// status shows.
    pub gateway: Option<Live>,
    /// The rest of the status (listeners, reloads).
    pub board: Arc<Board>,
}

/// Serves the admin port until `stop` turns true.
pub(super) async fn serve(
    listener: TcpListener,
    state: AdminState,
    head_timeout: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(head_timeout);
    let (drain_tx, drain) = watch::channel(false);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut conns = JoinSet::new();
    let mut backoff = Backoff::default();
    loop {
        tokio::select! {
            () = super::until_stopped(&mut stop) => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            (permit, stream) = admit(&listener, &slots, &mut backoff, "admin") => {
                let state = state.clone();
                let svc = service_fn(move |req| {
                    let resp = respond(&req, &state);
                    async move { Ok::<_, Infallible>(resp) }
                });
                let conn = builder.serve_connection(TokioIo::new(stream), svc);
                let mut drain = drain.clone();
                conns.spawn(async move {
                    let mut conn = std::pin::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        () = until_true(&mut drain) => {
                            conn.as_mut().graceful_shutdown();
                            let _ = conn.await;
                        }
                    }
                    drop(permit);
                });
            }
        }
    }
    drop(listener);
    let _ = drain_tx.send(true);
    let closed = tokio::time::timeout(CLOSE_GRACE, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if closed.is_err() {
        conns.abort_all();
        while conns.join_next().await.is_some() {}
    }
}

/// `/readyz` when not draining: ready, unless `server.readyz` asks for
/// routes with a ready replica and they have none.
fn routes_ready(gateway: Option<&Live>) -> (StatusCode, Bytes) {
    // The configuration in force now (a reload may have changed the
    // routes or `server.readyz`).
    let Some(r) = gateway.map(|g| g.current().readiness()) else {
        return (
            StatusCode::OK,
            Bytes::from_static(b"{\"status\":\"ready\"}"),
        );
    };
    if r.ready() {
        return (
            StatusCode::OK,
            Bytes::from_static(b"{\"status\":\"ready\"}"),
        );
    }
    let body = serde_json::json!({"status": "no_ready_replica", "routes": r.not_ready});
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Bytes::from(serde_json::to_vec(&body).unwrap_or_default()),
    )
}

fn respond(req: &Request<Incoming>, state: &AdminState) -> Response<Body> {
    match (req.uri().path(), &state.gateway) {
        ("/", _) => {
            return typed(
                Bytes::from_static(PAGE.as_bytes()),
                "text/html; charset=utf-8",
            );
        }
        ("/status", Some(live)) => {
            let hash = state.metrics.config_hash.get() as u64;
            let body = status(&live.current(), &state.board, hash);
            let bytes = serde_json::to_vec_pretty(&body).unwrap_or_default();
            return typed(Bytes::from(bytes), "application/json");
        }
        _ => {}
    }
    if req.uri().path() == "/metrics" {
        let mut resp = Response::new(full(state.metrics.encode()));
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        );
        return resp;
    }
    let (status, body): (StatusCode, Bytes) = match req.uri().path() {
        "/healthz" => (StatusCode::OK, Bytes::from_static(b"{\"status\":\"ok\"}")),
        "/readyz" if state.ready.load(Ordering::SeqCst) => routes_ready(state.gateway.as_ref()),
        "/readyz" => (
            StatusCode::SERVICE_UNAVAILABLE,
            Bytes::from_static(b"{\"status\":\"draining\"}"),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            Bytes::from_static(b"{\"error\":\"not found\"}"),
        ),
    };
    let mut resp = Response::new(full(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    resp
}

/// A 200 with `body` of type `kind`, never cached (it is live).
fn typed(body: Bytes, kind: &'static str) -> Response<Body> {
    let mut resp = Response::new(full(body));
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, header::HeaderValue::from_static(kind));
    h.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    resp
}
