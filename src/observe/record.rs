//! What a request leaves behind when it ends, and what its errors count:
//! the request, latency and error series, and its access-log line.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::status::status_code;
use super::{CLIENT_CLOSED, Inner, NO_ROUTE};
use crate::error::{Class, Classify, TensorLabel, UpstreamKind, Violated};
use crate::http::client_body::WireMeter;
use crate::metrics::RouteMetrics;
use crate::trace::{self, Attribute, Trace};
use crate::upstream::{UpstreamError, Watch};

impl Inner {
    pub(super) fn rm(&self) -> &RouteMetrics {
        self.bound.get().map_or(&self.unbound, |b| &b.metrics)
    }

    pub(super) fn route(&self) -> &str {
        self.bound.get().map_or(NO_ROUTE, |b| &b.route.name)
    }

    /// The backend the request went to: the one of its route's split
    /// chosen for it ([`Observation::use_backend`]), else the route's
    /// primary.
    pub(super) fn backend(&self) -> Option<&str> {
        let bound = self.bound.get()?;
        let chosen = self.backend.load(Ordering::Relaxed);
        Some(match bound.route.split.get(chosen) {
            Some(w) => &w.backend.name,
            None => &bound.route.backend.name,
        })
    }

    pub(super) fn upstream_error(&self, kind: UpstreamKind) {
        if let Some(b) = self.backend() {
            self.metrics
                .upstream_errors
                .with_label_values(&[b, kind.label()])
                .inc();
        }
    }

