//! Which frontend serves a request, decided once, from its method and its
//! path decoded once (see [`crate::codec::v2::path`]).

use http::Method;

use crate::codec::v2::path::{self, Control, ModelAction, V2Path};
use crate::gateway::core::ModelRef;
use crate::gateway::error::GatewayError;

/// What a request is, as far as the gateway cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v2/models/{m}[/versions/{v}]/infer`: the V2 frontend.
    V2Infer { model: ModelRef },
    /// Anything else: passed through to the backend of the route serving
    /// `model` (the default route when no model is named).
    Passthrough {
        model: Option<String>,
        /// A control-plane endpoint, allowed only where the route says so.
        control: Option<Control>,
    },
}

impl Endpoint {
    /// The `kind` label of the request's metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Endpoint::V2Infer { .. } | Endpoint::Passthrough { .. } => "v2",
        }
    }

    /// The model the path names, if any (to choose the route).
    pub fn model(&self) -> Option<&str> {
        match self {
            Endpoint::V2Infer { model } => Some(&model.name),
            Endpoint::Passthrough { model, .. } => model.as_deref(),
        }
    }
}

/// Classifies a request.
pub fn classify(method: &Method, raw_path: &str) -> Result<Endpoint, GatewayError> {
    let segments = path::split_path(raw_path).map_err(|source| GatewayError::BadPath { source })?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn classify_ok(method: Method, path: &str) -> Endpoint {
        classify(&method, path).unwrap()
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
            classify(&Method::POST, "/v2/models/a%2Fb/infer"),
            Err(GatewayError::BadPath { .. })
        ));
    }
}
