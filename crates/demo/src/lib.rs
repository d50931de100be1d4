//! tensorgate's demo backend: an embedded KServe / Triton "V2" inference
//! server with five toy models, so that `tensorgate` runs with no backend
//! and integration tests have a backend that needs no Python. It behaves
//! like Triton 2.51 as measured in docs/TRITON-FACTS.md (statuses, error
//! texts, headers and their order, output selection), over HTTP/1.1 and
//! h2c.
//!
//! A crate of its own beside the codec crate, and below the gateway: it
//! depends on `tensorgate-codec` and never on the gateway, so the fixture
//! cannot reach into the gateway's internals, and the gateway reaches it
//! only through this API (its binary's `demo-backend` subcommand and the
//! demo it runs with no arguments).
//!
//! Requests are read and responses written with the codec crate's V2 codecs
//! ([`tensorgate_codec::codec::v2`]), never by hand, and compressed bodies
//! inflated with its decoder (the gateway's). Where the demo differs from
//! Triton it is on purpose and small: FP16 / BF16 tensors are accepted and
//! written as JSON numbers; floats are written by the codec's writer
//! (shortest digits, non-finite values as strings); a BYTES output that is
//! not UTF-8 is refused as JSON; responses are never compressed; raw
//! (header-less) requests are refused for every model; `generate` works for
//! `repeat` only. It must never be exposed as a real model server: it is a
//! fixture.
//!
//! The same models are served over gRPC (`inference.GRPCInferenceService`
//! and `grpc.health.v1.Health`) by [`spawn_grpc`] / [`serve_grpc`], on a
//! listener of their own (`grpc/server/`). [`grpc`] also holds the tonic
//! service traits and clients generated from `proto/`, which the tests use
//! as clients.
//!
//! Models (see `catalog.rs` and `models.rs`): `simple` (Triton's example,
//! INT32 sum and difference), `identity` (any inputs back as `OUTPUT<i>`),
//! `repeat` (decoupled; `generate` / `generate_stream` server-sent events),
//! `ramp` (a reply as large as asked) and `rowsum` (each row's sum).

// The workspace denies `unsafe`; this crate forbids it outright.
#![forbid(unsafe_code)]

mod catalog;
mod checks;
mod encoding;
mod error;
mod generate;
pub mod grpc;
mod infer;
mod models;
mod respond;
mod routes;
mod running;
mod tls;

pub use grpc::server::{DemoGrpcServer, serve_grpc, services as grpc_services, spawn_grpc};
pub use running::Stopped;
pub use tls::{serve_tls, spawn_tls};

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};

/// Answers one request as the demo server does: for tests that put their
/// own server (a replica that can be slowed, stopped or have a model
/// unloaded) around the demo's models.
pub use routes::handle;

/// How long open connections (a running event stream, say) may finish
/// after shutdown before they are dropped.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// The demo's HTTP (and TLS) server, running; it stops when dropped.
pub type DemoServer = running::Running;

/// Binds `127.0.0.1:0` and serves on a task of the current runtime.
pub async fn spawn() -> io::Result<DemoServer> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    DemoServer::spawn(listener, serve)
}

/// The demo's HTTP/1.1 and HTTP/2 connection settings.
fn connection_builder() -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // Triton sends no Date header.
    builder.http1().auto_date_header(false);
    builder.http2().auto_date_header(false);
    builder
}

/// Serves HTTP/1.1 and h2c on `listener` until `shutdown` resolves, then
/// drains open connections for up to [`DRAIN_TIMEOUT`].
pub async fn serve(
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_opened(listener, shutdown, |stream| async move { Some(stream) }).await
}

/// The accept loop of [`serve`] and [`serve_tls`]: each accepted stream is
/// `open`ed (a TLS handshake, or nothing) in its connection's own task and
/// served, unless opening it failed; at `shutdown` the listener closes and
/// connections drain for up to [`DRAIN_TIMEOUT`].
async fn serve_opened<F, Fut, S>(
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    open: F,
) -> io::Result<()>
where
    F: Fn(TcpStream) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Option<S>> + Send,
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let builder = Arc::new(connection_builder());
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: wait, retry.
                    tracing::warn!(error = %e, "demo server: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let (open, builder, watcher) = (open.clone(), builder.clone(), graceful.watcher());
        tokio::spawn(async move {
            let Some(io) = open(stream).await else {
                return;
            };
            let service =
                service_fn(|req| async move { Ok::<_, Infallible>(routes::handle(req).await) });
            let conn = builder
                .serve_connection(TokioIo::new(io), service)
                .into_owned();
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(error = %e, "demo server: connection ended with an error");
            }
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(DRAIN_TIMEOUT) => {
            tracing::debug!("demo server: connections still open after the drain timeout");
        }
    }
    Ok(())
}
