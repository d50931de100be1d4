//! Finding 3: with a key's *name* (names appear in logs and metrics) and
//! any signature, 32 SigV4 requests of 60 MB raised the gateway's RSS from
//! 20 MB to 1.92 GB, and 6 HTTP/2 connections of 200 body-less signed
//! streams took all 1024 request slots. A signed body is now held to
//! `max_signed_body_bytes` (6 MiB) and to the server's budget for
//! unverified bodies, and takes no request slot until its signature is
//! verified. The gateway runs as its own process here, so its RSS is its
//! own; a second client (correctly signed SigV4 calls and V2 infers, from
//! another address) is measured during both floods.

use std::io::Write;
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use http_body::Frame;
use hyper_util::rt::TokioExecutor;
use tensorgate::auth::amzdate;
use tensorgate::auth::keys::digest;
use tensorgate::auth::sigv4::{
    Signed, canonical_request, hex, signature, signing_key, string_to_sign,
};
use tokio::task::JoinSet;

use crate::attack::{ATTACKER, CLIENT, Probe, client_from, h2_bodyless, post};
use crate::replica::simple_infer;

const CAROL: &str = "carol-key-0123456789";
const PATH: &str = "/endpoints/rows-ep/invocations";
const MB: u64 = 1_000_000;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Headers of a CSV invocation of `path` signed as botocore signs, by key
/// `name` with `secret` over `body`; a wrong `secret` forges it.
fn signed(
    addr: std::net::SocketAddr,
    name: &str,
    secret: &str,
    body: &[u8],
) -> Vec<(String, String)> {
    let stamp = amzdate::format(now());
    let date = &stamp[..8];
    let mut headers: Vec<(String, String)> = vec![
        ("accept".into(), "application/json".into()),
        ("content-type".into(), "text/csv".into()),
        ("host".into(), addr.to_string()),
        ("x-amz-date".into(), stamp.clone()),
    ];
    let mut map = HeaderMap::new();
    for (k, v) in &headers {
        map.insert(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    let names: Vec<String> = headers.iter().map(|(k, _)| k.clone()).collect();
    let payload = digest(body);
    let req = Signed {
        method: "POST",
        path: PATH,
        query: "",
        headers: &map,
        authority: None,
        payload: &payload,
    };
    let scope = format!("{date}/us-east-1/sagemaker/aws4_request");
    let to_sign = string_to_sign(&stamp, &scope, &canonical_request(&req, &names).unwrap());
    let key = signing_key(secret.as_bytes(), date, "us-east-1", "sagemaker").unwrap();
    let sig = hex(&signature(&key, &to_sign).unwrap());
    headers.push((
        "authorization".into(),
        format!(
            "AWS4-HMAC-SHA256 Credential={name}/{scope}, SignedHeaders={}, Signature={sig}",
            names.join(";")
        ),
    ));
    headers
}

/// A body of `left` zero bytes made as it is sent, declared
/// (`content-length`) or chunked.
struct Zeros {
    left: u64,
    declared: bool,
}

impl http_body::Body for Zeros {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        static CHUNK: [u8; 64 << 10] = [b'0'; 64 << 10];
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let n = self.left.min(CHUNK.len() as u64);
        self.left -= n;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
            &CHUNK[..n as usize],
        )))))
    }
    fn size_hint(&self) -> http_body::SizeHint {
        if self.declared {
            http_body::SizeHint::with_exact(self.left)
        } else {
            http_body::SizeHint::default()
        }
    }
    fn is_end_stream(&self) -> bool {
        self.left == 0
    }
}

/// `n` attackers from [`ATTACKER`], each sending forged 60 MB invocations
/// one after another (half declared, half chunked) until aborted.
fn forged_bodies(addr: std::net::SocketAddr, n: usize, set: &mut JoinSet<()>) {
    for i in 0..n {
        set.spawn(async move {
            let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
            connector.set_local_address(Some(ATTACKER.parse().unwrap()));
            let client: hyper_util::client::legacy::Client<_, Zeros> =
                hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector);
            loop {
                let mut req = http::Request::post(format!("http://{addr}{PATH}"));
                for (k, v) in signed(addr, "carol", "not-the-secret", b"") {
                    req = req.header(k, v);
                }
                let body = Zeros {
                    left: 60 * MB,
                    declared: i % 2 == 0,
                };
                if let Ok(resp) = client.request(req.body(body).unwrap()).await {
                    let _ = http_body_util::BodyExt::collect(resp.into_body()).await;
                }
            }
        });
    }
}

