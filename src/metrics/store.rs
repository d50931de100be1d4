//! The series of the shared rate-limit store (`[rate_limit_store]`): whether
//! it answers, how long its decisions take, its failures, the decisions
//! made without it and by which policy, the local pre-check's refusals, and
//! how many gateways share it.

use prometheus::{Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, Registry};

/// The `kind` values of `tensorgate_rate_limit_store_errors_total`.
pub const STORE_ERROR_KINDS: [&str; 2] = ["timeout", "error"];

/// The `policy` values of `tensorgate_rate_limit_store_fallbacks_total`.
pub const STORE_POLICIES: [&str; 3] = ["allow", "deny", "local"];

/// Decision latency buckets: a Redis next to the gateway answers in tens of
/// microseconds; the timeout is tens of milliseconds.
const DECISION_BUCKETS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
];

/// The metric families; cheap to clone.
#[derive(Clone, Debug)]
pub struct StoreFamilies {
    /// 1 while decisions go to the store, 0 while the policy makes them.
    pub up: IntGauge,
    pub decisions: Histogram,
    pub errors: IntCounterVec,
    pub fallbacks: IntCounterVec,
    pub prechecked: IntCounter,
    pub gateways: IntGauge,
}

impl StoreFamilies {
    pub fn register(r: &Registry) -> prometheus::Result<StoreFamilies> {
        let up = IntGauge::new(
            "tensorgate_rate_limit_store_up",
            "1 while rate-limit decisions go to the shared store; 0 while on_store_error makes them, and without [rate_limit_store].",
        )?;
        r.register(Box::new(up.clone()))?;
        let decisions = Histogram::with_opts(
            HistogramOpts::new(
                "tensorgate_rate_limit_store_decision_seconds",
                "Time of one rate-limit decision in the shared store (one round trip), answered or not.",
            )
            .buckets(DECISION_BUCKETS.to_vec()),
        )?;
        r.register(Box::new(decisions.clone()))?;
        let errors = super::counter(
            r,
            "tensorgate_rate_limit_store_errors_total",
            "Rate-limit decisions the shared store did not give: kind=timeout (no answer within rate_limit_store.timeout) or error (connection or command failed).",
            &["kind"],
        )?;
        let fallbacks = super::counter(
            r,
            "tensorgate_rate_limit_store_fallbacks_total",
            "Rate-limit decisions made without the shared store, by the policy that made them (rate_limit_store.on_store_error).",
            &["policy"],
        )?;
        let prechecked = IntCounter::new(
            "tensorgate_rate_limit_store_prechecked_total",
            "Requests refused by the local copy of a shared bucket without asking the store (the store would have refused them too).",
        )?;
        r.register(Box::new(prechecked.clone()))?;
        let gateways = IntGauge::new(
            "tensorgate_rate_limit_store_gateways",
            "Gateways that announced themselves in the shared store within three probe intervals (what on_store_error = \"local\" divides limits by).",
        )?;
        r.register(Box::new(gateways.clone()))?;
        Ok(StoreFamilies {
            up,
            decisions,
            errors,
            fallbacks,
            prechecked,
            gateways,
        })
    }

    /// The zero series of every label value.
    pub fn init(&self) {
        for kind in STORE_ERROR_KINDS {
            self.errors.with_label_values(&[kind]);
        }
        for policy in STORE_POLICIES {
            self.fallbacks.with_label_values(&[policy]);
        }
    }
}
