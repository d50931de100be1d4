//! Listeners and lifecycle: the data port (the gateway behind a tower
//! stack), the admin port (`/healthz`, `/readyz`, `/metrics`), and graceful
//! shutdown: stop accepting, let in-flight requests finish within the grace
//! period, then return.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tower::ServiceBuilder;

use crate::config::Config;
use crate::gateway::Gateway;
use crate::gateway::body::{Body, full};
use crate::metrics::Metrics;

/// A running gateway.
#[derive(Debug)]
pub struct Running {
    pub data_addr: SocketAddr,
    pub admin_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Running {
    /// Starts a graceful shutdown and waits for it to finish.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }

    /// Waits until the server stops (after a shutdown was triggered).
    pub async fn wait(self) {
        let _ = self.task.await;
    }

    /// A handle that triggers shutdown.
    pub fn stopper(&self) -> watch::Sender<bool> {
        self.stop.clone()
    }
}

/// Binds the configured addresses and starts serving.
pub async fn start(config: Config) -> std::io::Result<Running> {
    let data = TcpListener::bind(config.server.listen).await?;
    let admin = TcpListener::bind(config.server.admin_listen).await?;
    start_on(config, data, admin)
}

/// Starts serving on listeners the caller bound (tests bind port 0).
pub fn start_on(config: Config, data: TcpListener, admin: TcpListener) -> std::io::Result<Running> {
    let metrics = Metrics::new().map_err(std::io::Error::other)?;
    start_with_metrics(config, data, admin, metrics)
}

/// Starts serving with metrics registered by the caller.
pub fn start_with_metrics(
    config: Config,
    data: TcpListener,
    admin: TcpListener,
    metrics: Metrics,
) -> std::io::Result<Running> {
    let data_addr = data.local_addr()?;
    let admin_addr = admin.local_addr()?;
    let (stop, stopped) = watch::channel(false);
    let ready = Arc::new(AtomicBool::new(true));
    let server = config.server.clone();
    metrics.init_series(&config);
    let gateway = Gateway::new(config, metrics.clone());
    let stack = ServiceBuilder::new()
        .concurrency_limit(server.max_concurrent_requests)
        .service(gateway);
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(server.header_read_timeout)
        .keep_alive(true);
    let admin_task = tokio::spawn(serve_admin(admin, ready.clone(), metrics, stopped.clone()));
    let task = tokio::spawn(async move {
        serve_data(data, builder, stack, stopped, server.shutdown_grace, ready).await;
        let _ = admin_task.await;
    });
    tracing::info!(%data_addr, %admin_addr, "tensorgate listening");
    Ok(Running {
        data_addr,
        admin_addr,
        stop,
        task,
    })
}

async fn serve_data<S>(
    listener: TcpListener,
    builder: Builder<TokioExecutor>,
    stack: S,
    mut stopped: watch::Receiver<bool>,
    grace: Duration,
    ready: Arc<AtomicBool>,
) where
    S: tower::Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let svc = TowerToHyperService::new(stack.clone());
                    let conn = builder.serve_connection(TokioIo::new(stream), svc).into_owned();
                    let conn = graceful.watch(conn);
                    tokio::spawn(async move {
                        if let Err(e) = conn.await {
                            tracing::debug!(error = %e, "connection ended with an error");
                        }
                    });
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off briefly.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = until_stopped(&mut stopped) => break,
        }
    }
    ready.store(false, Ordering::SeqCst);
    drop(listener);
    tracing::info!(grace = ?grace, "draining in-flight requests");
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("all connections closed"),
        () = tokio::time::sleep(grace) => tracing::warn!("grace period over; closing remaining connections"),
    }
}

async fn serve_admin(
    listener: TcpListener,
    ready: Arc<AtomicBool>,
    metrics: Metrics,
    mut stopped: watch::Receiver<bool>,
) {
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10));
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let ready = ready.clone();
                let metrics = metrics.clone();
                let svc = service_fn(move |req| {
                    let ready = ready.clone();
                    let metrics = metrics.clone();
                    async move { Ok::<_, Infallible>(admin(&req, &ready, &metrics)) }
                });
                let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), svc));
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
            () = until_stopped(&mut stopped) => break,
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), graceful.shutdown()).await;
}

fn admin(req: &Request<Incoming>, ready: &AtomicBool, metrics: &Metrics) -> Response<Body> {
    if req.uri().path() == "/metrics" {
        let mut resp = Response::new(full(metrics.encode()));
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        );
        return resp;
    }
    let (status, body): (StatusCode, Bytes) = match req.uri().path() {
        "/healthz" => (StatusCode::OK, Bytes::from_static(b"{\"status\":\"ok\"}")),
        "/readyz" if ready.load(Ordering::SeqCst) => (
            StatusCode::OK,
            Bytes::from_static(b"{\"status\":\"ready\"}"),
        ),
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

/// Resolves once shutdown has been requested (or the sender is gone).
async fn until_stopped(rx: &mut watch::Receiver<bool>) {
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            return;
        }
    }
}
