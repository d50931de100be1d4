use std::collections::BTreeMap;
use std::path::Path;

use super::*;
use crate::auth::KeySet;
use crate::config::{Backend, OnStoreError, RateLimit, Route, RouteAuth, ServerConfig};

fn rate(per_second: f64, burst: u64) -> Option<Rate> {
    Some(Rate { per_second, burst })
}

/// One route `r` with keys `alice` and `bob`, and these limits.
fn config(limits: RateLimit, keys: &str) -> Config {
    let backend = Arc::new(Backend::new("b", "http://127.0.0.1:1".parse().unwrap()));
    let mut route = Route::new("r", backend.clone());
    route.default = true;
    route.rate_limit = limits;
    let keys = KeySet::parse(keys.as_bytes(), Path::new("keys"), false).unwrap();
    route.auth = Some(RouteAuth {
        keys_file: "keys".into(),
        sigv4: false,
        keys: Arc::new(keys),
    });
    Config {
        server: ServerConfig::default(),
        backends: BTreeMap::from([("b".to_owned(), backend)]),
        routes: vec![Arc::new(route)],
        tracing: None,
        rate_limit_store: None,
    }
}

impl RouteLimiter {
    /// [`RouteLimiter::admit`] for buckets that decide at once (local).
    fn admit_now(
        &self,
        key: Option<&Arc<str>>,
        unit: Unit,
        cost: u64,
        now: Instant,
    ) -> Result<(), Refusal> {
        use std::task::{Context, Poll, Waker};
        let mut f = std::pin::pin!(self.admit(key, unit, cost, now));
        match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("a local decision waited"),
        }
    }
}

const KEYS: &str = "alice:aaaaaaaaaaaaaaaa\nbob:bbbbbbbbbbbbbbbb\n";

fn limits(route: Rates, per_key: Rates) -> RateLimit {
    RateLimit { route, per_key }
}

#[test]
fn per_key_buckets_are_independent_and_the_route_bucket_is_shared() {
    let reg = Registry::new();
    let cfg = config(
        limits(
            Rates {
                requests: rate(1.0, 3),
                elements: None,
            },
            Rates {
                requests: rate(1.0, 2),
                elements: None,
            },
        ),
        KEYS,
    );
    let table = reg.table(&cfg, None);
    assert_eq!(reg.len(), 3, "the route's and one per key");
    let r = table.route("r").unwrap();
    let (alice, bob): (Arc<str>, Arc<str>) = (Arc::from("alice"), Arc::from("bob"));
    let now = Instant::now();
    let req = |key: &Arc<str>| r.admit_now(Some(key), Unit::Requests, 1, now);
    assert_eq!(req(&alice), Ok(()));
    assert_eq!(req(&alice), Ok(()));
    let refused = req(&alice).unwrap_err();
    assert!(refused.per_key);
    assert_eq!(
        refused.to_string(),
        "route \"r\": over key \"alice\"'s limit of 1 requests per second (burst 2); retry in 1.000s"
    );
    // Bob has his own bucket; the route's (3) runs out on his second.
    assert_eq!(req(&bob), Ok(()));
    let refused = req(&bob).unwrap_err();
    assert!(!refused.per_key);
    assert_eq!(
        refused.to_string(),
        "route \"r\": over the route's limit of 1 requests per second (burst 3); retry in 1.000s"
    );
    // The token Bob's bucket gave was given back.
    let later = now + Duration::from_secs(1);
    assert_eq!(r.admit_now(Some(&bob), Unit::Requests, 1, later), Ok(()));
    assert!(
        !r.admit_now(Some(&bob), Unit::Requests, 1, later)
            .unwrap_err()
            .per_key
    );
}

#[test]
fn elements_over_the_burst_can_never_pass() {
    let reg = Registry::new();
    let cfg = config(
        limits(
            Rates {
                requests: None,
                elements: rate(100.0, 1000),
            },
            Rates::default(),
        ),
        KEYS,
    );
    let table = reg.table(&cfg, None);
    let r = table.route("r").unwrap();
    let now = Instant::now();
    assert!(r.limits_elements(None));
    assert_eq!(
        r.admit_now(None, Unit::Requests, 1, now),
        Ok(()),
        "no request limit"
    );
    assert_eq!(r.admit_now(None, Unit::Elements, 600, now), Ok(()));
    let e = r.admit_now(None, Unit::Elements, 600, now).unwrap_err();
    assert_eq!(e.wait, Some(Duration::from_secs(2)));
    let e = r.admit_now(None, Unit::Elements, 1001, now).unwrap_err();
    assert_eq!(e.wait, None);
    assert_eq!(
        e.to_string(),
        "route \"r\": the request carries 1001 tensor elements, more than the route's burst of 1000: it can never pass; send fewer at once"
    );
}

