//! TLS for tests: certificates made on the spot (rcgen), files in a
//! temporary directory, and a rustls client speaking HTTP/1.1 or HTTP/2.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::TempDir;

/// A certificate authority.
pub struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
    pub pem: String,
}

/// A certificate and its key, as PEM, and the certificate's DER.
#[derive(Clone)]
pub struct Leaf {
    pub cert_pem: String,
    pub key_pem: String,
    pub der: Vec<u8>,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        p.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = p.self_signed(&key).unwrap();
        Ca {
            pem: cert.pem(),
            cert,
            key,
        }
    }

    /// A certificate for `names` (DNS names or IP addresses), good for
    /// servers and clients, signed by this CA.
    pub fn leaf(&self, cn: &str, names: &[&str]) -> Leaf {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let mut p = CertificateParams::new(names).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        p.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &self.cert, &self.key).unwrap();
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().to_vec(),
        }
    }
}

impl Leaf {
    /// Writes `NAME.crt` and `NAME.key` into `dir`; their paths.
    pub fn write(&self, dir: &TempDir, name: &str) -> (PathBuf, PathBuf) {
        (
            dir.write(&format!("{name}.crt"), &self.cert_pem),
            dir.write(&format!("{name}.key"), &self.key_pem),
        )
    }
}

/// rustls server settings for a test backend: certificates from
/// `resolver`, client certificates from `client_ca` required when given.
pub fn tls_server_config(
    resolver: Arc<dyn rustls::server::ResolvesServerCert>,
    client_ca: Option<&Ca>,
    alpn: &[&[u8]],
) -> Arc<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(CertificateDer::from_pem_slice(ca.pem.as_bytes()).unwrap())
                .unwrap();
            let v =
                rustls::server::WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                    .build()
                    .unwrap();
            builder.with_client_cert_verifier(v)
        }
    };
    let mut c = builder.with_cert_resolver(resolver);
    c.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(c)
}

/// `leaf` as rustls serves it.
pub fn certified_key(leaf: &Leaf) -> Arc<rustls::sign::CertifiedKey> {
    let provider = rustls::crypto::ring::default_provider();
    Arc::new(
        rustls::sign::CertifiedKey::from_der(certs(&leaf.cert_pem), key(&leaf.key_pem), &provider)
            .unwrap(),
    )
}

fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap()
}

fn key(pem: &str) -> PrivateKeyDer<'static> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).unwrap()
}

/// rustls client settings trusting `ca`, offering `alpn`, showing
/// `identity` when given.
pub fn client_config(
    ca: &Ca,
    alpn: &[&[u8]],
    identity: Option<&Leaf>,
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.pem.as_bytes()).unwrap())
        .unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    let mut c = match identity {
        Some(id) => builder
            .with_client_auth_cert(certs(&id.cert_pem), key(&id.key_pem))
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    c.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(c)
}

/// A TLS connection to `addr` for `name`.
pub async fn connect(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    name: &str,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from(name.to_owned()).unwrap();
    TlsConnector::from(config).connect(name, tcp).await
}

/// The negotiated ALPN protocol and the server's certificate (DER).
pub fn session(stream: &TlsStream<TcpStream>) -> (Option<Vec<u8>>, Vec<u8>) {
    let (_, conn) = stream.get_ref();
    let alpn = conn.alpn_protocol().map(<[u8]>::to_vec);
    let leaf = conn.peer_certificates().unwrap()[0].to_vec();
    (alpn, leaf)
}

/// `GET path` over `stream` with the HTTP version ALPN chose; the status
/// and body, or the error text.
pub async fn get(stream: TlsStream<TcpStream>, path: &str) -> Result<(u16, Bytes), String> {
    let h2 = session(&stream).0.as_deref() == Some(b"h2");
    let req = http::Request::get(format!("https://localhost{path}"))
        .body(Empty::<Bytes>::new())
        .unwrap();
    let io = TokioIo::new(stream);
    let resp = if h2 {
        let (mut send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        send.send_request(req).await
    } else {
        let (mut send, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        send.send_request(req).await
    }
    .map_err(|e| format!("{e:?}"))?;
    let status = resp.status().as_u16();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, body))
}

/// Absolute paths as TOML strings.
pub fn toml_path(p: &Path) -> String {
    format!("{:?}", p.display().to_string())
}
