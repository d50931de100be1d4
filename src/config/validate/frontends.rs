//! Stage 2 for `[routes.decthings]` and `[routes.sagemaker]`: the checks
//! inside one route, including a SageMaker mapping the route's own input
//! rules would refuse on every request. Uniqueness across routes is
//! `unique`'s.

use std::collections::BTreeMap;

use super::Check;
use super::route::may_name;
use crate::config::raw::{RawDecthings, RawOutput, RawSageMaker, Table};
use crate::config::{DecthingsRoute, SageMakerOutput, SageMakerRoute};
use crate::rules::RouteRules;

impl Check<'_> {
    pub(super) fn decthings(
        &mut self,
        route: &str,
        raw: RawDecthings,
        models: &[String],
        default: bool,
    ) -> DecthingsRoute {
        let key = format!("{route}.decthings");
        let mut d = DecthingsRoute::default();
        if let Some(enabled) = raw.enabled {
            d.enabled = enabled;
        }
        if let Some(prefix) = raw.prefix {
            d.prefix = prefix.0;
        }
        if let Some(multiple) = raw.multiple_tensors {
            d.multiple_tensors = multiple.0;
        }
        d.unstack_outputs = raw.unstack_outputs.into_iter().map(|n| n.0).collect();
        let ids = raw.model_ids.into_iter().map(|(k, v)| (k.0, v.0));
        d.model_ids = self.model_map(&format!("{key}.model_ids"), ids, models, default);
        d
    }

    pub(super) fn sagemaker(
        &mut self,
        route: &str,
        raw: RawSageMaker,
        models: &[String],
        default: bool,
    ) -> SageMakerRoute {
        let key = format!("{route}.sagemaker");
        let mut s = SageMakerRoute::default();
        if let Some(enabled) = raw.enabled {
            s.enabled = enabled;
        }
        if let Some(model) = raw.default_model {
            self.check_model(&format!("{key}.default_model"), &model.0, models, default);
            s.default_model = Some(model.0);
        }
        s.input = raw.input.map(|n| n.0);
        s.datatype = raw.datatype.map(|t| t.0);
        super::apply!(s, raw; batch_records, max_batches_in_flight);
        let endpoints = raw.endpoints.into_iter().map(|(k, v)| (k.0, v.0));
        s.endpoints = self.model_map(&format!("{key}.endpoints"), endpoints, models, default);
        s.outputs = self.outputs(&format!("{key}.outputs"), raw.outputs);
        s
    }

    /// A name → model map whose models must be the route's.
    fn model_map(
        &mut self,
        key: &str,
        entries: impl Iterator<Item = (String, String)>,
        models: &[String],
        default: bool,
    ) -> BTreeMap<String, String> {
        entries
            .inspect(|(name, model)| {
                self.check_model(&format!("{key}.{name}"), model, models, default)
            })
            .collect()
    }

    fn check_model(&mut self, key: &str, model: &str, models: &[String], default: bool) {
        if !may_name(models, default, model) {
            let message = format!(
                "model {model:?} is not one of this route's models ({})",
                models.join(", ")
            );
            self.error(key, message);
        }
    }

    /// `[[routes.sagemaker.outputs]]`: names required, no name twice, no
    /// reply name twice.
    fn outputs(&mut self, key: &str, raw: Vec<Table<RawOutput>>) -> Vec<SageMakerOutput> {
        let mut out: Vec<(String, SageMakerOutput)> = Vec::new();
        for (i, Table(o)) in raw.into_iter().enumerate() {
            let item = format!("{key}[{}]", self.stage1.original(key, i));
            let Some(name) = o.name else {
                self.error(format!("{item}.name"), "required");
                continue;
            };
            let output = SageMakerOutput {
                name: name.0,
                rename: o.rename.map(|r| r.0),
            };
            if let Some((at, _)) = out.iter().find(|(_, p)| p.name == output.name) {
                let message = format!("output {:?} is already listed at {at}", output.name);
                self.error(format!("{item}.name"), message);
            } else if let Some((at, _)) = out
                .iter()
                .find(|(_, p)| p.reply_name() == output.reply_name())
            {
                let field = if output.rename.is_some() {
                    "rename"
                } else {
                    "name"
                };
                let message = format!(
                    "reply name {:?} is already used by {at}",
                    output.reply_name()
                );
                self.error(format!("{item}.{field}"), message);
            }
            out.push((item, output));
        }
        out.into_iter().map(|(_, o)| o).collect()
    }
}

impl Check<'_> {
    /// A SageMaker mapping the route's own input rules refuse on every
    /// request. The frontend sends exactly one input, `[records,
    /// features]`, named `input` with `datatype`: a route that requires
    /// another input, refuses `input` as unknown, allows it no such type or
    /// shapes it with another rank answers every SageMaker call 400, and
    /// `check-config` says so instead of `ok`. Checked only where the route
    /// maps something for SageMaker (`input`, `datatype`, `default_model`
    /// or `endpoints`): a route that merely leaves the frontend on by
    /// default maps nothing.
    pub(super) fn sagemaker_against_rules(
        &mut self,
        route: &str,
        s: &SageMakerRoute,
        rules: &RouteRules,
    ) {
        let mapped = s.input.is_some()
            || s.datatype.is_some()
            || s.default_model.is_some()
            || !s.endpoints.is_empty();
        if !s.enabled || !mapped {
            return;
        }
        let key = format!("{route}.sagemaker");
        let refused = "every SageMaker request would be refused (400)";
        let others: Vec<&str> = rules
            .inputs
            .iter()
            .filter(|(name, rule)| rule.required && Some(name.as_str()) != s.input.as_deref())
            .map(|(name, _)| name.as_str())
            .collect();
        let Some(input) = &s.input else {
            if others.len() > 1 {
                let message = format!(
                    "the route requires inputs {} ({route}.inputs), but a SageMaker request \
                     carries one input: {refused}; set enabled = false or map it to a route \
                     with one input",
                    others.join(", ")
                );
                self.error(key, message);
            }
            return;
        };
        if !others.is_empty() {
            let message = format!(
                "a SageMaker request carries only input {input:?}, but the route also requires \
                 {} ({route}.inputs): {refused}",
                others.join(", ")
            );
            self.error(format!("{key}.input"), message);
        }
        let Some(rule) = rules.inputs.get(input) else {
            if !rules.allow_unknown_inputs && !rules.inputs.is_empty() {
                let known: Vec<&str> = rules.inputs.keys().map(String::as_str).collect();
                let message = format!(
                    "input {input:?} is not one of the route's inputs ({}): {refused}",
                    known.join(", ")
                );
                self.error(format!("{key}.input"), message);
            }
            return;
        };
        if let (Some(dt), Some(allowed)) = (s.datatype, &rule.allowed_types)
            && !allowed.contains(&dt)
        {
            let names: Vec<&str> = allowed.iter().map(|t| t.v2_name()).collect();
            let message = format!(
                "{} is not among the types {route}.inputs.{input}.allowed_types allows ({}): \
                 {refused}",
                dt.v2_name(),
                names.join(", ")
            );
            self.error(format!("{key}.datatype"), message);
        }
        if let Some(shape) = &rule.shape
            && shape.0.len() != 2
        {
            let message = format!(
                "SageMaker records are a [records, features] tensor, and \
                 {route}.inputs.{input}.shape is {shape}: {refused}"
            );
            self.error(format!("{key}.input"), message);
        }
    }
}
