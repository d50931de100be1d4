use std::time::Duration;

use crate::config::*;
use crate::rules::ShapeRule;
use crate::tensor::DataType;

const GOOD: &str = r#"
[server]
listen = "127.0.0.1:8080"
admin_listen = "127.0.0.1:9090"
shutdown_grace = "5s"

[limits]
max_body_bytes = 1048576

[backends.triton]
url = "http://127.0.0.1:8000"
request_timeout = "10s"

[[routes]]
name = "simple"
models = ["simple"]
backend = "triton"
[routes.limits]
max_dims = 3
[routes.inputs.INPUT0]
shape = [-1, 16]
allowed_types = ["INT32", "i32"]

[[routes]]
name = "default"
default = true
backend = "triton"
backend_format = "json"
"#;

#[test]
fn loads_a_full_config() {
    let c = from_str(GOOD).unwrap();
    assert_eq!(c.server.listen, "127.0.0.1:8080".parse().unwrap());
    assert_eq!(c.server.shutdown_grace, Duration::from_secs(5));
    let simple = c.route_for_model("simple").unwrap();
    assert_eq!(simple.name, "simple");
    assert_eq!(simple.limits.max_body_bytes, 1 << 20);
    assert_eq!(simple.limits.max_dims, 3);
    assert_eq!(simple.backend.request_timeout, Duration::from_secs(10));
    let rule = &simple.rules.inputs["INPUT0"];
    assert_eq!(rule.allowed_types, Some(vec![DataType::I32]));
    assert_eq!(rule.shape, Some(ShapeRule(vec![-1, 16])));
    assert!(rule.required);
    assert!(!simple.rules.allow_unknown_inputs);
    let other = c.route_for_model("resnet").unwrap();
    assert_eq!(other.name, "default");
    assert_eq!(other.backend_format, WireFormat::Json);
    assert_eq!(other.limits.max_dims, 8);
    assert!(other.rules.allow_unknown_inputs);
}

#[test]
fn collects_every_error_with_its_key() {
    let bad = r#"
[server]
listen = "nowhere"
colour = "blue"
shutdown_grace = "5 parsecs"

[backends.triton]
url = "ftp://x"
connect_timeout = 5

[[routes]]
name = "a"
models = ["m", 3]
backend = "nope"
backend_format = "xml"
[routes.inputs.X]
shape = [-2, "a"]
allowed_types = ["float"]
required = "yes"

[[routes]]
name = "a"
models = ["m"]
backend = "triton"
"#;
    let errors = from_str(bad).unwrap_err().to_string();
    let expected = [
        "server.colour: unknown key",
        "server.listen: \"nowhere\" is not an address like 127.0.0.1:8000",
        "server.shutdown_grace: unknown unit \"parsecs\"",
        "backends.triton.url: \"ftp://x\" is not an http://host:port, https://host:port, grpc://host:port or grpcs://host:port URL",
        "backends.triton.connect_timeout: invalid type: integer `5`, expected a duration like \"30s\"",
        "routes[0].models[1]: invalid type: integer `3`, expected a non-empty string",
        "routes[0].backend: unknown backend \"nope\"",
        "routes[0].backend_format: unknown variant `xml`, expected `binary` or `json`",
        "routes[0].inputs.X.shape[0]: expected a size or -1",
        "routes[0].inputs.X.shape[1]: invalid type: string \"a\", expected a size or -1",
        "routes[0].inputs.X.allowed_types[0]: unknown data type \"float\"",
        "routes[0].inputs.X.required: invalid type: string \"yes\", expected a boolean",
    ];
    for e in expected {
        assert!(errors.contains(e), "missing {e:?} in:\n{errors}");
    }
    // "triton" is declared, with problems of its own: the route naming it
    // is right and gets no second error.
    assert!(
        !errors.contains("routes[1].backend"),
        "a declared backend reported as unknown:\n{errors}"
    );
}

#[test]
fn duplicate_routes_models_and_defaults() {
    let text = r#"
[backends.b]
url = "http://127.0.0.1:1"
[[routes]]
name = "a"
models = ["m"]
default = true
backend = "b"
[[routes]]
name = "a"
models = ["m"]
default = true
backend = "b"
"#;
    let errors = from_str(text).unwrap_err().to_string();
    assert!(
        errors.contains("routes[1].name: route name \"a\" is already used by routes[0]"),
        "{errors}"
    );
    assert!(
        errors.contains("routes[1].models: model \"m\" is already routed by route \"a\""),
        "{errors}"
    );
    assert!(
        errors.contains("routes[1].default: route \"a\" is already the default route"),
        "{errors}"
    );
}

#[test]
fn missing_sections() {
    let errors = from_str("").unwrap_err().to_string();
    assert!(
        errors.contains("backends: at least one backend is required"),
        "{errors}"
    );
    assert!(
        errors.contains("routes: at least one [[routes]] entry is required"),
        "{errors}"
    );
    let errors = from_str("x = [").unwrap_err().to_string();
    assert!(errors.starts_with("invalid TOML"), "{errors}");
}

#[test]
fn single_backend_shortcut() {
    let c = Config::single_backend(
        &["http://127.0.0.1:8001"],
        "127.0.0.1:8000".parse().unwrap(),
        "127.0.0.1:9000".parse().unwrap(),
    )
    .unwrap();
    let r = c.route_for_model("anything").unwrap();
    assert_eq!(r.backend_format, WireFormat::Binary);
    assert_eq!(r.backend.first_url().unwrap(), "http://127.0.0.1:8001");
}
