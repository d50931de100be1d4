//! A route's traffic split and shadow on loopback: weights hold over
//! 10,000 requests, the backend header picks a backend only where the route
//! allows it, and shadow traffic is bounded, dropped first, counted, and
//! never changes what the client gets or how long it waits.

use std::sync::atomic::Ordering;
use std::time::Duration;

use replica::{Outcome, Replica, drive, simple_infer};

use crate::common::metric_sum as metric;
use crate::common::{gateway, replica, scrape, send};

const SIMPLE: &str = "/v2/models/simple/infer";

/// Backends `stable` and `canary` (one replica each) and one default
/// route with `route_keys`.
fn config(stable: &Replica, canary: &Replica, route_keys: &str) -> String {
    format!(
        r#"
[server]
shutdown_grace = "2s"
[backends.stable]
url = "{}"
[backends.canary]
url = "{}"
[[routes]]
name = "r"
default = true
{route_keys}
"#,
        stable.url(),
        canary.url()
    )
}

fn all_ok(out: &[Outcome]) {
    let bad: Vec<_> = out.iter().filter(|o| o.status != 200).collect();
    assert!(
        bad.is_empty(),
        "{} failed, first {:?}",
        bad.len(),
        bad.first()
    );
}

/// The `q` quantile of the client latencies, in milliseconds.
fn quantile_ms(out: &[Outcome], q: f64) -> f64 {
    let mut t: Vec<f64> = out.iter().map(|o| o.took.as_secs_f64() * 1e3).collect();
    t.sort_by(f64::total_cmp);
    t[((t.len() - 1) as f64 * q) as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weights_hold_within_5_percent_over_10000_requests() {
    let (stable, canary) = (Replica::start().await, Replica::start().await);
    let route =
        r#"backends = [{ name = "stable", weight = 70 }, { name = "canary", weight = 30 }]"#;
    let gw = gateway(&config(&stable, &canary, route)).await;
    let n = 10_000;
    let out = drive(gw.data_addr, SIMPLE, &simple_infer(), &[], n, 8).await;
    all_ok(&out);
    let (s, c) = (stable.knobs.infers("simple"), canary.knobs.infers("simple"));
    println!("70/30 split over {n}: stable {s}, canary {c}");
    assert_eq!(s + c, n);
    assert!((6_650..=7_350).contains(&s), "stable {s}");
    assert!((2_850..=3_150).contains(&c), "canary {c}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backend_header_picks_only_where_allowed() {
    let (stable, canary) = (Replica::start().await, Replica::start().await);
    let split = r#"backends = [{ name = "stable", weight = 1 }, { name = "canary", weight = 0 }]"#;
    let allowed = format!("{split}\nallow_backend_header = true");
    let gw = gateway(&config(&stable, &canary, &allowed)).await;
    let hint = [("x-tensorgate-backend", "canary")];
    all_ok(&drive(gw.data_addr, SIMPLE, &simple_infer(), &hint, 20, 2).await);
    all_ok(&drive(gw.data_addr, SIMPLE, &simple_infer(), &[], 20, 2).await);
    assert_eq!(
        canary.knobs.infers("simple"),
        20,
        "weight 0: only by header"
    );
    assert_eq!(stable.knobs.infers("simple"), 20);
    let got = send(
        gw.data_addr,
        "POST",
        SIMPLE,
        &[("x-tensorgate-backend", "other")],
        simple_infer(),
    )
    .await;
    assert_eq!(got.status, 400);
    assert_eq!(
        got.error(),
        "route \"r\": x-tensorgate-backend names \"other\", which is not one of its backends (stable, canary)"
    );
    drop(gw);

    // Off unless configured: the header is ignored.
    let gw = gateway(&config(&stable, &canary, split)).await;
    all_ok(&drive(gw.data_addr, SIMPLE, &simple_infer(), &hint, 20, 2).await);
    assert_eq!(canary.knobs.infers("simple"), 20, "unchanged");
    assert_eq!(stable.knobs.infers("simple"), 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_traffic_is_bounded_and_changes_nothing_for_the_client() {
    let (primary, shadow) = (Replica::start().await, Replica::start().await);
    let n = 300;
    // Without a shadow: the reference replies and latency.
    let plain = gateway(&config(&primary, &shadow, r#"backend = "stable""#)).await;
    let reference = drive(plain.data_addr, SIMPLE, &simple_infer(), &[], n, 4).await;
    all_ok(&reference);
    plain.shutdown().await;

    // A slow shadow that allows two copies at once.
    shadow.knobs.delay(300);
    let route = r#"backend = "stable"
shadow = { backend = "canary", max_in_flight = 2 }"#;
    let gw = gateway(&config(&primary, &shadow, route)).await;
    let mirrored = drive(gw.data_addr, SIMPLE, &simple_infer(), &[], n, 4).await;
    all_ok(&mirrored);
    assert!(mirrored.iter().all(|o| o.body == reference[0].body));
    let (p50, p99) = (quantile_ms(&reference, 0.5), quantile_ms(&reference, 0.99));
    let (m50, m99) = (quantile_ms(&mirrored, 0.5), quantile_ms(&mirrored, 0.99));
    println!(
        "client latency over {n}: without shadow p50 {p50:.2} ms p99 {p99:.2} ms; with a 300 ms shadow p50 {m50:.2} ms p99 {m99:.2} ms"
    );
    // Never waited for: a client never sees the shadow's 300 ms.
    assert!(m99 < 250.0, "p99 {m99} ms");
    assert!(m50 < p50 * 2.0 + 5.0, "p50 {m50} ms against {p50} ms");
    // Let the last copies finish.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let copies = shadow.knobs.infers("simple");
    assert!(shadow.knobs.max_in_flight.load(Ordering::SeqCst) <= 2);
    let m = scrape(gw.admin_addr).await;
    let outcome = |o: &str| {
        let o = format!("outcome=\"{o}\"");
        metric(&m, "tensorgate_shadow_requests_total", &["route=\"r\"", &o])
    };
    let (ok, dropped) = (outcome("ok"), outcome("dropped"));
    println!("shadow: {copies} copies sent, ok {ok}, dropped {dropped}");
    assert_eq!(ok, copies as f64);
    assert_eq!(
        ok + dropped + outcome("failed") + outcome("error_status"),
        n as f64
    );
    assert!(
        dropped > 0.0 && copies >= 2,
        "{copies} sent, {dropped} dropped"
    );
    let count = metric(
        &m,
        "tensorgate_shadow_duration_seconds_count",
        &["route=\"r\""],
    );
    assert_eq!(count, copies as f64);

    // A failing shadow changes nothing either.
    shadow.knobs.delay(0);
    shadow.knobs.fail.store(true, Ordering::SeqCst);
    let out = drive(gw.data_addr, SIMPLE, &simple_infer(), &[], 50, 2).await;
    all_ok(&out);
    assert!(out.iter().all(|o| o.body == reference[0].body));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let m = scrape(gw.admin_addr).await;
    let errors = metric(
        &m,
        "tensorgate_shadow_requests_total",
        &["outcome=\"error_status\""],
    );
    assert!(errors >= 1.0, "{errors}");
}
