//! `Config::single_backend` and `Config::demo`: values, not TOML text.

use std::collections::BTreeMap;
use std::time::Duration;

use super::*;
use crate::rules::{RouteRules, ShapeRule, TensorRule};
use crate::tensor::DataType;

fn addr(s: &str) -> std::net::SocketAddr {
    s.parse().unwrap()
}

#[test]
fn single_backend_refuses_hostile_urls_cleanly() {
    for url in [
        "http://127.0.0.1:8001/\"\n[server]\nlisten = \"0.0.0.0:1\"",
        "http://127.0.0.1:8001/a\\b",
        "http://x\"y:1",
        "ftp://127.0.0.1:1",
    ] {
        let e = Config::single_backend(&[url], DEFAULT_LISTEN, DEFAULT_ADMIN_LISTEN).unwrap_err();
        let expected = ConfigError {
            key: "backends.default.url".into(),
            message: format!(
                "{url:?} is not an http://host:port, https://host:port, grpc://host:port or grpcs://host:port URL"
            ),
        };
        assert_eq!(e.0, [expected]);
    }
    // https backends are served (with the system's CAs).
    let c = Config::single_backend(&["https://h:1"], DEFAULT_LISTEN, DEFAULT_ADMIN_LISTEN).unwrap();
    let b = &c.backends["default"];
    assert_eq!(b.first_url().unwrap(), "https://h:1/");
    assert!(b.is_https());
}

#[test]
fn single_backend_values() {
    let c = Config::single_backend(
        &["http://127.0.0.1:8001/p"],
        addr("127.0.0.1:1"),
        addr("127.0.0.1:2"),
    )
    .unwrap();
    let backend = Backend::new("default", "http://127.0.0.1:8001/p".parse().unwrap());
    assert_eq!(c.backends.keys().collect::<Vec<_>>(), ["default"]);
    assert_eq!(*c.backends["default"], backend);
    let mut route = Route::new("default", c.backends["default"].clone());
    route.default = true;
    assert_eq!(c.routes.len(), 1);
    assert_eq!(*c.routes[0], route);
    assert_eq!(c.server.listen, addr("127.0.0.1:1"));
    assert_eq!(c.server.admin_listen, addr("127.0.0.1:2"));
    assert_eq!(
        c.server.shutdown_grace,
        ServerConfig::default().shutdown_grace
    );
    let same = Config::single_backend(&["http://h:1"], DEFAULT_LISTEN, DEFAULT_LISTEN).unwrap_err();
    assert_eq!(
        same.to_string(),
        "server.admin_listen: must differ from server.listen"
    );
}

#[test]
fn demo_values() {
    let c = Config::demo(addr("127.0.0.1:7"), DEFAULT_LISTEN, DEFAULT_ADMIN_LISTEN).unwrap();
    assert_eq!(c.server.shutdown_grace, Duration::from_secs(5));
    assert_eq!(c.server.drain_delay, Duration::ZERO);
    assert_eq!(c.server.listen, DEFAULT_LISTEN);
    let mut demo = Backend::new("demo", "http://127.0.0.1:7".parse().unwrap());
    demo.models = vec!["simple".to_owned()];
    assert_eq!(
        *c.backends["demo"], demo,
        "follows the models its routes list"
    );
    let names: Vec<_> = c.routes.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["simple", "default"]);
    let simple = &c.routes[0];
    assert_eq!(simple.models, ["simple"]);
    assert!(!simple.default);
    let rule = TensorRule {
        shape: Some(ShapeRule(vec![-1, 16])),
        allowed_types: Some(vec![DataType::I32]),
        decthings_types: None,
        required: true,
    };
    let rules = RouteRules {
        inputs: BTreeMap::from([("INPUT0".into(), rule.clone()), ("INPUT1".into(), rule)]),
        outputs: BTreeMap::new(),
        allow_unknown_inputs: false,
    };
    assert_eq!(simple.rules, rules);
    assert_eq!(simple.sagemaker.default_model, None);
    let default = &c.routes[1];
    assert!(default.default);
    assert!(default.models.is_empty());
    assert_eq!(default.sagemaker.default_model.as_deref(), Some("rowsum"));
    assert!(default.rules.allow_unknown_inputs);
    assert_eq!(c.route_for_model("rowsum").unwrap().name, "default");
    assert_eq!(c.route_for_model("simple").unwrap().name, "simple");
}

/// The demo means what this TOML means, through the loader.
#[test]
fn demo_matches_its_toml() {
    let text = r#"
[server]
shutdown_grace = "5s"
drain_delay = "0s"
[backends.demo]
url = "http://127.0.0.1:7"
[[routes]]
name = "simple"
models = ["simple"]
backend = "demo"
[routes.inputs.INPUT0]
shape = [-1, 16]
allowed_types = ["INT32"]
[routes.inputs.INPUT1]
shape = [-1, 16]
allowed_types = ["INT32"]
[[routes]]
name = "default"
default = true
backend = "demo"
[routes.limits]
max_body_bytes = 134217728
[routes.sagemaker]
default_model = "rowsum"
"#;
    let loaded = load(text);
    let built = Config::demo(addr("127.0.0.1:7"), DEFAULT_LISTEN, DEFAULT_ADMIN_LISTEN).unwrap();
    assert_eq!(loaded.server, built.server);
    assert_eq!(loaded.backends, built.backends);
    assert_eq!(loaded.routes, built.routes);
}

