//! `[rate_limit_store]` and the backends' `metrics_url` keys.

use std::time::Duration;

use super::*;

#[test]
fn a_store_with_every_key() {
    let c = load(&format!(
        "[rate_limit_store]\nurl = \"rediss://:pw@cache:6380/2\"\non_store_error = \"deny\"\n\
         timeout = \"20ms\"\nprobe_interval = \"2s\"\nkey_prefix = \"prod-a\"\n{}",
        route("")
    ));
    let s = c.rate_limit_store.unwrap();
    assert_eq!(s.url.to_string(), "rediss://***@cache:6380/2");
    assert_eq!(s.on_store_error, OnStoreError::Deny);
    assert_eq!(s.timeout, Duration::from_millis(20));
    assert_eq!(s.probe_interval, Duration::from_secs(2));
    assert_eq!(s.key_prefix, "prod-a");
    assert!(load(&route("")).rate_limit_store.is_none());
}

#[test]
fn store_problems_have_their_keys() {
    check(
        &format!(
            "[rate_limit_store]\nurl = \"redis://r:1\"\non_store_error = \"maybe\"\n{}",
            route("")
        ),
        &[
            "rate_limit_store.on_store_error: unknown variant `maybe`, expected one of `allow`, `deny`, `local`",
        ],
    );
    check(
        &format!("[rate_limit_store]\ntimeout = \"1s\"\n{}", route("")),
        &["rate_limit_store.url: required: redis://HOST:PORT or rediss://HOST:PORT"],
    );
    check(
        &format!(
            "[rate_limit_store]\nurl = \"redis://:secret@\"\n{}",
            route("")
        ),
        &[
            "rate_limit_store.url: not a redis://HOST:PORT or rediss://HOST:PORT URL (not shown: it may hold a password)",
        ],
    );
    check(
        &format!(
            "[rate_limit_store]\nurl = \"redis://r:1\"\ntimeout = \"2s\"\nkey_prefix = \"a b\"\n{}",
            route("")
        ),
        &[
            "rate_limit_store.timeout: 2s must not be longer than probe_interval (1s)",
            "rate_limit_store.key_prefix: at most 64 characters, no spaces or control characters",
        ],
    );
}

/// Backend `b` with `urls` and `extra` keys.
fn backend(urls: &[&str], extra: &str) -> String {
    let urls: Vec<String> = urls.iter().map(|u| format!("\"{u}\"")).collect();
    format!(
        "[backends.b]\nurls = [{}]\n{extra}\n[[routes]]\nname = \"r\"\nmodels = [\"m\"]\nbackend = \"b\"\n",
        urls.join(", ")
    )
}

#[test]
fn metrics_urls_as_a_template_or_one_per_replica() {
    let two = ["http://10.0.0.1:8000", "http://10.0.0.2:8000"];
    let c = load(&backend(
        &two,
        "metrics_url = \"http://{host}:8002/metrics\"\nmetrics_interval = \"250ms\"",
    ));
    let q = c.backends["b"].queue.clone().unwrap();
    assert_eq!(q.interval, Duration::from_millis(250));
    assert_eq!(q.timeout, Duration::from_millis(500).min(q.interval));
    assert_eq!(q.stale_after, Duration::from_millis(750));
    let base: http::Uri = two[1].parse().unwrap();
    assert_eq!(
        q.source.url_for(&base, Some(1)).unwrap(),
        "http://10.0.0.2:8002/metrics"
    );
    let v6: http::Uri = "http://[::1]:8000".parse().unwrap();
    assert_eq!(
        q.source.url_for(&v6, None).unwrap(),
        "http://[::1]:8002/metrics"
    );
    let c = load(&backend(
        &two,
        "metrics_url = [\"http://127.0.0.1:9001/metrics\", \"http://127.0.0.1:9002/metrics\"]",
    ));
    let q = c.backends["b"].queue.clone().unwrap();
    assert_eq!(
        q.source.url_for(&base, Some(1)).unwrap(),
        "http://127.0.0.1:9002/metrics"
    );
    assert!(load(&backend(&two, "")).backends["b"].queue.is_none());
}

#[test]
fn metrics_url_problems_have_their_keys() {
    let two = ["http://a:1", "http://b:1"];
    check(
        &backend(&two, "metrics_url = \"http://a:8002/metrics\""),
        &[
            "backends.b.metrics_url: one URL for several replicas must hold {host} (like \"http://{host}:8002/metrics\"), or give a list, one per entry of urls",
        ],
    );
    check(
        &backend(&two, "metrics_url = [\"http://a:2/metrics\"]"),
        &[
            "backends.b.metrics_url: 1 URLs for 2 entries of urls: give one per replica, in the same order",
        ],
    );
    check(
        &backend(
            &two,
            "metrics_url = [\"http://a:2/metrics\", \"https://b:2/metrics\"]",
        ),
        &[
            "backends.b.metrics_url[1]: \"https://b:2/metrics\": metrics are read over http:// (Triton serves them without TLS)",
        ],
    );
    check(
        &backend(&two, "metrics_interval = \"1s\""),
        &["backends.b.metrics_interval: only applies with metrics_url"],
    );
    check(
        &backend(
            &two,
            "metrics_url = \"http://{host}:2/m\"\nmetrics_timeout = \"2s\"\nmetrics_stale_after = \"100ms\"",
        ),
        &[
            "backends.b.metrics_timeout: 2s must not be longer than metrics_interval (1s)",
            "backends.b.metrics_stale_after: 100ms must not be shorter than metrics_interval (1s): every value would be stale",
        ],
    );
    let errors = errors(&backend(&two, "metrics_url = 3"));
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with("backends.b.metrics_url: "),
        "{errors:?}"
    );
}
