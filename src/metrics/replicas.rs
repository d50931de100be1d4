//! The series of replicas, retries, DNS and shadow traffic. A replica's
//! series are made when the replica is and removed when the last holder of
//! them goes (a replica that left DNS, an upstream replaced on reload), so
//! the `replica` label set stays what the configuration and DNS bound it
//! to.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use prometheus::{
    Gauge, GaugeVec, Histogram, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec,
    Opts, Registry,
};

use super::{LATENCY_BUCKETS, REPLICA_ERROR_KINDS};
use crate::error::UpstreamKind;

/// The `state` label values of `tensorgate_replica_state`, in
/// [`ReplicaState`] order.
pub const REPLICA_STATES: [&str; 3] = ["healthy", "unhealthy", "ejected"];

/// What a replica is doing now: taking traffic, failing its active health
/// checks, or ejected after consecutive failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaState {
    Healthy = 0,
    Unhealthy = 1,
    Ejected = 2,
}

/// The `outcome` values of `tensorgate_retries_total`.
pub const RETRY_OUTCOMES: [&str; 2] = ["retried", "budget_exhausted"];

/// The `outcome` values of `tensorgate_shadow_requests_total`.
pub const SHADOW_OUTCOMES: [&str; 4] = ["ok", "error_status", "failed", "dropped"];

/// The metric families; cheap to clone.
#[derive(Clone, Debug)]
pub struct ReplicaFamilies {
    pub in_flight: IntGaugeVec,
    pub requests: IntCounterVec,
    pub errors: IntCounterVec,
    pub duration: HistogramVec,
    pub state: IntGaugeVec,
    pub ejections: IntCounterVec,
    pub models_not_ready: IntGaugeVec,
    pub replicas: IntGaugeVec,
    pub retries: IntCounterVec,
    pub dns: IntCounterVec,
    pub shadow: IntCounterVec,
    pub shadow_duration: HistogramVec,
    pub queue_pending: IntGaugeVec,
    pub queue_waiting: GaugeVec,
    pub scrapes: IntCounterVec,
    /// Holders of each replica's series: (backend, replica) → count.
    holders: Arc<Mutex<HashMap<(String, String), usize>>>,
}

fn gauge(r: &Registry, name: &str, help: &str, labels: &[&str]) -> prometheus::Result<IntGaugeVec> {
    let g = IntGaugeVec::new(Opts::new(name, help), labels)?;
    r.register(Box::new(g.clone()))?;
    Ok(g)
}