/// The example file documents every key, so it must load, and it must set
/// every new key to its default or a valid value.
#[test]
fn example_file_loads() {
    let c = load(include_str!("../../../config/tensorgate.example.toml"));
    assert_eq!(c.server, ServerConfig::default());
    let simple = c.route_for_model("simple").unwrap();
    assert_eq!(simple.decthings.model_ids["4f1c8a2e-simple"], "simple");
    // simple requires two inputs, so SageMaker (one input) is off there and
    // served by the rowsum route.
    assert!(!simple.sagemaker.enabled);
    let rowsum = c.route_for_model("rowsum").unwrap();
    assert_eq!(rowsum.sagemaker.default_model.as_deref(), Some("rowsum"));
    assert_eq!(rowsum.sagemaker.input.as_deref(), Some("INPUT0"));
    assert_eq!(rowsum.sagemaker.outputs[0].reply_name(), "sum");
    assert_eq!(rowsum.sagemaker.endpoints["rowsum-prod"], "rowsum");
    let mut triton = Backend::new("triton", "http://127.0.0.1:8001".parse().unwrap());
    // The models its routes list, followed by its health checks.
    triton.models = vec!["simple".to_owned(), "rowsum".to_owned()];
    assert_eq!(*c.backends["triton"], triton);
}

/// The TLS keys are documented commented out (they name files); with them
/// uncommented (and the backend made https) every key is known and the
/// only problems are the files the example names.
#[test]
fn example_file_tls_keys_exist() {
    let text = include_str!("../../../config/tensorgate.example.toml");
    let keys = [
        "[server.tls]",
        "cert_file =",
        "key_file =",
        "client_ca_file =",
        "client_auth =",
        "tls_ca_file =",
        "tls_cert_file =",
        "tls_key_file =",
        "tls_server_name =",
    ];
    let uncommented: String = text
        .lines()
        .map(|l| match l.strip_prefix("# ") {
            Some(rest) if keys.iter().any(|k| rest.starts_with(k)) => rest.to_owned(),
            _ => l.replace("\"http://127.0.0.1:8001\"", "\"https://127.0.0.1:8001\""),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let errors = from_str(&uncommented).unwrap_err().0;
    let keys: Vec<&str> = errors.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "server.tls.cert_file",
            "server.tls.key_file",
            "server.tls.client_ca_file",
            "backends.triton.tls_ca_file",
            "backends.triton.tls_cert_file",
            "backends.triton.tls_key_file",
        ]
    );
    assert!(
        errors
            .iter()
            .all(|e| e.message.starts_with("cannot read /etc/tensorgate/"))
    );
}

/// The commented-out `[routes.auth]` and `[routes.rate_limit]` blocks of
/// the example are valid once uncommented (with a real key file).
#[test]
fn example_access_blocks_load_when_uncommented() {
    let dir = std::env::temp_dir().join(format!("tg-example-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("keys")).unwrap();
    std::fs::write(dir.join("keys/simple.keys"), "alice:aaaaaaaaaaaaaaaa\n").unwrap();
    let text: String = include_str!("../../../config/tensorgate.example.toml")
        .lines()
        .map(|l| match l.strip_prefix('#') {
            // Commented-out TOML is `#key = ...` / `#[table]`; prose is `# ...`.
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_lowercase() || c == '[') => rest,
            _ => l,
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let c = from_str_in(&text, Some(&dir)).unwrap_or_else(|e| panic!("{e}"));
    let simple = c.route_for_model("simple").unwrap();
    let auth = simple.auth.as_ref().unwrap();
    assert!(auth.sigv4);
    assert_eq!(auth.keys.names().len(), 1);
    let limits = simple.rate_limit;
    assert_eq!(limits.route.requests.unwrap().burst, 200);
    assert_eq!(limits.per_key.elements.unwrap().burst, 2_000_000);
    let t = c.tracing.expect("the [tracing] block");
    assert_eq!(t.traces_url(), "http://127.0.0.1:4318/v1/traces");
    assert_eq!((t.sample_ratio, t.parent_based), (0.05, true));
    assert_eq!((t.max_queue_spans, t.max_batch_spans), (2048, 512));
    assert_eq!(t.headers["x-api-key"], "...");
    let store = c.rate_limit_store.as_ref().unwrap();
    assert_eq!(store.url.to_string(), "redis://127.0.0.1:6379");
    assert_eq!(store.on_store_error, crate::config::OnStoreError::Local);
    assert_eq!(
        *store,
        crate::config::RateLimitStore::new(store.url.clone())
    );
    let queue = c.backends["triton"].queue.as_ref().unwrap();
    assert_eq!(
        queue.source,
        crate::config::MetricsSource::Template("http://{host}:8002/metrics".into())
    );
    assert_eq!(queue.stale_after, std::time::Duration::from_secs(3));
    std::fs::remove_dir_all(&dir).unwrap();
}
