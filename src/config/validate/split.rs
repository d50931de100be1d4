//! Stage 2 for where a route sends traffic: `backend` or weighted
//! `backends` (exactly one), and the `shadow` backend.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Check;
use crate::config::raw::{Name, RawShadow, RawWeighted, Table};
use crate::config::{Backend, Shadow, Weighted};

/// The largest weight: sums of weights stay far from overflowing.
pub(super) const MAX_WEIGHT: u32 = 1_000_000;

impl Check<'_> {
    /// The route's backends with their weights (`backend = "x"` is `x` with
    /// weight 1); `None` when none is usable.
    pub(super) fn split(
        &mut self,
        key: &str,
        backend: Option<Name>,
        weighted: Option<Vec<Table<RawWeighted>>>,
        backends: &BTreeMap<String, Arc<Backend>>,
    ) -> Option<Vec<Weighted>> {
        let Some(list) = weighted else {
            let backend = self.backend_ref(&format!("{key}.backend"), backend, backends)?;
            return Some(vec![Weighted { backend, weight: 1 }]);
        };
        if backend.is_some() {
            let message = "backend and backends are exclusive: set one";
            self.error(format!("{key}.backends"), message);
            return None;
        }
        if list.is_empty() {
            self.error(format!("{key}.backends"), "lists no backend");
            return None;
        }
        let mut out: Vec<Weighted> = Vec::new();
        let mut complete = true;
        for (i, Table(w)) in list.into_iter().enumerate() {
            let at = format!("{key}.backends[{i}]");
            let weight = match w.weight {
                Some(w) if w.0 > MAX_WEIGHT => {
                    let message = format!("at most {MAX_WEIGHT}, got {}", w.0);
                    self.error(format!("{at}.weight"), message);
                    None
                }
                Some(w) => Some(w.0),
                None => {
                    self.error(format!("{at}.weight"), "required");
                    None
                }
            };
            let found = self.backend_ref(&format!("{at}.name"), w.name, backends);
            let (Some(backend), Some(weight)) = (found, weight) else {
                complete = false;
                continue;
            };
            if out.iter().any(|o| o.backend.name == backend.name) {
                let message = format!("backend {:?} is listed twice", backend.name);
                self.error(format!("{at}.name"), message);
                continue;
            }
            out.push(Weighted { backend, weight });
        }
        if complete && out.iter().all(|w| w.weight == 0) {
            self.error(
                format!("{key}.backends"),
                "every weight is 0: no request could go anywhere",
            );
        }
        (complete && !out.is_empty()).then_some(out)
    }

    /// `shadow = { backend, max_in_flight }`: a defined backend that is not
    /// one of the route's own.
    pub(super) fn shadow(
        &mut self,
        key: &str,
        raw: RawShadow,
        split: Option<&[Weighted]>,
        backends: &BTreeMap<String, Arc<Backend>>,
    ) -> Option<Shadow> {
        let key = format!("{key}.shadow");
        let backend = self.backend_ref(&format!("{key}.backend"), raw.backend, backends)?;
        if split.is_some_and(|s| s.iter().any(|w| w.backend.name == backend.name)) {
            let message = format!(
                "backend {:?} already serves this route; a shadow must be another backend",
                backend.name
            );
            self.error(format!("{key}.backend"), message);
        }
        Some(Shadow {
            backend,
            max_in_flight: raw
                .max_in_flight
                .map_or(Shadow::DEFAULT_MAX_IN_FLIGHT, |m| m.0),
        })
    }
}
