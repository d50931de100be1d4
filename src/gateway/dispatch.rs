//! Which frontend serves a request, decided once, from its method and its
//! path decoded once (see [`crate::codec::v2::path`]).

use std::collections::BTreeSet;

use http::Method;

use crate::codec::v2::path::{self, ModelAction, V2Path};
use crate::config::Config;
use crate::frontend::sagemaker::SageMakerTarget;
use crate::frontend::{Frontend, decthings, grpc, sagemaker, v2};
use crate::infer::ModelRef;
use crate::infer::route::RouteError;
use crate::metrics::Kind;

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

/// What a request is: the frontend that serves it, with what its path
/// says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v2/models/{m}[/versions/{v}]/infer`.
    V2Infer(v2::Infer),
    /// Any other path: passed through to the backend of the route serving
    /// the model it names (the default route when it names none).
    Passthrough(v2::Passthrough),
    /// `{prefix}/Model/evaluate` (any method: only POST is served).
    Decthings(decthings::Evaluate),
    /// `GET /ping`: SageMaker's health check.
    SageMakerPing(sagemaker::Ping),
    /// SageMaker inference: `POST /invocations`, `/models/{m}/invoke`,
    /// `/endpoints/{e}/invocations`.
    SageMaker(sagemaker::Invoke),
    /// A gRPC call (`content-type: application/grpc`), whatever its path.
    Grpc(grpc::Rpc),
}

impl Endpoint {
    /// The frontend's `kind` label.
    pub fn kind(&self) -> Kind {
        match self {
            Endpoint::V2Infer(f) => f.kind(),
            Endpoint::Passthrough(f) => f.kind(),
            Endpoint::Decthings(f) => f.kind(),
            Endpoint::SageMakerPing(f) => f.kind(),
            Endpoint::SageMaker(f) => f.kind(),
            Endpoint::Grpc(f) => f.kind(),
        }
    }
}

/// Classifies a request: a gRPC call by its content type (any path: gRPC
/// paths are `/package.Service/Method`, never decoded), anything else by
/// its method and path.
pub fn endpoint<B>(req: &http::Request<B>, prefixes: &Prefixes) -> Result<Endpoint, RouteError> {
    // A request without a content type (most GETs) is known not to be
    // gRPC without a lookup.
    let typed = !crate::http::headers::lacks(req.headers(), &http::header::CONTENT_TYPE);
    if typed && grpc::is_grpc(req.headers()) {
        return Ok(Endpoint::Grpc(grpc::Rpc::new(req.uri().path())));
    }
    classify(req.method(), req.uri().path(), prefixes)
}

/// Classifies a request by its method and path.
pub fn classify(
    method: &Method,
    raw_path: &str,
    prefixes: &Prefixes,
) -> Result<Endpoint, RouteError> {
    if let Some(prefix) = raw_path.strip_suffix("/Model/evaluate")
        && prefixes.decthings.contains(prefix)
    {
        return Ok(Endpoint::Decthings(decthings::Evaluate {
            prefix: prefix.to_owned(),
        }));
    }
    let segments = path::split_path(raw_path).map_err(|source| RouteError::BadPath { source })?;
    if let Some(endpoint) = sagemaker(&segments) {
        return Ok(endpoint);
    }
    let v2 = V2Path::parse(&segments);
    Ok(match v2 {
        V2Path::Model {
            name,
            version,
            action: ModelAction::Infer,
        } if method == Method::POST => Endpoint::V2Infer(v2::Infer {
            model: ModelRef { name, version },
        }),
        V2Path::Control { kind, model } => Endpoint::Passthrough(v2::Passthrough {
            model,
            control: Some(kind),
        }),
        other => Endpoint::Passthrough(v2::Passthrough {
            model: other.model().map(str::to_owned),
            control: None,
        }),
    })
}

/// SageMaker's container and runtime paths (any method: each serves one).
fn sagemaker<S: AsRef<str>>(segments: &[S]) -> Option<Endpoint> {
    // Matched in place: every request comes through here, and a vector
    // of the segments cost an allocation per request.
    let target = match segments {
        [one] => match one.as_ref() {
            "ping" => return Some(Endpoint::SageMakerPing(sagemaker::Ping)),
            "invocations" => SageMakerTarget::Invocations,
            _ => return None,
        },
        [first, name, last] if !name.as_ref().is_empty() => match (first.as_ref(), last.as_ref()) {
            ("models", "invoke") => SageMakerTarget::Model(name.as_ref().to_owned()),
            ("endpoints", "invocations") => SageMakerTarget::Endpoint(name.as_ref().to_owned()),
            _ => return None,
        },
        _ => return None,
    };
    Some(Endpoint::SageMaker(sagemaker::Invoke { target }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::v2::path::Control;

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
            Endpoint::V2Infer(v2::Infer {
                model: ModelRef {
                    name: "simple".into(),
                    version: Some("2".into())
                }
            })
        );
        // Decided on the decoded path: a disguised infer is an infer.
        assert_eq!(
            classify_ok(Method::POST, "/v2/models/simple/%69nfer"),
            Endpoint::V2Infer(v2::Infer {
                model: ModelRef::new("simple")
            })
        );
        assert_eq!(
            classify_ok(Method::GET, "/v2/models/simple/infer"),
            Endpoint::Passthrough(v2::Passthrough {
                model: Some("simple".into()),
                control: None
            })
        );
        assert_eq!(
            classify_ok(Method::POST, "/v2/repository/models/simple/load"),
            Endpoint::Passthrough(v2::Passthrough {
                model: Some("simple".into()),
                control: Some(Control::Repository)
            })
        );
        assert!(matches!(
            classify(&Method::POST, "/v2/models/a%2Fb/infer", &prefixes()),
            Err(RouteError::BadPath { .. })
        ));
        assert_eq!(
            classify_ok(Method::POST, "/v0/Model/evaluate"),
            Endpoint::Decthings(decthings::Evaluate {
                prefix: "/v0".into()
            })
        );
        assert!(
            matches!(
                classify_ok(Method::POST, "/v1/Model/evaluate"),
                Endpoint::Passthrough(_)
            ),
            "not a configured prefix"
        );
        assert_eq!(
            classify_ok(Method::GET, "/ping"),
            Endpoint::SageMakerPing(sagemaker::Ping)
        );
        assert_eq!(
            classify_ok(Method::POST, "/invocations"),
            Endpoint::SageMaker(sagemaker::Invoke {
                target: SageMakerTarget::Invocations
            })
        );
        assert_eq!(
            classify_ok(Method::POST, "/models/rowsum/invoke"),
            Endpoint::SageMaker(sagemaker::Invoke {
                target: SageMakerTarget::Model("rowsum".into())
            })
        );
        let runtime = classify_ok(Method::POST, "/endpoints/my%2Dep/invocations");
        let Endpoint::SageMaker(invoke) = runtime else {
            panic!("{runtime:?}");
        };
        assert_eq!(invoke.target, SageMakerTarget::Endpoint("my-ep".into()));
        assert!(
            crate::frontend::Frontend::sigv4(&invoke),
            "the Runtime API path takes SigV4 and answers in AWS's shape"
        );
    }
}