/// The gateway binary, killed when dropped.
struct Gateway {
    child: Child,
    data: std::net::SocketAddr,
    admin: std::net::SocketAddr,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Gateway {
    /// The process's resident set and its peak, in MiB.
    fn rss_mib(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let kib = |key: &str| {
            status
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .unwrap_or(0)
        };
        (kib("VmRSS:") / 1024, kib("VmHWM:") / 1024)
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn start(demo: &str, dir: &std::path::Path) -> Gateway {
    let keys = dir.join("keys");
    std::fs::write(&keys, format!("carol:{CAROL}\n")).unwrap();
    let (data, admin) = (free_port(), free_port());
    let file = dir.join("tensorgate.toml");
    let mut f = std::fs::File::create(&file).unwrap();
    write!(
        f,
        r#"
[server]
listen = "127.0.0.1:{data}"
admin_listen = "127.0.0.1:{admin}"
shutdown_grace = "1s"
drain_delay = "0s"
queue_timeout = "1s"
body_read_timeout = "30s"
[backends.demo]
url = "{demo}"
[[routes]]
name = "rows"
models = ["rowsum"]
backend = "demo"
[routes.sagemaker.endpoints]
rows-ep = "rowsum"
[routes.auth]
keys_file = "keys"
[[routes]]
name = "open"
default = true
backend = "demo"
"#
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_tensorgate"))
        .arg("--config")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let gw = Gateway {
        child,
        data: format!("127.0.0.1:{data}").parse().unwrap(),
        admin: format!("127.0.0.1:{admin}").parse().unwrap(),
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(gw.admin).is_err() {
        assert!(Instant::now() < deadline, "the gateway did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    gw
}

/// What the second client got during an attack: correctly signed SigV4
/// invocations and V2 infers, one after the other, for `length`; and the
/// gateway's highest RSS seen meanwhile.
async fn measure(gw: &Gateway, length: Duration) -> (Probe, Probe, u64) {
    let client = client_from(CLIENT);
    let csv = Bytes::from_static(b"1,2,3\n4,5,6\n");
    let infer = Bytes::from(simple_infer());
    let json = vec![("content-type".to_owned(), "application/json".to_owned())];
    let (mut sigv4, mut v2) = (Probe::default(), Probe::default());
    let mut rss = 0;
    let end = Instant::now() + length;
    while Instant::now() < end {
        let headers = signed(gw.data, "carol", CAROL, &csv);
        let started = Instant::now();
        let status = tokio::time::timeout(
            Duration::from_secs(10),
            post(&client, gw.data, PATH, &headers, csv.clone()),
        )
        .await
        .unwrap_or(0);
        sigv4.record(status, started.elapsed());
        let started = Instant::now();
        let path = "/v2/models/simple/infer";
        let status = tokio::time::timeout(
            Duration::from_secs(10),
            post(&client, gw.data, path, &json, infer.clone()),
        )
        .await
        .unwrap_or(0);
        v2.record(status, started.elapsed());
        rss = rss.max(gw.rss_mib().0);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (sigv4, v2, rss)
}

fn report(what: &str, gw: &Gateway, sigv4: &Probe, v2: &Probe, rss: u64) {
    println!(
        "{what}: second client SigV4 {}/{} ok ({:.4}) p99 {:?}; V2 {}/{} ok ({:.4}) p99 {:?}; \
         gateway RSS at most {rss} MiB seen, peak {} MiB",
        sigv4.ok,
        sigv4.sent,
        sigv4.ratio(),
        sigv4.p99(),
        v2.ok,
        v2.sent,
        v2.ratio(),
        v2.p99(),
        gw.rss_mib().1,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_signatures_hold_neither_slots_nor_unbounded_memory() {
    let seconds = std::env::var("TENSORGATE_FLOOD_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let demo = tensorgate_demo::spawn().await.unwrap();
    let dir = std::env::temp_dir().join(format!("tg-signed-flood-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let gw = start(&demo.url(), &dir);
    let (idle_rss, _) = gw.rss_mib();

    // 32 forged signatures over 60 MB bodies, one after another each.
    let mut attack = JoinSet::new();
    forged_bodies(gw.data, 32, &mut attack);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (sigv4, v2, rss) = measure(&gw, Duration::from_secs(seconds)).await;
    println!("gateway RSS idle: {idle_rss} MiB");
    report("32 x 60 MB forged SigV4", &gw, &sigv4, &v2, rss);
    attack.abort_all();
    assert!(
        sigv4.ratio() >= 0.99,
        "SigV4 failures: {:?}",
        sigv4.failures
    );
    assert!(v2.ratio() >= 0.99, "V2 failures: {:?}", v2.failures);
    // The unverified budget (64 MiB) and one 6 MiB body a request, over
    // what the gateway held idle (and the debug build's own overhead).
    assert!(rss < idle_rss + 300, "RSS {rss} MiB (idle {idle_rss} MiB)");

    // 6 HTTP/2 connections of 200 forged, body-less signed streams.
    let forged = signed(gw.data, "carol", "not-the-secret", b"")
        .into_iter()
        .filter(|(k, _)| k != "host")
        .collect();
    let attack = h2_bodyless(gw.data, ATTACKER, 6, 200, PATH, forged).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (sigv4, v2, rss) = measure(&gw, Duration::from_secs(seconds)).await;
    report(
        "6 x 200 body-less forged SigV4 streams",
        &gw,
        &sigv4,
        &v2,
        rss,
    );
    drop(attack);
    assert!(
        sigv4.ratio() >= 0.99,
        "SigV4 failures: {:?}",
        sigv4.failures
    );
    assert!(v2.ratio() >= 0.99, "V2 failures: {:?}", v2.failures);
    assert!(sigv4.p99() < Duration::from_secs(1), "{:?}", sigv4.p99());
    assert!(v2.p99() < Duration::from_secs(1), "{:?}", v2.p99());
    let _ = std::fs::remove_dir_all(&dir);
}
