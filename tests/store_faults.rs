//! The shared rate-limit store (`[rate_limit_store]`) misbehaving: a
//! hostile Redis (or one a man in the middle speaks for: `redis://` is
//! clear text) answering with a reply that never ends, and a real Redis
//! (`redis-server`, started on 127.0.0.1; SKIPPED without one, except
//! under `CI`) that answers `PING` but fails the rate-limit script. The
//! gateway under test is a process of its own, so its memory and its log
//! are its own.

mod common;
#[path = "common/procs.rs"]
mod procs;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{TestBackend, reply};
use procs::{GatewayProc, free_port, redis_server, start_redis, temp_dir};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The resident memory of process `pid`, in bytes (`VmRSS`).
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status");
    kib * 1024
}

async fn scrape(admin: SocketAddr) -> String {
    let got = common::send(admin, "GET", "/metrics", &[], "").await;
    String::from_utf8(got.body.to_vec()).unwrap()
}

/// The commands complete in `buf` (RESP arrays of bulk strings, as a
/// client sends them), each as its upper-cased name; what is used is
/// drained.
fn commands(buf: &mut Vec<u8>) -> Vec<String> {
    fn line(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
        let end = buf[at..].windows(2).position(|w| w == b"\r\n")? + at;
        Some((&buf[at..end], end + 2))
    }
    let mut names = Vec::new();
    let mut at = 0;
    'next: while at < buf.len() {
        let Some((head, mut pos)) = line(buf, at) else {
            break;
        };
        let n: usize = std::str::from_utf8(&head[1..]).unwrap().parse().unwrap();
        let mut name = None;
        for _ in 0..n {
            let Some((len, after)) = line(buf, pos) else {
                break 'next;
            };
            let len: usize = std::str::from_utf8(&len[1..]).unwrap().parse().unwrap();
            if buf.len() < after + len + 2 {
                break 'next;
            }
            name.get_or_insert_with(|| {
                String::from_utf8_lossy(&buf[after..after + len]).to_ascii_uppercase()
            });
            pos = after + len + 2;
        }
        names.push(name.unwrap_or_default());
        at = pos;
    }
    buf.drain(..at);
    names
}

/// What the hostile server saw and did.
#[derive(Default)]
struct Seen {
    connections: AtomicU64,
    /// Never-ending replies begun.
    floods: AtomicU64,
    /// Bytes of never-ending replies written, on every connection.
    flooded: AtomicU64,
    /// Never-ending replies the client stopped reading by closing.
    cut: AtomicU64,
}

/// A Redis on 127.0.0.1 that answers the connection's setup and `PING`
/// like a Redis, and every script (`EVALSHA`, `EVAL`) with an array of
/// 2^31-1 elements whose `:0` elements it writes until the client closes
/// the connection or `until`.
async fn hostile(until: Instant) -> (SocketAddr, Arc<Seen>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let counts = seen.clone();
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counts.connections.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(serve(stream, counts.clone(), until));
        }
    });
    (addr, seen, task)
}

async fn serve(mut stream: TcpStream, seen: Arc<Seen>, until: Instant) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        for name in commands(&mut buf) {
            let answer: &[u8] = match name.as_str() {
                "PING" => b"+PONG\r\n",
                "EVALSHA" | "EVAL" => return flood(stream, &seen, until).await,
                _ => b"+OK\r\n",
            };
            if stream.write_all(answer).await.is_err() {
                return;
            }
        }
    }
}

