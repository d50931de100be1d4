//! The data port: accepts up to `max_connections` connections (then stops
//! accepting, so the kernel's backlog holds the rest, until one closes),
//! serves each through the gateway, and shuts down in order: on the
//! signal `/readyz` turns 503 at once while connections are still
//! accepted and served for `drain_delay`; then the listener closes and
//! connections drain until `shutdown_grace` after the signal; whatever is
//! left then is aborted.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until, timeout_at};

use super::accept::{Backoff, admit};
use super::conn::{self, ConnLimits, ConnState};
use super::io::Sniffed;
use super::tracked::Tracked;
use crate::config::ServerConfig;
use crate::gateway::Gateway;

/// The HTTP/1 and HTTP/2 settings of client connections.
fn builder(server: &ServerConfig) -> Builder<TokioExecutor> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(server.header_read_timeout)
        .keep_alive(true);
    // A peer that does not answer a ping within the handshake allowance is
    // gone; pings go out after that long without a frame from it.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(server.handshake_timeout)
        .keep_alive_timeout(server.handshake_timeout);
    builder
}

/// Serves the data port until shut down (see the module doc for the order).
pub async fn serve(
    listener: TcpListener,
    gateway: Gateway,
    mut stopped: watch::Receiver<bool>,
    ready: Arc<AtomicBool>,
) {
    let server = gateway.config().server.clone();
    let (drain_tx, drain) = watch::channel(false);
    let builder = builder(&server);
    let limits = ConnLimits {
        handshake: server.handshake_timeout,
        h2_idle: server.header_read_timeout,
    };
    let slots = Arc::new(Semaphore::new(server.max_connections));
    let mut conns = JoinSet::new();
    let mut backoff = Backoff::default();
    let mut closing: Option<(Instant, Instant)> = None;
    let signalled = loop {
        let close_at = closing.map_or_else(Instant::now, |(_, at)| at);
        tokio::select! {
            () = super::until_stopped(&mut stopped), if closing.is_none() => {
                ready.store(false, Ordering::SeqCst);
                tracing::info!(drain_delay = ?server.drain_delay, "shutting down: /readyz answers 503; still serving until the drain delay is over");
                let now = Instant::now();
                closing = Some((now, now + server.drain_delay));
            }
            () = sleep_until(close_at), if closing.is_some() => {
                break closing.map_or(close_at, |(signalled, _)| signalled);
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            (permit, stream) = admit(&listener, &slots, &mut backoff, "data") => {
                let state = ConnState::new();
                let io = TokioIo::new(Sniffed::new(stream, state.clone()));
                let svc = Tracked::new(gateway.clone(), state.clone());
                let conn = builder.serve_connection(io, svc).into_owned();
                let drain = drain.clone();
                conns.spawn(async move {
                    conn::drive(conn, |c| c.graceful_shutdown(), &state, limits, drain).await;
                    drop(permit);
                });
            }
        }
    };
    drop(listener);
    let deadline = signalled + server.shutdown_grace;
    tracing::info!(
        connections = conns.len(),
        "listener closed; draining in-flight requests"
    );
    let _ = drain_tx.send(true);
    let drained = timeout_at(deadline, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_ok() {
        tracing::info!("all connections closed");
    } else {
        tracing::warn!(
            connections = conns.len(),
            "grace period over; closing remaining connections"
        );
        conns.abort_all();
        while conns.join_next().await.is_some() {}
    }
}
