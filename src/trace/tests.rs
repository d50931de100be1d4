//! The trace context read from and written to headers, and spans made
//! only for sampled traces.

use http::{HeaderMap, HeaderValue};
use opentelemetry::trace::{SpanId, TraceContextExt, TraceId};
use opentelemetry_sdk::trace::{InMemorySpanExporter, Sampler, SdkTracerProvider};

use super::*;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(*k, HeaderValue::from_str(v).unwrap());
    }
    h
}

fn provider(sampler: Sampler) -> (SdkTracerProvider, InMemorySpanExporter) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .with_sampler(sampler)
        .build();
    (provider, exporter)
}

#[test]
fn traceparent_is_read_and_tracestate_kept() {
    let p = parent(&headers(&[
        (
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ),
        ("tracestate", "congo=t61rcWkgMzE"),
    ]));
    let sc = p.span().span_context().clone();
    assert_eq!(
        sc.trace_id(),
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap()
    );
    assert_eq!(sc.span_id(), SpanId::from_hex("00f067aa0ba902b7").unwrap());
    assert!(sc.is_sampled() && sc.is_remote());
    assert_eq!(sc.trace_state().header(), "congo=t61rcWkgMzE");
}

#[test]
fn malformed_traceparent_starts_a_new_trace() {
    for bad in [
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "zz",
        "",
    ] {
        let p = parent(&headers(&[("traceparent", bad)]));
        assert!(!p.span().span_context().is_valid(), "{bad}");
    }
}

#[test]
fn amazon_trace_ids_map_onto_w3c_ids() {
    let sc = |v: &str| {
        let p = parent(&headers(&[("x-amzn-trace-id", v)]));
        p.span().span_context().clone()
    };
    let s = sc("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1");
    assert_eq!(
        s.trace_id(),
        TraceId::from_hex("5759e988bd862e3fe1be46a994272793").unwrap()
    );
    assert_eq!(s.span_id(), SpanId::from_hex("53995c3f42cd8ad8").unwrap());
    assert!(s.is_sampled() && s.is_remote());
    for undecided in [
        "Sampled=0",
        "Sampled=?",
        "Self=1-67891234-12456789abcdef012345678",
    ] {
        let v =
            format!("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;{undecided}");
        let s = sc(&v);
        assert!(s.is_valid() && !s.is_sampled(), "{v}");
    }
    for unmapped in [
        "Root=1-5759e988-bd862e3fe1be46a994272793",
        "Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
        "Root=1-5759e98-bd862e3fe1be46a9942727933;Parent=53995c3f42cd8ad8;Sampled=1",
        "Root=1-zz59e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
        "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=0000000000000000;Sampled=1",
        "nothing",
    ] {
        assert!(!sc(unmapped).is_valid(), "{unmapped}");
    }
    // traceparent wins.
    let p = parent(&headers(&[
        (
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ),
        (
            "x-amzn-trace-id",
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
        ),
    ]));
    assert_eq!(
        p.span().span_context().trace_id(),
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap()
    );
}

#[test]
fn children_link_to_their_parent_and_carry_it_on() {
    let (provider, exporter) = provider(Sampler::AlwaysOn);
    let tracer = opentelemetry::trace::TracerProvider::tracer(&provider, "t");
    let p = parent(&headers(&[(
        "traceparent",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    )]));
    let server = Trace::server(&tracer, p, SPAN_REQUEST);
    assert!(server.sampled());
    assert_eq!(server.request_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
    let attempt = server
        .child(SPAN_ATTEMPT, Kind::Client, vec![Attribute::new(ATTEMPT, 0)])
        .unwrap();
    let mut out = HeaderMap::new();
    out.insert("tracestate", HeaderValue::from_static("stale=1"));
    attempt.inject(&mut out);
    let spans_id = attempt.cx.span().span_context().span_id();
    assert_eq!(
        out["traceparent"],
        format!("00-4bf92f3577b34da6a3ce929d0e0e4736-{spans_id}-01").as_str()
    );
    assert!(
        out.get("tracestate").is_none(),
        "the caller's empty state replaces a stale one"
    );
    attempt.end();
    server.end();
    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 2);
    let (a, s) = (&spans[0], &spans[1]);
    assert_eq!(a.parent_span_id, s.span_context.span_id());
    assert_eq!(
        s.parent_span_id,
        SpanId::from_hex("00f067aa0ba902b7").unwrap()
    );
    assert_eq!(a.span_kind, Kind::Client);
    assert_eq!(s.span_kind, Kind::Server);
}

#[test]
fn an_unsampled_trace_makes_no_spans_but_passes_its_context_on() {
    let (provider, exporter) = provider(Sampler::ParentBased(Box::new(Sampler::AlwaysOn)));
    let tracer = opentelemetry::trace::TracerProvider::tracer(&provider, "t");
    let p = parent(&headers(&[(
        "traceparent",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
    )]));
    let server = Trace::server(&tracer, p, SPAN_REQUEST);
    assert!(!server.sampled());
    assert!(
        server
            .child(SPAN_ATTEMPT, Kind::Client, Vec::new())
            .is_none()
    );
    let mut out = HeaderMap::new();
    server.inject(&mut out);
    assert!(
        out["traceparent"]
            .to_str()
            .unwrap()
            .starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-")
    );
    assert!(out["traceparent"].to_str().unwrap().ends_with("-00"));
    server.end();
    assert!(exporter.get_finished_spans().unwrap().is_empty());
}