    /// Counts an error of `class` (that broke `violated`, if a rule
    /// refused it).
    pub(super) fn error(&self, class: &Class, violated: Option<Violated>) {
        let m = &self.metrics;
        if let Some(kind) = class.upstream_kind() {
            self.upstream_error(kind);
        }
        match class {
            Class::Unauthenticated(c) => {
                let reason = c.failure().label();
                m.auth_failures
                    .with_label_values(&[self.route(), reason])
                    .inc();
            }
            Class::RateLimited { unit, .. } => {
                let key = self
                    .caller
                    .get()
                    .and_then(|c| c.key.as_deref())
                    .unwrap_or(crate::metrics::NO_KEY);
                m.rate_limited
                    .with_label_values(&[self.route(), key, unit.label()])
                    .inc();
                self.rm().tally.rate_limited.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
        let (Some(bound), Some(v)) = (self.bound.get(), violated) else {
            return;
        };
        let rules = &bound.route.rules;
        let tensor = match &v.tensor {
            TensorLabel::Request => "_request",
            TensorLabel::Named(n)
                if rules.inputs.contains_key(n) || rules.outputs.contains_key(n) =>
            {
                n.as_str()
            }
            TensorLabel::Named(_) => "_unknown",
        };
        m.rule_violations
            .with_label_values(&[&bound.route.name, tensor, v.rule])
            .inc();
    }

    /// Counts and logs the request as ended `now` (once).
    pub(super) fn complete(&self, status: u16, completed: bool, now: Instant) {
        if self.completed.swap(true, Ordering::Relaxed) {
            return;
        }
        if let Ok(mut held) = self.slot.lock() {
            *held = Default::default();
        }
        let m = &self.metrics;
        let elapsed = now.saturating_duration_since(self.started);
        let (route, model) = self.bound.get().map_or((NO_ROUTE, ""), |b| {
            (b.route.name.as_str(), b.model.as_str())
        });
        let rm = self.rm();
        if !self.uncounted.load(Ordering::Relaxed) {
            rm.in_flight.dec();
        }
        let (code, label) = status_code(status);
        rm.count_request(self.kind, code, label);
        rm.duration(self.kind).observe(elapsed.as_secs_f64());
        rm.tally.window.record_ended(now, elapsed, status >= 500);
        let t = &self.totals;
        if let Some(trace) = &self.trace {
            self.end_span(trace, status, completed);
        }
        if !crate::observe::access::enabled() {
            return;
        }
        // What the request sent is logged capped; the rest comes from the
        // configuration or fixed sets.
        let capped = crate::observe::access::capped;
        let request_id = capped(self.request_id.to_str().unwrap_or(""));
        let (path, model) = (capped(&self.path), capped(model));
        let method = capped(self.method.as_str());
        let record = crate::observe::access::Record {
            request_id: &request_id,
            request_id_plain: self.id_made.load(Ordering::Relaxed) && !request_id.is_empty(),
            kind: self.kind.label(),
            method: &method,
            path: &path,
            route,
            model: &model,
            key: self
                .caller
                .get()
                .and_then(|c| c.key.as_deref())
                .unwrap_or(""),
            status,
            completed,
            client_bytes_in: t.client_in.load(Ordering::Relaxed),
            backend_bytes_out: t.backend_out.load(Ordering::Relaxed),
            backend_bytes_in: t.backend_in.load(Ordering::Relaxed),
            client_bytes_out: t.client_out.load(Ordering::Relaxed),
            upstream_first_byte_us: t.first_byte_us.load(Ordering::Relaxed),
            upstream_total_us: t.upstream_total_us.load(Ordering::Relaxed),
            duration_us: u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        };
        match crate::observe::access::write(&record) {
            crate::observe::access::Outcome::Queued => {}
            crate::observe::access::Outcome::Dropped => m.access_log_dropped.inc(),
            crate::observe::access::Outcome::NotInstalled => trace_access(&record),
        }
    }
}

impl Inner {
    /// Ends the request's server span with what the request came to.
    fn end_span(&self, trace: &Trace, status: u16, completed: bool) {
        if !trace.sampled() {
            return;
        }
        let (route, model) = self.bound.get().map_or((NO_ROUTE, ""), |b| {
            (b.route.name.as_str(), b.model.as_str())
        });
        let t = &self.totals;
        let n = |a: &std::sync::atomic::AtomicU64| {
            i64::try_from(a.load(Ordering::Relaxed)).unwrap_or(i64::MAX)
        };
        let mut attributes = vec![
            Attribute::new(trace::HTTP_METHOD, self.method.as_str().to_owned()),
            Attribute::new(trace::URL_PATH, self.path.clone()),
            Attribute::new(trace::HTTP_STATUS, i64::from(status)),
            Attribute::new(trace::ROUTE, route.to_owned()),
            Attribute::new(trace::MODEL, model.to_owned()),
            Attribute::new(trace::FRONTEND, self.kind.label()),
            Attribute::new(trace::COMPLETED, completed),
            Attribute::new(trace::CLIENT_BYTES_IN, n(&t.client_in)),
            Attribute::new(trace::BACKEND_BYTES_OUT, n(&t.backend_out)),
            Attribute::new(trace::BACKEND_BYTES_IN, n(&t.backend_in)),
            Attribute::new(trace::CLIENT_BYTES_OUT, n(&t.client_out)),
            Attribute::new(trace::ELEMENTS_IN, n(&t.elements_in)),
            Attribute::new(trace::ELEMENTS_OUT, n(&t.elements_out)),
        ];
        if let Some(b) = self.backend() {
            attributes.push(Attribute::new(trace::BACKEND, b.to_owned()));
        }
        if let Some(key) = self.caller.get().and_then(|c| c.key.as_deref()) {
            attributes.push(Attribute::new(trace::KEY, key.to_owned()));
        }
        trace.set_attributes(attributes);
        trace.rename(format!("{} {route}", self.method));
        // A server span is failed by a 5xx (the semantic conventions' rule:
        // a 4xx is the client's error, not the server's).
        if status >= 500 {
            trace.set_attributes([Attribute::new(trace::ERROR_TYPE, status.to_string())]);
            let why = self.failure.get().cloned().unwrap_or_default();
            trace.fail(why);
        }
        trace.end();
    }
}

impl WireMeter for Inner {
    fn client_in(&self, n: u64) {
        self.totals.client_in.fetch_add(n, Ordering::Relaxed);
        self.rm().client_in.inc_by(n);
    }
}

impl Watch for Inner {
    fn request_id(&self) -> &str {
        self.request_id.to_str().unwrap_or("")
    }

    fn trace(&self) -> Option<&Trace> {
        self.trace.as_ref()
    }

    fn stalled(&self, e: &UpstreamError) {
        let c = e.classify();
        self.error(&c.class, c.violated);
    }
}

/// The access line as a `tracing` event, when no access-log writer is
/// installed (library users, tests capturing `tracing` output).
fn trace_access(r: &crate::observe::access::Record<'_>) {
    tracing::info!(
        target: "tensorgate::access",
        request_id = r.request_id,
        kind = r.kind,
        method = r.method,
        path = r.path,
        route = r.route,
        model = r.model,
        key = r.key,
        status = r.status,
        completed = r.completed,
        client_bytes_in = r.client_bytes_in,
        backend_bytes_out = r.backend_bytes_out,
        backend_bytes_in = r.backend_bytes_in,
        client_bytes_out = r.client_bytes_out,
        upstream_first_byte_ms = r.upstream_first_byte_us as f64 / 1000.0,
        upstream_total_ms = r.upstream_total_us as f64 / 1000.0,
        duration_ms = r.duration_us as f64 / 1000.0,
        "request"
    );
}

/// A request whose handler was dropped before any response existed (the
/// client went away while its request was read or the backend was waited
/// for) is still counted, logged, and leaves the in-flight gauge, with the
/// status nginx uses for it.
impl Drop for Inner {
    fn drop(&mut self) {
        // Almost every request completed already (its reply ended): no
        // clock reading for those.
        if !*self.completed.get_mut() {
            self.complete(CLIENT_CLOSED, false, Instant::now());
        }
    }
}
