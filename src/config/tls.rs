//! `[server.tls]` and the `tls_*` keys of `[backends.NAME]`. The files they
//! name are read when the configuration is loaded and kept as bytes, so a
//! configuration holds the certificates it was checked with, a reload reads
//! them again, and a rotated certificate makes a different configuration.
//! Each file is checked by building from it what the listener or the
//! backend client will use ([`crate::tls`]); every problem is reported at
//! the key that names the file.

use std::path::{Path, PathBuf};

use super::ConfigError;
pub use crate::tls::{BackendTls, ClientAuth, Identity, PemFile, ServerTls};
use crate::tls::{Part, TlsError};

/// Reads the PEM file at `path`; a failure is reported at `key`.
pub(super) fn read_pem(path: &Path, key: &str) -> Result<PemFile, ConfigError> {
    crate::file::read(path)
        .map(|bytes| PemFile {
            path: path.to_owned(),
            pem: bytes.into(),
        })
        .map_err(|e| ConfigError::new(key, format!("cannot read {}: {e}", path.display())))
}

/// Where the server's TLS files are, before they are read: from
/// `[server.tls]` or from `--tls-cert` / `--tls-key`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerTlsFiles {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    pub client_ca_file: Option<PathBuf>,
    pub client_auth: ClientAuth,
}

impl ServerTlsFiles {
    /// The key every problem with these files is reported at.
    pub const KEY: &'static str = "server.tls";

    /// Reads the files and checks them by building the listener's TLS
    /// settings; every problem at its `server.tls.*` key.
    pub fn load(&self) -> Result<ServerTls, Vec<ConfigError>> {
        let key = |field: &str| format!("{}.{field}", Self::KEY);
        let mut errors = Vec::new();
        let mut read =
            |path: &Path, field: &str| read_pem(path, &key(field)).map_err(|e| errors.push(e)).ok();
        let cert = read(&self.cert_file, "cert_file");
        let tls_key = read(&self.key_file, "key_file");
        let client_ca = self
            .client_ca_file
            .as_ref()
            .map(|p| read(p, "client_ca_file"));
        let (Some(cert), Some(tls_key), None | Some(Some(_))) = (cert, tls_key, &client_ca) else {
            return Err(errors);
        };
        let tls = ServerTls {
            cert,
            key: tls_key,
            client_ca: client_ca.flatten(),
            client_auth: self.client_auth,
        };
        crate::tls::server_config(&tls)
            .map(|_| tls)
            .map_err(|e| vec![at(Self::KEY, &e, "cert_file", "key_file", "client_ca_file")])
    }
}

/// The error `e` at the key of the file it is about, under `prefix`.
pub(super) fn at(prefix: &str, e: &TlsError, cert: &str, key: &str, ca: &str) -> ConfigError {
    let field = match e.part() {
        Part::Cert => cert,
        Part::Key => key,
        Part::Ca => ca,
    };
    ConfigError::new(format!("{prefix}.{field}"), e.to_string())
}

/// `path` against `base` when relative.
pub(super) fn resolve(path: &Path, base: Option<&Path>) -> PathBuf {
    match base {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_owned(),
    }
}
