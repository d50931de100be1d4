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
pub(crate) struct Prefixes {
    /// `{prefix}/Model/evaluate`, per route with the Decthings frontend on.
    decthings: BTreeSet<String>,
}

impl Prefixes {
    pub(crate) fn new(config: &Config) -> Prefixes {
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
pub(crate) enum Endpoint {
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
    pub(crate) fn kind(&self) -> Kind {
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
pub(crate) fn endpoint<B>(
    req: &http::Request<B>,
    prefixes: &Prefixes,
) -> Result<Endpoint, RouteError> {
    // A request without a content type (most GETs) is known not to be
    // gRPC without a lookup.
    let typed = !crate::http::headers::lacks(req.headers(), &http::header::CONTENT_TYPE);
    if typed && grpc::is_grpc(req.headers()) {
        return Ok(Endpoint::Grpc(grpc::Rpc::new(req.uri().path())));
    }
    classify(req.method(), req.uri().path(), prefixes)
}

/// Classifies a request by its method and path.
pub(crate) fn classify(
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
    let mut plain = [""; PLAIN_SEGMENTS];
    if let Some(n) = plain_segments(raw_path, &mut plain) {
        return Ok(by_segments(method, &plain[..n]));
    }
    let segments = path::split_path(raw_path).map_err(|source| RouteError::BadPath { source })?;
    let segments: Vec<&str> = segments.iter().map(AsRef::as_ref).collect();
    Ok(by_segments(method, &segments))
}

/// The most segments a path is split into in place, without a list
/// allocated for them (V2 paths have at most 7).
const PLAIN_SEGMENTS: usize = 8;

/// The segments of a path that needs no decoding (no escape, no dot
/// segment, at most [`PLAIN_SEGMENTS`] segments), split in place exactly
/// as [`path::split_path`] splits it, and their number; `None` for any
/// other path, which `split_path` decodes (or refuses). Most requests'
/// paths are plain: `split_path`'s list of segments and the copy
/// `V2Path::parse` makes of it would be allocated for each of them (see
/// docs/PERFORMANCE.md, "What each decision bought").
fn plain_segments<'a>(raw: &'a str, segs: &mut [&'a str; PLAIN_SEGMENTS]) -> Option<usize> {
    let rest = raw.strip_prefix('/').unwrap_or(raw);
    if rest.is_empty() {
        return Some(0);
    }
    // One pass over the bytes, where `str::split` and a search for `%`
    // take two.
    let mut n = 0;
    let mut push = |segment: Option<&'a str>| {
        let segment = segment.filter(|s| *s != "." && *s != "..")?;
        *segs.get_mut(n)? = segment;
        n += 1;
        Some(())
    };
    let mut start = 0;
    for (i, b) in rest.bytes().enumerate() {
        match b {
            b'%' => return None,
            // ASCII: a character boundary.
            b'/' => {
                push(rest.get(start..i))?;
                start = i + 1;
            }
            _ => {}
        }
    }
    push(rest.get(start..))?;
    Some(n)
}

/// Classifies a request by its method and its path's decoded segments.
fn by_segments(method: &Method, segments: &[&str]) -> Endpoint {
    if let Some(endpoint) = sagemaker(segments) {
        return endpoint;
    }
    match V2Path::parse_strs(segments) {
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
            all_stats: false,
        }),
        // The name moved, not copied: one allocation fewer per request.
        V2Path::Model { name, .. } => Endpoint::Passthrough(v2::Passthrough {
            model: Some(name),
            control: None,
            all_stats: false,
        }),
        other => Endpoint::Passthrough(v2::Passthrough {
            model: other.model().map(str::to_owned),
            control: None,
            all_stats: other == V2Path::AllStats,
        }),
    }
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

    /// The in-place split gives what `split_path` gives, or leaves the
    /// path to it.
    #[test]
    fn plain_paths_split_as_split_path_splits_them() {
        for (raw, plain) in [
            ("", true),
            ("/", true),
            ("/v2", true),
            ("/v2/", true),
            ("//", true),
            ("/v2/models/simple", true),
            ("v2/models/simple", true),
            ("/v2/models//infer", true),
            ("/v2/models/m/versions/1/trace/setting", true),
            ("/a/b/c/d/e/f/g/h", true),
            ("/a/b/c/d/e/f/g/h/i", false),
            ("/a/b/c/d/e/f/g/h/", false),
            ("/v2/models/%73imple", false),
            ("/v2/models/a%2Fb/infer", false),
            ("/v2/models/./infer", false),
            ("/v2/models/../infer", false),
            ("/v2/models/.../infer", true),
            ("/v2/models/.x/infer", true),
        ] {
            let mut segs = [""; PLAIN_SEGMENTS];
            let split = plain_segments(raw, &mut segs);
            assert_eq!(split.is_some(), plain, "{raw:?}");
            if let Some(n) = split {
                let decoded = path::split_path(raw).unwrap();
                let decoded: Vec<&str> = decoded.iter().map(AsRef::as_ref).collect();
                assert_eq!(&segs[..n], decoded.as_slice(), "{raw:?}");
            }
        }
        // The paths left to `split_path` are classified as before.
        assert!(matches!(
            classify(&Method::GET, "/v2/models/./infer", &prefixes()),
            Err(RouteError::BadPath { .. })
        ));
        assert_eq!(
            classify_ok(Method::GET, "/v2/models/%73imple"),
            Endpoint::Passthrough(v2::Passthrough {
                model: Some("simple".into()),
                control: None,
                all_stats: false,
            })
        );
        assert_eq!(
            classify_ok(Method::GET, "/v2/models/simple"),
            Endpoint::Passthrough(v2::Passthrough {
                model: Some("simple".into()),
                control: None,
                all_stats: false,
            })
        );
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
                control: None,
                all_stats: false,
            })
        );
        assert_eq!(
            classify_ok(Method::POST, "/v2/repository/models/simple/load"),
            Endpoint::Passthrough(v2::Passthrough {
                model: Some("simple".into()),
                control: Some(Control::Repository),
                all_stats: false,
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