async fn flood(mut stream: TcpStream, seen: &Seen, until: Instant) {
    let zeros = b":0\r\n".repeat(16 << 10);
    seen.floods.fetch_add(1, Ordering::Relaxed);
    if stream.write_all(b"*2147483647\r\n").await.is_err() {
        seen.cut.fetch_add(1, Ordering::Relaxed);
        return;
    }
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.write_all(&zeros)).await {
            Ok(Ok(())) => {
                seen.flooded
                    .fetch_add(zeros.len() as u64, Ordering::Relaxed);
            }
            Ok(Err(_)) => {
                seen.cut.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Err(_) => return,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_answering_without_end_is_cut_off_and_costs_no_memory() {
    const FLOOD: Duration = Duration::from_secs(3);
    let started = Instant::now();
    let (redis, seen, server) = hostile(started + FLOOD + Duration::from_secs(5)).await;
    let backend = TestBackend::start(|_| async { reply(200, &[], "{}") }).await;
    let dir = temp_dir("store-hostile");
    let toml = format!(
        r#"
[rate_limit_store]
url = "redis://{redis}"
on_store_error = "allow"
timeout = "100ms"
probe_interval = "500ms"

[backends.b]
url = "{backend}"

[[routes]]
name = "limited"
default = true
backend = "b"
[routes.rate_limit]
requests_per_second = 1000
burst = 1000
"#,
        backend = backend.url()
    );
    let gw = GatewayProc::start(&dir, "hostile", &toml);
    let pid = gw.proc.child.id();
    let before = rss(pid);

    // The gateway's first announcement meets the flood: the store is
    // taken as down within its timeout, and requests are decided by the
    // policy without waiting.
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let m = scrape(gw.admin).await;
        if common::metric(&m, "tensorgate_rate_limit_store_up") == Some(0.0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the store is still taken as up:\n{}",
            gw.proc.tail()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let asked = Instant::now();
    let got = tokio::time::timeout(
        Duration::from_secs(2),
        common::send(gw.data, "GET", "/v2/health/ready", &[], ""),
    )
    .await
    .expect("a request waited on the flooded store");
    assert_eq!(got.status, 200, "on_store_error = allow");
    assert!(asked.elapsed() < Duration::from_secs(1));

    // Every probe (every 500 ms) meets the flood again, on a new
    // connection: each one is cut as soon as the reply shows its size.
    tokio::time::sleep(FLOOD.saturating_sub(started.elapsed())).await;
    let after = rss(pid);
    let flooded = seen.flooded.load(Ordering::Relaxed);
    let connections = seen.connections.load(Ordering::Relaxed);
    let floods = seen.floods.load(Ordering::Relaxed);
    let cut = seen.cut.load(Ordering::Relaxed);
    eprintln!(
        "RSS {} -> {} MiB; {connections} connections, {cut} of {floods} floods cut, {} MiB written",
        before >> 20,
        after >> 20,
        flooded >> 20
    );
    // What the kernel's socket buffers hold on loopback is all a flood
    // gets in before the connection is closed: a few MiB per connection.
    assert!(
        flooded < 8 * connections.max(1) * (1 << 20),
        "{} MiB written over {connections} connections",
        flooded >> 20
    );
    // Each probe's flood was cut off, but for the one under way.
    assert!(
        floods >= 2 && cut + 1 >= floods,
        "{cut} of {floods} floods cut off by the gateway"
    );
    assert!(
        after < before + (64 << 20),
        "RSS grew from {} to {} MiB",
        before >> 20,
        after >> 20
    );
    let log = gw.proc.text();
    assert_eq!(
        log.matches("rate-limit store unreachable").count(),
        1,
        "one outage, logged once:\n{log}"
    );
    assert!(!log.contains("reachable again"), "{log}");
    server.abort();
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sends one command to the Redis at 127.0.0.1:`port` and returns its
/// reply's first line.
async fn redis_cmd(port: u16, args: &[&str]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let mut cmd = format!("*{}\r\n", args.len());
    for a in args {
        cmd.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    stream.write_all(cmd.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    while !reply.ends_with(b"\r\n") {
        let mut byte = [0u8; 1];
        stream.read_exact(&mut byte).await.unwrap();
        reply.push(byte[0]);
    }
    String::from_utf8(reply).unwrap().trim_end().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_that_keeps_failing_takes_the_store_down_once_not_per_request() {
    let Some(bin) = redis_server() else { return };
    let dir = temp_dir("store-flap");
    let port = free_port();
    let _redis = start_redis(&bin, &dir, port);
    // The route's bucket as a hash: the script's GET on it fails
    // (WRONGTYPE) while PING, and the announcement on another key, answer.
    let route = "flappy";
    let bucket = format!("tensorgate:rl:{}:{route}::requests", route.len());
    assert_eq!(redis_cmd(port, &["HSET", &bucket, "f", "v"]).await, ":1");
    let backend = TestBackend::start(|_| async { reply(200, &[], "{}") }).await;
    let toml = format!(
        r#"
[rate_limit_store]
url = "redis://127.0.0.1:{port}"
on_store_error = "allow"
timeout = "100ms"
probe_interval = "500ms"

[backends.b]
url = "{backend}"

[[routes]]
name = "{route}"
default = true
backend = "b"
[routes.rate_limit]
requests_per_second = 1
burst = 100000
"#,
        backend = backend.url()
    );
    let gw = GatewayProc::start(&dir, "flap", &toml);

    // 2 s of requests, 5 at a time: every one is let through by the
    // policy, and the store changes state at most once per probe.
    const OFFERED: Duration = Duration::from_secs(2);
    let started = Instant::now();
    let mut sent = 0;
    while started.elapsed() < OFFERED {
        let mut batch = tokio::task::JoinSet::new();
        for _ in 0..5 {
            batch.spawn(common::send(gw.data, "GET", "/v2/health/ready", &[], ""));
        }
        let answers = tokio::time::timeout(Duration::from_secs(5), batch.join_all())
            .await
            .expect("requests waited on the store");
        for got in answers {
            assert_eq!(got.status, 200, "on_store_error = allow");
            sent += 1;
        }
    }
    let log = gw.proc.text();
    let down = log.matches("rate-limit store unreachable").count();
    let up = log.matches("rate-limit store reachable again").count();
    eprintln!("{sent} requests in {OFFERED:?}: {down} down, {up} up");
    assert!(sent > 50, "only {sent} requests");
    let changes: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("rate-limit store"))
        .take(6)
        .collect();
    assert_eq!(
        (down, up),
        (1, 0),
        "a PING answering does not make a failing script work:\n{}",
        changes.join("\n")
    );
    let m = scrape(gw.admin).await;
    assert_eq!(
        common::metric(&m, "tensorgate_rate_limit_store_up"),
        Some(0.0)
    );

    // Once the script can work again, the next probe says so.
    assert_eq!(redis_cmd(port, &["DEL", &bucket]).await, ":1");
    let deadline = Instant::now() + Duration::from_secs(3);
    while !gw.proc.text().contains("rate-limit store reachable again") {
        assert!(
            Instant::now() < deadline,
            "never up again:\n{}",
            gw.proc.text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The probe asked the failed decision again taking nothing: it wrote
    // nothing.
    assert_eq!(redis_cmd(port, &["TYPE", &bucket]).await, "+none");
    let got = common::send(gw.data, "GET", "/v2/health/ready", &[], "").await;
    assert_eq!(got.status, 200);
    let m = scrape(gw.admin).await;
    assert_eq!(
        common::metric(&m, "tensorgate_rate_limit_store_up"),
        Some(1.0)
    );
    // The request took its token in the store: the bucket (at one token a
    // second) is there for a second.
    assert_eq!(
        redis_cmd(port, &["TYPE", &bucket]).await,
        "+string",
        "decisions go to the store again"
    );
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}
