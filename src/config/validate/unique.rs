//! What must be unique across routes: route names, models, the default
//! route, Decthings modelIds, SageMaker endpoint names and the one SageMaker
//! default model. Each clash is reported on the later route, naming the
//! earlier one.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use crate::config::{ConfigError, DecthingsRoute, SageMakerRoute};

/// One route as far as uniqueness goes.
pub(super) struct Seen<'a> {
    /// Its key path, `routes[2]`.
    pub key: &'a str,
    /// How messages name it: its quoted name, or its key without one.
    pub label: &'a str,
    pub name: Option<&'a str>,
    pub models: &'a [String],
    pub default: bool,
    pub decthings: &'a DecthingsRoute,
    pub sagemaker: &'a SageMakerRoute,
}

/// The routes seen so far: each unique thing → how to name its route.
#[derive(Debug, Default)]
pub(super) struct Unique {
    names: BTreeMap<String, String>,
    models: BTreeMap<String, String>,
    default: Option<String>,
    model_ids: BTreeMap<String, String>,
    endpoints: BTreeMap<String, String>,
    default_model: Option<String>,
}

/// Records `value` as `owner`'s; on a clash, the earlier owner.
fn claim(map: &mut BTreeMap<String, String>, value: &str, owner: &str) -> Option<String> {
    match map.entry(value.to_owned()) {
        Entry::Occupied(e) => Some(e.get().clone()),
        Entry::Vacant(e) => {
            e.insert(owner.to_owned());
            None
        }
    }
}

impl Unique {
    /// Adds a route; the clashes it brings.
    pub(super) fn add(&mut self, s: Seen<'_>) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        let mut error = |key: String, message: String| errors.push(ConfigError::new(key, message));
        let Seen { key, label, .. } = s;
        if let Some(name) = s.name
            && let Some(prev) = claim(&mut self.names, name, key)
        {
            error(
                format!("{key}.name"),
                format!("route name {name:?} is already used by {prev}"),
            );
        }
        for m in s.models {
            if let Some(prev) = claim(&mut self.models, m, label) {
                error(
                    format!("{key}.models"),
                    format!("model {m:?} is already routed by route {prev}"),
                );
            }
        }
        if s.default {
            match &self.default {
                Some(prev) => error(
                    format!("{key}.default"),
                    format!("route {prev} is already the default route"),
                ),
                None => self.default = Some(label.to_owned()),
            }
        }
        for id in s.decthings.model_ids.keys() {
            if let Some(prev) = claim(&mut self.model_ids, id, label) {
                let message = format!("modelId {id:?} is already mapped by route {prev}");
                error(format!("{key}.decthings.model_ids.{id}"), message);
            }
        }
        for e in s.sagemaker.endpoints.keys() {
            if let Some(prev) = claim(&mut self.endpoints, e, label) {
                let message = format!("endpoint {e:?} is already served by route {prev}");
                error(format!("{key}.sagemaker.endpoints.{e}"), message);
            }
        }
        if s.sagemaker.default_model.is_some() {
            match &self.default_model {
                Some(prev) => error(
                    format!("{key}.sagemaker.default_model"),
                    format!(
                        "route {prev} already sets the SageMaker default model; only one route may"
                    ),
                ),
                None if label == key => self.default_model = Some(label.to_owned()),
                None => self.default_model = Some(format!("{label} ({key})")),
            }
        }
        errors
    }
}
