//! Traffic of every kind moves the metrics by exactly the expected amounts,
//! and every metric the Grafana dashboard queries exists in a real scrape.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::*;

type Series = BTreeMap<String, f64>;

/// Parses the text exposition into `name{k="v",...}` (labels sorted) -> value.
fn parse(text: &str) -> Series {
    let mut out = Series::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        let mut pairs: Vec<&str> = if labels.is_empty() {
            vec![]
        } else {
            labels.split(',').collect()
        };
        pairs.sort_unstable();
        out.insert(
            format!("{name}{{{}}}", pairs.join(",")),
            value.parse().unwrap(),
        );
    }
    out
}

fn get(s: &Series, key: &str) -> f64 {
    s.get(key).copied().unwrap_or(0.0)
}

async fn scrape(gw: &tensorgate::server::Running) -> (String, Series) {
    let got = send(gw.admin_addr, "GET", "/metrics", &[], "").await;
    assert_eq!(got.status, 200);
    assert_eq!(
        got.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = String::from_utf8(got.body.to_vec()).unwrap();
    let series = parse(&text);
    (text, series)
}

const ROUTE: &str = r#"
[[routes]]
name = "simple"
models = ["simple", "broken"]
backend = "b"
[routes.inputs.INPUT0]
shape = [-1]
allowed_types = ["INT32"]
"#;

#[tokio::test]
async fn counters_move_by_exactly_the_traffic() {
    const HEADER: &str = r#"{"model_name":"simple","outputs":[{"name":"OUT","datatype":"INT32","shape":[2],"parameters":{"binary_data_size":8}}]}"#;
    let backend = TestBackend::start(|seen| async move {
        if seen.path.contains("broken") {
            return reply(
                500,
                &[("content-type", "application/json")],
                r#"{"error":"model crashed"}"#,
            );
        }
        let mut body = HEADER.as_bytes().to_vec();
        body.extend_from_slice(&le_i32(&[5, 6]));
        reply(
            200,
            &[("inference-header-content-length", &HEADER.len().to_string())],
            body,
        )
    })
    .await;
    let gw = gateway(&simple_config(&backend.url(), ROUTE)).await;

    let good = r#"{"inputs":[{"name":"INPUT0","shape":[3],"datatype":"INT32","data":[1,2,3]}]}"#;
    let bad = r#"{"inputs":[{"name":"INPUT0","shape":[1,3],"datatype":"INT32","data":[1,2,3]}]}"#;
    let mut client_sent = 0;
    let mut client_received = 0;
    for _ in 0..3 {
        let got = post_json(gw.data_addr, "/v2/models/simple/infer", good).await;
        assert_eq!(got.status, 200);
        assert_eq!(got.json()["outputs"][0]["data"], serde_json::json!([5, 6]));
        client_sent += good.len();
        client_received += got.body.len();
    }
    for _ in 0..2 {
        let got = post_json(gw.data_addr, "/v2/models/simple/infer", bad).await;
        assert_eq!(got.status, 400);
        client_received += got.body.len();
    }
    let got = post_json(gw.data_addr, "/v2/models/broken/infer", good).await;
    assert_eq!(got.status, 500);
    client_sent += good.len();
    client_received += got.body.len();

    // The last body's end is recorded as the server finishes it: wait for it.
    let mut series = Series::new();
    for _ in 0..100 {
        series = scrape(&gw).await.1;
        if get(
            &series,
            r#"tensorgate_request_duration_seconds_count{kind="v2",route="simple"}"#,
        ) == 6.0
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let s = &series;
    assert_eq!(
        get(
            s,
            r#"tensorgate_requests_total{code="200",kind="v2",route="simple"}"#
        ),
        3.0
    );
    assert_eq!(
        get(
            s,
            r#"tensorgate_requests_total{code="400",kind="v2",route="simple"}"#
        ),
        2.0
    );
    assert_eq!(
        get(
            s,
            r#"tensorgate_requests_total{code="500",kind="v2",route="simple"}"#
        ),
        1.0
    );
    assert_eq!(
        get(
            s,
            r#"tensorgate_request_duration_seconds_count{kind="v2",route="simple"}"#
        ),
        6.0
    );
    assert_eq!(
        get(
            s,
            r#"tensorgate_rule_violations_total{route="simple",rule="shape",tensor="INPUT0"}"#
        ),
        2.0
    );
    assert_eq!(
        get(
            s,
            r#"tensorgate_upstream_errors_total{backend="b",kind="5xx"}"#
        ),
        1.0
    );
    assert_eq!(
        get(s, r#"tensorgate_in_flight_requests{route="simple"}"#),
        0.0
    );
    assert_eq!(get(s, r#"tensorgate_build_info{version="0.1.0"}"#), 1.0);
    assert_eq!(
        get(
            s,
            r#"tensorgate_upstream_duration_seconds_count{backend="b",phase="first_byte",route="simple"}"#
        ),
        4.0
    );
    assert_eq!(
        get(
            s,
            r#"tensorgate_upstream_duration_seconds_count{backend="b",phase="total",route="simple"}"#
        ),
        4.0
    );
    // Bytes on each side.
    let backend_got: usize = backend.requests().iter().map(|r| r.body.len()).sum();
    assert_eq!(
        get(
            s,
            r#"tensorgate_request_bytes_total{route="simple",side="client"}"#
        ),
        client_sent as f64
    );
    assert_eq!(
        get(
            s,
            r#"tensorgate_request_bytes_total{route="simple",side="backend"}"#
        ),
        backend_got as f64
    );
    let backend_sent = 3 * (HEADER.len() + 8) + r#"{"error":"model crashed"}"#.len();
    assert_eq!(
        get(
            s,
            r#"tensorgate_response_bytes_total{route="simple",side="backend"}"#
        ),
        backend_sent as f64
    );
    assert_eq!(
        get(
            s,
            r#"tensorgate_response_bytes_total{route="simple",side="client"}"#
        ),
        client_received as f64
    );
    // Elements: 3 per request that reached the backend, 2 per translated reply.
    assert_eq!(
        get(
            s,
            r#"tensorgate_tensor_elements_total{direction="request",route="simple"}"#
        ),
        12.0
    );
    assert_eq!(
        get(
            s,
            r#"tensorgate_tensor_elements_total{direction="response",route="simple"}"#
        ),
        6.0
    );
    assert_eq!(
        get(
            s,
            r#"tensorgate_translation_duration_seconds_count{direction="request",route="simple"}"#
        ),
        4.0
    );
    assert_eq!(
        get(
            s,
            r#"tensorgate_translation_duration_seconds_count{direction="response",route="simple"}"#
        ),
        3.0
    );
    assert!(get(s, "process_resident_memory_bytes{}") > 0.0);
}

#[tokio::test]
async fn unknown_routes_share_one_label_and_request_data_makes_no_labels() {
    let backend = TestBackend::start(|_| async { reply(200, &[], "") }).await;
    let toml = format!(
        r#"
[backends.b]
url = "{}"
[[routes]]
name = "only"
models = ["only"]
backend = "b"
[routes.inputs.A]
shape = [1]
"#,
        backend.url()
    );
    let gw = gateway(&toml).await;
    for model in ["x1", "x2", "x3"] {
        let got = post_json(gw.data_addr, &format!("/v2/models/{model}/infer"), "{}").await;
        assert_eq!(got.status, 404);
    }
    let body = r#"{"inputs":[{"name":"A","shape":[1],"datatype":"INT32","data":[1]},{"name":"SURPRISE","shape":[1],"datatype":"INT32","data":[1]}]}"#;
    let got = post_json(gw.data_addr, "/v2/models/only/infer", body).await;
    assert_eq!(got.status, 400);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (text, s) = scrape(&gw).await;
    assert_eq!(
        get(
            &s,
            r#"tensorgate_requests_total{code="404",kind="v2",route="_none"}"#
        ),
        3.0
    );
    assert_eq!(
        get(
            &s,
            r#"tensorgate_rule_violations_total{route="only",rule="unknown_input",tensor="_unknown"}"#
        ),
        1.0
    );
    assert!(
        !text.contains("SURPRISE") && !text.contains("x1"),
        "request data leaked into labels"
    );
}

#[tokio::test]
async fn dashboard_queries_only_metrics_that_exist() {
    let backend = TestBackend::start(|_| async { reply(503, &[], "") }).await;
    // A shadow backend, so the shadow series exist too.
    let shadowed = ROUTE.replace(
        "backend = \"b\"\n",
        "backend = \"b\"\nshadow = { backend = \"next\" }\n",
    );
    let extra = format!("[backends.next]\nurl = \"{}\"\n{shadowed}", backend.url());
    let gw = gateway(&simple_config(&backend.url(), &extra)).await;
    // One of each kind of traffic so every labelled series exists.
    let _ = post_json(
        gw.data_addr,
        "/v2/models/simple/infer",
        r#"{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[1]}]}"#,
    )
    .await;
    let _ = post_json(
        gw.data_addr,
        "/v2/models/simple/infer",
        r#"{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"INT32","data":[1]}]}"#,
    )
    .await;
    let _ = send(gw.data_addr, "GET", "/v2/health/ready", &[], "").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (text, _) = scrape(&gw).await;
    let dir = std::env::temp_dir().join(format!("tensorgate-scrape-{}", std::process::id()));
    std::fs::write(&dir, &text).unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    let status = std::process::Command::new("python3")
        .arg(format!("{root}/scripts/dashboard_metrics.py"))
        .arg(format!("{root}/deploy/grafana/tensorgate.json"))
        .arg("--check")
        .arg(&dir)
        // The traffic above causes every event (a rule violation, a shadow
        // copy): no metric may be missing.
        .arg("--strict")
        .status();
    let _ = std::fs::remove_file(&dir);
    match status {
        Ok(s) => assert!(
            s.success(),
            "the dashboard queries metrics missing from a real scrape"
        ),
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("python3 unavailable ({e}); dashboard check skipped")
        }
        Err(e) => panic!("python3 is required in CI: {e}"),
    }
}

#[tokio::test]
async fn request_ids_and_trace_context_travel_through() {
    let backend = TestBackend::start(|_| async {
        reply(
            200,
            &[("content-type", "application/json")],
            r#"{"outputs":[]}"#,
        )
    })
    .await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let body = r#"{"inputs":[{"name":"X","shape":[1],"datatype":"INT32","data":[1]}]}"#;
    let got = send(
        gw.data_addr,
        "POST",
        "/v2/models/m/infer",
        &[("x-request-id", "client-id-1"), ("traceparent", trace)],
        body,
    )
    .await;
    assert_eq!(got.status, 200);
    assert_eq!(got.header("x-request-id"), Some("client-id-1"));
    // Without one, an id is generated, sent to the backend and echoed.
    let got2 = send(gw.data_addr, "GET", "/v2/health/ready", &[], "").await;
    let generated = got2.header("x-request-id").unwrap().to_owned();
    assert_eq!(generated.len(), 32);
    assert!(generated.bytes().all(|b| b.is_ascii_hexdigit()));
    let seen = backend.requests();
    assert_eq!(seen[0].headers["x-request-id"], "client-id-1");
    assert_eq!(seen[0].headers["traceparent"], trace);
    assert_eq!(seen[1].headers["x-request-id"], generated.as_str());
    // Gateway-made errors carry the id too.
    let got3 = send(
        gw.data_addr,
        "POST",
        "/v2/models/m/infer",
        &[("x-request-id", "e-1")],
        "{",
    )
    .await;
    assert_eq!(got3.status, 400);
    assert_eq!(got3.header("x-request-id"), Some("e-1"));
}
