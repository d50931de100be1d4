//! Listeners and lifecycle: the data port (the gateway), the admin port
//! (`/healthz`, `/readyz`, `/metrics`, the status page), and what bounds each client
//! connection before and between requests — the connection cap, the
//! handshake and idle limits, accept backoff, the longest wait for a client
//! to take reply bytes ([`send`]) — and the shutdown order
//! (see [`data`]), and TLS on the data port ([`tls`]; the admin port is
//! always plain HTTP). Request admission and bodies are the gateway's;
//! this module never reads a request past its head.

mod accept;
mod admin;
mod conn;
mod data;
mod io;
mod send;
mod sniff;
mod stall;
pub mod status;
mod tls;
mod tracked;
pub mod workers;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::gateway::Gateway;
use crate::gateway::live::Live;
use crate::metrics::Metrics;

pub use admin::MAX_CONNECTIONS as ADMIN_MAX_CONNECTIONS;
pub use tls::TlsSettings;

/// A running gateway.
#[derive(Debug)]
pub struct Running {
    pub data_addr: SocketAddr,
    pub admin_addr: SocketAddr,
    /// The gateway the data port serves; a reload replaces it.
    pub live: Live,
    /// The data port's TLS settings, when it speaks TLS; a reload
    /// replaces them.
    pub tls: Option<TlsSettings>,
    /// What reloads came to, for the status page.
    pub reloads: Arc<status::ReloadLog>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Running {
    /// Starts the shutdown (drain delay, then drain within the grace
    /// period) and waits for it to finish.
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
    let (admin_stop, admin_stopped) = watch::channel(false);
    let head_timeout = config.server.handshake_timeout;
    let tls = match &config.server.tls {
        Some(t) => Some(TlsSettings::new(t).map_err(std::io::Error::other)?),
        None => None,
    };
    metrics.init_series(&config);
    let workers = workers::Workers::start(config.server.workers)?;
    let live = Live::new(Gateway::new(config, metrics.clone()));
    if let Some(p) = live.current().pipeline() {
        p.count_in(&metrics.trace_export);
    }
    // The gateway's own flag: the gRPC health service reads it too.
    let ready = live.current().serving().clone();
    let reloads = Arc::new(status::ReloadLog::default());
    let board = Arc::new(status::Board {
        started: std::time::SystemTime::now(),
        data: data_addr,
        admin: admin_addr,
        reloads: reloads.clone(),
    });
    let state = admin::AdminState {
        ready: ready.clone(),
        metrics,
        gateway: Some(live.clone()),
        board,
    };
    let admin_task = tokio::spawn(admin::serve(admin, state, head_timeout, admin_stopped));
    let (gateway, data_tls) = (live.clone(), tls.clone());
    let task = tokio::spawn(async move {
        data::serve(data, gateway, data_tls, stopped, ready, workers).await;
        // The admin port answers (readyz 503) until the data port is done.
        let _ = admin_stop.send(true);
        let _ = admin_task.await;
    });
    let scheme = if tls.is_some() { "https" } else { "http" };
    tracing::info!(%data_addr, %admin_addr, scheme, "tensorgate listening");
    Ok(Running {
        data_addr,
        admin_addr,
        live,
        tls,
        reloads,
        stop,
        task,
    })
}

/// Resolves once shutdown has been requested (or the sender is gone).
async fn until_stopped(rx: &mut watch::Receiver<bool>) {
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            return;
        }
    }
}
