//! Configuration reload: under load with no failed request, the new rules
//! in force after the swap, unchanged backends keeping their pools; bad
//! files (TOML, meaning, keys that cannot change while running) kept out
//! with the old configuration still serving; a Kubernetes-style `..data`
//! symlink swap picked up; SIGHUP on the real binary.

#[path = "common/certs.rs"]
mod certs;
mod common;
#[path = "common/procs.rs"]
mod procs;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use certs::TempDir;
use common::*;
use procs::{Proc, free_port, wait_listening};
use tensorgate::reload::{self, Loader, Overrides, Source};
use tensorgate::server::{self, Running};
use tensorgate_demo::DemoServer;
use tokio::net::TcpListener;

/// Rule A: the identity model takes `[N, 4]` only; rule B: any shape.
const A: &str = "[-1, 4]";
const B: &str = "[-1, -1]";

fn config(demo: &str, shape: &str, server_keys: &str) -> String {
    format!(
        r#"
[server]
shutdown_grace = "1s"
drain_delay = "0s"
{server_keys}
[backends.demo]
url = "{demo}"
[[routes]]
name = "identity"
models = ["identity"]
backend = "demo"
[routes.inputs.INPUT0]
shape = {shape}
[[routes]]
name = "default"
default = true
backend = "demo"
"#
    )
}

fn identity(width: usize) -> String {
    let data: Vec<String> = (0..width).map(|i| i.to_string()).collect();
    format!(
        r#"{{"inputs":[{{"name":"INPUT0","shape":[1,{width}],"datatype":"INT32","data":[{}]}}]}}"#,
        data.join(",")
    )
}

/// The status of an identity request `width` wide.
async fn probe(addr: std::net::SocketAddr, width: usize) -> u16 {
    let got = send(
        addr,
        "POST",
        "/v2/models/identity/infer",
        &[],
        identity(width),
    )
    .await;
    got.status.as_u16()
}

struct Harness {
    dir: TempDir,
    file: PathBuf,
    gw: Running,
    reloads: reload::Handle,
    demo: DemoServer,
}

impl Harness {
    /// A gateway loaded from `dir/tensorgate.toml` (rule A), reloading on
    /// changes polled every `poll`.
    async fn start(tag: &str, poll: Duration) -> Harness {
        let dir = TempDir::new(tag);
        let demo = tensorgate_demo::spawn().await.unwrap();
        let file = dir.write("tensorgate.toml", config(&demo.url(), A, ""));
        Harness::on(dir, file, demo, poll).await
    }

    async fn on(dir: TempDir, file: PathBuf, demo: DemoServer, poll: Duration) -> Harness {
        let loader = Loader {
            source: Source::File(file.clone()),
            overrides: Overrides::default(),
        };
        let loaded = loader.load().unwrap();
        let data = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let admin = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let gw = server::start_on(loaded.config, data, admin).unwrap();
        let reloader = reload::Reloader::new(loader, &gw, loaded.hash);
        let reloads = reload::spawn(reloader, loaded.files, poll);
        Harness {
            dir,
            file,
            gw,
            reloads,
            demo,
        }
    }

    /// Reloads so far: (success, failure).
    fn counts(&self) -> (u64, u64) {
        let c = &self.gw.live.current().metrics().config_reloads.clone();
        (
            c.with_label_values(&["success"]).get(),
            c.with_label_values(&["failure"]).get(),
        )
    }

    fn hash(&self) -> f64 {
        self.gw.live.current().metrics().config_hash.get()
    }

