//! `[server.tls]` and the backends' `tls_*` keys: required pairs, keys that
//! need TLS, the files read relative to the configuration file, every
//! problem at the key naming the file.

use std::path::{Path, PathBuf};

use super::*;

/// A directory with a certificate, its key and a CA file; removed on drop.
struct Files(PathBuf);

impl Files {
    fn new(tag: &str) -> Files {
        let dir = std::env::temp_dir().join(format!("tg-config-tls-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        std::fs::write(dir.join("cert.pem"), c.cert.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), c.key_pair.serialize_pem()).unwrap();
        std::fs::write(dir.join("ca.pem"), c.cert.pem()).unwrap();
        std::fs::write(dir.join("junk.pem"), "not pem").unwrap();
        Files(dir)
    }

    fn load(&self, text: &str) -> Result<Config, Vec<String>> {
        from_str_in(text, Some(&self.0)).map_err(|e| e.0.iter().map(ToString::to_string).collect())
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn with_server_tls(keys: &str) -> String {
    format!("[server.tls]\n{keys}\n{}", route(""))
}

#[test]
fn server_tls_reads_its_files_relative_to_the_configuration() {
    let f = Files::new("server");
    let c = f
        .load(&with_server_tls(
            "cert_file = \"cert.pem\"\nkey_file = \"key.pem\"\nclient_ca_file = \"ca.pem\"",
        ))
        .unwrap();
    let tls = c.server.tls.as_ref().unwrap();
    assert_eq!(tls.cert.path, f.0.join("cert.pem"));
    assert_eq!(tls.client_auth, ClientAuth::Required);
    assert_eq!(&*tls.key.pem, std::fs::read(f.0.join("key.pem")).unwrap());
    let files: Vec<PathBuf> = c.files_read().into_iter().map(|(p, _)| p).collect();
    let names: Vec<&Path> = files
        .iter()
        .map(|p| p.strip_prefix(&f.0).unwrap())
        .collect();
    assert_eq!(
        names,
        [
            Path::new("ca.pem"),
            Path::new("cert.pem"),
            Path::new("key.pem")
        ]
    );
    // No key material in debug output.
    assert!(!format!("{c:?}").contains("PRIVATE KEY"));
}

#[test]
fn server_tls_problems_are_reported_at_their_keys() {
    let f = Files::new("server-errors");
    assert_eq!(
        f.load(&with_server_tls("client_auth = \"optional\""))
            .unwrap_err(),
        [
            "server.tls.cert_file: required",
            "server.tls.key_file: required",
            "server.tls.client_auth: needs client_ca_file (the CAs client certificates are checked against)",
        ]
    );
    let missing = f.0.join("nope.pem");
    let errors = f
        .load(&with_server_tls(
            "cert_file = \"nope.pem\"\nkey_file = \"junk.pem\"",
        ))
        .unwrap_err();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with(&format!(
            "server.tls.cert_file: cannot read {}: ",
            missing.display()
        )),
        "{errors:?}"
    );
    assert_eq!(
        f.load(&with_server_tls(
            "cert_file = \"cert.pem\"\nkey_file = \"junk.pem\""
        ))
        .unwrap_err(),
        [format!(
            "server.tls.key_file: {}: holds no PEM private key",
            f.0.join("junk.pem").display()
        )]
    );
    assert_eq!(
        f.load(&with_server_tls(
            "cert_file = \"cert.pem\"\nkey_file = \"key.pem\"\nclient_auth = \"sometimes\""
        ))
        .unwrap_err()[0],
        "server.tls.client_auth: unknown variant `sometimes`, expected `required` or `optional`"
    );
}

fn backend(url: &str, keys: &str) -> String {
    format!(
        "[backends.b]\nurl = \"{url}\"\n{keys}\n[[routes]]\nname = \"r\"\ndefault = true\nbackend = \"b\"\n"
    )
}

#[test]
fn https_backends_read_their_tls_files() {
    let f = Files::new("backend");
    let c = f
        .load(&backend(
            "https://10.0.0.1:8443",
            "tls_ca_file = \"ca.pem\"\ntls_cert_file = \"cert.pem\"\ntls_key_file = \"key.pem\"\ntls_server_name = \"triton.internal\"",
        ))
        .unwrap();
    let b = &c.backends["b"];
    assert!(b.is_https());
    assert_eq!(b.tls.ca.as_ref().unwrap().path, f.0.join("ca.pem"));
    assert!(b.tls.identity.is_some());
    assert_eq!(b.tls.server_name.as_deref(), Some("triton.internal"));
    // Without any key: the system's CAs, no client certificate.
    let c = f.load(&backend("https://10.0.0.1", "")).unwrap();
    assert_eq!(c.backends["b"].tls, BackendTls::default());
}

#[test]
fn backend_tls_problems_are_reported_at_their_keys() {
    let f = Files::new("backend-errors");
    assert_eq!(
        f.load(&backend(
            "http://10.0.0.1",
            "tls_ca_file = \"ca.pem\"\ntls_server_name = \"x\""
        ))
        .unwrap_err(),
        [
            "backends.b.tls_ca_file: only for https:// and grpcs:// urls",
            "backends.b.tls_server_name: only for https:// and grpcs:// urls",
        ]
    );
    assert_eq!(
        f.load(&backend("https://10.0.0.1", "tls_cert_file = \"cert.pem\""))
            .unwrap_err(),
        ["backends.b.tls_key_file: required with tls_cert_file"]
    );
    assert_eq!(
        f.load(&backend("https://10.0.0.1", "tls_ca_file = \"junk.pem\""))
            .unwrap_err(),
        [format!(
            "backends.b.tls_ca_file: {}: holds no PEM certificate",
            f.0.join("junk.pem").display()
        )]
    );
    assert_eq!(
        f.load(&backend(
            "https://10.0.0.1",
            "tls_server_name = \"bad name!\""
        ))
        .unwrap_err(),
        ["backends.b.tls_server_name: \"bad name!\" is not a DNS name or IP address"]
    );
}
