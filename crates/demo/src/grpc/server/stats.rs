//! `ModelStatistics` for the demo: per model, the inferences, executions,
//! successes and failures with their time, and the last inference's time,
//! counted for `ModelInfer` and `ModelStreamInfer` requests. The other
//! durations Triton reports (queue, compute input / output, cache) are
//! present and zero.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::catalog::{MODELS, Model, VERSION};
use crate::error::DemoError;
use tensorgate_codec::codec::grpc::proto::inference::{
    InferStatistics, ModelStatistics, ModelStatisticsResponse, StatisticDuration,
};

#[derive(Debug, Default)]
struct Counters {
    inferences: AtomicU64,
    executions: AtomicU64,
    success: AtomicU64,
    success_ns: AtomicU64,
    fail: AtomicU64,
    fail_ns: AtomicU64,
    last_ms: AtomicU64,
}

/// Every demo model's counters.
#[derive(Debug)]
pub struct Stats {
    models: Vec<Counters>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            models: MODELS.iter().map(|_| Counters::default()).collect(),
        }
    }
}

impl Stats {
    fn counters(&self, model: &Model) -> Option<&Counters> {
        let i = MODELS.iter().position(|m| m.name == model.name)?;
        self.models.get(i)
    }

    /// One request: `Some(batch)` when it succeeded.
    pub fn record(&self, model: &Model, batch: Option<u64>, took: Duration) {
        let Some(c) = self.counters(model) else {
            return;
        };
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        match batch {
            Some(b) => {
                c.inferences.fetch_add(b, Ordering::Relaxed);
                c.executions.fetch_add(1, Ordering::Relaxed);
                c.success.fetch_add(1, Ordering::Relaxed);
                c.success_ns.fetch_add(ns, Ordering::Relaxed);
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                c.last_ms.store(
                    u64::try_from(now.as_millis()).unwrap_or(0),
                    Ordering::Relaxed,
                );
            }
            None => {
                c.fail.fetch_add(1, Ordering::Relaxed);
                c.fail_ns.fetch_add(ns, Ordering::Relaxed);
            }
        }
    }

    /// The statistics of `name` (every model when empty), with Triton's
    /// errors for an unknown model or version.
    pub fn response(
        &self,
        name: &str,
        version: &str,
    ) -> Result<ModelStatisticsResponse, DemoError> {
        let models: Vec<&Model> = if name.is_empty() {
            MODELS.iter().collect()
        } else {
            let model = MODELS.iter().find(|m| m.name == name).ok_or_else(|| {
                DemoError::Invalid(format!("requested model '{name}' is not available"))
            })?;
            if !version.is_empty() && version != VERSION {
                return Err(DemoError::Invalid(format!(
                    "requested model version is not available for model '{name}'"
                )));
            }
            vec![model]
        };
        let model_stats = models
            .into_iter()
            .filter_map(|m| Some(statistics(m, self.counters(m)?)))
            .collect();
        Ok(ModelStatisticsResponse { model_stats })
    }
}

fn statistics(model: &Model, c: &Counters) -> ModelStatistics {
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let duration = |count: &AtomicU64, ns: &AtomicU64| {
        Some(StatisticDuration {
            count: load(count),
            ns: load(ns),
        })
    };
    let zero = || Some(StatisticDuration::default());
    ModelStatistics {
        name: model.name.to_owned(),
        version: VERSION.to_owned(),
        last_inference: load(&c.last_ms),
        inference_count: load(&c.inferences),
        execution_count: load(&c.executions),
        inference_stats: Some(InferStatistics {
            success: duration(&c.success, &c.success_ns),
            fail: duration(&c.fail, &c.fail_ns),
            queue: zero(),
            compute_input: zero(),
            compute_infer: duration(&c.success, &c.success_ns),
            compute_output: zero(),
            cache_hit: zero(),
            cache_miss: zero(),
        }),
        batch_stats: Vec::new(),
        memory_usage: Vec::new(),
        response_stats: BTreeMap::new(),
    }
}
