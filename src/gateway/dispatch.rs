//! Which frontend serves a request, decided once, from its method and its
//! path decoded once (see [`crate::codec::v2::path`]).

use std::collections::BTreeSet;

use http::Method;

use crate::codec::v2::path::{self, Control, ModelAction, V2Path};
use crate::config::Config;
use crate::frontend::Frontend;
use crate::gateway::core::ModelRef;
use crate::gateway::error::GatewayError;

/// The path prefixes frontends other than V2 answer under, from the
/// configuration (computed once).
#[derive(Clone, Debug, Default)]
pub struct Prefixes {
    /// `{prefix}/Model/evaluate`, per route with the Decthings frontend on.
    decthings: BTreeSet<String>,
}

impl Prefixes {
    pub fn new(config: &Config) -> Prefixes {
        Prefixes {
            decthings: config
                .routes
                .iter()
                .filter(|r| r.decthings.enabled)
                .map(|r| r.decthings.prefix.clone())
                .collect(),
        }
    }
}

/// What a request is, as far as the gateway cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v2/models/{m}[/versions/{v}]/infer`: the V2 frontend.
    V2Infer { model: ModelRef },
    /// `{prefix}/Model/evaluate`: the Decthings frontend (any method: only
    /// POST is served).
    Decthings { prefix: String },
    /// `GET /ping`: SageMaker's health check.
    SageMakerPing,
    /// SageMaker inference: `POST /invocations`, `/models/{m}/invoke`,
    /// `/endpoints/{e}/invocations`.
    SageMaker(SageMakerTarget),
    /// Anything else: passed through to the backend of the route serving
    /// `model` (the default route when no model is named).
    Passthrough {
        model: Option<String>,
        /// A control-plane endpoint, allowed only where the route says so.
        control: Option<Control>,
    },
}

impl Endpoint {
    /// The frontend serving it.
    pub fn frontend(&self) -> Frontend {
        match self {
            Endpoint::Decthings { .. } => Frontend::Decthings,
            Endpoint::SageMakerPing
            | Endpoint::SageMaker(SageMakerTarget::Invocations)
            | Endpoint::SageMaker(SageMakerTarget::Model(_)) => Frontend::SageMaker,
            Endpoint::SageMaker(SageMakerTarget::Endpoint(_)) => Frontend::SageMakerRuntime,
            Endpoint::V2Infer { .. } | Endpoint::Passthrough { .. } => Frontend::V2,
        }
    }

    /// The model the path names, if any (to choose the route).
    pub fn model(&self) -> Option<&str> {
        match self {
            Endpoint::V2Infer { model } => Some(&model.name),
            Endpoint::Passthrough { model, .. } => model.as_deref(),
            Endpoint::Decthings { .. } | Endpoint::SageMakerPing | Endpoint::SageMaker(_) => None,
        }
    }
}

/// Which model a SageMaker invocation names, by the path it came on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SageMakerTarget {
    /// `/invocations`: the `X-Amzn-SageMaker-Target-Model` header, else the
    /// configured default model.
    Invocations,
    /// `/models/{model}/invoke`.
    Model(String),
    /// `/endpoints/{endpoint}/invocations`: the SageMaker Runtime API path
    /// (boto3's `invoke_endpoint`), whose errors take AWS's shape.
    Endpoint(String),
}

/// Classifies a request.
pub fn classify(
    method: &Method,
    raw_path: &str,
    prefixes: &Prefixes,
) -> Result<Endpoint, GatewayError> {
    if let Some(prefix) = raw_path.strip_suffix("/Model/evaluate")
        && prefixes.decthings.contains(prefix)
    {
        return Ok(Endpoint::Decthings {
            prefix: prefix.to_owned(),
        });
    }
    let segments = path::split_path(raw_path).map_err(|source| GatewayError::BadPath { source })?;
    if let Some(endpoint) = sagemaker(&segments) {
        return Ok(endpoint);
    }
    let v2 = V2Path::parse(&segments);
    Ok(match v2 {
        V2Path::Model {
            name,
            version,
            action: ModelAction::Infer,
        } if method == Method::POST => Endpoint::V2Infer {
            model: ModelRef { name, version },
        },
        V2Path::Control { kind, model } => Endpoint::Passthrough {
            model,
            control: Some(kind),
        },
        other => Endpoint::Passthrough {
            model: other.model().map(str::to_owned),
            control: None,
        },
    })
}

/// SageMaker's container and runtime paths (any method: each serves one).
fn sagemaker<S: AsRef<str>>(segments: &[S]) -> Option<Endpoint> {
    let segs: Vec<&str> = segments.iter().map(AsRef::as_ref).collect();
    Some(match segs.as_slice() {
        ["ping"] => Endpoint::SageMakerPing,
        ["invocations"] => Endpoint::SageMaker(SageMakerTarget::Invocations),
        ["models", model, "invoke"] if !model.is_empty() => {
            Endpoint::SageMaker(SageMakerTarget::Model((*model).to_owned()))
        }
        ["endpoints", endpoint, "invocations"] if !endpoint.is_empty() => {
            Endpoint::SageMaker(SageMakerTarget::Endpoint((*endpoint).to_owned()))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefixes() -> Prefixes {
        Prefixes {
            decthings: BTreeSet::from(["/v0".to_owned()]),
        }
    }

    fn classify_ok(method: Method, path: &str) -> Endpoint {
        classify(&method, path, &prefixes()).unwrap()
    }

    #[test]
    fn endpoints() {
        assert_eq!(
            classify_ok(Method::POST, "/v2/models/simple/versions/2/infer"),
            Endpoint::V2Infer {
                model: ModelRef {
                    name: "simple".into(),
                    version: Some("2".into())
                }
            }
        );
        // Decided on the decoded path: a disguised infer is an infer.
        assert_eq!(
            classify_ok(Method::POST, "/v2/models/simple/%69nfer"),
            Endpoint::V2Infer {
                model: ModelRef::new("simple")
            }
        );
        assert_eq!(
            classify_ok(Method::GET, "/v2/models/simple/infer"),
            Endpoint::Passthrough {
                model: Some("simple".into()),
                control: None
            }
        );
        assert_eq!(
            classify_ok(Method::POST, "/v2/repository/models/simple/load"),
            Endpoint::Passthrough {
                model: Some("simple".into()),
                control: Some(Control::Repository)
            }
        );
        assert!(matches!(
            classify(&Method::POST, "/v2/models/a%2Fb/infer", &prefixes()),
            Err(GatewayError::BadPath { .. })
        ));
        assert_eq!(
            classify_ok(Method::POST, "/v0/Model/evaluate"),
            Endpoint::Decthings {
                prefix: "/v0".into()
            }
        );
        assert_eq!(
            classify_ok(Method::POST, "/v1/Model/evaluate").frontend(),
            Frontend::V2,
            "not a configured prefix"
        );
        assert_eq!(classify_ok(Method::GET, "/ping"), Endpoint::SageMakerPing);
        assert_eq!(
            classify_ok(Method::POST, "/invocations"),
            Endpoint::SageMaker(SageMakerTarget::Invocations)
        );
        assert_eq!(
            classify_ok(Method::POST, "/models/rowsum/invoke"),
            Endpoint::SageMaker(SageMakerTarget::Model("rowsum".into()))
        );
        let runtime = classify_ok(Method::POST, "/endpoints/my%2Dep/invocations");
        assert_eq!(
            runtime,
            Endpoint::SageMaker(SageMakerTarget::Endpoint("my-ep".into()))
        );
        assert_eq!(runtime.frontend(), Frontend::SageMakerRuntime);
    }
}
