//! A backend with several replicas on loopback: how load spreads, that a
//! slow replica gets less, that a replica killed mid-load costs no request
//! it had not been sent and shows as ejected, that an ejected replica comes
//! back after its backoff, and that a model unloaded on one replica stops
//! going there within a check interval while other models keep flowing.

use std::sync::atomic::Ordering;
use std::time::Duration;

use replica::{Replica, drive, identity_infer, simple_infer};

use crate::common;
use crate::common::metric_sum as metric;
use crate::common::{gateway, replica, scrape, send};

const SIMPLE: &str = "/v2/models/simple/infer";
const IDENTITY: &str = "/v2/models/identity/infer";

/// One default route (serving `models`, if any) to backend `b` with
/// replicas `urls`, plus extra backend and server keys.
fn config(urls: &[String], backend_keys: &str, route_keys: &str, server_keys: &str) -> String {
    let urls: Vec<String> = urls.iter().map(|u| format!("{u:?}")).collect();
    format!(
        r#"
[server]
shutdown_grace = "2s"
{server_keys}
[backends.b]
urls = [{}]
request_timeout = "5s"
connect_timeout = "1s"
{backend_keys}
[[routes]]
name = "r"
default = true
backend = "b"
{route_keys}
"#,
        urls.join(", ")
    )
}

