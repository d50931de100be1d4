//! How connections to one backend are made: TCP with the backend's connect
//! timeout and no Nagle delay, then TLS for an `https://` URL — the
//! backend's certificate checked against `tls_ca_file` (else the system's
//! CAs) for the URL's host (or `tls_server_name`), which is also the SNI
//! sent; the client certificate shown when one is configured; ALPN
//! `http/1.1` only, the one protocol the backend client speaks.
//!
//! Every replica's pool is built through [`connector`]; nothing else in
//! the upstream knows about TLS. Replicas found through DNS are reached as
//! `http://` and get no TLS. It never reads a file: the configuration
//! holds the certificates it was loaded with.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Uri;
use hyper_rustls::{DefaultServerNameResolver, MaybeHttpsStream, ResolveServerName};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::config::Backend;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The connector of every backend pool: plain TCP for `http://`, TCP then
/// TLS for `https://`. (hyper-rustls's own connector offers ALPN
/// `http/1.1` only together with `h2`; its stream type is used as is.)
#[derive(Clone, Debug)]
pub(crate) struct Connector {
    tcp: HttpConnector,
    /// `None` for an `http://` backend: no TLS settings are built for it.
    tls: Option<Tls>,
}

#[derive(Clone)]
struct Tls {
    connector: TlsConnector,
    /// `tls_server_name`, else the URL's host.
    server_name: Option<ServerName<'static>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

/// The connector for `backend`'s pool.
pub(crate) fn connector(backend: &Backend) -> Connector {
    let mut tcp = HttpConnector::new();
    tcp.set_connect_timeout(Some(backend.connect_timeout));
    tcp.set_nodelay(true);
    // `https` URIs reach the TCP connector too; the scheme is checked here.
    tcp.enforce_http(false);
    let tls = backend.is_https().then(|| {
        let mut config = crate::tls::client_config(&backend.tls).unwrap_or_else(|e| {
            // The configuration was checked by building this same value.
            tracing::error!(backend = backend.name, error = %e, "backend TLS settings refused; its handshakes will fail");
            crate::tls::refusing_client_config()
        });
        match backend.protocol() {
            // gRPC is HTTP/2 only.
            crate::config::Protocol::Grpc => config.alpn_protocols = vec![b"h2".to_vec()],
            crate::config::Protocol::Http => {}
        }
        Tls {
            connector: TlsConnector::from(Arc::new(config)),
            server_name: backend
                .tls
                .server_name
                .as_deref()
                .and_then(|n| ServerName::try_from(n.to_owned()).ok()),
        }
    });
    Connector { tcp, tls }
}

impl tower::Service<Uri> for Connector {
    type Response = MaybeHttpsStream<TokioIo<TcpStream>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        tower::Service::<Uri>::poll_ready(&mut self.tcp, cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let https = dst.scheme() == Some(&http::uri::Scheme::HTTPS);
        let tls = match (&self.tls, https) {
            (_, false) => None,
            (Some(tls), true) => {
                let name = match &tls.server_name {
                    Some(n) => Ok(n.clone()),
                    None => DefaultServerNameResolver::default().resolve(&dst),
                };
                match name {
                    Ok(name) => Some((tls.connector.clone(), name)),
                    Err(e) => return Box::pin(async move { Err(e) }),
                }
            }
            (None, true) => {
                let e = std::io::Error::other("https URI for a backend configured with http://");
                return Box::pin(async move { Err(e.into()) });
            }
        };
        let connecting = tower::Service::<Uri>::call(&mut self.tcp, dst);
        Box::pin(async move {
            let tcp = connecting.await?;
            let Some((connector, name)) = tls else {
                return Ok(MaybeHttpsStream::Http(tcp));
            };
            let stream = connector.connect(name, TokioIo::new(tcp)).await?;
            Ok(MaybeHttpsStream::Https(TokioIo::new(stream)))
        })
    }
}
