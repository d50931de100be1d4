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
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
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

/// The connections being served.
struct Conns {
    tasks: JoinSet<()>,
    builder: Builder<TokioExecutor>,
    gateway: Gateway,
    limits: ConnLimits,
    drain: watch::Receiver<bool>,
}

impl Conns {
    /// Serves `stream` in its own task, which holds the connection's slot.
    fn spawn(&mut self, stream: TcpStream, slot: OwnedSemaphorePermit) {
        let state = ConnState::new();
        let io = TokioIo::new(Sniffed::new(stream, state.clone()));
        let svc = Tracked::new(self.gateway.clone(), state.clone());
        let conn = self.builder.serve_connection(io, svc).into_owned();
        let (limits, drain) = (self.limits, self.drain.clone());
        self.tasks.spawn(async move {
            conn::drive(conn, |c| c.graceful_shutdown(), &state, limits, drain).await;
            drop(slot);
        });
    }

    /// Lets the connections finish until `deadline` (`drain` must have
    /// been signalled), then aborts the rest.
    async fn finish(mut self, deadline: Instant) {
        let tasks = &mut self.tasks;
        tracing::info!(
            connections = tasks.len(),
            "listener closed; draining in-flight requests"
        );
        let drained = timeout_at(deadline, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_ok() {
            tracing::info!("all connections closed");
            return;
        }
        tracing::warn!(
            connections = tasks.len(),
            "grace period over; closing remaining connections"
        );
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
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
    let mut conns = Conns {
        tasks: JoinSet::new(),
        builder: builder(&server),
        gateway,
        limits: ConnLimits {
            handshake: server.handshake_timeout,
            h2_idle: server.header_read_timeout,
        },
        drain,
    };
    let slots = Arc::new(Semaphore::new(server.max_connections));
    let mut backoff = Backoff::default();
    // The signal's time and the end of the drain delay, once signalled.
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
            Some(_) = conns.tasks.join_next(), if !conns.tasks.is_empty() => {}
            (slot, stream) = admit(&listener, &slots, &mut backoff, "data") => conns.spawn(stream, slot),
        }
    };
    drop(listener);
    let _ = drain_tx.send(true);
    conns.finish(signalled + server.shutdown_grace).await;
}
