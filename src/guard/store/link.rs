//! The store's connections: each a redis-rs multiplexed connection over a
//! stream the gateway opens itself (TCP, then TLS for `rediss://`) and
//! reads through [`Bounded`], which refuses a reply past the bounds of
//! [`super::resp`] before redis-rs's parser sees it (redis-rs has no limit
//! of its own). The connection's driver runs as a task of the runtime that
//! made it; dropping the [`Link`] aborts it, which closes the socket at
//! once, whatever the server is still sending.
//!
//! A [`Slot`] holds one worker's link: made on first use (concurrent
//! callers share one attempt), made again when its connection closed, and
//! dropped when a call on it fails or the store is taken as down.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, ConnectionInfo};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::OnceCell;
use tokio::task::AbortHandle;
use tokio_rustls::TlsConnector;

use super::StoreError;
use super::resp::Scanner;

/// A stream a connection can run over.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// `inner`, each byte read checked by a [`Scanner`]: a read that takes
/// the replies past a bound fails with [`io::ErrorKind::InvalidData`] (and
/// every read after it).
struct Bounded<S> {
    inner: S,
    scanner: Scanner,
}

impl<S: AsyncRead + Unpin> AsyncRead for Bounded<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let start = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        let read = &buf.filled()[start..];
        match self.scanner.feed(read) {
            Ok(()) => Poll::Ready(Ok(())),
            Err(e) => Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, e))),
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Bounded<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Where and how to connect: the URL's address and handshake settings,
/// and the TLS connector of a `rediss://` URL.
#[derive(Clone)]
pub(super) struct Dial {
    info: ConnectionInfo,
    tls: Option<TlsConnector>,
}

impl std::fmt::Debug for Dial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The connection info holds the password: the address only.
        f.debug_struct("Dial")
            .field("addr", &self.info.addr().to_string())
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Dial {
    /// The dialer of `info` (a `redis://` or `rediss://` URL's); TLS with
    /// the system's CAs, as redis-rs's own rustls setting did.
    pub(super) fn new(info: ConnectionInfo) -> Result<Dial, StoreError> {
        let tls = match info.addr() {
            ConnectionAddr::TcpTls { .. } => {
                let mut config = crate::tls::client_config(&crate::tls::BackendTls::default())
                    .map_err(|e| StoreError::Failed(e.to_string()))?;
                config.alpn_protocols.clear();
                Some(TlsConnector::from(Arc::new(config)))
            }
            _ => None,
        };
        Ok(Dial { info, tls })
    }

    /// A new connection, its handshake done and its driver running on the
    /// current runtime. Unbounded in time: callers bound it.
    async fn connect(&self) -> Result<Link, StoreError> {
        let failed = |e: &dyn std::fmt::Display| StoreError::Failed(e.to_string());
        let stream: Box<dyn Io> = match (self.info.addr(), &self.tls) {
            (ConnectionAddr::Tcp(host, port), _) => Box::new(tcp(host, *port).await?),
            (ConnectionAddr::TcpTls { insecure: true, .. }, _) => {
                return Err(StoreError::Failed(
                    "rediss:// with #insecure is not supported: the certificate is always verified"
                        .into(),
                ));
            }
            (ConnectionAddr::TcpTls { host, port, .. }, Some(tls)) => {
                let name = rustls::pki_types::ServerName::try_from(host.clone())
                    .map_err(|e| failed(&e))?;
                let tcp = tcp(host, *port).await?;
                Box::new(tls.connect(name, tcp).await.map_err(|e| failed(&e))?)
            }
            // A Unix socket: the configuration takes redis:// and rediss://
            // URLs only.
            _ => return Err(StoreError::Failed("not a TCP address".into())),
        };
        let stream = Bounded {
            inner: stream,
            scanner: Scanner::default(),
        };
        let (conn, driver) = MultiplexedConnection::new_with_config(
            self.info.redis_settings(),
            stream,
            AsyncConnectionConfig::new(),
        )
        .await
        .map_err(|e| failed(&e))?;
        let driver = tokio::spawn(driver).abort_handle();
        Ok(Link { conn, driver })
    }
}

async fn tcp(host: &str, port: u16) -> Result<TcpStream, StoreError> {
    let stream = TcpStream::connect((host, port))
        .await
        .map_err(|e| StoreError::Failed(e.to_string()))?;
    // Each decision is one small write: no Nagle delay.
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// One connection and its driver, aborted (closing the socket) when the
/// link is dropped.
#[derive(Debug)]
pub(super) struct Link {
    conn: MultiplexedConnection,
    driver: AbortHandle,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// A link as one caller holds it: its connection, and which link it is
/// (to drop it if the call fails).
pub(super) struct Held {
    pub conn: MultiplexedConnection,
    cell: Arc<OnceCell<Link>>,
}

/// One worker's link, made on first use. The lock is never held across an
/// await: callers take the cell and wait on it.
#[derive(Debug, Default)]
pub(super) struct Slot(Mutex<Arc<OnceCell<Link>>>);

impl Slot {
    /// The slot's connection, made now (through `dial`) when there is none
    /// or it closed.
    pub(super) async fn get(&self, dial: &Dial) -> Result<Held, StoreError> {
        let mut cell = self.cell();
        if cell.get().is_some_and(|l| l.driver.is_finished()) {
            self.drop_link(&cell);
            cell = self.cell();
        }
        let link = cell.get_or_try_init(|| dial.connect()).await?;
        Ok(Held {
            conn: link.conn.clone(),
            cell,
        })
    }

    /// Drops the link `held` came from, if it is still the slot's.
    pub(super) fn forget(&self, held: &Held) {
        self.drop_link(&held.cell);
    }

    /// Drops the slot's link, if it has one.
    pub(super) fn clear(&self) {
        let mut cell = self.lock();
        if let Some(link) = cell.get() {
            link.driver.abort();
        }
        *cell = Arc::default();
    }

    fn drop_link(&self, which: &Arc<OnceCell<Link>>) {
        let mut cell = self.lock();
        if Arc::ptr_eq(&cell, which) {
            if let Some(link) = cell.get() {
                link.driver.abort();
            }
            *cell = Arc::default();
        }
    }

    fn cell(&self) -> Arc<OnceCell<Link>> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Arc<OnceCell<Link>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
