//! Rate limits shared by several gateway processes through a real Redis
//! (`[rate_limit_store]`): three gateways hold one key to 100 requests a
//! second in total while offered 300 a second across them; with Redis
//! stopped mid-run each `on_store_error` policy does what it says (allow:
//! everything passes; deny: nothing does; local: each gateway its third);
//! with Redis started again the shared limit holds again, without a
//! gateway restart.
//!
//! Needs `redis-server` (`scripts/setup.sh` installs Debian's; or
//! `TENSORGATE_REDIS_SERVER=PATH`), which the test starts on 127.0.0.1
//! itself. Without it the test prints SKIPPED and passes, except under
//! `CI`, where it fails.

mod common;
#[path = "common/procs.rs"]
mod procs;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{TestBackend, reply};
use http_body_util::{BodyExt, Full};
use procs::{GatewayProc, free_port, redis_server, start_redis, temp_dir};

const KEY: &str = "shared-key-0123456789";
const RATE: f64 = 100.0;
const BURST: u64 = 10;

fn gateway_toml(redis: u16, backend: &str, keys: &Path, policy: &str) -> String {
    format!(
        r#"
[rate_limit_store]
url = "redis://127.0.0.1:{redis}"
on_store_error = "{policy}"
timeout = "100ms"
probe_interval = "500ms"

[backends.b]
url = "{backend}"

[[routes]]
name = "shared"
default = true
backend = "b"
[routes.auth]
keys_file = "{keys}"
[routes.rate_limit.per_key]
requests_per_second = {RATE}
burst = {BURST}
"#,
        keys = keys.display()
    )
}

/// What a load run came to.
#[derive(Debug, Default)]
struct Counts {
    passed: u64,
    refused: u64,
    other: u64,
    seconds: f64,
}

impl Counts {
    /// Requests passed per second beyond `burst`.
    fn rate(&self, burst: u64) -> f64 {
        self.passed.saturating_sub(burst) as f64 / self.seconds
    }
}

