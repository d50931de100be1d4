//! Span exports that fail are seen: a collector answering 500, one that
//! accepts connections and never answers, and none at all are each
//! counted in `tensorgate_trace_export_failures_total{reason}`, and the
//! log says so once per change between failing and working, not once per
//! batch. Every collector is on 127.0.0.1; the gateway is a process of its
//! own, so its log is its own.

mod common;
#[path = "common/procs.rs"]
mod procs;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use common::{TestBackend, reply};
use procs::{GatewayProc, free_port, temp_dir};

const FAILING: &str = "tracing: span exports fail";
const WORKING: &str = "tracing: span exports work again";

fn toml(backend: &str, collector: &str) -> String {
    format!(
        r#"
[tracing]
endpoint = "{collector}"
sample_ratio = 1.0
batch_delay = "50ms"
export_timeout = "300ms"

[backends.b]
url = "{backend}"

[[routes]]
name = "r"
default = true
backend = "b"
"#
    )
}

async fn failures(admin: SocketAddr, reason: &str) -> f64 {
    let got = common::send(admin, "GET", "/metrics", &[], "").await;
    let text = String::from_utf8(got.body.to_vec()).unwrap();
    let series = format!("tensorgate_trace_export_failures_total{{reason=\"{reason}\"}}");
    common::metric(&text, &series).unwrap_or_else(|| panic!("no {series}:\n{text}"))
}

/// Sends requests (each one a span to export) until `done` says so, at
/// most 10 s.
async fn until<F, Fut>(gw: &GatewayProc, what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done().await {
        assert!(
            Instant::now() < deadline,
            "never {what}:\n{}",
            gw.proc.tail()
        );
        let got = common::send(gw.data, "GET", "/v2/health/ready", &[], "").await;
        assert_eq!(got.status, 200);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_answering_500_is_counted_and_logged_once_per_change() {
    let status = Arc::new(AtomicU16::new(500));
    let answer = status.clone();
    let collector = TestBackend::start(move |_| {
        let code = answer.load(Ordering::Relaxed);
        async move { reply(code, &[], "") }
    })
    .await;
    let backend = TestBackend::start(|_| async { reply(200, &[], "{}") }).await;
    let dir = temp_dir("otel-500");
    let gw = GatewayProc::start(&dir, "gw", &toml(&backend.url(), &collector.url()));
    let admin = gw.admin;

    // Several batches fail: counted each time, logged once.
    until(&gw, "three failed exports", || async {
        failures(admin, "status").await >= 3.0
    })
    .await;
    assert!(collector.requests().iter().all(|r| r.path == "/v1/traces"));
    assert_eq!(
        gw.proc.text().matches(FAILING).count(),
        1,
        "{}",
        gw.proc.text()
    );
    for reason in ["connect", "timeout", "io"] {
        assert_eq!(failures(admin, reason).await, 0.0, "{reason}");
    }
    // Working again: said once; failing again: said once more.
    status.store(200, Ordering::Relaxed);
    until(&gw, "working again", || async {
        gw.proc.text().contains(WORKING)
    })
    .await;
    let counted = failures(admin, "status").await;
    status.store(500, Ordering::Relaxed);
    until(&gw, "failing again", || async {
        failures(admin, "status").await >= counted + 3.0
    })
    .await;
    let log = gw.proc.text();
    assert_eq!(
        (log.matches(FAILING).count(), log.matches(WORKING).count()),
        (2, 1),
        "{log}"
    );
    assert!(
        log.contains("reason=\"status\"") || log.contains("reason=status"),
        "{log}"
    );
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_never_answers_and_none_at_all_are_counted() {
    // Accepts connections and holds them, reading and answering nothing.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    let backend = TestBackend::start(|_| async { reply(200, &[], "{}") }).await;
    let dir = temp_dir("otel-silent");
    for (collector, reason) in [
        (format!("http://{silent_addr}"), "timeout"),
        (format!("http://127.0.0.1:{}", free_port()), "connect"),
    ] {
        let gw = GatewayProc::start(&dir, reason, &toml(&backend.url(), &collector));
        let admin = gw.admin;
        until(&gw, "two failed exports", || async {
            failures(admin, reason).await >= 2.0
        })
        .await;
        let log = gw.proc.text();
        assert_eq!(log.matches(FAILING).count(), 1, "{reason}: {log}");
        assert_eq!(failures(admin, "status").await, 0.0, "{reason}");
    }
    holder.abort();
    let _ = std::fs::remove_dir_all(&dir);
}