impl ReplicaFamilies {
    pub fn register(r: &Registry) -> prometheus::Result<ReplicaFamilies> {
        let counter =
            |name: &str, help: &str, labels: &[&str]| super::counter(r, name, help, labels);
        let histogram = |name: &str, help: &str, labels: &[&str]| {
            super::histogram(r, name, help, labels, LATENCY_BUCKETS)
        };
        let replica = &["backend", "replica"];
        Ok(ReplicaFamilies {
            in_flight: gauge(
                r,
                "tensorgate_replica_in_flight",
                "Requests sent to a replica whose reply body has not ended (what balancing compares).",
                replica,
            )?,
            requests: counter(
                "tensorgate_replica_requests_total",
                "Requests sent to a replica (each attempt, retries included).",
                replica,
            )?,
            errors: counter(
                "tensorgate_replica_errors_total",
                "Failed exchanges with a replica: kind=refused, timeout, reset, invalid, saturated or 5xx.",
                &["backend", "replica", "kind"],
            )?,
            duration: histogram(
                "tensorgate_replica_request_duration_seconds",
                "Time from sending a request to a replica to the end of its reply body.",
                replica,
            )?,
            state: gauge(
                r,
                "tensorgate_replica_state",
                "1 for the replica's current state: healthy (takes traffic), unhealthy (failing active health checks) or ejected (after consecutive failures, for a backoff).",
                &["backend", "replica", "state"],
            )?,
            ejections: counter(
                "tensorgate_replica_ejections_total",
                "Times a replica was ejected after consecutive failures.",
                replica,
            )?,
            models_not_ready: gauge(
                r,
                "tensorgate_replica_models_not_ready",
                "Checked models the replica reports not ready (it gets no requests for them).",
                replica,
            )?,
            replicas: gauge(
                r,
                "tensorgate_backend_replicas",
                "Replicas a backend has (configured, or resolved from DNS).",
                &["backend"],
            )?,
            retries: counter(
                "tensorgate_retries_total",
                "Requests sent again after a failure (outcome=retried), or not, because the retry budget was spent (outcome=budget_exhausted).",
                &["backend", "outcome"],
            )?,
            dns: counter(
                "tensorgate_dns_resolutions_total",
                "DNS resolutions of a backend's name: outcome=ok or failed (the last replicas are kept).",
                &["backend", "outcome"],
            )?,
            shadow: counter(
                "tensorgate_shadow_requests_total",
                "Requests mirrored to a route's shadow backend: outcome=ok (2xx), error_status, failed (no reply) or dropped (not sent: shadow concurrency or gateway load).",
                &["route", "backend", "outcome"],
            )?,
            shadow_duration: histogram(
                "tensorgate_shadow_duration_seconds",
                "Time from sending a mirrored request to the end of the shadow backend's reply.",
                &["route", "backend"],
            )?,
            queue_pending: gauge(
                r,
                "tensorgate_replica_queue_pending",
                "Requests pending in the replica's own queue, all models, as its metrics endpoint said at the last scrape (backends with metrics_url).",
                replica,
            )?,
            queue_waiting: {
                let g = GaugeVec::new(
                    Opts::new(
                        "tensorgate_replica_queue_waiting",
                        "Requests the replica picker counts as waiting in the replica's own queue (all models; the larger of the pending count and queued time per compute time), 0 once the last scrape is stale (backends with metrics_url).",
                    ),
                    replica,
                )?;
                r.register(Box::new(g.clone()))?;
                g
            },
            scrapes: counter(
                "tensorgate_replica_metrics_scrapes_total",
                "Scrapes of a replica's metrics endpoint (backends with metrics_url): result=ok or failed (no answer within metrics_timeout, not 200, or too large).",
                &["backend", "replica", "result"],
            )?,
            holders: Arc::default(),
        })
    }

    /// The series of one replica, made now (zero-valued) and kept until
    /// the last [`ReplicaSeries`] for it is dropped.
    pub fn replica(&self, backend: &str, replica: &str) -> ReplicaSeries {
        let key = (backend.to_owned(), replica.to_owned());
        *self
            .holders
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(key.clone())
            .or_default() += 1;
        let l = [backend, replica];
        let series = ReplicaSeries {
            in_flight: self.in_flight.with_label_values(&l),
            requests: self.requests.with_label_values(&l),
            errors: REPLICA_ERROR_KINDS.map(|k| {
                self.errors
                    .with_label_values(&[backend, replica, k.label()])
            }),
            duration: self.duration.with_label_values(&l),
            state: REPLICA_STATES.map(|s| self.state.with_label_values(&[backend, replica, s])),
            ejections: self.ejections.with_label_values(&l),
            models_not_ready: self.models_not_ready.with_label_values(&l),
            queue: OnceLock::new(),
            families: self.clone(),
            key,
        };
        series.set_state(ReplicaState::Healthy);
        series
    }

    /// Zero-valued retry series of a backend.
    pub fn init_backend(&self, backend: &str) {
        for outcome in RETRY_OUTCOMES {
            self.retries.with_label_values(&[backend, outcome]);
        }
    }

    fn release(&self, key: &(String, String)) {
        let mut holders = self.holders.lock().unwrap_or_else(|p| p.into_inner());
        let Some(n) = holders.get_mut(key) else {
            return;
        };
        *n -= 1;
        if *n > 0 {
            return;
        }
        holders.remove(key);
        let l = [key.0.as_str(), key.1.as_str()];
        let _ = self.in_flight.remove_label_values(&l);
        let _ = self.requests.remove_label_values(&l);
        let _ = self.duration.remove_label_values(&l);
        let _ = self.ejections.remove_label_values(&l);
        let _ = self.models_not_ready.remove_label_values(&l);
        let _ = self.queue_pending.remove_label_values(&l);
        let _ = self.queue_waiting.remove_label_values(&l);
        for result in SCRAPE_RESULTS {
            let _ = self.scrapes.remove_label_values(&[l[0], l[1], result]);
        }
        for k in REPLICA_ERROR_KINDS {
            let _ = self.errors.remove_label_values(&[l[0], l[1], k.label()]);
        }
        for s in REPLICA_STATES {
            let _ = self.state.remove_label_values(&[l[0], l[1], s]);
        }
    }
}

