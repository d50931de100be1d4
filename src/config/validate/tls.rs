//! Stage 2 for `[server.tls]` and the `tls_*` keys of a backend: required
//! pairs, keys that make no sense without TLS, and the files themselves
//! (read relative to the configuration file, checked by building what will
//! use them).

use std::path::Path;

use super::Check;
use crate::config::raw::{Name, RawBackend, RawServerTls};
use crate::config::tls::{at, resolve};
use crate::config::{Backend, BackendTls, Identity, Replicas, ServerTls, ServerTlsFiles};

impl Check<'_> {
    /// `[server.tls]`, its files read and checked.
    pub(super) fn server_tls(&mut self, raw: RawServerTls) -> Option<ServerTls> {
        let key = ServerTlsFiles::KEY;
        let cert_file = self.required_path(format!("{key}.cert_file"), raw.cert_file);
        let key_file = self.required_path(format!("{key}.key_file"), raw.key_file);
        let client_ca_file = raw
            .client_ca_file
            .map(|f| resolve(Path::new(&f.0), self.base));
        if raw.client_auth.is_some() && client_ca_file.is_none() {
            let message = "needs client_ca_file (the CAs client certificates are checked against)";
            self.error(format!("{key}.client_auth"), message);
        }
        let files = ServerTlsFiles {
            cert_file: cert_file?,
            key_file: key_file?,
            client_ca_file,
            client_auth: raw.client_auth.map(|w| w.0).unwrap_or_default(),
        };
        files.load().map_err(|e| self.errors.extend(e)).ok()
    }

    fn required_path(&mut self, key: String, name: Option<Name>) -> Option<std::path::PathBuf> {
        match name {
            Some(Name(p)) => Some(resolve(Path::new(&p), self.base)),
            None => {
                self.error(key, "required");
                None
            }
        }
    }

    /// The `tls_*` keys of backend `name` (at `backends.NAME`), into
    /// `backend.tls`.
    pub(super) fn backend_tls(&mut self, backend: &mut Backend, raw: &RawBackend) {
        let prefix = format!("backends.{}", backend.name);
        if let Replicas::Urls(urls) = &backend.replicas
            && let Some(first) = urls.first()
            && urls.iter().any(|u| u.scheme() != first.scheme())
        {
            let message = "mixes URL schemes (one backend, one scheme: http, https, grpc or grpcs)";
            self.error(format!("{prefix}.urls"), message);
        }
        let https = backend.is_https();
        let named = [
            ("tls_ca_file", raw.tls_ca_file.is_some()),
            ("tls_cert_file", raw.tls_cert_file.is_some()),
            ("tls_key_file", raw.tls_key_file.is_some()),
            ("tls_server_name", raw.tls_server_name.is_some()),
        ];
        if !https {
            for (field, _) in named.iter().filter(|(_, set)| *set) {
                self.error(
                    format!("{prefix}.{field}"),
                    "only for https:// and grpcs:// urls",
                );
            }
            return;
        }
        let read = |check: &mut Self, field: &str, name: &Option<Name>| {
            let path = resolve(Path::new(&name.as_ref()?.0), check.base);
            crate::config::tls::read_pem(&path, &format!("{prefix}.{field}"))
                .map_err(|e| check.errors.push(e))
                .ok()
        };
        let ca = read(self, "tls_ca_file", &raw.tls_ca_file);
        let cert = read(self, "tls_cert_file", &raw.tls_cert_file);
        let key = read(self, "tls_key_file", &raw.tls_key_file);
        let identity = match (raw.tls_cert_file.is_some(), raw.tls_key_file.is_some()) {
            (true, false) => {
                self.error(
                    format!("{prefix}.tls_key_file"),
                    "required with tls_cert_file",
                );
                None
            }
            (false, true) => {
                self.error(
                    format!("{prefix}.tls_cert_file"),
                    "required with tls_key_file",
                );
                None
            }
            _ => cert.zip(key).map(|(cert, key)| Identity { cert, key }),
        };
        let tls = BackendTls {
            ca,
            identity,
            server_name: raw.tls_server_name.as_ref().map(|n| n.0.clone()),
        };
        if let Err(e) = crate::tls::client_config(&tls) {
            let e = at(&prefix, &e, "tls_cert_file", "tls_key_file", "tls_ca_file");
            self.errors.push(e);
        }
        backend.tls = tls;
    }
}
