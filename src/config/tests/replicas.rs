//! The keys of several replicas, health checks, ejection, retries, traffic
//! splits, shadows and `server.readyz`: values, defaults and errors.

use super::*;
use crate::config::backend::parse_dns;
use std::time::Duration;

/// `text` with `keys` added to `[backends.b]`.
fn backend_keys(text: &str, keys: &str) -> String {
    text.replace("[[routes]]", &format!("{keys}\n[[routes]]"))
}

/// Backends `b` and `c`, and route `r` with `body`.
fn two_backends(body: &str) -> String {
    format!(
        "[backends.b]\nurl = \"http://127.0.0.1:1\"\n\
         [backends.c]\nurl = \"http://127.0.0.1:2\"\n\
         [[routes]]\nname = \"r\"\nmodels = [\"m1\"]\n{body}"
    )
}

#[test]
fn urls_dns_and_their_defaults() {
    let text = route("").replace(
        "url = \"http://127.0.0.1:1\"",
        "urls = [\"http://127.0.0.1:1\", \"http://127.0.0.1:2/triton\"]",
    );
    let b = load(&text).backends["b"].clone();
    let urls: Vec<String> = match &b.replicas {
        Replicas::Urls(u) => u.iter().map(ToString::to_string).collect(),
        other => panic!("{other:?}"),
    };
    assert_eq!(urls, ["http://127.0.0.1:1/", "http://127.0.0.1:2/triton"]);
    assert!(b.health.enabled, "on for several replicas");
    assert_eq!(
        b.health,
        HealthChecks {
            enabled: true,
            ..HealthChecks::default()
        }
    );
    assert_eq!(b.ejection, Ejection::default());
    assert_eq!(b.retries, Retries::default());
    assert!(
        !load(&route("")).backends["b"].health.enabled,
        "off for one url"
    );

    let text = route("").replace(
        "url = \"http://127.0.0.1:1\"",
        "dns = \"triton-headless.ns.svc:8001\"\ndns_interval = \"30s\"\nmax_replicas = 8",
    );
    let b = load(&text).backends["b"].clone();
    assert_eq!(
        b.replicas,
        Replicas::Dns {
            name: parse_dns("triton-headless.ns.svc:8001").unwrap(),
            interval: Duration::from_secs(30),
            max_replicas: 8,
        }
    );
    assert!(b.health.enabled);
}

#[test]
fn health_ejection_and_retry_keys() {
    let keys = "health_checks = true\nhealth_interval = \"2s\"\nhealth_timeout = \"500ms\"\n\
                healthy_threshold = 1\nunhealthy_threshold = 4\nmax_checked_models = 10\n\
                eject_after = 3\neject_time = \"1s\"\nmax_eject_time = \"10s\"\n\
                max_retries = 0\nretry_budget = 0.1\nmin_retries_per_second = 0";
    let b = load(&backend_keys(&route(""), keys)).backends["b"].clone();
    assert_eq!(
        b.health,
        HealthChecks {
            enabled: true,
            interval: Duration::from_secs(2),
            timeout: Duration::from_millis(500),
            healthy_threshold: 1,
            unhealthy_threshold: 4,
            max_checked_models: 10,
        }
    );
    assert_eq!(
        b.ejection,
        Ejection {
            after: 3,
            base: Duration::from_secs(1),
            max: Duration::from_secs(10),
        }
    );
    assert_eq!(
        b.retries,
        Retries {
            max: 0,
            budget_permille: 100,
            min_per_second: 0,
        }
    );
}

#[test]
fn backend_replica_errors() {
    let two = "urls = [\"http://127.0.0.1:1\"]";
    check(
        &backend_keys(&route(""), two),
        &["backends.b.urls: url and urls are exclusive: set one of url, urls and dns"],
    );
    let dup = route("").replace(
        "url = \"http://127.0.0.1:1\"",
        "urls = [\"http://127.0.0.1:1\", \"http://127.0.0.1:1/\"]",
    );
    check(
        &dup,
        &["backends.b.urls[1]: \"http://127.0.0.1:1/\" is listed twice"],
    );
    let empty = route("").replace("url = \"http://127.0.0.1:1\"", "urls = []");
    check(&empty, &["backends.b.urls: lists no URL"]);
    let keys = "health_interval = \"1s\"\nhealth_timeout = \"2s\"\n\
                eject_time = \"1m\"\nmax_eject_time = \"10s\"\n\
                retry_budget = 1.5\ndns_interval = \"1s\"";
    check(
        &backend_keys(&route(""), keys),
        &[
            "backends.b.retry_budget: must be from 0 to 1, got 1.5",
            "backends.b.dns_interval: only applies with dns",
            "backends.b.health_timeout: 2s must not be longer than health_interval (1s)",
            "backends.b.eject_time: 60s must not be longer than max_eject_time (10s)",
        ],
    );
}

