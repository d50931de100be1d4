//! Balancing on the backends' own queues (`metrics_url`), with two real
//! Triton 2.51 replicas behind two gateway processes. A direct client
//! keeps one Triton's queue for model `slow` (10 ms a request, one
//! instance) full; the gateways' own outstanding counts cannot see that
//! queue, their scrapes of Triton's metrics can. In one run: with the
//! queue signal off, then on, the same load through the gateways; with it
//! on, the slow Triton's share drops and the p99 latency improves. Then
//! with one replica's metrics endpoint unanswering, traffic still flows
//! to both.
//!
//! Needs `TENSORGATE_TRITON_URLS` and `TENSORGATE_TRITON_METRICS_URLS`
//! (`eval "$(bash scripts/triton-pair.sh start)"`). Without them the test
//! prints SKIPPED and passes, except under `CI`, where it fails.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use procs::GatewayProc;

use crate::common;
use crate::common::metric_sum as metric;
use crate::common::{procs, scrape, temp_dir};

const BODY: &str =
    r#"{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[4],"data":[1,2,3,4]}]}"#;

/// The Tritons' URLs and metrics URLs, or `None` (SKIPPED).
fn tritons() -> Option<([String; 2], [String; 2])> {
    let pair = |var: &str| -> Option<[String; 2]> {
        let v = std::env::var(var).unwrap_or_default();
        let urls: Vec<String> = v
            .split(',')
            .map(|u| u.trim().trim_end_matches('/').to_owned())
            .filter(|u| !u.is_empty())
            .collect();
        <[String; 2]>::try_from(urls).ok()
    };
    if let (Some(urls), Some(metrics)) = (
        pair("TENSORGATE_TRITON_URLS"),
        pair("TENSORGATE_TRITON_METRICS_URLS"),
    ) {
        return Some((urls, metrics));
    }
    let opted_out = std::env::var("TENSORGATE_CONFORMANCE_SKIP").is_ok_and(|v| v == "1");
    if std::env::var_os("CI").is_some() && !opted_out {
        panic!(
            "TENSORGATE_TRITON_METRICS_URLS is not set and CI is: run scripts/triton-pair.sh start"
        );
    }
    common::skipped(
        "TENSORGATE_TRITON_METRICS_URLS is not set (eval \"$(bash scripts/triton-pair.sh start)\")",
    );
    None
}

fn infer(url: &str) -> http::Request<Full<Bytes>> {
    http::Request::post(format!("{url}/v2/models/slow/infer"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(BODY.as_bytes())))
        .unwrap()
}

/// `loops` clients sending to `url` one after another until `stop`.
fn direct_load(url: &str, loops: usize, stop: Arc<AtomicBool>) -> tokio::task::JoinSet<()> {
    let client = common::client();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..loops {
        let (client, stop, url) = (client.clone(), stop.clone(), url.to_owned());
        set.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(resp) = client.request(infer(&url)).await {
                    let _ = resp.into_body().collect().await;
                }
            }
        });
    }
    set
}

/// Latencies of a run through the gateways.
#[derive(Debug, Default)]
struct Run {
    latencies: Vec<Duration>,
    failed: usize,
}

impl Run {
    fn quantile(&mut self, q: f64) -> Duration {
        self.latencies.sort();
        let i = ((self.latencies.len() as f64 - 1.0) * q).round() as usize;
        self.latencies.get(i).copied().unwrap_or_default()
    }
}

/// `per_gateway` clients on each gateway, each sending one infer after
/// another, for `secs`.
async fn through(gateways: &[SocketAddr], per_gateway: usize, secs: u64) -> Run {
    let client = common::client();
    let until = Instant::now() + Duration::from_secs(secs);
    let mut set = tokio::task::JoinSet::new();
    for addr in gateways {
        for _ in 0..per_gateway {
            let (client, url) = (client.clone(), format!("http://{addr}"));
            set.spawn(async move {
                let mut run = Run::default();
                while Instant::now() < until {
                    let started = Instant::now();
                    let ok = match client.request(infer(&url)).await {
                        Ok(resp) => {
                            let ok = resp.status() == 200;
                            ok && resp.into_body().collect().await.is_ok()
                        }
                        Err(_) => false,
                    };
                    if ok {
                        run.latencies.push(started.elapsed());
                    } else {
                        run.failed += 1;
                    }
                }
                run
            });
        }
    }
    let mut all = Run::default();
    while let Some(Ok(run)) = set.join_next().await {
        all.latencies.extend(run.latencies);
        all.failed += run.failed;
    }
    all
}

/// Requests each replica got from `gateways`, in all.
async fn sent(gateways: &[GatewayProc], urls: &[String; 2]) -> [f64; 2] {
    let mut out = [0.0; 2];
    for g in gateways {
        let m = scrape(g.admin).await;
        for (i, u) in urls.iter().enumerate() {
            let label = format!("replica=\"{u}\"");
            out[i] += metric(&m, "tensorgate_replica_requests_total", &[&label]);
        }
    }
    out
}

