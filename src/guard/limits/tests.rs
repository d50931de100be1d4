use std::collections::BTreeMap;
use std::path::Path;

use super::*;
use crate::auth::KeySet;
use crate::config::{Backend, RateLimit, Route, RouteAuth, ServerConfig};

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
    let table = reg.table(&cfg);
    assert_eq!(reg.len(), 3, "the route's and one per key");
    let r = table.route("r").unwrap();
    let (alice, bob): (Arc<str>, Arc<str>) = (Arc::from("alice"), Arc::from("bob"));
    let now = Instant::now();
    let req = |key: &Arc<str>| r.admit(Some(key), Unit::Requests, 1, now);
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
    assert_eq!(r.admit(Some(&bob), Unit::Requests, 1, later), Ok(()));
    assert!(
        !r.admit(Some(&bob), Unit::Requests, 1, later)
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
    let table = reg.table(&cfg);
    let r = table.route("r").unwrap();
    let now = Instant::now();
    assert!(r.limits_elements(None));
    assert_eq!(
        r.admit(None, Unit::Requests, 1, now),
        Ok(()),
        "no request limit"
    );
    assert_eq!(r.admit(None, Unit::Elements, 600, now), Ok(()));
    let e = r.admit(None, Unit::Elements, 600, now).unwrap_err();
    assert_eq!(e.wait, Some(Duration::from_secs(2)));
    let e = r.admit(None, Unit::Elements, 1001, now).unwrap_err();
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
    let t1 = reg.table(&first);
    assert_eq!(
        t1.route("r")
            .unwrap()
            .admit(Some(&alice), Unit::Requests, 1, now),
        Ok(())
    );
    // Reloaded: bob's key is gone, carol's is new, alice's bucket is the
    // same one, still empty.
    let second = config(
        limits(Rates::default(), per_key),
        "alice:aaaaaaaaaaaaaaaa\ncarol:cccccccccccccccc\n",
    );
    let t2 = reg.table(&second);
    assert_eq!(reg.len(), 2);
    let r = t2.route("r").unwrap();
    assert!(r.admit(Some(&alice), Unit::Requests, 1, now).is_err());
    assert_eq!(
        r.admit(Some(&Arc::from("carol")), Unit::Requests, 1, now),
        Ok(())
    );
    // A route without limits has no entry and no bucket.
    let third = config(RateLimit::default(), KEYS);
    assert!(reg.table(&third).route("r").is_none());
    assert!(reg.is_empty());
}