fn ok_count(outcomes: &[replica::Outcome]) -> usize {
    outcomes.iter().filter(|o| o.status == 200).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn even_load_spreads_within_15_percent() {
    let rs = [
        Replica::start().await,
        Replica::start().await,
        Replica::start().await,
    ];
    let urls: Vec<String> = rs.iter().map(Replica::url).collect();
    let gw = gateway(&config(&urls, "", "", "")).await;
    let n = 3000;
    let out = drive(gw.data_addr, SIMPLE, &simple_infer(), &[], n, 6).await;
    assert_eq!(ok_count(&out), n);
    let counts: Vec<usize> = rs.iter().map(|r| r.knobs.infers("simple")).collect();
    println!("even load, {n} requests over 3 replicas: {counts:?}");
    assert_eq!(counts.iter().sum::<usize>(), n);
    for c in &counts {
        let share = *c as f64 / (n as f64 / 3.0);
        assert!((0.85..=1.15).contains(&share), "{counts:?}");
    }
    let m = scrape(gw.admin_addr).await;
    for r in &rs {
        let label = format!("replica=\"{}\"", r.url());
        let requests = metric(&m, "tensorgate_replica_requests_total", &[&label]);
        assert!(
            requests >= r.knobs.infers("simple") as f64,
            "{label}: {requests}"
        );
        assert_eq!(metric(&m, "tensorgate_replica_in_flight", &[&label]), 0.0);
        let healthy = metric(
            &m,
            "tensorgate_replica_state",
            &[&label, "state=\"healthy\""],
        );
        assert_eq!(healthy, 1.0, "{label}");
    }
    assert_eq!(
        metric(&m, "tensorgate_backend_replicas", &["backend=\"b\""]),
        3.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_replica_gets_fewer_requests() {
    let (slow, fast) = (Replica::start().await, Replica::start().await);
    slow.knobs.delay(40);
    let gw = gateway(&config(&[slow.url(), fast.url()], "", "", "")).await;
    let n = 400;
    let out = drive(gw.data_addr, SIMPLE, &simple_infer(), &[], n, 8).await;
    assert_eq!(ok_count(&out), n);
    let (s, f) = (slow.knobs.infers("simple"), fast.knobs.infers("simple"));
    println!("slow replica (+40 ms): {s} of {n}; fast: {f}");
    assert_eq!(s + f, n);
    assert!(s * 3 < f, "the slow replica got {s} of {n}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_replica_mid_load_fails_only_what_it_had() {
    let mut rs = [
        Replica::start().await,
        Replica::start().await,
        Replica::start().await,
    ];
    for r in &rs {
        r.knobs.delay(5);
    }
    let urls: Vec<String> = rs.iter().map(Replica::url).collect();
    // More failures in a row than the client has requests in flight: the
    // ejection needs refused connections too, which are sent elsewhere.
    let keys = "eject_after = 10\neject_time = \"30s\"\nmax_eject_time = \"60s\"\nhealth_interval = \"60s\"";
    let gw = gateway(&config(&urls, keys, "", "")).await;
    let n = 1500;
    let addr = gw.data_addr;
    let load = tokio::spawn(async move { drive(addr, SIMPLE, &simple_infer(), &[], n, 6).await });
    while rs.iter().map(|r| r.knobs.total_infers()).sum::<usize>() < n / 5 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let had = rs[1].knobs.in_flight();
    let before = rs[1].knobs.total_infers();
    rs[1].kill();
    let out = load.await.unwrap();
    let errors = out.len() - ok_count(&out);
    let after: Vec<usize> = rs.iter().map(|r| r.knobs.total_infers()).collect();
    println!(
        "killed replica had {had} in flight ({before} served); client errors: {errors} of {n}; infers per replica: {after:?}"
    );
    assert_eq!(out.len(), n);
    let m = scrape(gw.admin_addr).await;
    let label = format!("replica=\"{}\"", rs[1].url());
    let ejections = metric(&m, "tensorgate_replica_ejections_total", &[&label]);
    let ejected = metric(
        &m,
        "tensorgate_replica_state",
        &[&label, "state=\"ejected\""],
    );
    let kind = |k: &str| {
        let k = format!("kind=\"{k}\"");
        metric(&m, "tensorgate_replica_errors_total", &[&label, &k])
    };
    let (refused, reset) = (kind("refused"), kind("reset"));
    let retried = metric(&m, "tensorgate_retries_total", &["outcome=\"retried\""]);
    println!(
        "killed replica: ejections {ejections}, reset {reset}, refused {refused}, retried {retried}"
    );
    assert_eq!(ejections, 1.0);
    assert_eq!(ejected, 1.0);
    // Ten in a row eject it (requests that picked it just before count too).
    assert!((10.0..=16.0).contains(&(reset + refused)));
    // A reset is a request the replica had (sent, connection then lost):
    // not sent again, as it is an infer. Refused ones were never sent.
    assert_eq!(errors as f64, reset, "only requests the replica had failed");
    assert!(
        refused >= 1.0 && retried >= refused,
        "refused connections went elsewhere"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ejected_replica_returns_after_its_backoff() {
    let (bad, good) = (Replica::start().await, Replica::start().await);
    let keys = "health_checks = false\neject_after = 3\neject_time = \"300ms\"";
    let gw = gateway(&config(&[bad.url(), good.url()], keys, "", "")).await;
    let label = format!("replica=\"{}\"", bad.url());
    bad.knobs.fail.store(true, Ordering::SeqCst);
    let out = drive(gw.data_addr, SIMPLE, &simple_infer(), &[], 60, 1).await;
    let failed = out.iter().filter(|o| o.status == 500).count();
    assert_eq!(failed, 3, "three 500s in a row, then ejected");
    assert_eq!(bad.knobs.infers("simple"), 3);
    let m = scrape(gw.admin_addr).await;
    assert_eq!(
        metric(&m, "tensorgate_replica_ejections_total", &[&label]),
        1.0
    );
    assert_eq!(
        metric(
            &m,
            "tensorgate_replica_errors_total",
            &[&label, "kind=\"5xx\""]
        ),
        3.0
    );
    bad.knobs.fail.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let out = drive(gw.data_addr, SIMPLE, &simple_infer(), &[], 60, 1).await;
    assert_eq!(ok_count(&out), 60);
    let back = bad.knobs.infers("simple") - 3;
    println!("after the backoff the replica got {back} of 60");
    assert!(back >= 10, "{back}");
    let m = scrape(gw.admin_addr).await;
    let healthy = metric(
        &m,
        "tensorgate_replica_state",
        &[&label, "state=\"healthy\""],
    );
    assert_eq!(healthy, 1.0);
}

/// Polls the gateway's metrics until `done` holds on a scrape, for at most
/// `limit`; returns how long that took. The gateway learns of a model's
/// state from its checks; waiting for what it learnt, rather than a fixed
/// time, keeps a test about routing from failing on a slow machine.
async fn until(
    admin: std::net::SocketAddr,
    limit: Duration,
    what: &str,
    done: impl Fn(&str) -> bool,
) -> Duration {
    let start = std::time::Instant::now();
    loop {
        if done(&scrape(admin).await) {
            return start.elapsed();
        }
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A model unloaded on one replica stops going there as soon as the
/// model checks say so, while the other models keep going to both
/// replicas; unloaded everywhere it is a 503 naming it (and /readyz says
/// so); loaded again it comes back.
///
/// On a loaded 2-core machine this once failed with "identity keeps both:
/// 94, 6": the checks timed out (100 ms, while this test's replicas, its
/// gateway and the other tests of this file shared two cores), three
/// timed-out server checks in a row marked replica b unhealthy, and
/// identity went to a until b passed two checks again. Server health is
/// not what this test is about: its checks get the whole interval
/// (health_timeout = health_interval), a replica needs ten failed server
/// checks in a row (2 s) to be marked unhealthy, and the steps wait for
/// the gateway's own view of the models (its metrics, at most 20 check
/// intervals) instead of a fixed 500 ms. What it proves is unchanged: no
/// simple infer reaches a once the gateway knows, identity keeps both
/// replicas (each at least 25 of 100), and every infer succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_unloaded_on_one_replica_stops_going_there() {
    let (a, b) = (Replica::start().await, Replica::start().await);
    let interval = Duration::from_millis(200);
    let limit = interval * 20;
    let keys = "health_interval = \"200ms\"\nhealth_timeout = \"200ms\"\nunhealthy_threshold = 10";
    let route = "models = [\"simple\", \"identity\"]";
    let gw = gateway(&config(
        &[a.url(), b.url()],
        keys,
        route,
        "readyz = \"all_routes\"",
    ))
    .await;
    let warm = drive(gw.data_addr, SIMPLE, &simple_infer(), &[], 20, 2).await;
    assert_eq!(ok_count(&warm), 20);
    let ready = send(gw.admin_addr, "GET", "/readyz", &[], "").await;
    assert_eq!(ready.status, 200);
    let (label_a, label_b) = (
        format!("replica=\"{}\"", a.url()),
        format!("replica=\"{}\"", b.url()),
    );
    let not_ready =
        |m: &str, label: &str| metric(m, "tensorgate_replica_models_not_ready", &[label]);

    // Triton's repository API, on replica a.
    let got = send(
        a.addr,
        "POST",
        "/v2/repository/models/simple/unload",
        &[],
        "",
    )
    .await;
    assert_eq!(got.status, 200);
    let took = until(gw.admin_addr, limit, "simple not ready on a", |m| {
        not_ready(m, &label_a) == 1.0
    })
    .await;
    println!("the gateway saw simple unloaded on a after {took:?}");
    let (sa, sb) = (a.knobs.infers("simple"), b.knobs.infers("simple"));
    let (ia, ib) = (a.knobs.infers("identity"), b.knobs.infers("identity"));
    let out = drive(gw.data_addr, SIMPLE, &simple_infer(), &[], 100, 4).await;
    assert_eq!(ok_count(&out), 100, "every simple infer went to b");
    let out = drive(gw.data_addr, IDENTITY, &identity_infer(), &[], 100, 4).await;
    assert_eq!(ok_count(&out), 100);
    assert_eq!(a.knobs.infers("simple"), sa, "none to a");
    assert_eq!(b.knobs.infers("simple"), sb + 100);
    let (ia, ib) = (
        a.knobs.infers("identity") - ia,
        b.knobs.infers("identity") - ib,
    );
    println!("identity after unloading simple on a: a {ia}, b {ib}");
    assert!(ia >= 25 && ib >= 25, "identity keeps both: {ia}, {ib}");
    let m = scrape(gw.admin_addr).await;
    assert_eq!(not_ready(&m, &label_a), 1.0);
    assert_eq!(not_ready(&m, &label_b), 0.0);

    // Unloaded everywhere: 503 naming the model, identity still served.
    send(
        b.addr,
        "POST",
        "/v2/repository/models/simple/unload",
        &[],
        "",
    )
    .await;
    until(gw.admin_addr, limit, "simple not ready on b", |m| {
        not_ready(m, &label_b) == 1.0
    })
    .await;
    let got = common::post_json(gw.data_addr, SIMPLE, &simple_infer()).await;
    assert_eq!(got.status, 503);
    assert_eq!(
        got.error(),
        "model \"simple\" is not ready on any replica of backend \"b\"; retry later"
    );
    assert!(got.header("retry-after").is_some());
    let got = common::post_json(gw.data_addr, IDENTITY, &identity_infer()).await;
    assert_eq!(got.status, 200);
    let ready = send(gw.admin_addr, "GET", "/readyz", &[], "").await;
    assert_eq!(ready.status, 503);
    assert_eq!(
        ready.json(),
        serde_json::json!({"status": "no_ready_replica", "routes": ["r"]})
    );

    // Loaded again on a: back as soon as a check sees it.
    send(a.addr, "POST", "/v2/repository/models/simple/load", &[], "").await;
    until(gw.admin_addr, limit, "simple ready on a again", |m| {
        not_ready(m, &label_a) == 0.0
    })
    .await;
    let got = common::post_json(gw.data_addr, SIMPLE, &simple_infer()).await;
    assert_eq!(got.status, 200);
    let ready = send(gw.admin_addr, "GET", "/readyz", &[], "").await;
    assert_eq!(ready.status, 200);
}
