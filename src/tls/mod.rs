//! rustls settings from configuration: the data listener's
//! [`server_config`] (certificate, optional client-certificate verification,
//! ALPN `h2` and `http/1.1`) and a backend's [`client_config`] (CAs,
//! optional client certificate, ALPN `http/1.1`). Every one is built with
//! the `ring` provider. PEM is parsed by rustls' own types.
//!
//! This module never opens a socket and never reads a file named in the
//! configuration (the configuration read them); the only file it reads is
//! the system's CA store, once, for backends that name no CA.

use std::sync::{Arc, OnceLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};

mod expiry;
mod settings;

pub use expiry::not_after;

pub use settings::{BackendTls, ClientAuth, Identity, PemFile, ServerTls};

/// ALPN protocols the data listener offers, preferred first.
pub const SERVER_ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];
/// ALPN protocol offered to backends: the backend client speaks HTTP/1.1.
pub const BACKEND_ALPN: &[u8] = b"http/1.1";

/// Which of the files a problem is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Cert,
    Key,
    Ca,
}

/// A problem with TLS files, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {what}", path = file.path.display())]
    Pem {
        part: Part,
        file: PemFile,
        what: String,
    },
    #[error("{path}: {source}", path = file.path.display())]
    Rejected {
        part: Part,
        file: PemFile,
        source: rustls::Error,
    },
    /// The provider refused its own default protocol versions: a build
    /// problem, not a configuration one.
    #[error("TLS provider: {0}")]
    Provider(rustls::Error),
    #[error("{path}: {source}", path = file.path.display())]
    Verifier {
        file: PemFile,
        source: rustls::server::VerifierBuilderError,
    },
}

impl TlsError {
    pub fn part(&self) -> Part {
        match self {
            TlsError::Pem { part, .. } | TlsError::Rejected { part, .. } => *part,
            TlsError::Verifier { .. } => Part::Ca,
            TlsError::Provider(_) => Part::Cert,
        }
    }
}

/// The crypto provider every TLS setting is built with.
pub fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

/// The certificates of `file` (at least one).
pub fn certs(file: &PemFile, part: Part) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem_error = |what: String| TlsError::Pem {
        part,
        file: file.clone(),
        what,
    };
    let certs = CertificateDer::pem_slice_iter(&file.pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(format!("not a PEM certificate file ({e})")))?;
    if certs.is_empty() {
        return Err(pem_error("holds no PEM certificate".to_owned()));
    }
    Ok(certs)
}

/// The one private key of `file` (PKCS#8, PKCS#1 or SEC1).
pub fn key(file: &PemFile) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(&file.pem).map_err(|e| TlsError::Pem {
        part: Part::Key,
        file: file.clone(),
        what: match e {
            rustls::pki_types::pem::Error::NoItemsFound => "holds no PEM private key".to_owned(),
            e => format!("not a PEM private key file ({e})"),
        },
    })
}

/// The CAs of `file` as a root store.
fn roots(file: &PemFile) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    for cert in certs(file, Part::Ca)? {
        store.add(cert).map_err(|source| TlsError::Rejected {
            part: Part::Ca,
            file: file.clone(),
            source,
        })?;
    }
    Ok(store)
}

/// The data listener's settings: the certificate and key (which must
/// match), client certificates verified against `client_ca` when set,
/// ALPN [`SERVER_ALPN`].
pub fn server_config(tls: &ServerTls) -> Result<ServerConfig, TlsError> {
    let chain = certs(&tls.cert, Part::Cert)?;
    let private = key(&tls.key)?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Provider)?;
    let builder = match &tls.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots(ca)?), provider());
            let verifier = match tls.client_auth {
                ClientAuth::Required => verifier,
                ClientAuth::Optional => verifier.allow_unauthenticated(),
            };
            let verifier = verifier.build().map_err(|source| TlsError::Verifier {
                file: ca.clone(),
                source,
            })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config =
        builder
            .with_single_cert(chain, private)
            .map_err(|source| TlsError::Rejected {
                part: Part::Key,
                file: tls.key.clone(),
                source,
            })?;
    config.alpn_protocols = SERVER_ALPN.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

/// A backend client's settings: the backend's certificate must chain to
/// `ca` (else to the system's CAs), the client certificate is shown when
/// set, ALPN [`BACKEND_ALPN`].
pub fn client_config(tls: &BackendTls) -> Result<ClientConfig, TlsError> {
    let roots = match &tls.ca {
        Some(ca) => Arc::new(roots(ca)?),
        None => system_roots(),
    };
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Provider)?
        .with_root_certificates(roots);
    let mut config = match &tls.identity {
        None => builder.with_no_client_auth(),
        Some(id) => builder
            .with_client_auth_cert(certs(&id.cert, Part::Cert)?, key(&id.key)?)
            .map_err(|source| TlsError::Rejected {
                part: Part::Key,
                file: id.key.clone(),
                source,
            })?,
    };
    config.alpn_protocols = vec![BACKEND_ALPN.to_vec()];
    Ok(config)
}

/// Client settings that trust no certificate: what a backend whose own
/// settings were refused gets, so its handshakes fail instead of the
/// process.
pub fn refusing_client_config() -> ClientConfig {
    let roots = Arc::new(RootCertStore::empty());
    match ClientConfig::builder_with_provider(provider()).with_safe_default_protocol_versions() {
        Ok(b) => b.with_root_certificates(roots).with_no_client_auth(),
        Err(_) => ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    }
}

/// The system's CA certificates, read once. Unreadable ones are logged
/// and left out; with none, every backend certificate fails to verify
/// (and the log says why).
fn system_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            for e in &found.errors {
                tracing::warn!(error = %e, "system CA certificates: some could not be read");
            }
            let mut store = RootCertStore::empty();
            let (added, ignored) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                tracing::warn!(
                    ignored,
                    "no system CA certificates found: https backends need tls_ca_file"
                );
            }
            Arc::new(store)
        })
        .clone()
}

#[cfg(test)]
mod tests;
