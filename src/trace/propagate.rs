//! Trace context in and out of HTTP headers (gRPC metadata arrives as the
//! same `http::HeaderMap`): W3C `traceparent` / `tracestate` read with the
//! SDK's propagator, and AWS's `X-Amzn-Trace-Id` (what SageMaker and ALB
//! clients carry) mapped onto the same ids when there is no
//! `traceparent`. Malformed headers are ignored: a request never fails
//! over its trace context.

use http::HeaderMap;
use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use opentelemetry_sdk::propagation::TraceContextPropagator;

/// AWS X-Ray's trace header.
pub(super) const AMZN_TRACE_ID: &str = "x-amzn-trace-id";

/// The longest `X-Amzn-Trace-Id` value read (X-Ray's own are about 80
/// bytes; ALB may append a few fields).
const MAX_AMZN_LEN: usize = 256;

/// What a request says about the trace it belongs to: the caller's span
/// as a remote parent, or no span (a new trace).
pub(crate) type Parent = Context;

/// The parent context `headers` carry.
pub(crate) fn parent(headers: &HeaderMap) -> Parent {
    if headers.contains_key("traceparent") {
        let cx = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
        if cx.span().span_context().is_valid() {
            return cx;
        }
    }
    headers
        .get(AMZN_TRACE_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.len() <= MAX_AMZN_LEN)
        .map_or_else(Context::new, amzn)
}

/// Writes `cx`'s span as `traceparent` / `tracestate`, replacing what was
/// there.
pub(crate) fn inject(cx: &Context, headers: &mut HeaderMap) {
    headers.remove("tracestate");
    TraceContextPropagator::new().inject_context(cx, &mut HeaderInjector(headers));
    // The propagator writes an empty `tracestate` for an empty state.
    if headers.get("tracestate").is_some_and(|v| v.is_empty()) {
        headers.remove("tracestate");
    }
}

/// `Root=1-{8 hex time}-{24 hex};Parent={16 hex};Sampled={0|1|?}`: the
/// root's 32 hex digits are the trace id (as X-Ray's OpenTelemetry
/// propagators map it), `Parent` the remote parent span, `Sampled=1` its
/// decision to record (`0`, `?` or none: not recorded upstream, so not
/// here either under parent-based sampling). Without a `Parent` (a load
/// balancer's `Root` alone) there is no span to join: a new trace.
fn amzn(value: &str) -> Context {
    let (mut root, mut parent, mut sampled) = (None, None, false);
    for field in value.split(';') {
        match field.trim().split_once('=') {
            Some(("Root", v)) => root = xray_trace_id(v),
            Some(("Parent", v)) if v.len() == 16 => parent = SpanId::from_hex(v).ok(),
            Some(("Sampled", v)) => sampled = v == "1",
            _ => {}
        }
    }
    match (root, parent) {
        (Some(trace_id), Some(span_id)) if span_id != SpanId::INVALID => {
            let flags = if sampled {
                TraceFlags::SAMPLED
            } else {
                TraceFlags::default()
            };
            let sc = SpanContext::new(trace_id, span_id, flags, true, TraceState::default());
            Context::new().with_remote_span_context(sc)
        }
        _ => Context::new(),
    }
}

/// `1-5759e988-bd862e3fe1be46a994272793` → the trace id
/// `5759e988bd862e3fe1be46a994272793`.
fn xray_trace_id(v: &str) -> Option<TraceId> {
    let mut parts = v.split('-');
    let (Some("1"), Some(time), Some(id), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    if time.len() != 8
        || id.len() != 24
        || !(time.bytes().chain(id.bytes())).all(|b| b.is_ascii_hexdigit())
    {
        return None;
    }
    let mut hex = String::with_capacity(32);
    hex.push_str(time);
    hex.push_str(id);
    TraceId::from_hex(&hex.to_ascii_lowercase())
        .ok()
        .filter(|t| *t != TraceId::INVALID)
}