    async fn wait_for(&self, want: (u64, u64)) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.counts() != want {
            assert!(
                Instant::now() < deadline,
                "reloads {:?}, waited for {want:?}",
                self.counts()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn write(&self, text: &str) {
        self.dir.write("tensorgate.toml", text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloads_under_load_fail_no_request_and_apply_the_new_rule() {
    let h = Harness::start("reload-load", Duration::from_millis(50)).await;
    let addr = h.gw.data_addr;
    assert_eq!(probe(addr, 8).await, 400);
    let pool = h.gw.live.current().upstream("demo").unwrap().clone();

    let stop = Arc::new(AtomicBool::new(false));
    let load: Vec<_> = (0..3)
        .map(|_| {
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut statuses = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    statuses.push(probe(addr, 4).await);
                }
                statuses
            })
        })
        .collect();
    for i in 0..6u64 {
        let (shape, wide) = if i % 2 == 0 { (B, 200) } else { (A, 400) };
        let text = config(&h.demo.url(), shape, "");
        if i % 3 == 0 {
            // In place, as an editor might: truncated, then written.
            std::fs::write(&h.file, &text).unwrap();
        } else {
            h.write(&text);
        }
        h.wait_for((i + 1, 0)).await;
        assert_eq!(probe(addr, 8).await, wide, "after reload {}", i + 1);
        assert_eq!(h.hash() as u64, reload::file_hash(text.as_bytes()));
    }
    stop.store(true, Ordering::Relaxed);
    let mut statuses = Vec::new();
    for l in load {
        statuses.extend(l.await.unwrap());
    }
    assert!(statuses.len() > 30, "only {} requests", statuses.len());
    eprintln!(
        "{} requests from 3 clients across 6 reloads",
        statuses.len()
    );
    let failed: Vec<_> = statuses.iter().filter(|s| **s != 200).collect();
    assert!(
        failed.is_empty(),
        "{} of {} failed: {failed:?}",
        failed.len(),
        statuses.len()
    );
    // The backend did not change: its pool (and slots, metadata) lived on.
    let now = h.gw.live.current().upstream("demo").unwrap().clone();
    assert!(pool.is_same(&now));
}

/// A request in flight across a reload is checked against the
/// configuration it started with; the next request on the same keep-alive
/// connection gets the new one.
#[tokio::test]
async fn a_request_in_flight_finishes_on_the_configuration_it_started_with() {
    let h = Harness::start("reload-in-flight", Duration::from_secs(3600)).await;
    let addr = h.gw.data_addr;
    h.write(&config(&h.demo.url(), B, ""));
    h.reloads.reload().await.unwrap();
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut conn, driver) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(driver);
    let infer = |body| {
        http::Request::post("/v2/models/identity/infer")
            .header("host", "gateway")
            .header("content-type", "application/json")
            .body(body)
            .unwrap()
    };

    // Rule B (any shape): a request 8 wide starts, its head and the first
    // bytes of its body sent; nothing of its tensors is known yet.
    let body = identity(8);
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tx.send(bytes::Bytes::copy_from_slice(&body.as_bytes()[..5]))
        .await
        .unwrap();
    let reply = conn.send_request(infer(ChannelBody(rx)));
    let reply = tokio::spawn(reply);
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Rule A (`[N, 4]` only) now: new requests 8 wide are refused...
    h.write(&config(&h.demo.url(), A, ""));
    h.reloads.reload().await.unwrap();
    assert_eq!(probe(addr, 8).await, 400);
    // ...but the one in flight is checked against rule B, its own.
    tx.send(bytes::Bytes::copy_from_slice(&body.as_bytes()[5..]))
        .await
        .unwrap();
    drop(tx);
    let reply = reply.await.unwrap().unwrap();
    assert_eq!(reply.status(), 200);
    http_body_util::BodyExt::collect(reply.into_body())
        .await
        .unwrap();
    // The connection goes on; its next request sees rule A.
    conn.ready().await.unwrap();
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(bytes::Bytes::from(body)).await.unwrap();
    drop(tx);
    let next = conn.send_request(infer(ChannelBody(rx))).await.unwrap();
    assert_eq!(next.status(), 400);
    assert_eq!(h.counts(), (2, 0));
}

#[tokio::test]
async fn invalid_configurations_are_kept_out_and_the_old_one_serves() {
    // No polling during the test: each reload is asked for.
    let h = Harness::start("reload-invalid", Duration::from_secs(3600)).await;
    let addr = h.gw.data_addr;
    let hash = h.hash();
    assert_ne!(hash, 0.0);
    let demo = h.demo.url();
    let cases = [
        ("[server\nlisten = 1".to_owned(), "invalid TOML"),
        (
            config(&demo, B, "").replace(
                "backend = \"demo\"\n[routes.inputs",
                "backend = \"nope\"\n[routes.inputs",
            ),
            "routes[0].backend: unknown backend \"nope\" (defined: demo)",
        ),
        (
            config(&demo, B, "listen = \"127.0.0.1:1\""),
            "server.listen: cannot change while running (running: 127.0.0.1:8000, new: 127.0.0.1:1); restart to apply it",
        ),
        (
            config(&demo, B, "max_connections = 7"),
            "server.max_connections: cannot change while running",
        ),
    ];
    for (n, (text, error)) in cases.iter().enumerate() {
        h.write(text);
        let e = h.reloads.reload().await.unwrap_err();
        assert!(e.to_string().starts_with(error), "{e}");
        assert_eq!(h.counts(), (0, n as u64 + 1));
        // Rule A still holds; nothing else changed either.
        assert_eq!(probe(addr, 8).await, 400);
        assert_eq!(probe(addr, 4).await, 200);
        assert_eq!(h.hash(), hash);
    }
    h.write(&config(&demo, B, ""));
    let r = h.reloads.reload().await.unwrap();
    assert_eq!(
        (r.kept.upstreams, r.kept.rebuilt, r.kept.admission),
        (1, 0, true)
    );
    assert_eq!(probe(addr, 8).await, 200);
    assert_eq!(h.counts(), (1, 4));
}

#[tokio::test]
async fn a_bad_file_written_while_running_is_kept_out() {
    let h = Harness::start("reload-bad-file", Duration::from_millis(50)).await;
    let hash = h.hash();
    h.write("[[routes]]\nname = 1\n");
    h.wait_for((0, 1)).await;
    assert_eq!(probe(h.gw.data_addr, 8).await, 400);
    assert_eq!(h.hash(), hash);
    // Not retried while the file stays the same.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.counts(), (0, 1));
}

/// A bad file refused by a signal's reload is not tried again when the
/// watcher sees the same change.
#[tokio::test]
async fn a_bad_file_refused_on_signal_is_not_retried_by_the_watcher() {
    let h = Harness::start("reload-bad-signal", Duration::from_millis(200)).await;
    h.write("[[routes]]\nname = 1\n");
    // Well before the watcher's debounce (two polls) is over.
    h.reloads.reload().await.unwrap_err();
    assert_eq!(h.counts(), (0, 1));
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(h.counts(), (0, 1));
    assert_eq!(probe(h.gw.data_addr, 8).await, 400);
}

#[tokio::test]
async fn a_configmap_style_symlink_swap_is_picked_up() {
    let dir = TempDir::new("reload-configmap");
    let demo = tensorgate_demo::spawn().await.unwrap();
    let first = dir.path("..2026_01_01_00_00_00.000000001");
    std::fs::create_dir(&first).unwrap();
    std::fs::write(first.join("tensorgate.toml"), config(&demo.url(), A, "")).unwrap();
    std::os::unix::fs::symlink("..2026_01_01_00_00_00.000000001", dir.path("..data")).unwrap();
    std::os::unix::fs::symlink("..data/tensorgate.toml", dir.path("tensorgate.toml")).unwrap();
    let file = dir.path("tensorgate.toml");
    let h = Harness::on(dir, file, demo, Duration::from_millis(50)).await;
    assert_eq!(probe(h.gw.data_addr, 8).await, 400);

    // What the kubelet does: a new timestamped directory, a new symlink
    // renamed over `..data`, the old directory removed.
    let second = h.dir.path("..2026_01_01_00_01_00.000000002");
    std::fs::create_dir(&second).unwrap();
    std::fs::write(second.join("tensorgate.toml"), config(&h.demo.url(), B, "")).unwrap();
    std::os::unix::fs::symlink("..2026_01_01_00_01_00.000000002", h.dir.path("..data_tmp"))
        .unwrap();
    std::fs::rename(h.dir.path("..data_tmp"), h.dir.path("..data")).unwrap();
    std::fs::remove_dir_all(h.dir.path("..2026_01_01_00_00_00.000000001")).unwrap();

    h.wait_for((1, 0)).await;
    assert_eq!(probe(h.gw.data_addr, 8).await, 200);
}

/// A route with keys (`keys` beside the configuration file) and a route
/// rate limit of 3 requests, refilled too slowly to matter in a test;
/// `note` makes otherwise identical files differ.
fn guarded(demo: &str, note: &str) -> String {
    format!(
        r#"# {note}
[server]
shutdown_grace = "1s"
drain_delay = "0s"
[backends.demo]
url = "{demo}"
[[routes]]
name = "default"
default = true
backend = "demo"
[routes.auth]
keys_file = "keys"
[routes.rate_limit]
requests_per_second = 0.001
burst = 3
"#
    )
}

#[tokio::test]
async fn a_rotated_key_file_is_reloaded_and_rate_limit_buckets_survive_reloads() {
    const ALICE: &str = "alice-key-0123456789";
    const BOB: &str = "bob-key-0123456789ab";
    let dir = TempDir::new("reload-keys");
    let demo = tensorgate_demo::spawn().await.unwrap();
    dir.write("keys", format!("alice:{ALICE}\n"));
    let file = dir.write("tensorgate.toml", guarded(&demo.url(), "first"));
    let h = Harness::on(dir, file, demo, Duration::from_millis(50)).await;
    let addr = h.gw.data_addr;
    let get = |key: &'static str| async move {
        let headers = [("x-api-key", key)];
        let got = send(addr, "GET", "/v2/models/simple", &headers, "").await;
        got.status.as_u16()
    };
    assert_eq!(get(ALICE).await, 200);
    assert_eq!(get(BOB).await, 401);

