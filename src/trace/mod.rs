//! A request's trace: the span the gateway records for it and the spans
//! under it, as OpenTelemetry spans built explicitly from their parent
//! (no thread-local "current span": a request moves between tasks and
//! ends when its reply body does, not when a future returns). The
//! observation holds the request's [`Trace`]; the upstream opens one
//! client span per attempt from it and passes the attempt's context on
//! in `traceparent`, so the backend's own spans join the same trace.
//!
//! Spans are only made for a trace that is sampled: an unsampled request
//! carries its context (to pass it on) and nothing else. Where the spans
//! go is `crate::otel`'s business; this module never exports, never
//! blocks and never fails a request.

mod attribute;
mod propagate;

use std::borrow::Cow;
use std::time::SystemTime;

use http::{HeaderMap, HeaderValue};
use opentelemetry::trace::{
    Span as _, SpanBuilder, SpanKind, Status, TraceContextExt, TraceId, Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;

pub(crate) use attribute::*;
pub(crate) use opentelemetry::KeyValue as Attribute;
pub(crate) use opentelemetry::trace::SpanKind as Kind;
pub(crate) use propagate::{Parent, inject, parent};

/// One span in flight and what makes its children: cheap to clone (the
/// span is shared; ending it through any clone ends it).
#[derive(Clone)]
pub struct Trace {
    cx: Context,
    tracer: SdkTracer,
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sc = self.cx.span().span_context().clone();
        f.debug_struct("Trace")
            .field("trace_id", &sc.trace_id())
            .field("span_id", &sc.span_id())
            .field("sampled", &sc.is_sampled())
            .finish()
    }
}

impl Trace {
    /// The server span of a request whose caller's context is `parent`:
    /// the sampler decides (following the parent when it is told to).
    pub fn server(tracer: &SdkTracer, parent: Parent, name: &'static str) -> Trace {
        let builder = SpanBuilder::from_name(name).with_kind(SpanKind::Server);
        let span = tracer.build_with_context(builder, &parent);
        Trace {
            cx: parent.with_span(span),
            tracer: tracer.clone(),
        }
    }

    /// Whether this trace is recorded (and exported).
    pub fn sampled(&self) -> bool {
        self.cx.span().span_context().is_sampled()
    }

    pub fn trace_id(&self) -> TraceId {
        self.cx.span().span_context().trace_id()
    }

    /// The trace id as 32 lower-case hex digits: the request id of a
    /// sampled request.
    pub fn request_id(&self) -> HeaderValue {
        let text = format!("{:032x}", self.trace_id());
        HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static("0"))
    }

    /// A child span started now, when this trace is sampled.
    pub fn child(
        &self,
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
    ) -> Option<Trace> {
        if !self.sampled() {
            return None;
        }
        let builder = SpanBuilder::from_name(name)
            .with_kind(kind)
            .with_attributes(attributes);
        let span = self.tracer.build_with_context(builder, &self.cx);
        Some(Trace {
            cx: self.cx.with_span(span),
            tracer: self.tracer.clone(),
        })
    }

    /// A child span that ran from `start` to `end` (work timed as it
    /// happened, recorded once done), when this trace is sampled.
    pub fn interval(
        &self,
        name: &'static str,
        start: SystemTime,
        end: SystemTime,
        attributes: Vec<KeyValue>,
    ) {
        if !self.sampled() {
            return;
        }
        let builder = SpanBuilder::from_name(name)
            .with_kind(SpanKind::Internal)
            .with_start_time(start)
            .with_attributes(attributes);
        let mut span = self.tracer.build_with_context(builder, &self.cx);
        span.end_with_timestamp(end);
    }

    /// Writes this span's context as `traceparent` (and `tracestate`) into
    /// `headers`, replacing the caller's.
    pub fn inject(&self, headers: &mut HeaderMap) {
        inject(&self.cx, headers);
    }

    pub fn set_attributes(&self, attributes: impl IntoIterator<Item = KeyValue>) {
        if self.sampled() {
            self.cx.span().set_attributes(attributes);
        }
    }

    pub fn rename(&self, name: impl Into<Cow<'static, str>>) {
        if self.sampled() {
            self.cx.span().update_name(name);
        }
    }

    /// Marks the span failed, with `message`.
    pub fn fail(&self, message: impl Into<Cow<'static, str>>) {
        if self.sampled() {
            self.cx.span().set_status(Status::error(message));
        }
    }

    /// Ends the span now (later calls do nothing).
    pub fn end(&self) {
        self.cx.span().end();
    }
}

#[cfg(test)]
mod tests;
