//! TLS on the data port (ALPN h2 and http/1.1, client certificates, the
//! handshake deadline, certificate rotation without a restart) and to
//! HTTPS backends (custom CA, client certificate, SNI and
//! `tls_server_name`), with certificates made by the test.

#[path = "common/certs.rs"]
mod certs;
mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use certs::*;
use common::*;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tensorgate::config;
use tensorgate::reload::{self, Loader, Overrides, Source};
use tensorgate::server::{self, Running};
use tensorgate_demo::DemoServer;
use tokio::net::TcpListener;

const SIMPLE: &str = r#"{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}"#;

async fn start(toml: &str, dir: &TempDir) -> Running {
    let config = config::from_str_in(toml, Some(&dir.0)).unwrap_or_else(|e| panic!("{e}"));
    let data = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = TcpListener::bind("127.0.0.1:0").await.unwrap();
    server::start_on(config, data, admin).unwrap()
}

/// A gateway with TLS on its data port in front of the demo backend.
async fn tls_gateway(
    dir: &TempDir,
    tls_keys: &str,
    server_keys: &str,
) -> (Running, tensorgate_demo::DemoServer) {
    let demo = tensorgate_demo::spawn().await.unwrap();
    let toml = format!(
        r#"
[server]
shutdown_grace = "1s"
drain_delay = "0s"
{server_keys}
[server.tls]
cert_file = "server.crt"
key_file = "server.key"
{tls_keys}
[backends.b]
url = "{}"
[[routes]]
name = "r"
default = true
backend = "b"
"#,
        demo.url()
    );
    (start(&toml, dir).await, demo)
}

#[tokio::test]
async fn the_data_port_speaks_h2_and_http1_by_alpn() {
    let dir = TempDir::new("tls-alpn");
    let ca = Ca::new("test CA");
    ca.leaf("gateway", &["localhost", "127.0.0.1"])
        .write(&dir, "server");
    let (gw, _demo) = tls_gateway(&dir, "", "").await;
    for (offer, want) in [
        (&[&b"h2"[..], b"http/1.1"][..], &b"h2"[..]),
        (&[b"http/1.1"], b"http/1.1"),
        (&[b"h2"], b"h2"),
    ] {
        let stream = connect(gw.data_addr, client_config(&ca, offer, None), "localhost")
            .await
            .unwrap();
        assert_eq!(session(&stream).0.as_deref(), Some(want));
        let (status, body) = get(stream, "/v2/models/simple").await.unwrap();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        assert!(String::from_utf8_lossy(&body).contains("\"name\":\"simple\""));
    }
    // No ALPN at all: HTTP/1 (sniffed).
    let stream = connect(gw.data_addr, client_config(&ca, &[], None), "localhost")
        .await
        .unwrap();
    assert_eq!(session(&stream).0, None);
    assert_eq!(get(stream, "/v2").await.unwrap().0, 200);
    // A cleartext request on the TLS port gets no HTTP answer.
    let mut tcp = tokio::net::TcpStream::connect(gw.data_addr).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut tcp, b"GET /v2 HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let (_, got) = until_closed(&mut tcp, Instant::now(), Duration::from_secs(5))
        .await
        .expect("closed");
    assert!(!got.starts_with(b"HTTP/"), "{got:?}");
    gw.shutdown().await;
}

