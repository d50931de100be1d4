use std::path::PathBuf;

use super::*;

fn pem(name: &str, text: &str) -> PemFile {
    PemFile {
        path: PathBuf::from(name),
        pem: text.as_bytes().into(),
    }
}

/// A self-signed certificate for `localhost` and its key, as PEM.
fn self_signed() -> (String, String) {
    let c = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    (c.cert.pem(), c.key_pair.serialize_pem())
}

fn server(cert: &str, key: &str, ca: Option<&str>) -> ServerTls {
    ServerTls {
        cert: pem("c.pem", cert),
        key: pem("k.pem", key),
        client_ca: ca.map(|c| pem("ca.pem", c)),
        client_auth: ClientAuth::Required,
    }
}

/// The error `result` holds, and which file it is about.
fn check<T: std::fmt::Debug>(result: Result<T, TlsError>, part: Part, message: &str) {
    let e = result.unwrap_err();
    assert_eq!((e.part(), e.to_string().as_str()), (part, message));
}

#[test]
fn a_sound_pair_gives_alpn_h2_and_http1() {
    let (cert, key) = self_signed();
    let config = server_config(&server(&cert, &key, None)).unwrap();
    assert_eq!(
        config.alpn_protocols,
        [b"h2".to_vec(), b"http/1.1".to_vec()]
    );
    let config = server_config(&server(&cert, &key, Some(&cert))).unwrap();
    assert_eq!(config.alpn_protocols.len(), 2);
}

#[test]
fn files_without_the_right_pem_are_named() {
    let (cert, key) = self_signed();
    check(
        server_config(&server("hello", &key, None)),
        Part::Cert,
        "c.pem: holds no PEM certificate",
    );
    check(
        server_config(&server(&cert, &cert, None)),
        Part::Key,
        "k.pem: holds no PEM private key",
    );
    let broken = cert.replace("MII", "!!!");
    let e = server_config(&server(&broken, &key, None)).unwrap_err();
    assert_eq!(e.part(), Part::Cert);
    assert!(
        e.to_string()
            .starts_with("c.pem: not a PEM certificate file"),
        "{e}"
    );
    check(
        server_config(&server(&cert, &key, Some(""))),
        Part::Ca,
        "ca.pem: holds no PEM certificate",
    );
}

#[test]
fn a_key_of_another_certificate_is_refused() {
    let (cert, _) = self_signed();
    let (_, other_key) = self_signed();
    let e = server_config(&server(&cert, &other_key, None)).unwrap_err();
    assert_eq!(e.part(), Part::Key);
    assert!(e.to_string().starts_with("k.pem: "), "{e}");
}

#[test]
fn backend_clients_offer_http1_only() {
    let (cert, key) = self_signed();
    let tls = BackendTls {
        ca: Some(pem("ca.pem", &cert)),
        identity: Some(super::Identity {
            cert: pem("c.pem", &cert),
            key: pem("k.pem", &key),
        }),
        server_name: None,
    };
    let config = client_config(&tls).unwrap();
    assert_eq!(config.alpn_protocols, [b"http/1.1".to_vec()]);
    assert!(config.client_auth_cert_resolver.has_certs());
    let no_key = BackendTls {
        identity: Some(super::Identity {
            cert: pem("c.pem", &cert),
            key: pem("k.pem", "nothing"),
        }),
        ..tls
    };
    check(
        client_config(&no_key),
        Part::Key,
        "k.pem: holds no PEM private key",
    );
}
