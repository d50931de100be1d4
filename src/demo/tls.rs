//! The demo backend behind TLS: the same models and replies over
//! `https://`, so tests (and experiments) have an HTTPS backend. Each
//! connection's TLS handshake runs in its own task; a failed one is
//! logged at debug and dropped. Stops like [`super::serve`].

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::Arc;

use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::{DRAIN_TIMEOUT, DemoServer, connection_builder, routes};

/// Binds `127.0.0.1:0` and serves over TLS with `tls` on a task of the
/// current runtime. Its URL is `https://` + [`DemoServer::addr`].
pub async fn spawn_tls(tls: Arc<rustls::ServerConfig>) -> io::Result<DemoServer> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve_tls(listener, tls, async move {
        let _ = stopped.await;
    }));
    Ok(DemoServer {
        addr,
        stop: Some(stop),
        task: Some(task),
    })
}

/// Serves HTTP/1.1 and HTTP/2 over TLS on `listener` until `shutdown`
/// resolves, then drains open connections for a few seconds.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let builder = Arc::new(connection_builder());
    let acceptor = TlsAcceptor::from(tls);
    let (drain_tx, drain) = watch::channel(false);
    let mut conns = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "demo server: accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => continue,
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let (acceptor, builder, mut drain) = (acceptor.clone(), builder.clone(), drain.clone());
        conns.spawn(async move {
            let stream = match acceptor.accept(stream).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(error = %e, "demo server: TLS handshake failed");
                    return;
                }
            };
            let service =
                service_fn(|req| async move { Ok::<_, Infallible>(routes::handle(req).await) });
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = async { drain.wait_for(|d| *d).await.map(|_| ()) } => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    drop(listener);
    let _ = drain_tx.send(true);
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        conns.abort_all();
    }
    Ok(())
}
