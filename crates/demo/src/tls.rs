//! The demo backend behind TLS: the same models and replies over
//! `https://`, so tests (and experiments) have an HTTPS backend. Each
//! connection's TLS handshake runs in its own task; a failed one is
//! logged at debug and dropped. Stops like [`super::serve`].

use std::future::Future;
use std::io;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::{DemoServer, serve_opened};

/// Binds `127.0.0.1:0` and serves over TLS with `tls` on a task of the
/// current runtime. Its URL is `https://` + [`DemoServer::addr`].
pub async fn spawn_tls(tls: Arc<rustls::ServerConfig>) -> io::Result<DemoServer> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    DemoServer::spawn(listener, |listener, stopped| {
        serve_tls(listener, tls, stopped)
    })
}

/// Serves HTTP/1.1 and HTTP/2 over TLS on `listener` until `shutdown`
/// resolves, then drains open connections for a few seconds.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let acceptor = TlsAcceptor::from(tls);
    serve_opened(listener, shutdown, move |stream| {
        let acceptor = acceptor.clone();
        async move {
            match acceptor.accept(stream).await {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::debug!(error = %e, "demo server: TLS handshake failed");
                    None
                }
            }
        }
    })
    .await
}
