//! What TLS is made from: the PEM files as read, and the settings of the
//! data listener and of a backend client. The configuration fills them in
//! (reading the files it names); [`super`] turns them into rustls settings.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

/// A PEM file as it was read. Its bytes may hold a private key: `Debug`
/// shows the path and the size only.
#[derive(Clone, PartialEq, Eq)]
pub struct PemFile {
    pub path: PathBuf,
    pub pem: Arc<[u8]>,
}

impl fmt::Debug for PemFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PemFile({}, {} bytes)",
            self.path.display(),
            self.pem.len()
        )
    }
}

/// `client_auth`: what a client without a certificate gets when
/// `client_ca_file` is set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientAuth {
    /// The handshake fails without a certificate the CA signed.
    #[default]
    Required,
    /// A client may present no certificate; one it presents must verify.
    Optional,
}

/// `[server.tls]`: TLS on the data port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerTls {
    /// The certificate chain, leaf first.
    pub cert: PemFile,
    pub key: PemFile,
    /// Client certificates are verified against these CAs when set.
    pub client_ca: Option<PemFile>,
    pub client_auth: ClientAuth,
}

/// The `tls_*` keys of a backend with an `https://` URL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackendTls {
    /// `tls_ca_file`: the CAs the backend's certificate must chain to,
    /// instead of the system's.
    pub ca: Option<PemFile>,
    /// `tls_cert_file` and `tls_key_file`: the client certificate shown to
    /// the backend.
    pub identity: Option<Identity>,
    /// `tls_server_name`: the name the backend's certificate must carry
    /// (and the SNI sent), instead of the URL's host.
    pub server_name: Option<String>,
}

/// A certificate chain and its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub cert: PemFile,
    pub key: PemFile,
}