#[test]
fn a_new_configuration_keeps_its_buckets_and_drops_the_rest() {
    let reg = Registry::new();
    let per_key = Rates {
        requests: rate(1.0, 1),
        elements: None,
    };
    let first = config(limits(Rates::default(), per_key), KEYS);
    let alice: Arc<str> = Arc::from("alice");
    let now = Instant::now();
    let t1 = reg.table(&first, None);
    assert_eq!(
        t1.route("r")
            .unwrap()
            .admit_now(Some(&alice), Unit::Requests, 1, now),
        Ok(())
    );
    // Reloaded: bob's key is gone, carol's is new, alice's bucket is the
    // same one, still empty.
    let second = config(
        limits(Rates::default(), per_key),
        "alice:aaaaaaaaaaaaaaaa\ncarol:cccccccccccccccc\n",
    );
    let t2 = reg.table(&second, None);
    assert_eq!(reg.len(), 2);
    let r = t2.route("r").unwrap();
    assert!(r.admit_now(Some(&alice), Unit::Requests, 1, now).is_err());
    assert_eq!(
        r.admit_now(Some(&Arc::from("carol")), Unit::Requests, 1, now),
        Ok(())
    );
    // A route without limits has no entry and no bucket.
    let third = config(RateLimit::default(), KEYS);
    assert!(reg.table(&third, None).route("r").is_none());
    assert!(reg.is_empty());
}

/// `config` with its buckets in a store nothing listens at.
fn unreachable_store(limits: RateLimit, policy: OnStoreError) -> Config {
    let mut cfg = config(limits, KEYS);
    let url = crate::config::StoreUrl::parse("redis://127.0.0.1:1").unwrap();
    let mut store = crate::config::RateLimitStore::new(url);
    store.on_store_error = policy;
    store.timeout = Duration::from_millis(500);
    cfg.rate_limit_store = Some(store);
    cfg
}

#[tokio::test]
async fn an_unreachable_store_leaves_every_decision_to_the_policy() {
    let two = limits(
        Rates {
            requests: rate(2.0, 2),
            elements: None,
        },
        Rates::default(),
    );
    for (policy, passed) in [
        (OnStoreError::Allow, 5),
        (OnStoreError::Deny, 0),
        (OnStoreError::Local, 2),
    ] {
        let reg = Registry::new();
        let metrics = Metrics::register(&prometheus::Registry::new()).unwrap();
        let table = reg.table(&unreachable_store(two, policy), Some(&metrics));
        let r = table.route("r").unwrap();
        let now = Instant::now();
        let mut refusals = Vec::new();
        for _ in 0..5 {
            if let Err(e) = r.admit(None, Unit::Requests, 1, now).await {
                refusals.push(e);
            }
        }
        assert_eq!(5 - refusals.len(), passed, "{policy:?}");
        let fell_back = metrics.store.fallbacks.with_label_values(&[policy.label()]);
        assert_eq!(
            fell_back.get(),
            5,
            "{policy:?}: every decision made by the policy"
        );
        assert_eq!(metrics.store.up.get(), 0, "{policy:?}");
        let errors = metrics.store.errors.with_label_values(&["error"]).get();
        assert_eq!(errors, 1, "{policy:?}: only the first asked the store");
        if policy == OnStoreError::Deny {
            let e = &refusals[0];
            assert!(e.store_down);
            assert_eq!(e.wait, Some(Duration::from_secs(1)), "the probe interval");
            assert!(e.to_string().contains("on_store_error = \"deny\""), "{e}");
        } else if let Some(e) = refusals.first() {
            assert!(!e.store_down);
            assert_eq!(e.wait, Some(Duration::from_millis(500)));
        }
    }
}
