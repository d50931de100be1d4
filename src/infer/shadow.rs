//! Shadow traffic: every infer a route sends is also sent to its shadow
//! backend (a new Triton version, say) and the reply read and thrown away,
//! so the shadow can be compared on live traffic through its own metrics
//! (`tensorgate_shadow_requests_total`, `tensorgate_shadow_duration_seconds`,
//! and its replicas' series). The copy is made from the backend request the
//! core already holds (`Bytes` chunks: cloning them copies no data) and sent
//! by its own task once the real request has its reply head, so it never
//! delays the real request. At most `max_in_flight` copies are in flight;
//! past that, and whenever the gateway is close to shedding, copies are
//! dropped (and counted) rather than queued. A shadow never changes what
//! the client gets.

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::HeaderValue;
use http_body_util::BodyExt;
use prometheus::{Histogram, IntCounter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::Shadow;
use crate::guard::admission::Admission;
use crate::metrics::{Metrics, SHADOW_OUTCOMES};
use crate::trace::{self, Attribute, Trace};
use crate::upstream::{OutBody, Outgoing, Upstream, UpstreamError, Watch};

/// The header a shadow copy carries, so the shadow backend's logs can tell.
pub(crate) const SHADOW_HEADER: &str = "x-tensorgate-shadow";

/// A route's shadow. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Mirror {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    upstream: Upstream,
    slots: Arc<Semaphore>,
    admission: Arc<Admission>,
    /// In [`SHADOW_OUTCOMES`] order.
    outcomes: [IntCounter; SHADOW_OUTCOMES.len()],
    duration: Histogram,
}

/// A copy ready to go.
#[derive(Debug)]
pub struct Copy {
    inner: Arc<Inner>,
    out: Outgoing,
    permit: OwnedSemaphorePermit,
    /// What the copy's upstream attempts report to: its own span, not the
    /// client request's (a shadow's stalls are not the client's).
    watch: Option<Arc<dyn Watch>>,
}

/// A copy's own span (a child of the request's, in a sampled trace) and
/// the request id its log lines carry.
#[derive(Debug)]
struct ShadowWatch {
    span: Trace,
    request_id: String,
}

impl Watch for ShadowWatch {
    fn request_id(&self) -> &str {
        &self.request_id
    }

    fn stalled(&self, _e: &UpstreamError) {}

    fn trace(&self) -> Option<&Trace> {
        Some(&self.span)
    }
}

#[derive(Clone, Copy)]
enum Outcome {
    Ok,
    ErrorStatus,
    Failed,
    Dropped,
}

impl Outcome {
    fn label(self) -> &'static str {
        SHADOW_OUTCOMES[self as usize]
    }
}

impl Mirror {
    pub fn new(
        route: &str,
        shadow: &Shadow,
        upstream: Upstream,
        metrics: &Metrics,
        admission: Arc<Admission>,
    ) -> Mirror {
        let f = &metrics.replicas;
        let backend = upstream.name().to_owned();
        Mirror {
            inner: Arc::new(Inner {
                outcomes: SHADOW_OUTCOMES
                    .map(|o| f.shadow.with_label_values(&[route, &backend, o])),
                duration: f.shadow_duration.with_label_values(&[route, &backend]),
                slots: Arc::new(Semaphore::new(shadow.max_in_flight.max(1))),
                upstream,
                admission,
            }),
        }
    }

    /// The shadow backend's name.
    pub fn backend(&self) -> &str {
        self.inner.upstream.name()
    }

    /// Copies dropped since start (the shadow full, or the gateway close
    /// to shedding).
    pub fn dropped(&self) -> u64 {
        self.inner.outcomes[Outcome::Dropped as usize].get()
    }

    /// A copy of `out` (an infer with its body in hand), or `None` when it
    /// is dropped: the shadow has `max_in_flight` copies out, or the
    /// gateway is close to shedding. In a sampled trace the copy gets a
    /// span of its own under `parent` (a dropped one too, ended at once).
    pub fn copy(&self, out: &Outgoing, parent: Option<&Trace>) -> Option<Copy> {
        let OutBody::Chunks(chunks) = &out.body else {
            return None;
        };
        let span = parent.and_then(|p| {
            let attributes = vec![
                Attribute::new(trace::BACKEND, self.inner.upstream.name().to_owned()),
                Attribute::new(trace::MODEL, out.model.clone().unwrap_or_default()),
            ];
            let name = format!("{} {}", trace::SPAN_SHADOW, self.inner.upstream.name());
            p.child(name, trace::Kind::Internal, attributes)
        });
        let permit = match self.inner.slots.clone().try_acquire_owned() {
            Ok(p) if !self.inner.admission.busy() => p,
            _ => {
                self.inner.count(Outcome::Dropped);
                if let Some(span) = span {
                    end_span(&span, Outcome::Dropped);
                }
                return None;
            }
        };
        let watch = span.map(|span| {
            let request_id = out
                .headers
                .get(crate::http::headers::REQUEST_ID)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            Arc::new(ShadowWatch { span, request_id }) as Arc<dyn Watch>
        });
        let mut headers = out.headers.clone();
        headers.insert(SHADOW_HEADER, HeaderValue::from_static("1"));
        Some(Copy {
            inner: self.inner.clone(),
            out: Outgoing {
                method: out.method.clone(),
                path: out.path.clone(),
                headers,
                body: OutBody::Chunks(chunks.clone()),
                model: out.model.clone(),
                idempotent: out.idempotent,
                // A shadow copy has its own time, not the client's.
                deadline: None,
            },
            permit,
            watch,
        })
    }
}

impl Copy {
    /// Sends it on its own task; the reply is read to its end (within the
    /// shadow backend's request timeout) and dropped.
    pub fn start(self) {
        tokio::spawn(async move {
            let Copy {
                inner,
                out,
                permit,
                watch,
            } = self;
            let started = Instant::now();
            let limit = inner.upstream.backend.request_timeout;
            let outcome = match inner.upstream.send(out, watch.clone()).await {
                Ok(resp) => {
                    let status = resp.status();
                    match drain(resp.into_body(), limit).await {
                        true if status.is_success() => Outcome::Ok,
                        true => Outcome::ErrorStatus,
                        false => Outcome::Failed,
                    }
                }
                Err(_) => Outcome::Failed,
            };
            inner.duration.observe(started.elapsed().as_secs_f64());
            inner.count(outcome);
            if let Some(span) = watch.as_ref().and_then(|w| w.trace()) {
                end_span(span, outcome);
            }
            drop(permit);
        });
    }
}

/// Ends a copy's span with its outcome (failed unless it went well).
fn end_span(span: &Trace, outcome: Outcome) {
    span.set_attributes([Attribute::new(trace::SHADOW_OUTCOME, outcome.label())]);
    if !matches!(outcome, Outcome::Ok) {
        span.fail(outcome.label());
    }
    span.end();
}

impl Inner {
    fn count(&self, outcome: Outcome) {
        self.outcomes[outcome as usize].inc();
    }
}

/// Reads a body to its end within `limit`; whether it ended well.
async fn drain<B: http_body::Body + Unpin>(mut body: B, limit: Duration) -> bool {
    let read = async {
        while let Some(frame) = body.frame().await {
            if frame.is_err() {
                return false;
            }
        }
        true
    };
    tokio::time::timeout(limit, read).await.unwrap_or(false)
}