fn toml(urls: &[String; 2], metrics: Option<[&str; 2]>) -> String {
    let signal = metrics.map_or(String::new(), |[a, b]| {
        format!(
            "metrics_url = [\"{a}\", \"{b}\"]\nmetrics_interval = \"200ms\"\nmetrics_timeout = \"150ms\"\n"
        )
    });
    format!(
        r#"
[backends.triton]
urls = ["{}", "{}"]
health_interval = "1s"
health_timeout = "500ms"
{signal}
[[routes]]
name = "slow"
models = ["slow"]
default = true
backend = "triton"
"#,
        urls[0], urls[1]
    )
}

fn two(dir: &std::path::Path, tag: &str, toml: &str) -> Vec<GatewayProc> {
    (0..2)
        .map(|i| GatewayProc::start(dir, &format!("{tag}-{i}"), toml))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_signal_steers_traffic_away_from_a_full_triton() {
    let Some((urls, metrics)) = tritons() else {
        return;
    };
    let dir = temp_dir("queue-balancing");
    // Triton B's queue for `slow` kept about 12 deep by a direct client.
    let stop = Arc::new(AtomicBool::new(false));
    let mut direct = direct_load(&urls[1], 12, stop.clone());
    tokio::time::sleep(Duration::from_secs(1)).await;

    let mut shares = Vec::new();
    let mut p99s = Vec::new();
    for on in [false, true] {
        let signal = on.then(|| [metrics[0].as_str(), metrics[1].as_str()]);
        let gws = two(&dir, if on { "on" } else { "off" }, &toml(&urls, signal));
        let addrs: Vec<SocketAddr> = gws.iter().map(|g| g.data).collect();
        // Health checks and the first scrapes.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let mut run = through(&addrs, 2, 8).await;
        let [a, b] = sent(&gws, &urls).await;
        let share = b / (a + b);
        let (p50, p99) = (run.quantile(0.5), run.quantile(0.99));
        eprintln!(
            "queue signal {}: {} requests, {} failed; to A {a}, to the full B {b} ({:.1}%); p50 {:?}, p99 {:?}",
            if on { "on" } else { "off" },
            run.latencies.len(),
            run.failed,
            share * 100.0,
            p50,
            p99
        );
        assert_eq!(run.failed, 0, "every request answered");
        if on {
            let m = scrape(gws[0].admin).await;
            let b_label = format!("replica=\"{}\"", urls[1]);
            let waiting = metric(&m, "tensorgate_replica_queue_waiting", &[&b_label]);
            let pending = metric(&m, "tensorgate_replica_queue_pending", &[&b_label]);
            eprintln!("the picker saw B's queue: waiting {waiting}, pending {pending}");
            assert!(
                waiting >= 4.0,
                "B's queue as the picker saw it: {waiting}\n{m}"
            );
        }
        shares.push(share);
        p99s.push(p99);
    }
    assert!(
        shares[1] < shares[0] / 2.0,
        "the full Triton's share: {:.1}% off, {:.1}% on",
        shares[0] * 100.0,
        shares[1] * 100.0
    );
    assert!(
        p99s[1] < p99s[0],
        "p99: {:?} off, {:?} on",
        p99s[0],
        p99s[1]
    );

    // B's metrics endpoint accepts and never answers; its queue is empty
    // now: it is compared on outstanding requests alone and takes its
    // share.
    stop.store(true, Ordering::Relaxed);
    while direct.join_next().await.is_some() {}
    let hole = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hole_url = format!("http://{}/metrics", hole.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((s, _)) = hole.accept().await {
            open.push(s);
        }
    });
    let gws = two(&dir, "down", &toml(&urls, Some([&metrics[0], &hole_url])));
    let addrs: Vec<SocketAddr> = gws.iter().map(|g| g.data).collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let run = through(&addrs, 2, 4).await;
    let [a, b] = sent(&gws, &urls).await;
    let m = scrape(gws[0].admin).await;
    let failed = metric(
        &m,
        "tensorgate_replica_metrics_scrapes_total",
        &[&format!("replica=\"{}\"", urls[1]), "result=\"failed\""],
    );
    let ok_a = metric(
        &m,
        "tensorgate_replica_metrics_scrapes_total",
        &[&format!("replica=\"{}\"", urls[0]), "result=\"ok\""],
    );
    eprintln!(
        "B's metrics down: {} requests, {} failed; to A {a}, to B {b}; B's scrapes failed {failed}, A's ok {ok_a}",
        run.latencies.len(),
        run.failed
    );
    assert_eq!(run.failed, 0);
    assert!(b / (a + b) > 0.25, "B still takes its share: A {a}, B {b}");
    assert!(failed >= 3.0 && ok_a >= 3.0, "{m}");
    held.abort();
    let _ = std::fs::remove_dir_all(&dir);
}
