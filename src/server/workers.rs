//! Where client connections are served: one single-threaded runtime per
//! worker thread (`server.workers`, one per core by default), each
//! connection on the worker with the fewest open ones. A connection, the
//! backend connections its requests take (see [`crate::worker::current`]) and their
//! wake-ups then stay on one thread: no task hops to another core
//! between reading a request and answering it. Against tokio's
//! work-stealing runtime, where the connection's task and its backend
//! connection's woke each other across cores, this cut both what the
//! gateway adds to a request's latency and its CPU per request (see
//! docs/PERFORMANCE.md, "What each decision bought").
//!
//! Accepting stays on the caller's runtime; an accepted socket moves to
//! its worker's reactor. With `workers = 0` connections are served on the
//! caller's runtime, as before the worker threads existed.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::net::TcpStream;
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use crate::config::ServerConfig;

/// The worker threads of one data port. Dropping it stops them: each
/// worker's runtime is dropped, cancelling what still runs on it (the
/// data port aborts and joins its connections first).
#[derive(Debug)]
pub struct Workers {
    workers: Vec<Worker>,
}

#[derive(Debug)]
struct Worker {
    handle: Handle,
    /// Connections being served on it.
    open: Arc<AtomicUsize>,
    /// Dropped to stop the worker.
    _stop: oneshot::Sender<()>,
}

impl Workers {
    /// Starts `n` worker threads (none for 0).
    pub fn start(n: usize) -> io::Result<Workers> {
        let workers = (0..n.min(ServerConfig::MAX_WORKERS))
            .map(Worker::start)
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Workers { workers })
    }

    /// Serves the connection `stream` with `serve` on the worker with the
    /// fewest open connections (on the calling runtime without workers),
    /// as a task of `set`.
    pub fn spawn<F, Fut>(&self, set: &mut JoinSet<()>, stream: TcpStream, serve: F)
    where
        F: FnOnce(TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let Some(worker) = self
            .workers
            .iter()
            .min_by_key(|w| w.open.load(Ordering::Relaxed))
        else {
            set.spawn(serve(stream));
            return;
        };
        // The socket leaves this runtime's reactor for the worker's.
        let std = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(error = %e, "cannot hand a connection to a worker");
                return;
            }
        };
        let open = Open::new(worker.open.clone());
        set.spawn_on(
            async move {
                let _open = open;
                match TcpStream::from_std(std) {
                    Ok(stream) => serve(stream).await,
                    Err(e) => tracing::debug!(error = %e, "a worker cannot take a connection"),
                }
            },
            &worker.handle,
        );
    }
}

impl Worker {
    fn start(n: usize) -> io::Result<Worker> {
        let (handle_tx, handle_rx) = std::sync::mpsc::sync_channel(1);
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(format!("tensorgate-worker-{n}"))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let rt = match rt {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = handle_tx.send(Err(e));
                        return;
                    }
                };
                crate::worker::enter(n);
                let _ = handle_tx.send(Ok(rt.handle().clone()));
                // Runs the worker's tasks until the pool is dropped.
                rt.block_on(async {
                    let _ = stopped.await;
                });
            })?;
        let handle = handle_rx
            .recv()
            .map_err(|_| io::Error::other("a worker thread ended before it started"))??;
        Ok(Worker {
            handle,
            open: Arc::new(AtomicUsize::new(0)),
            _stop: stop,
        })
    }
}

/// One open connection in a worker's count, until dropped.
struct Open(Arc<AtomicUsize>);

impl Open {
    fn new(count: Arc<AtomicUsize>) -> Open {
        count.fetch_add(1, Ordering::Relaxed);
        Open(count)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::current;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    #[tokio::test]
    async fn connections_are_served_on_the_least_busy_worker() {
        let workers = Workers::start(2).unwrap();
        assert_eq!(current(), 0, "the test's own thread is no worker");
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut set = JoinSet::new();
        let mut clients = Vec::new();
        for _ in 0..4 {
            let client = TcpStream::connect(addr).await.unwrap();
            let (stream, _) = listener.accept().await.unwrap();
            workers.spawn(&mut set, stream, |mut s| async move {
                // Says which worker serves it, then holds the connection.
                let _ = s.write_all(&[current() as u8]).await;
                let mut end = [0u8; 1];
                let _ = s.read(&mut end).await;
            });
            clients.push(client);
        }
        let mut served = Vec::new();
        for c in &mut clients {
            let mut b = [0u8; 1];
            c.read_exact(&mut b).await.unwrap();
            served.push(b[0]);
        }
        served.sort_unstable();
        assert_eq!(served, [1, 1, 2, 2]);
        let open: Vec<usize> = workers
            .workers
            .iter()
            .map(|w| w.open.load(Ordering::Relaxed))
            .collect();
        assert_eq!(open, [2, 2]);
        drop(clients);
        while set.join_next().await.is_some() {}
        let open: usize = workers
            .workers
            .iter()
            .map(|w| w.open.load(Ordering::Relaxed))
            .sum();
        assert_eq!(open, 0);
    }

    #[tokio::test]
    async fn without_workers_connections_stay_on_the_caller() {
        let workers = Workers::start(0).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        let mut set = JoinSet::new();
        workers.spawn(&mut set, stream, |mut s| async move {
            let _ = s.write_all(&[current() as u8]).await;
        });
        let mut b = [9u8; 1];
        client.read_exact(&mut b).await.unwrap();
        assert_eq!(b, [0]);
    }
}
