//! TLS on the data port: the listener's rustls settings, replaced whole
//! when the configuration (or a certificate file) is reloaded — a new
//! connection gets the settings current when it was accepted; open ones
//! keep theirs — and the handshake, bounded by the connection's handshake
//! deadline. HTTP/1-or-2 sniffing and hyper then run on the decrypted
//! stream exactly as on a cleartext one. The admin port never uses this.

use std::io;
use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout_at};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::config::ServerTls;
use crate::tls::TlsError;

/// The data port's current TLS settings. Cheap to clone.
#[derive(Clone, Debug)]
pub struct TlsSettings {
    current: Arc<ArcSwap<rustls::ServerConfig>>,
}

impl TlsSettings {
    pub fn new(tls: &ServerTls) -> Result<TlsSettings, TlsError> {
        let config = crate::tls::server_config(tls)?;
        Ok(TlsSettings {
            current: Arc::new(ArcSwap::from_pointee(config)),
        })
    }

    /// New connections are served with `config` from now on.
    pub fn replace(&self, config: rustls::ServerConfig) {
        self.current.store(Arc::new(config));
    }

    /// The TLS handshake on `stream`, given up at `deadline`.
    pub async fn accept(
        &self,
        stream: TcpStream,
        deadline: Instant,
    ) -> io::Result<TlsStream<TcpStream>> {
        let acceptor = TlsAcceptor::from(self.current.load_full());
        match timeout_at(deadline, acceptor.accept(stream)).await {
            Ok(done) => done,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "TLS handshake not completed within handshake_timeout",
            )),
        }
    }
}
