//! What API keys and rate limits cost a request: a key looked up among 1,
//! 10 and 1,000 keys (every digest compared, constant time), a request
//! token taken from a route's and a key's bucket, and a boto3 SigV4
//! signature verified (a captured `invoke_endpoint`, 19-byte body).
//!
//!     cargo bench --bench auth

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use http::{HeaderMap, HeaderName, HeaderValue};
use tensorgate::auth::KeySet;
use tensorgate::auth::keys::digest;
use tensorgate::auth::sigv4::{Authorization, Signed, verify};
use tensorgate::config::{Backend, Config, Rate, RateLimit, Rates, Route, RouteAuth, ServerConfig};
use tensorgate::guard::{Registry, Unit};

fn keys(n: usize) -> KeySet {
    let text: String = (0..n).map(|i| format!("k{i}:key-{i:016}\n")).collect();
    KeySet::parse(text.as_bytes(), Path::new("bench"), false).unwrap()
}

fn lookup(c: &mut Criterion) {
    let mut g = c.benchmark_group("key_lookup");
    for n in [1, 10, 1000] {
        let set = keys(n);
        let last = format!("key-{:016}", n - 1);
        g.bench_with_input(BenchmarkId::new("hit_last", n), &set, |b, set| {
            b.iter(|| black_box(set.find(black_box(last.as_bytes()))))
        });
        g.bench_with_input(BenchmarkId::new("miss", n), &set, |b, set| {
            b.iter(|| black_box(set.find(black_box(b"not-a-key-at-all-0000"))))
        });
    }
    g.finish();
}

fn buckets(c: &mut Criterion) {
    let backend = Arc::new(Backend::new("b", "http://127.0.0.1:1".parse().unwrap()));
    let mut route = Route::new("r", backend.clone());
    route.default = true;
    let lots = Some(Rate {
        per_second: 1e12,
        burst: u64::MAX / 2,
    });
    let rates = Rates {
        requests: lots,
        elements: None,
    };
    route.rate_limit = RateLimit {
        route: rates,
        per_key: rates,
    };
    route.auth = Some(RouteAuth {
        keys_file: "bench".into(),
        sigv4: false,
        keys: Arc::new(keys(10)),
    });
    let config = Config {
        server: ServerConfig::default(),
        backends: BTreeMap::from([("b".to_owned(), backend)]),
        routes: vec![Arc::new(route)],
        tracing: None,
        rate_limit_store: None,
    };
    let registry = Registry::new();
    let table = registry.table(&config, None);
    let limiter = table.route("r").unwrap();
    let key: Arc<str> = Arc::from("k3");
    c.bench_function("route_and_key_request_token", |b| {
        // Local buckets decide at once: one poll of the decision.
        b.iter(|| {
            let mut decision =
                std::pin::pin!(limiter.admit(Some(&key), Unit::Requests, 1, Instant::now()));
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            black_box(decision.as_mut().poll(&mut cx))
        })
    });
}

fn sigv4(c: &mut Criterion) {
    let f: serde_json::Value =
        serde_json::from_str(include_str!("../tests/fixtures/sagemaker/sigv4/csv.json")).unwrap();
    let mut headers = HeaderMap::new();
    for h in f["headers"].as_array().unwrap() {
        let name = h[0].as_str().unwrap().to_ascii_lowercase();
        headers.append(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(h[1].as_str().unwrap()).unwrap(),
        );
    }
    let body = f["body"].as_str().unwrap().as_bytes().to_vec();
    let secret = f["secret"].as_str().unwrap().as_bytes().to_vec();
    let now = f["now"].as_i64().unwrap();
    let path = f["path"].as_str().unwrap().to_owned();
    c.bench_function("sigv4_parse_and_verify", |b| {
        b.iter(|| {
            let auth = Authorization::parse(headers["authorization"].to_str().unwrap()).unwrap();
            let payload = digest(&body);
            let signed = Signed {
                method: "POST",
                path: &path,
                query: "",
                headers: &headers,
                authority: None,
                payload: &payload,
            };
            black_box(verify(&auth, &signed, &secret, now)).unwrap();
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    targets = lookup, buckets, sigv4
}
criterion_main!(benches);
