//! `[tracing]`: off without the table, the defaults with an endpoint,
//! every problem reported at its key.

use std::time::Duration;

use super::*;

const BASE: &str = "[backends.b]\nurl = \"http://127.0.0.1:1\"\n[[routes]]\nname = \"r\"\ndefault = true\nbackend = \"b\"\n";

#[test]
fn off_without_the_table_or_when_disabled() {
    assert_eq!(load(BASE).tracing, None);
    let text = format!("[tracing]\nenabled = false\n{BASE}");
    assert_eq!(load(&text).tracing, None);
}

#[test]
fn an_endpoint_alone_gets_parent_based_sampling_at_one() {
    let text = format!("[tracing]\nendpoint = \"http://127.0.0.1:4318\"\n{BASE}");
    let t = load(&text).tracing.unwrap();
    assert_eq!(t.traces_url(), "http://127.0.0.1:4318/v1/traces");
    assert_eq!((t.sample_ratio, t.parent_based), (1.0, true));
    assert_eq!(t.service_name, "tensorgate");
    assert_eq!(t.batch_delay, Duration::from_secs(1));
    let text = format!(
        "[tracing]\nendpoint = \"https://otel.example/tempo\"\nsample_ratio = 0\nparent_based = false\n\
         batch_delay = \"200ms\"\nexport_timeout = \"2s\"\nmax_queue_spans = 10\nmax_batch_spans = 10\n{BASE}"
    );
    let t = load(&text).tracing.unwrap();
    assert_eq!(t.traces_url(), "https://otel.example/tempo/v1/traces");
    assert_eq!((t.sample_ratio, t.parent_based), (0.0, false));
    assert_eq!(
        (t.batch_delay, t.export_timeout),
        (Duration::from_millis(200), Duration::from_secs(2))
    );
}

#[test]
fn every_problem_is_reported_at_its_key() {
    let text = format!(
        "[tracing]\nsample_ratio = 1.5\nendpoint = \"127.0.0.1:4318\"\nmax_batch_spans = 0\n\
         headers = {{ \"bad name\" = \"x\" }}\n{BASE}"
    );
    let e = errors(&text);
    assert!(
        e.iter()
            .any(|e| e.starts_with("tracing.sample_ratio: must be from 0 to 1, got 1.5")),
        "{e:?}"
    );
    assert!(
        e.iter().any(|e| e.starts_with("tracing.endpoint:")),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|e| e.starts_with("tracing.max_batch_spans: must be positive")),
        "{e:?}"
    );
    let text = format!("[tracing]\nmax_queue_spans = 4\nmax_batch_spans = 8\n{BASE}");
    assert_eq!(
        errors(&text),
        ["tracing.endpoint: required while tracing is on (or set enabled = false)"]
    );
    let text = format!(
        "[tracing]\nendpoint = \"http://x:1\"\nmax_queue_spans = 4\nmax_batch_spans = 8\n\
         headers = {{ \"bad name\" = \"x\", ok = \"line\\nbreak\" }}\n{BASE}"
    );
    assert_eq!(
        errors(&text),
        [
            "tracing.max_batch_spans: 8 is more than max_queue_spans (4)",
            "tracing.headers.bad name: not a valid HTTP header name",
            "tracing.headers.ok: not a valid HTTP header value",
        ]
    );
}
