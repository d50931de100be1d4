//! The data port: accepts up to `max_connections` connections (then stops
//! accepting, so the kernel's backlog holds the rest, until one closes),
//! serves each through the gateway, and shuts down in order: on the
//! signal `/readyz` turns 503 at once while connections are still
//! accepted and served for `drain_delay`; then the listener closes and
//! connections drain until `shutdown_grace` after the signal; whatever is
//! left then is aborted. With `[server.tls]` each connection first
//! completes its TLS handshake, within the same handshake deadline.
//!
//! The connection settings (cap, handshake and header timeouts) are the
//! ones it started with; `send_timeout` is the one current when a
//! connection is accepted; the drain delay and grace period are read from
//! the configuration current when the signal arrives.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::{AsyncRead, AsyncWrite};

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until, timeout_at};

use super::accept::{Backoff, admit};
use super::conn::{self, ConnLimits, ConnState};
use super::io::Sniffed;
use super::send::SendTimed;
use super::stall::StreamExec;
use super::tls::TlsSettings;
use super::tracked::Tracked;
use super::workers::Workers;
use crate::config::ServerConfig;
use crate::gateway::live::Live;

/// The HTTP/1 and HTTP/2 settings of client connections.
fn builder(server: &ServerConfig, exec: StreamExec) -> Builder<StreamExec> {
    let mut builder = Builder::new(exec);
    builder
        .http1()
        // The header read timeout is the connection driver's
        // (`conn::drive`, one timer per connection): hyper's made a timer
        // for every request head.
        .header_read_timeout(None)
        .keep_alive(true);
    // A peer that does not answer a ping within the handshake allowance is
    // gone; pings go out after that long without a frame from it.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(server.handshake_timeout)
        .keep_alive_timeout(server.handshake_timeout)
        // Streams past it are refused by the HTTP/2 layer (RST_STREAM
        // REFUSED_STREAM, which clients retry), before they take anything.
        .max_concurrent_streams(server.max_streams_per_connection);
    builder
}

/// The connection builders: HTTP/1 or HTTP/2 as the first bytes say
/// (cleartext, or TLS without ALPN), and one for each protocol a TLS
/// client may have agreed by ALPN — once agreed, the connection speaks
/// only that (RFC 7301; RFC 9113, section 3.2): an HTTP/1 request on a
/// connection that negotiated `h2` is an HTTP/2 protocol error, not a
/// request to answer in HTTP/1.1.
#[derive(Debug)]
struct Builders {
    sniffed: Builder<StreamExec>,
    h1: Builder<StreamExec>,
    h2: Builder<StreamExec>,
    /// Spawns every HTTP/2 stream, watched for a client that gives no
    /// window ([`super::stall`]).
    exec: StreamExec,
}

impl Builders {
    fn new(server: &ServerConfig) -> Builders {
        let exec = StreamExec::new(server.send_timeout);
        let sniffed = builder(server, exec.clone());
        Builders {
            h1: sniffed.clone().http1_only(),
            h2: sniffed.clone().http2_only(),
            sniffed,
            exec,
        }
    }

    /// The builder for a connection that agreed on `alpn` (none: sniffed).
    fn for_alpn(&self, alpn: Option<&[u8]>) -> &Builder<StreamExec> {
        match alpn {
            Some(b"h2") => &self.h2,
            Some(b"http/1.1") => &self.h1,
            _ => &self.sniffed,
        }
    }
}

/// The connections being served.
struct Conns {
    tasks: JoinSet<()>,
    builders: Arc<Builders>,
    gateway: Live,
    tls: Option<TlsSettings>,
    limits: ConnLimits,
    drain: watch::Receiver<bool>,
    workers: Workers,
}

/// What one connection's task needs.
struct Serve {
    builders: Arc<Builders>,
    gateway: Live,
    state: Arc<ConnState>,
    limits: ConnLimits,
    /// `send_timeout` as configured when the connection was accepted.
    send_timeout: std::time::Duration,
    drain: watch::Receiver<bool>,
}

impl Serve {
    /// Serves the (cleartext or decrypted) stream `io` to its end, in the
    /// protocol its TLS handshake agreed on (`alpn`), else the one its
    /// first bytes say.
    async fn run<I>(self, io: I, alpn: Option<&[u8]>)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let io = SendTimed::new(io, self.send_timeout);
        let io = TokioIo::new(Sniffed::new(io, self.state.clone()));
        let svc = Tracked::new(self.gateway, self.state.clone());
        let builder = self.builders.for_alpn(alpn);
        let conn = builder.serve_connection(io, svc).into_owned();
        conn::drive(
            conn,
            |c| c.graceful_shutdown(),
            &self.state,
            self.limits,
            self.drain,
        )
        .await;
    }
}

impl Conns {
    /// Serves `stream` in its own task, which holds the connection's slot.
    fn spawn(&mut self, stream: TcpStream, slot: OwnedSemaphorePermit) {
        let peer = stream.peer_addr().ok().map(|a| a.ip());
        let send_timeout = self.gateway.current().config().server.send_timeout;
        self.builders.exec.set_limit(send_timeout);
        let serve = Serve {
            builders: self.builders.clone(),
            gateway: self.gateway.clone(),
            state: ConnState::with_peer(peer),
            limits: self.limits,
            send_timeout,
            drain: self.drain.clone(),
        };
        let tls = self.tls.clone();
        self.workers
            .spawn(&mut self.tasks, stream, move |stream| async move {
                match tls {
                    None => serve.run(stream, None).await,
                    Some(tls) => {
                        let deadline = serve.state.opened() + serve.limits.handshake;
                        match tls.accept(stream, deadline).await {
                            Ok(stream) => {
                                let alpn = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
                                serve.run(stream, alpn.as_deref()).await;
                            }
                            Err(e) => tracing::debug!(error = %e, "TLS handshake failed"),
                        }
                    }
                }
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
pub(super) async fn serve(
    listener: TcpListener,
    gateway: Live,
    tls: Option<TlsSettings>,
    mut stopped: watch::Receiver<bool>,
    ready: Arc<AtomicBool>,
    workers: Workers,
) {
    let server = gateway.current().config().server.clone();
    let (drain_tx, drain) = watch::channel(false);
    let mut conns = Conns {
        tasks: JoinSet::new(),
        builders: Arc::new(Builders::new(&server)),
        gateway,
        tls,
        limits: ConnLimits {
            handshake: server.handshake_timeout,
            idle: server.header_read_timeout,
        },
        drain,
        workers,
    };
    let slots = Arc::new(Semaphore::new(server.max_connections));
    let mut backoff = Backoff::default();
    // The signal's time and the end of the drain delay, once signalled.
    let mut closing: Option<(Instant, Instant)> = None;
    // The shutdown settings current at the signal.
    let mut server = server;
    let signalled = loop {
        let close_at = closing.map_or_else(Instant::now, |(_, at)| at);
        tokio::select! {
            () = super::until_stopped(&mut stopped), if closing.is_none() => {
                server = conns.gateway.current().config().server.clone();
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
