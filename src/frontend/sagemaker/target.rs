//! Which route and model a SageMaker invocation is for, and which input its
//! records become.
//!
//! The model: `X-Amzn-SageMaker-Target-Model` when sent (multi-model
//! endpoints), else the path's (`/models/{m}/invoke`), else the endpoint's
//! (`/endpoints/{e}/invocations`: a route's `sagemaker.endpoints` maps the
//! name, else the name is the model), else the one `default_model` of the
//! configuration (bare `/invocations`). The input: `sagemaker.input` and
//! `datatype` when configured, else the backend model's metadata when it has
//! exactly one input of a numeric type; F from the route's shape rule for it
//! (`[-1, F]`), else the first record.

use std::sync::Arc;

use http::HeaderMap;

use super::error::SageMakerError;
use crate::config::{Config, Route, SageMakerRoute};
use crate::error::Error;
use crate::infer::metadata::MetadataError;
use crate::infer::route;
use crate::infer::{Exchange, InferError, ModelRef};
use crate::tensor::DataType;

/// Which model a SageMaker invocation names, by the path it came on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `/invocations`: the `X-Amzn-SageMaker-Target-Model` header, else the
    /// configured default model.
    Invocations,
    /// `/models/{model}/invoke`.
    Model(String),
    /// `/endpoints/{endpoint}/invocations`: the SageMaker Runtime API path
    /// (boto3's `invoke_endpoint`), whose errors take AWS's shape.
    Endpoint(String),
}

/// The header multi-model clients name their model with.
pub const TARGET_MODEL: &str = "x-amzn-sagemaker-target-model";

/// The route and backend model of an invocation.
pub fn resolve<'a>(
    config: &'a Config,
    target: &Target,
    headers: &HeaderMap,
) -> Result<(&'a Arc<Route>, String), Error> {
    let header = headers
        .get(TARGET_MODEL)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty());
    let model = match (header, target) {
        (Some(m), _) => m.to_owned(),
        (None, Target::Model(m)) => m.clone(),
        (None, Target::Endpoint(e)) => config
            .routes
            .iter()
            .find_map(|r| r.sagemaker.endpoints.get(e).cloned())
            .unwrap_or_else(|| e.clone()),
        (None, Target::Invocations) => config
            .routes
            .iter()
            .find_map(|r| r.sagemaker.default_model.clone())
            .ok_or(SageMakerError::NoModel)?,
    };
    let route = route::for_model(config, &model, |r| r.sagemaker.enabled)?;
    Ok((route, model))
}

/// The route `/ping` reports on: the one with the default model, else the
/// default route.
pub fn ping_route(config: &Config) -> Option<&Arc<Route>> {
    config
        .routes
        .iter()
        .find(|r| r.sagemaker.enabled && r.sagemaker.default_model.is_some())
        .or_else(|| config.default_route())
}

/// The input the records become.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputSpec {
    pub name: String,
    pub dtype: DataType,
    /// Features per record, when a rule fixes it.
    pub features: Option<usize>,
}

/// Finds the input: configured, else from the backend's metadata.
pub async fn input(exchange: Exchange<'_>, model: &ModelRef) -> Result<InputSpec, Error> {
    let sm: &SageMakerRoute = &exchange.route.sagemaker;
    let (name, dtype) = match (&sm.input, sm.datatype) {
        (Some(name), Some(dtype)) => (name.clone(), dtype),
        (configured, dtype) => {
            let fetch = crate::infer::backend::metadata(exchange.upstream, model);
            let meta = exchange
                .metadata
                .get(model, fetch)
                .await
                .map_err(|e| -> Error {
                    match e {
                        MetadataError::NotFound { backend, .. } => InferError::UnknownModel {
                            backend,
                            model: model.clone(),
                        }
                        .into(),
                        MetadataError::Upstream(u) => u.into(),
                        other => input_error(exchange, model, other.to_string()).into(),
                    }
                })?;
            let spec = match configured {
                Some(name) => meta
                    .inputs
                    .iter()
                    .find(|i| &i.name == name)
                    .ok_or_else(|| {
                        Error::from(input_error(
                            exchange,
                            model,
                            format!("the model has no input \"{name}\""),
                        ))
                    })?,
                None => match meta.inputs.as_slice() {
                    [one] => one,
                    inputs => {
                        let why = format!(
                            "the model has {} inputs, records fill exactly one",
                            inputs.len()
                        );
                        return Err(input_error(exchange, model, why).into());
                    }
                },
            };
            (spec.name.clone(), dtype.unwrap_or(spec.datatype))
        }
    };
    if !SageMakerRoute::DATATYPES.contains(&dtype) {
        let why = format!("its input \"{name}\" is {dtype}, and records are numbers");
        return Err(input_error(exchange, model, why).into());
    }
    let features = exchange
        .route
        .rules
        .inputs
        .get(&name)
        .and_then(|r| r.shape.as_ref())
        .and_then(|s| match s.0.as_slice() {
            [_, f] if *f > 0 => usize::try_from(*f).ok(),
            _ => None,
        });
    Ok(InputSpec {
        name,
        dtype,
        features,
    })
}

fn input_error(exchange: Exchange<'_>, model: &ModelRef, why: String) -> SageMakerError {
    SageMakerError::Input {
        model: model.name.clone(),
        route: exchange.route.name.clone(),
        why,
    }
}