/// Offers 100 requests a second to each of `gateways` (one every 10 ms
/// each, never waiting for answers) for `secs`, with the shared key.
async fn offer(gateways: &[SocketAddr], secs: f64) -> Counts {
    let client = common::client();
    let passed = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let other = Arc::new(AtomicU64::new(0));
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    while started.elapsed().as_secs_f64() < secs {
        tick.tick().await;
        for addr in gateways {
            let req = http::Request::get(format!("http://{addr}/v2/health/ready"))
                .header("x-api-key", KEY)
                .body(Full::new(Bytes::new()))
                .unwrap();
            let (client, passed, refused, other) = (
                client.clone(),
                passed.clone(),
                refused.clone(),
                other.clone(),
            );
            tasks.spawn(async move {
                let status = match client.request(req).await {
                    Ok(resp) => {
                        let status = resp.status().as_u16();
                        let _ = resp.into_body().collect().await;
                        status
                    }
                    Err(_) => 0,
                };
                match status {
                    200 => &passed,
                    429 => &refused,
                    _ => &other,
                }
                .fetch_add(1, Ordering::Relaxed);
            });
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    while tasks.join_next().await.is_some() {}
    Counts {
        passed: passed.load(Ordering::Relaxed),
        refused: refused.load(Ordering::Relaxed),
        other: other.load(Ordering::Relaxed),
        seconds,
    }
}

async fn scrape(admin: SocketAddr) -> String {
    let got = common::send(admin, "GET", "/metrics", &[], "").await;
    String::from_utf8(got.body.to_vec()).unwrap()
}

/// Three gateways sharing the store with `policy`.
fn three(dir: &Path, redis: u16, backend: &str, keys: &Path, policy: &str) -> Vec<GatewayProc> {
    let toml = gateway_toml(redis, backend, keys, policy);
    (0..3)
        .map(|i| GatewayProc::start(dir, &format!("{policy}-{i}"), &toml))
        .collect()
}

/// Decisions that timed out, as a gateway's scrape `m` counts them.
fn timeouts(m: &str) -> usize {
    common::metric(
        m,
        r#"tensorgate_rate_limit_store_errors_total{kind="timeout"}"#,
    )
    .unwrap_or(0.0) as usize
}

fn within(rate: f64, want: f64, tolerance: f64) -> bool {
    (rate - want).abs() <= want * tolerance
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_gateways_share_one_limit_and_each_policy_holds_while_redis_is_down() {
    let Some(bin) = redis_server() else { return };
    let dir = temp_dir("shared-limits");
    let keys = dir.join("keys");
    std::fs::write(&keys, format!("client:{KEY}\n")).unwrap();
    let backend = TestBackend::start(|_| async { reply(200, &[], "{}") }).await;
    let port = free_port();
    let mut redis = start_redis(&bin, &dir, port);

    // 300 a second offered across three gateways, 100 a second shared.
    let gws = three(&dir, port, &backend.url(), &keys, "local");
    let addrs: Vec<SocketAddr> = gws.iter().map(|g| g.data).collect();
    let c = offer(&addrs, 10.0).await;
    let rate = c.rate(BURST);
    eprintln!("shared: {c:?}: {rate:.1}/s");
    assert_eq!(c.other, 0, "only 200 and 429: {c:?}");
    assert!(
        within(rate, RATE, 0.10),
        "three gateways let {rate:.1}/s through, limit {RATE}/s"
    );
    let m = scrape(gws[0].admin).await;
    assert_eq!(
        common::metric(&m, "tensorgate_rate_limit_store_gateways"),
        Some(3.0),
        "{m}"
    );
    assert_eq!(
        common::metric(&m, "tensorgate_rate_limit_store_up"),
        Some(1.0)
    );

    // All 300 a second on one gateway: its local copy of the bucket runs
    // dry with the shared one, and refuses without a round trip.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let one = [gws[0].data; 3];
    let c = offer(&one, 3.0).await;
    let rate = c.rate(BURST);
    let m = scrape(gws[0].admin).await;
    let prechecked = common::metric(&m, "tensorgate_rate_limit_store_prechecked_total");
    eprintln!("one gateway: {c:?}: {rate:.1}/s, {prechecked:?} refused by the local copy");
    assert!(
        within(rate, RATE, 0.15),
        "one gateway let {rate:.1}/s through"
    );
    assert!(
        prechecked.unwrap_or(0.0) > 0.0,
        "the local pre-check refused nothing"
    );
    drop(gws);

    for policy in ["allow", "deny", "local"] {
        let gws = three(&dir, port, &backend.url(), &keys, policy);
        let addrs: Vec<SocketAddr> = gws.iter().map(|g| g.data).collect();
        // Every gateway announced itself: `local` knows it has a third.
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let before = offer(&addrs, 2.0).await;
        assert!(
            within(before.rate(BURST), RATE, 0.2),
            "{policy} before: {before:?}"
        );

        redis.stop();
        // The first decisions after the stop find it gone.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let down = offer(&addrs, 3.0).await;
        let offered = down.passed + down.refused + down.other;
        eprintln!("{policy}, Redis down: {down:?}");
        assert_eq!(down.other, 0, "{policy}: {down:?}");
        match policy {
            "allow" => assert_eq!(down.passed, offered, "allow lets everything through"),
            "deny" => assert_eq!(down.passed, 0, "deny lets nothing through"),
            _ => {
                // Each gateway alone at a third of the rate (its burst a
                // third of the burst, rounded up).
                let rate = down.rate(3 * BURST.div_ceil(3));
                assert!(
                    within(rate, RATE, 0.15),
                    "local: {rate:.1}/s in all, want {RATE}/s"
                );
            }
        }
        for g in &gws {
            let m = scrape(g.admin).await;
            assert_eq!(
                common::metric(&m, "tensorgate_rate_limit_store_up"),
                Some(0.0),
                "{policy}"
            );
            let series =
                format!("tensorgate_rate_limit_store_fallbacks_total{{policy=\"{policy}\"}}");
            assert!(
                common::metric(&m, &series).unwrap_or(0.0) > 0.0,
                "{policy}: {series}"
            );
            let log = std::fs::read_to_string(&g.proc.log).unwrap();
            let down = log.matches("rate-limit store unreachable").count();
            assert!(
                (1..=1 + timeouts(&m)).contains(&down),
                "logged once per outage, not per request ({down}):\n{log}"
            );
        }

        redis = start_redis(&bin, &dir, port);
        // Probes every 500 ms; each worker's connection comes back first.
        tokio::time::sleep(Duration::from_millis(2000)).await;
        let again = offer(&addrs, 3.0).await;
        let rate = again.rate(BURST);
        eprintln!("{policy}, Redis back: {again:?}: {rate:.1}/s");
        assert!(
            within(rate, RATE, 0.15),
            "{policy}: shared again at {rate:.1}/s"
        );
        for g in &gws {
            let m = scrape(g.admin).await;
            assert_eq!(
                common::metric(&m, "tensorgate_rate_limit_store_up"),
                Some(1.0),
                "{policy}"
            );
            // Once per outage: the stop, and any decision that timed out
            // on this loaded machine (each one an outage of its own until
            // the next probe, logged both ways).
            let log = std::fs::read_to_string(&g.proc.log).unwrap();
            let down = log.matches("rate-limit store unreachable").count();
            let back = log.matches("rate-limit store reachable again").count();
            assert_eq!(back, down, "{policy}: every outage ends logged:\n{log}");
            assert!(
                (1..=1 + timeouts(&m)).contains(&down),
                "{policy}: {down} outages logged:\n{log}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
