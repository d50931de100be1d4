//! Stage 2 for one `[[routes]]` entry and its tensor rules.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Check;
use crate::config::raw::{Name, RawRoute, RawTensorRule, Table};
use crate::config::{Backend, Limits, Route, Weighted};
use crate::rules::{RouteRules, ShapeRule, TensorRule};

/// Whether a frontend map on a route may name `model`: one of the route's
/// models, or anything on the default route.
pub(super) fn may_name(models: &[String], default: bool, model: &str) -> bool {
    default || models.iter().any(|m| m == model)
}

/// The backend that takes the most of a split (the first of equals).
fn primary(split: &[Weighted]) -> Arc<Backend> {
    let mut best = &split[0];
    for w in split {
        if w.weight > best.weight {
            best = w;
        }
    }
    best.backend.clone()
}

impl Check<'_> {
    /// Builds route `i`, reporting every problem in it; `None` when it has
    /// one that leaves no route (no name, no usable backend).
    pub(super) fn route(
        &mut self,
        i: usize,
        raw: RawRoute,
        backends: &BTreeMap<String, Arc<Backend>>,
        defaults: Limits,
    ) -> Option<Route> {
        let key = format!("routes[{}]", self.stage1.original("routes", i));
        let name = raw.name.map(|n| n.0);
        if name.is_none() {
            self.error(format!("{key}.name"), "required");
        }
        let models: Vec<String> = raw.models.into_iter().map(|m| m.0).collect();
        if models.is_empty() && !raw.default {
            let message = "a route needs `models` or `default = true`";
            self.error(format!("{key}.models"), message);
        }
        let split = self.split(&key, raw.backend, raw.backends, backends);
        let shadow = raw
            .shadow
            .and_then(|Table(s)| self.shadow(&key, s, split.as_deref(), backends));
        let limits = self.limits(&format!("{key}.limits"), defaults, raw.limits.0);
        let inputs = self.tensor_rules(&format!("{key}.inputs"), raw.inputs);
        let outputs = self.tensor_rules(&format!("{key}.outputs"), raw.outputs);
        let decthings = self.decthings(&key, raw.decthings.0, &models, raw.default);
        let sagemaker = self.sagemaker(&key, raw.sagemaker.0, &models, raw.default);
        let auth = self.auth(&key, raw.auth.map(|t| t.0), sagemaker.enabled);
        let rate_limit = self.rate_limit(&key, raw.rate_limit.map(|t| t.0), auth.is_some());
        let rules = RouteRules {
            allow_unknown_inputs: raw.allow_unknown_inputs.unwrap_or(inputs.is_empty()),
            inputs,
            outputs,
        };
        self.sagemaker_against_rules(&key, &sagemaker, &rules);
        let label = name.as_ref().map_or(key.clone(), |n| format!("{n:?}"));
        let seen = super::unique::Seen {
            key: &key,
            label: &label,
            name: name.as_deref(),
            models: &models,
            default: raw.default,
            decthings: &decthings,
            sagemaker: &sagemaker,
        };
        self.errors.extend(self.unique.add(seen));
        Some(Route {
            name: name?,
            models,
            default: raw.default,
            backend: primary(split.as_deref()?),
            split: split?,
            allow_backend_header: raw.allow_backend_header,
            shadow,
            retry_infer: raw.retry_infer,
            backend_format: raw.backend_format.0,
            limits,
            rules,
            decthings,
            sagemaker,
            allow_control: raw.allow_control.into_iter().map(|k| k.0).collect(),
            auth,
            rate_limit,
        })
    }

    /// The backend `name` at `key` refers to.
    pub(super) fn backend_ref(
        &mut self,
        key: &str,
        name: Option<Name>,
        backends: &BTreeMap<String, Arc<Backend>>,
    ) -> Option<Arc<Backend>> {
        let key = key.to_owned();
        let Some(Name(name)) = name else {
            self.error(key, "required");
            return None;
        };
        let found = backends.get(&name).cloned();
        // A backend declared with problems of its own: those are reported
        // at its keys, and the reference is right.
        if found.is_none() && !self.declared.contains(&name) {
            let defined: Vec<&str> = backends.keys().map(String::as_str).collect();
            let message = match defined.as_slice() {
                [] => format!("unknown backend {name:?} (no usable backend is defined)"),
                _ => format!("unknown backend {name:?} (defined: {})", defined.join(", ")),
            };
            self.error(key, message);
        }
        found
    }

    fn tensor_rules(
        &mut self,
        key: &str,
        raw: BTreeMap<String, Table<RawTensorRule>>,
    ) -> BTreeMap<String, TensorRule> {
        let mut out = BTreeMap::new();
        for (name, Table(rule)) in raw {
            let mut allowed = None;
            let mut decthings = Vec::new();
            if let Some(names) = rule.allowed_types {
                if names.is_empty() {
                    let message = "lists no data type (omit the key to allow any)";
                    self.error(format!("{key}.{name}.allowed_types"), message);
                }
                let mut types = Vec::new();
                for t in names {
                    let (v2, dt) = t.0;
                    if !types.contains(&v2) {
                        types.push(v2);
                    }
                    if let Some(dt) = dt.filter(|d| !decthings.contains(d)) {
                        decthings.push(dt);
                    }
                }
                allowed = Some(types);
            }
            let shape = rule
                .shape
                .map(|dims| ShapeRule(dims.into_iter().map(|d| d.0).collect()));
            let rule = TensorRule {
                shape,
                allowed_types: allowed,
                decthings_types: (!decthings.is_empty()).then_some(decthings),
                required: rule.required.unwrap_or(true),
            };
            out.insert(name, rule);
        }
        out
    }
}