/// One replica's resolved series.
#[derive(Debug)]
pub struct ReplicaSeries {
    pub in_flight: IntGauge,
    pub requests: IntCounter,
    /// In [`REPLICA_ERROR_KINDS`] order.
    pub errors: [IntCounter; REPLICA_ERROR_KINDS.len()],
    pub duration: Histogram,
    state: [IntGauge; REPLICA_STATES.len()],
    pub ejections: IntCounter,
    pub models_not_ready: IntGauge,
    /// Made at the first scrape (only backends with `metrics_url` have
    /// these series).
    queue: OnceLock<QueueSeries>,
    families: ReplicaFamilies,
    key: (String, String),
}

/// The `result` values of `tensorgate_replica_metrics_scrapes_total`.
pub(super) const SCRAPE_RESULTS: [&str; 2] = ["ok", "failed"];

/// A replica's queue series.
#[derive(Debug)]
struct QueueSeries {
    pending: IntGauge,
    waiting: Gauge,
    scrapes: [IntCounter; 2],
}

impl ReplicaSeries {
    fn queue(&self) -> &QueueSeries {
        self.queue.get_or_init(|| {
            let (b, r) = (self.key.0.as_str(), self.key.1.as_str());
            let f = &self.families;
            QueueSeries {
                pending: f.queue_pending.with_label_values(&[b, r]),
                waiting: f.queue_waiting.with_label_values(&[b, r]),
                scrapes: SCRAPE_RESULTS.map(|res| f.scrapes.with_label_values(&[b, r, res])),
            }
        })
    }

    /// Records a scrape: whether it worked, and the thousandths of a
    /// request the picker now counts as waiting (all models).
    pub fn scraped(&self, ok: bool, waiting_milli: u64) {
        let q = self.queue();
        q.scrapes[usize::from(!ok)].inc();
        q.waiting.set(waiting_milli as f64 / 1000.0);
    }

    /// Records the pending count the last page gave (all models).
    pub fn queue_pending(&self, pending: i64) {
        self.queue().pending.set(pending);
    }

    /// Counts a failed exchange of `kind` (one of [`REPLICA_ERROR_KINDS`]).
    pub fn error(&self, kind: UpstreamKind) {
        if let Some(i) = REPLICA_ERROR_KINDS.iter().position(|k| *k == kind) {
            self.errors[i].inc();
        }
    }

    /// Shows `state` as the replica's one current state.
    pub fn set_state(&self, state: ReplicaState) {
        for (i, g) in self.state.iter().enumerate() {
            g.set(i64::from(i == state as usize));
        }
    }
}

impl Drop for ReplicaSeries {
    fn drop(&mut self) {
        self.families.release(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use prometheus::core::Collector;

    use super::*;

    #[test]
    fn series_go_with_their_last_holder() {
        let m = ReplicaFamilies::register(&Registry::new()).unwrap();
        let a = m.replica("b", "http://a:1");
        let again = m.replica("b", "http://a:1");
        a.requests.inc();
        a.set_state(ReplicaState::Ejected);
        let text = |m: &ReplicaFamilies| {
            let mut families = m.requests.collect();
            families.extend(m.state.collect());
            format!("{families:?}")
        };
        drop(a);
        assert!(text(&m).contains("http://a:1"), "a holder is left");
        assert_eq!(again.requests.get(), 1, "the same series");
        drop(again);
        assert!(!text(&m).contains("http://a:1"), "removed with the last");
    }

    #[test]
    fn one_state_at_a_time() {
        let m = ReplicaFamilies::register(&Registry::new()).unwrap();
        let s = m.replica("b", "r");
        let values = || REPLICA_STATES.map(|st| m.state.with_label_values(&["b", "r", st]).get());
        assert_eq!(values(), [1, 0, 0]);
        s.set_state(ReplicaState::Unhealthy);
        assert_eq!(values(), [0, 1, 0]);
        s.set_state(ReplicaState::Ejected);
        assert_eq!(values(), [0, 0, 1]);
    }
}