    // A Secret update: the key file alone changes; the watcher reloads.
    h.dir.write("keys", format!("bob:{BOB}\n"));
    h.wait_for((1, 0)).await;
    assert_eq!(get(ALICE).await, 401);
    assert_eq!(get(BOB).await, 200);

    // A bad key file is refused; bob's key stays in force.
    h.dir.write("keys", "bob:short\n");
    h.wait_for((1, 1)).await;
    assert_eq!(get(BOB).await, 200);

    // The route's bucket (3 requests) lived through both reloads and lives
    // through a third: the next request is over the limit.
    h.dir.write("keys", format!("bob:{BOB}\n"));
    h.write(&guarded(&h.demo.url(), "second"));
    h.wait_for((2, 1)).await;
    assert_eq!(get(BOB).await, 429);
}

/// A metric's value in an admin scrape.
async fn metric(admin: std::net::SocketAddr, series: &str) -> Option<f64> {
    let body = send(admin, "GET", "/metrics", &[], "").await.body;
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

async fn wait_metric(admin: std::net::SocketAddr, series: &str, want: f64, p: &Proc) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while metric(admin, series).await != Some(want) {
        assert!(
            Instant::now() < deadline,
            "{series} never reached {want}; log:\n{}",
            p.text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_binary_and_refuses_a_new_listen_address() {
    let dir = TempDir::new("reload-sighup");
    let demo = tensorgate_demo::spawn().await.unwrap();
    let (data, admin) = (free_port(), free_port());
    let listen = format!("listen = \"127.0.0.1:{data}\"\nadmin_listen = \"127.0.0.1:{admin}\"");
    let text = config(&demo.url(), A, &listen);
    let file = dir.write("tensorgate.toml", &text);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tensorgate"));
    cmd.arg("--config").arg(&file).env("RUST_LOG", "info");
    let p = Proc::spawn(cmd, dir.path("gateway.log"));
    let (data, admin): (std::net::SocketAddr, std::net::SocketAddr) = (
        format!("127.0.0.1:{data}").parse().unwrap(),
        format!("127.0.0.1:{admin}").parse().unwrap(),
    );
    assert!(
        wait_listening(admin, Duration::from_secs(10)),
        "the gateway did not start:\n{}",
        p.text()
    );
    let hash = reload::file_hash(text.as_bytes()) as f64;
    assert_eq!(metric(admin, "tensorgate_config_hash").await, Some(hash));
    let success = "tensorgate_config_reloads_total{result=\"success\"}";
    let failure = "tensorgate_config_reloads_total{result=\"failure\"}";
    assert_eq!(metric(admin, success).await, Some(0.0));

    // Nothing changed: SIGHUP reloads anyway (the watcher would not).
    p.signal("-HUP");
    wait_metric(admin, success, 1.0, &p).await;
    assert_eq!(probe(data, 8).await, 400);

    // A new rule, applied by SIGHUP well before the next poll.
    let text = config(&demo.url(), B, &listen);
    dir.write("tensorgate.toml", &text);
    p.signal("-HUP");
    wait_metric(admin, success, 2.0, &p).await;
    assert_eq!(probe(data, 8).await, 200);
    let hash = reload::file_hash(text.as_bytes()) as f64;
    assert_eq!(metric(admin, "tensorgate_config_hash").await, Some(hash));

    // A new listen address is refused; the process keeps serving.
    let moved = format!(
        "listen = \"127.0.0.1:{}\"\nadmin_listen = \"{admin}\"",
        free_port()
    );
    dir.write("tensorgate.toml", config(&demo.url(), A, &moved));
    p.signal("-HUP");
    wait_metric(admin, failure, 1.0, &p).await;
    assert_eq!(probe(data, 8).await, 200);
    assert_eq!(metric(admin, success).await, Some(2.0));
    assert_eq!(metric(admin, "tensorgate_config_hash").await, Some(hash));
    p.wait_log("SIGHUP received");
    p.wait_log("key=server.listen");
    p.wait_log("configuration reload failed; the running configuration is kept");
}