/// A connection that agreed on `h2` by ALPN speaks only HTTP/2: an HTTP/1
/// request on it was answered in HTTP/1.1 (finding 11 of issue 26); one
/// that agreed on `http/1.1` is never served HTTP/2 frames.
#[tokio::test]
async fn the_protocol_agreed_by_alpn_is_the_only_one_served() {
    use tokio::io::AsyncWriteExt;
    let dir = TempDir::new("tls-alpn-only");
    let ca = Ca::new("test CA");
    ca.leaf("gateway", &["localhost", "127.0.0.1"])
        .write(&dir, "server");
    let (gw, _demo) = tls_gateway(&dir, "", "").await;
    let h2 = client_config(&ca, &[b"h2"], None);
    let mut stream = connect(gw.data_addr, h2, "localhost").await.unwrap();
    assert_eq!(session(&stream).0.as_deref(), Some(&b"h2"[..]));
    stream
        .write_all(b"GET /v2 HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .unwrap();
    let got = read_until_closed(&mut stream).await;
    assert!(
        !got.starts_with(b"HTTP/"),
        "answered in HTTP/1: {:?}",
        String::from_utf8_lossy(&got)
    );
    // The preface on a connection that agreed on http/1.1 is a bad HTTP/1
    // request, not an HTTP/2 connection.
    let h1 = client_config(&ca, &[b"http/1.1"], None);
    let mut stream = connect(gw.data_addr, h1, "localhost").await.unwrap();
    assert_eq!(session(&stream).0.as_deref(), Some(&b"http/1.1"[..]));
    stream
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    let got = read_until_closed(&mut stream).await;
    assert!(
        got.is_empty() || got.starts_with(b"HTTP/1.1 "),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    gw.shutdown().await;
}

/// What a TLS stream receives until the server closes it (5 s at most).
async fn read_until_closed(
    stream: &mut tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => panic!(
                "still open after 5 s; got {:?}",
                String::from_utf8_lossy(&got)
            ),
            Ok(Ok(0)) | Ok(Err(_)) => return got,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test]
async fn client_certificates_are_verified_when_required_or_optional() {
    let dir = TempDir::new("tls-mtls");
    let ca = Ca::new("test CA");
    let clients = Ca::new("client CA");
    let stranger = Ca::new("other CA");
    ca.leaf("gateway", &["localhost"]).write(&dir, "server");
    dir.write("clients.pem", &clients.pem);
    let good = clients.leaf("client-a", &["client-a"]);
    let bad = stranger.leaf("client-b", &["client-b"]);
    let alpn: &[&[u8]] = &[b"h2", b"http/1.1"];

    let try_get = |gw: std::net::SocketAddr, id: Option<Leaf>| {
        let config = client_config(&ca, alpn, id.as_ref());
        async move {
            let stream = connect(gw, config, "localhost")
                .await
                .map_err(|e| e.to_string())?;
            get(stream, "/v2").await.map(|(s, _)| s)
        }
    };
    let (gw, _demo) = tls_gateway(&dir, "client_ca_file = \"clients.pem\"", "").await;
    assert_eq!(try_get(gw.data_addr, Some(good.clone())).await, Ok(200));
    assert!(try_get(gw.data_addr, None).await.is_err());
    assert!(try_get(gw.data_addr, Some(bad.clone())).await.is_err());
    gw.shutdown().await;

    let optional = "client_ca_file = \"clients.pem\"\nclient_auth = \"optional\"";
    let (gw, _demo) = tls_gateway(&dir, optional, "").await;
    assert_eq!(try_get(gw.data_addr, Some(good)).await, Ok(200));
    assert_eq!(try_get(gw.data_addr, None).await, Ok(200));
    assert!(try_get(gw.data_addr, Some(bad)).await.is_err());
    gw.shutdown().await;
}

#[tokio::test]
async fn the_tls_handshake_and_the_first_request_share_the_handshake_deadline() {
    let dir = TempDir::new("tls-deadline");
    let ca = Ca::new("test CA");
    ca.leaf("gateway", &["localhost"]).write(&dir, "server");
    let (gw, _demo) = tls_gateway(&dir, "", "handshake_timeout = \"400ms\"").await;
    // Silent after connecting: closed at the deadline, not before.
    let since = Instant::now();
    let mut tcp = tokio::net::TcpStream::connect(gw.data_addr).await.unwrap();
    let (closed, _) = until_closed(&mut tcp, since, Duration::from_secs(5))
        .await
        .expect("a silent connection was never closed");
    assert!(closed >= Duration::from_millis(350), "{closed:?}");
    assert!(closed < Duration::from_secs(2), "{closed:?}");
    // TLS done, but no request: closed at the same deadline.
    let since = Instant::now();
    let stream = connect(
        gw.data_addr,
        client_config(&ca, &[b"http/1.1"], None),
        "localhost",
    )
    .await
    .unwrap();
    let mut stream = stream;
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(
        Duration::from_secs(5),
        tokio::io::AsyncReadExt::read(&mut stream, &mut buf),
    )
    .await
    .expect("a connection with no request was never closed");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    let closed = since.elapsed();
    assert!(closed >= Duration::from_millis(350), "{closed:?}");
    assert!(closed < Duration::from_secs(2), "{closed:?}");
    gw.shutdown().await;
}

/// What a client hello said: its SNI and its ALPN protocols.
type Hello = (Option<String>, Vec<Vec<u8>>);

/// Serves one certificate and records each client hello's SNI and ALPN.
#[derive(Debug)]
struct Recording {
    key: Arc<CertifiedKey>,
    hellos: Mutex<Vec<Hello>>,
}

impl ResolvesServerCert for Recording {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let alpn = hello
            .alpn()
            .map(|a| a.map(<[u8]>::to_vec).collect())
            .unwrap_or_default();
        let sni = hello.server_name().map(str::to_owned);
        self.hellos.lock().unwrap().push((sni, alpn));
        Some(self.key.clone())
    }
}

/// A demo backend over TLS with `leaf`, client certificates from
/// `client_ca` required when given; what its clients said in their hellos.
async fn https_backend(
    leaf: &Leaf,
    client_ca: Option<&Ca>,
) -> (tensorgate_demo::DemoServer, Arc<Recording>) {
    let recording = Arc::new(Recording {
        key: certified_key(leaf),
        hellos: Mutex::new(Vec::new()),
    });
    let config = tls_server_config(recording.clone(), client_ca, &[b"http/1.1"]);
    let demo = tensorgate_demo::spawn_tls(config).await.unwrap();
    (demo, recording)
}

/// A gateway (cleartext) whose backend `b` is `https://ADDR` with these
/// extra backend keys.
async fn gateway_to(dir: &TempDir, addr: std::net::SocketAddr, keys: &str) -> Running {
    let toml = format!(
        r#"
[server]
shutdown_grace = "1s"
drain_delay = "0s"
[backends.b]
url = "https://{addr}"
request_timeout = "5s"
{keys}
[[routes]]
name = "r"
default = true
backend = "b"
"#
    );
    start(&toml, dir).await
}

async fn infer(gw: &Running) -> Got {
    send(gw.data_addr, "POST", "/v2/models/simple/infer", &[], SIMPLE).await
}

#[tokio::test]
async fn https_backends_with_a_custom_ca() {
    let dir = TempDir::new("tls-backend-ca");
    let ca = Ca::new("backend CA");
    dir.write("ca.pem", &ca.pem);
    dir.write("other.pem", &Ca::new("other CA").pem);
    let (backend, hellos) = https_backend(&ca.leaf("backend", &["127.0.0.1"]), None).await;

    let gw = gateway_to(&dir, backend.addr, "tls_ca_file = \"ca.pem\"").await;
    let got = infer(&gw).await;
    assert_eq!(got.status, 200, "{}", String::from_utf8_lossy(&got.body));
    assert_eq!(got.json()["outputs"][0]["data"][0], 2);
    // ALPN http/1.1; no SNI for an IP address (RFC 6066).
    assert_eq!(
        hellos.hellos.lock().unwrap()[0],
        (None, vec![b"http/1.1".to_vec()])
    );
    gw.shutdown().await;

    // A backend certificate from another CA is refused: 502, never served.
    let gw = gateway_to(&dir, backend.addr, "tls_ca_file = \"other.pem\"").await;
    assert_eq!(infer(&gw).await.status, 502);
    gw.shutdown().await;
}

#[tokio::test]
async fn https_backends_with_a_client_certificate_and_a_server_name() {
    let dir = TempDir::new("tls-backend-mtls");
    let ca = Ca::new("backend CA");
    let clients = Ca::new("client CA");
    dir.write("ca.pem", &ca.pem);
    clients.leaf("gateway", &["gateway"]).write(&dir, "client");
    // The certificate names only backend.internal, not the address.
    let leaf = ca.leaf("backend", &["backend.internal"]);
    let (backend, hellos) = https_backend(&leaf, Some(&clients)).await;

    let keys = "tls_ca_file = \"ca.pem\"\ntls_cert_file = \"client.crt\"\ntls_key_file = \"client.key\"\ntls_server_name = \"backend.internal\"";
    let gw = gateway_to(&dir, backend.addr, keys).await;
    let got = infer(&gw).await;
    assert_eq!(got.status, 200, "{}", String::from_utf8_lossy(&got.body));
    let first = hellos.hellos.lock().unwrap()[0].clone();
    assert_eq!(first.0.as_deref(), Some("backend.internal"));
    gw.shutdown().await;

    // Without the client certificate the backend refuses the handshake.
    let keys = "tls_ca_file = \"ca.pem\"\ntls_server_name = \"backend.internal\"";
    let gw = gateway_to(&dir, backend.addr, keys).await;
    assert_eq!(infer(&gw).await.status, 502);
    gw.shutdown().await;

    // Without the server name the address does not match the certificate.
    let keys =
        "tls_ca_file = \"ca.pem\"\ntls_cert_file = \"client.crt\"\ntls_key_file = \"client.key\"";
    let gw = gateway_to(&dir, backend.addr, keys).await;
    assert_eq!(infer(&gw).await.status, 502);
    gw.shutdown().await;
}

/// A gateway with TLS from `dir/server.crt` and `dir/server.key`, in
/// front of `demo`, reloading when a file changes (polled every 50 ms).
async fn watched_tls_gateway(dir: &TempDir, demo: &DemoServer) -> (Running, reload::Handle) {
    let file = dir.write(
        "gateway.toml",
        format!(
            "[server.tls]\ncert_file = \"server.crt\"\nkey_file = \"server.key\"\n{}",
            simple_config(&demo.url(), "")
        ),
    );
    let loader = Loader {
        source: Source::File(file),
        overrides: Overrides::default(),
    };
    let loaded = loader.load().unwrap();
    assert_eq!(loaded.files.len(), 3, "{:?}", loaded.files);
    let data = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gw = server::start_on(loaded.config, data, admin).unwrap();
    let reloader = reload::Reloader::new(loader, &gw, loaded.hash);
    let reloads = reload::spawn(reloader, loaded.files, Duration::from_millis(50));
    (gw, reloads)
}

/// Reloads of `gw` so far: (success, failure).
fn reload_counts(gw: &Running) -> (u64, u64) {
    let c = gw.live.current().metrics().config_reloads.clone();
    (
        c.with_label_values(&["success"]).get(),
        c.with_label_values(&["failure"]).get(),
    )
}

async fn wait_for_reloads(gw: &Running, want: (u64, u64)) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while reload_counts(gw) != want {
        assert!(Instant::now() < deadline, "reloads {:?}", reload_counts(gw));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_rotated_certificate_is_served_to_new_connections_without_a_restart() {
    let dir = TempDir::new("tls-rotate");
    let ca = Ca::new("test CA");
    let first = ca.leaf("gateway-1", &["localhost"]);
    let second = ca.leaf("gateway-2", &["localhost"]);
    first.write(&dir, "server");
    let demo = tensorgate_demo::spawn().await.unwrap();
    let (gw, _reloads) = watched_tls_gateway(&dir, &demo).await;

    let config = client_config(&ca, &[b"http/1.1"], None);
    let old = connect(gw.data_addr, config.clone(), "localhost")
        .await
        .unwrap();
    assert_eq!(session(&old).1, first.der);
    let (mut old_conn, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(old))
            .await
            .unwrap();
    tokio::spawn(conn);

    second.write(&dir, "server");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let fresh = connect(gw.data_addr, config.clone(), "localhost")
            .await
            .unwrap();
        if session(&fresh).1 == second.der {
            assert_eq!(get(fresh, "/v2").await.unwrap().0, 200);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the new certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The connection opened before the rotation goes on with its own.
    let req = http::Request::get("/v2")
        .header("host", "localhost")
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    assert_eq!(old_conn.send_request(req).await.unwrap().status(), 200);
    let reloads = gw.live.current().metrics().config_reloads.clone();
    assert_eq!(reloads.with_label_values(&["success"]).get(), 1);
    assert_eq!(reloads.with_label_values(&["failure"]).get(), 0);
    gw.shutdown().await;
}

/// A certificate replaced without its key (a rotation half done) does not
/// match the key in force: the reload is refused and the old pair served
/// until the new key arrives.
#[tokio::test]
async fn a_certificate_without_its_new_key_is_kept_out_until_the_key_comes() {
    let dir = TempDir::new("tls-half-rotation");
    let ca = Ca::new("test CA");
    let first = ca.leaf("gateway-1", &["localhost"]);
    let second = ca.leaf("gateway-2", &["localhost"]);
    first.write(&dir, "server");
    let demo = tensorgate_demo::spawn().await.unwrap();
    let (gw, _reloads) = watched_tls_gateway(&dir, &demo).await;
    let config = client_config(&ca, &[b"http/1.1"], None);
    let served = || async {
        let stream = connect(gw.data_addr, config.clone(), "localhost")
            .await
            .unwrap();
        session(&stream).1
    };

    dir.write("server.crt", &second.cert_pem);
    wait_for_reloads(&gw, (0, 1)).await;
    assert_eq!(served().await, first.der);

    dir.write("server.key", &second.key_pem);
    wait_for_reloads(&gw, (1, 1)).await;
    assert_eq!(served().await, second.der);
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_serves_tls_from_the_command_line_and_follows_its_files() {
    let dir = TempDir::new("tls-cli");
    let ca = Ca::new("test CA");
    let first = ca.leaf("demo-1", &["localhost"]);
    let second = ca.leaf("demo-2", &["localhost"]);
    let (cert, key) = first.write(&dir, "demo");
    let port = |l: std::net::TcpListener| l.local_addr().unwrap();
    let data = port(std::net::TcpListener::bind("127.0.0.1:0").unwrap());
    let admin = port(std::net::TcpListener::bind("127.0.0.1:0").unwrap());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tensorgate"))
        .args([
            "--listen",
            &data.to_string(),
            "--admin-listen",
            &admin.to_string(),
        ])
        .arg("--tls-cert")
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut stdout = child.stdout.take().unwrap();
    let _child = Kill(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(admin).is_err() {
        assert!(Instant::now() < deadline, "the demo did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let config = client_config(&ca, &[b"h2", b"http/1.1"], None);
    let stream = connect(data, config.clone(), "localhost").await.unwrap();
    assert_eq!(session(&stream), (Some(b"h2".to_vec()), first.der.clone()));
    assert_eq!(get(stream, "/v2/models/simple").await.unwrap().0, 200);

    second.write(&dir, "demo");
    loop {
        let fresh = connect(data, config.clone(), "localhost").await.unwrap();
        if session(&fresh).1 == second.der {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the new certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut banner = [0u8; 256];
    let n = std::io::Read::read(&mut stdout, &mut banner).unwrap();
    let banner = String::from_utf8_lossy(&banner[..n]);
    assert!(
        banner.contains(&format!("gateway on https://{data}")),
        "{banner}"
    );
}
