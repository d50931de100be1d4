//! A demo server running on a task of the current runtime (HTTP, TLS or
//! gRPC): its address, and the way to stop it: dropped, or shut down and
//! awaited.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A demo server running on the current runtime; it stops when dropped.
#[derive(Debug)]
pub struct Running {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

/// Resolves when the [`Running`] it belongs to is stopped or dropped: the
/// shutdown signal a server function is given.
#[derive(Debug)]
pub struct Stopped(oneshot::Receiver<()>);

impl Future for Stopped {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

impl Running {
    /// Runs `serve(listener, stopped)` on a task of the current runtime.
    pub fn spawn<F, Fut>(listener: TcpListener, serve: F) -> io::Result<Running>
    where
        F: FnOnce(TcpListener, Stopped) -> Fut,
        Fut: Future<Output = io::Result<()>> + Send + 'static,
    {
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, Stopped(stopped)));
        Ok(Running {
            addr,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// `http://ADDR`, for request URLs and gRPC endpoints.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, lets open connections and calls finish (up to a
    /// few seconds; streams are ended), and waits for the server task.
    pub async fn shutdown(mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.unwrap_or_else(|e| Err(io::Error::other(e))),
            None => Ok(()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
