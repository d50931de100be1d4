//! Accepting connections without spinning: an accept error that is about
//! the listener or the process (out of file descriptors, out of memory) is
//! retried after a pause that doubles up to a second, so a process at its
//! descriptor limit does not burn a core retrying; an error about one
//! connection (the peer reset it while it waited) is retried at once.

use std::future::Future;
use std::io;
use std::time::Duration;

use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Where connections come from: the listener, or a test's stand-in.
pub(super) trait Acceptor {
    type Conn;
    fn accept_one(&self) -> impl Future<Output = io::Result<Self::Conn>> + Send;
}

impl Acceptor for TcpListener {
    type Conn = TcpStream;
    async fn accept_one(&self) -> io::Result<TcpStream> {
        let (stream, _peer) = self.accept().await?;
        // Replies end with small writes (a chunked body's last chunk, a
        // streamed reply's tail): with Nagle on, each waits for the
        // client's delayed ACK, 40 ms (measured on SageMaker replies).
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }
}

/// The pause after a failed accept: doubles from [`Backoff::FIRST`] to
/// [`Backoff::MAX`], back to the start after a success.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Backoff {
    next: Duration,
}

impl Backoff {
    pub(super) const FIRST: Duration = Duration::from_millis(5);
    pub(super) const MAX: Duration = Duration::from_secs(1);

    /// The pause to take now; the next one is twice as long.
    pub(super) fn bump(&mut self) -> Duration {
        let now = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        now
    }

    pub(super) fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { next: Self::FIRST }
    }
}

/// An accept error that concerns one connection, not the listener.
fn per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    )
}

/// The next connection; listener errors are logged and retried with
/// `backoff`. `port` names the listener in the log.
pub(super) async fn next<A: Acceptor>(a: &A, backoff: &mut Backoff, port: &'static str) -> A::Conn {
    loop {
        match a.accept_one().await {
            Ok(conn) => {
                backoff.reset();
                return conn;
            }
            Err(e) if per_connection(&e) => {
                tracing::debug!(port, error = %e, "a connection failed before it was accepted");
            }
            Err(e) => {
                let pause = backoff.bump();
                tracing::warn!(port, error = %e, retry_in = ?pause, "accept failed");
                tokio::time::sleep(pause).await;
            }
        }
    }
}

/// Waits for a free connection slot, then for a connection.
pub(super) async fn admit(
    listener: &TcpListener,
    slots: &Arc<Semaphore>,
    backoff: &mut Backoff,
    port: &'static str,
) -> (OwnedSemaphorePermit, TcpStream) {
    let Ok(permit) = slots.clone().acquire_owned().await else {
        // The semaphore is never closed.
        return std::future::pending().await;
    };
    (permit, next(listener, backoff, port).await)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::Mutex;
    use tokio::time::Instant;

    /// Answers accepts from a script: `Err(kind)` or `Ok(n)`.
    struct Scripted(Mutex<VecDeque<Result<u32, io::ErrorKind>>>);

    impl Acceptor for Scripted {
        type Conn = u32;
        fn accept_one(&self) -> impl Future<Output = io::Result<u32>> + Send {
            let next = self.0.lock().unwrap().pop_front().expect("script ran out");
            async move { next.map_err(|kind| io::Error::new(kind, "scripted")) }
        }
    }

    fn script(items: Vec<Result<u32, io::ErrorKind>>) -> Scripted {
        Scripted(Mutex::new(items.into()))
    }

    #[test]
    fn backoff_doubles_to_a_second_and_resets() {
        let mut b = Backoff::default();
        let pauses: Vec<u64> = (0..10).map(|_| b.bump().as_millis() as u64).collect();
        assert_eq!(pauses, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        b.reset();
        assert_eq!(b.bump(), Duration::from_millis(5));
    }

    #[tokio::test(start_paused = true)]
    async fn listener_errors_pause_instead_of_spinning() {
        // Out of file descriptors four times, then a connection.
        let emfile = io::ErrorKind::Other;
        let a = script(vec![
            Err(emfile),
            Err(emfile),
            Err(emfile),
            Err(emfile),
            Ok(7),
        ]);
        let start = Instant::now();
        let mut b = Backoff::default();
        assert_eq!(next(&a, &mut b, "test").await, 7);
        assert_eq!(start.elapsed(), Duration::from_millis(5 + 10 + 20 + 40));
        assert!(a.0.lock().unwrap().is_empty());
        // A success resets the pause.
        assert_eq!(b, Backoff::default());
    }

    #[tokio::test(start_paused = true)]
    async fn per_connection_errors_are_retried_at_once() {
        let a = script(vec![
            Err(io::ErrorKind::ConnectionAborted),
            Err(io::ErrorKind::ConnectionReset),
            Ok(1),
        ]);
        let start = Instant::now();
        assert_eq!(next(&a, &mut Backoff::default(), "test").await, 1);
        assert_eq!(start.elapsed(), Duration::ZERO);
    }
}