#[test]
fn a_weighted_split_with_a_header_and_a_shadow() {
    let c = load(&two_backends(
        "backends = [{ name = \"b\", weight = 9 }, { name = \"c\", weight = 1 }]\n\
         allow_backend_header = true\nretry_infer = true",
    ));
    let r = c.route_for_model("m1").unwrap();
    let split: Vec<(&str, u32)> = r
        .split
        .iter()
        .map(|w| (w.backend.name.as_str(), w.weight))
        .collect();
    assert_eq!(split, [("b", 9), ("c", 1)]);
    assert_eq!(r.backend.name, "b", "the first is the primary");
    assert!(r.allow_backend_header && r.retry_infer);
    assert_eq!(c.backends["c"].models, ["m1"], "followed by c's checks too");

    let c = load(&two_backends(
        "backend = \"b\"\nshadow = { backend = \"c\", max_in_flight = 3 }",
    ));
    let r = c.route_for_model("m1").unwrap();
    let shadow = r.shadow.as_ref().unwrap();
    assert_eq!(
        (shadow.backend.name.as_str(), shadow.max_in_flight),
        ("c", 3)
    );
    assert!(!r.allow_backend_header && !r.retry_infer, "off by default");
    let c = load(&two_backends(
        "backend = \"b\"\nshadow = { backend = \"c\" }",
    ));
    let shadow = c.route_for_model("m1").unwrap().shadow.clone().unwrap();
    assert_eq!(shadow.max_in_flight, Shadow::DEFAULT_MAX_IN_FLIGHT);
}

#[test]
fn split_and_shadow_errors() {
    check(
        &two_backends("backend = \"b\"\nbackends = [{ name = \"c\", weight = 1 }]"),
        &["routes[0].backends: backend and backends are exclusive: set one"],
    );
    check(
        &two_backends("backends = [{ name = \"b\", weight = 0 }, { name = \"c\", weight = 0 }]"),
        &["routes[0].backends: every weight is 0: no request could go anywhere"],
    );
    check(
        &two_backends("backends = [{ name = \"b\", weight = 1 }, { name = \"b\", weight = 2 }]"),
        &["routes[0].backends[1].name: backend \"b\" is listed twice"],
    );
    check(
        &two_backends("backends = [{ name = \"b\" }]"),
        &["routes[0].backends[0].weight: required"],
    );
    check(
        &two_backends("backend = \"b\"\nshadow = { backend = \"b\" }"),
        &[
            "routes[0].shadow.backend: backend \"b\" already serves this route; a shadow must be another backend",
        ],
    );
}

#[test]
fn readyz_modes() {
    assert_eq!(ServerConfig::default().readyz, Readyz::Process);
    for (word, mode) in [
        ("process", Readyz::Process),
        ("any_route", Readyz::AnyRoute),
        ("all_routes", Readyz::AllRoutes),
    ] {
        let text = format!("[server]\nreadyz = \"{word}\"\n{}", route(""));
        let c = load(&text);
        assert_eq!(c.server.readyz, mode);
        // Readiness is read from the checks: on where it depends on them,
        // even for a single url (issue 26, finding 11).
        assert_eq!(
            c.backends["b"].health.enabled,
            mode != Readyz::Process,
            "{word}"
        );
    }
    let off = backend_keys(&route(""), "health_checks = false");
    assert!(
        !load(&format!("[server]\nreadyz = \"process\"\n{off}")).backends["b"]
            .health
            .enabled
    );
    check(
        &format!("[server]\nreadyz = \"all_routes\"\n{off}"),
        &[
            "backends.b.health_checks: false, and server.readyz = \"all_routes\" reads readiness \
           from health checks: without them /readyz stays ready with every replica down \
           (remove the key, or set readyz = \"process\")",
        ],
    );
}

#[test]
fn several_backend_urls_on_the_command_line() {
    let urls = ["http://127.0.0.1:1", "http://127.0.0.1:2"];
    let c = Config::single_backend(&urls, DEFAULT_LISTEN, DEFAULT_ADMIN_LISTEN).unwrap();
    let b = &c.backends["default"];
    assert!(matches!(&b.replicas, Replicas::Urls(u) if u.len() == 2));
    assert!(b.health.enabled, "default health checks");
    let twice = ["http://127.0.0.1:1", "http://127.0.0.1:1"];
    let e = Config::single_backend(&twice, DEFAULT_LISTEN, DEFAULT_ADMIN_LISTEN).unwrap_err();
    assert_eq!(
        e.to_string(),
        "backends.default.urls[1]: \"http://127.0.0.1:1/\" is listed twice"
    );
}
