//! Sending through an [`Upstream`] to replicas on loopback: where requests
//! go, what is retried, ejection, model readiness, and that background
//! tasks end with the upstream.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::{HeaderValue, Response, StatusCode};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::*;
use crate::http::body::full;

/// A replica answering every request with `status`, counting them.
struct Counted {
    addr: SocketAddr,
    count: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn replica(status: u16) -> Counted {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let seen = seen.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |_req| {
                    seen.fetch_add(1, Ordering::SeqCst);
                    let mut resp = Response::new(full(bytes::Bytes::from_static(b"{}")));
                    *resp.status_mut() = StatusCode::from_u16(status).unwrap();
                    async move { Ok::<_, Infallible>(resp) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Counted { addr, count, task }
}

/// An address nothing listens on.
fn closed_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn backend(addrs: &[SocketAddr]) -> Backend {
    let urls = addrs
        .iter()
        .map(|a| format!("http://{a}").parse().unwrap())
        .collect();
    let mut b = Backend::with_replicas("b", Replicas::Urls(urls));
    b.health.enabled = false;
    b.connect_timeout = Duration::from_millis(500);
    b.request_timeout = Duration::from_secs(2);
    b
}

fn infer(model: &str) -> Outgoing {
    Outgoing {
        method: Method::POST,
        path: format!("/v2/models/{model}/infer"),
        headers: HeaderMap::new(),
        body: OutBody::Chunks(vec![Bytes::from_static(b"{}")]),
        model: Some(model.to_owned()),
        idempotent: false,
        deadline: None,
    }
}

#[tokio::test]
async fn a_refused_connection_goes_to_another_replica() {
    let up = replica(200).await;
    let u = Upstream::new(Arc::new(backend(&[closed_port(), up.addr])));
    for _ in 0..20 {
        let resp = u.send(infer("m"), None).await.unwrap();
        assert_eq!(resp.status(), 200);
    }
    assert_eq!(up.count.load(Ordering::SeqCst), 20);
}

/// A client request as the upstream sees it: an id, nothing else.
#[derive(Debug)]
struct Client;

impl Watch for Client {
    fn request_id(&self) -> &str {
        "r-1"
    }

    fn stalled(&self, _: &UpstreamError) {}
}

/// A replica answering every request 200, keeping what it got: each
/// request's headers and whole body.
struct Recorder {
    addr: SocketAddr,
    got: Arc<std::sync::Mutex<Vec<(http::HeaderMap, Bytes)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn recorder() -> Recorder {
    use http_body_util::BodyExt;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let got = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = got.clone();
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let seen = seen.clone();
                    async move {
                        let (parts, body) = req.into_parts();
                        let body = body.collect().await.unwrap().to_bytes();
                        seen.lock().unwrap().push((parts.headers, body));
                        Ok::<_, Infallible>(Response::new(full(Bytes::new())))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Recorder { addr, got, task }
}

/// An infer (not safe to repeat, so its headers are not copied) that
/// found no connection is sent to the next replica with the headers it
/// came with, handed back by the connection attempt that failed.
#[tokio::test]
async fn a_refused_infer_goes_to_another_replica_with_its_headers() {
    let rec = recorder().await;
    let u = Upstream::new(Arc::new(backend(&[closed_port(), rec.addr])));
    let watch: Arc<dyn Watch> = Arc::new(Client);
    for _ in 0..20 {
        let mut out = infer("m");
        out.headers
            .insert("x-probe", HeaderValue::from_static("kept"));
        let resp = u.send(out, Some(watch.clone())).await.unwrap();
        assert_eq!(resp.status(), 200);
    }
    let got = rec.got.lock().unwrap();
    let marked = got
        .iter()
        .filter(|(h, _)| h.get("x-probe").is_some_and(|v| v == "kept"))
        .count();
    assert_eq!(marked, 20);
}

/// An infer's body, in hand, is moved into its request rather than copied
/// when no copy is wanted (a client that gets it back): a connect failure
/// hands it back whole, and the next replica gets every byte of it.
#[tokio::test]
async fn a_refused_infer_goes_to_another_replica_with_its_body() {
    use http_body_util::BodyExt;
    let rec = recorder().await;
    let u = Upstream::new(Arc::new(backend(&[closed_port(), rec.addr])));
    let watch: Arc<dyn Watch> = Arc::new(Client);
    for _ in 0..20 {
        let mut out = infer("m");
        out.body = OutBody::Chunks(vec![
            Bytes::from_static(b"{\"inputs\""),
            Bytes::new(),
            Bytes::from_static(b":[]}"),
        ]);
        let resp = u.send(out, Some(watch.clone())).await.unwrap();
        assert_eq!(resp.status(), 200);
        resp.into_body().collect().await.unwrap();
    }
    let got = rec.got.lock().unwrap();
    assert_eq!(got.len(), 20);
    for (_, body) in got.iter() {
        assert_eq!(&body[..], b"{\"inputs\":[]}");
    }
}

#[tokio::test]
async fn failing_replicas_are_ejected_then_tried_again() {
    let good = replica(200).await;
    let bad = replica(500).await;
    let mut b = backend(&[good.addr, bad.addr]);
    b.ejection.after = 3;
    b.ejection.base = Duration::from_millis(300);
    let u = Upstream::new(Arc::new(b));
    // An infer answered 500 is not sent again: some reach the client.
    let mut failed = 0;
    for _ in 0..60 {
        let resp = u.send(infer("m"), None).await.unwrap();
        failed += usize::from(resp.status() == 500);
    }
    assert_eq!(failed, 3, "three 500s in a row eject the replica");
    assert_eq!(bad.count.load(Ordering::SeqCst), 3);
    tokio::time::sleep(Duration::from_millis(350)).await;
    for _ in 0..60 {
        u.send(infer("m"), None).await.unwrap();
    }
    assert_eq!(
        bad.count.load(Ordering::SeqCst),
        6,
        "back after the ejection"
    );
}

#[tokio::test]
async fn the_last_replica_is_never_ejected() {
    let bad = replica(503).await;
    let mut b = backend(&[bad.addr]);
    b.ejection.after = 1;
    let u = Upstream::new(Arc::new(b));
    for _ in 0..5 {
        let resp = u.send(infer("m"), None).await.unwrap();
        assert_eq!(resp.status(), 503, "the backend's own answer");
    }
}

#[tokio::test]
async fn idempotent_requests_are_sent_again_on_5xx_within_the_budget() {
    let good = replica(200).await;
    let bad = replica(503).await;
    let mut b = backend(&[bad.addr, good.addr]);
    b.ejection.after = 1000;
    let u = Upstream::new(Arc::new(b));
    for _ in 0..20 {
        let resp = u.send(Outgoing::get("/v2/models/m"), None).await.unwrap();
        assert_eq!(resp.status(), 200);
    }
    // No budget: the first answer stands.
    let mut b = backend(&[bad.addr, good.addr]);
    b.ejection.after = 1000;
    b.retries.budget_permille = 0;
    b.retries.min_per_second = 0;
    let metrics = Metrics::new().unwrap();
    let u = Upstream::with_metrics(Arc::new(b), &metrics);
    let mut unavailable = 0;
    for _ in 0..40 {
        let resp = u.send(Outgoing::get("/v2/models/m"), None).await.unwrap();
        unavailable += usize::from(resp.status() == 503);
    }
    assert!(unavailable > 5, "{unavailable}");
    let refused = metrics
        .replicas
        .retries
        .with_label_values(&["b", "budget_exhausted"])
        .get();
    assert_eq!(refused as usize, unavailable);
}

#[tokio::test]
async fn only_replicas_with_the_model_ready_are_asked() {
    let a = replica(200).await;
    let b = replica(200).await;
    let mut cfg = backend(&[a.addr, b.addr]);
    cfg.models = vec!["m".to_owned(), "n".to_owned()];
    let u = Upstream::new(Arc::new(cfg));
    let replicas = u.replicas();
    replicas[0].set_model(0, Some(false));
    for _ in 0..20 {
        u.send(infer("m"), None).await.unwrap();
    }
    assert_eq!(a.count.load(Ordering::SeqCst), 0);
    assert_eq!(b.count.load(Ordering::SeqCst), 20);
    assert!(u.ready_for(&["m".to_owned()]));
    replicas[1].set_model(0, Some(false));
    assert!(!u.ready_for(&["m".to_owned()]));
    assert!(u.ready_for(&["n".to_owned()]));
    let e = u.send(infer("m"), None).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"model "m" is not ready on any replica of backend "b"; retry later"#
    );
    assert_eq!(crate::error::Classify::class(&e).retry_after(), Some(5));
    // Other models, and models no one checks, still flow.
    u.send(infer("n"), None).await.unwrap();
    u.send(infer("other"), None).await.unwrap();
}

#[tokio::test]
async fn no_healthy_replica_is_503() {
    let a = replica(200).await;
    let u = Upstream::new(Arc::new(backend(&[a.addr])));
    let r = &u.replicas()[0];
    for _ in 0..3 {
        r.health.checked(false, &u.backend.health);
    }
    let e = u.send(infer("m"), None).await.unwrap_err();
    assert!(matches!(e, UpstreamError::NoHealthyReplica { .. }), "{e:?}");
    assert_eq!(a.count.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn checks_mark_replicas_and_models_and_stop_with_the_upstream() {
    let up = replica(200).await;
    let down = replica(503).await;
    let mut cfg = backend(&[up.addr, down.addr]);
    cfg.health.enabled = true;
    cfg.health.interval = Duration::from_millis(50);
    cfg.health.unhealthy_threshold = 2;
    cfg.models = vec!["m".to_owned()];
    let u = Upstream::new(Arc::new(cfg));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let replicas = u.replicas();
    assert!(replicas[0].health.up());
    assert_eq!(replicas[0].model_state(0), Some(true));
    assert!(!replicas[1].health.up());
    assert_eq!(
        replicas[1].model_state(0),
        Some(false),
        "asked all the same: it answered (Triton answers 400 while unloading)"
    );
    let checks = up.count.load(Ordering::SeqCst);
    assert!(checks >= 4, "{checks}");
    drop(replicas);
    drop(u);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = up.count.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        up.count.load(Ordering::SeqCst),
        after,
        "no checks after the drop"
    );
}

#[tokio::test]
async fn a_dns_backend_finds_its_replicas() {
    let up = replica(200).await;
    let mut cfg = Backend::with_replicas(
        "b",
        Replicas::Dns {
            name: crate::config::DnsName {
                host: "127.0.0.1".to_owned(),
                port: up.addr.port(),
            },
            interval: Duration::from_millis(100),
            max_replicas: 4,
        },
    );
    cfg.health.enabled = false;
    let u = Upstream::new(Arc::new(cfg));
    // The first request waits for the first answer.
    let resp = u.send(infer("m"), None).await.unwrap();
    assert_eq!(resp.status(), 200);
    let labels: Vec<String> = u.replicas().iter().map(|r| r.label.clone()).collect();
    assert_eq!(labels, [up.addr.to_string()]);
    assert_eq!(
        u.replicas()[0].host(),
        &format!("127.0.0.1:{}", up.addr.port())
    );
}

/// Guesses that keep failing turn sending while reading off, but for one
/// probe in 32; one that holds turns it back on.
#[test]
fn early_sends_stop_after_failed_guesses_and_probe() {
    let c = super::EarlyCredit::default();
    for _ in 0..4 {
        assert!(c.allowed());
        c.outcome(false);
    }
    let probes = (0..64).filter(|_| c.allowed()).count();
    assert_eq!(probes, 2);
    c.outcome(true);
    assert!(c.allowed());
    for _ in 0..100 {
        c.outcome(true);
    }
    for _ in 0..16 {
        assert!(c.allowed());
        c.outcome(false);
    }
    let probes = (0..32).filter(|_| c.allowed()).count();
    assert_eq!(probes, 1, "the most credit is 16");
}
