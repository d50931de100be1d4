//! The calls other than infer — health, metadata, model configuration,
//! statistics, repository and model control, shared memory, trace and
//! log settings — in neutral types.
//!
//! A frontend hands the core a [`Call`] as its client made it (its
//! [`Origin`]: a V2 HTTP request, or a gRPC method and message). The
//! backend answers it once ([`backend::call`](super::backend::call)): a
//! call in the backend's own protocol goes as it came and its answer comes
//! back as it is ([`Answer::Http`], [`Answer::Grpc`]: nothing is lost to a
//! translation, a V2 passthrough streams both ways); a call in the other
//! protocol is sent for what it is ([`Op`]) and answered in neutral form
//! ([`Reply`]), which the frontend renders in its own protocol. What an
//! HTTP request or a gRPC message is as an [`Op`] is read here; what a
//! [`Reply`] is in each protocol's JSON or message form is the codec's
//! mapping (`codec::grpc::json`), used by the backend that reads it and
//! the frontend that writes it.

use std::collections::BTreeMap;

use bytes::Bytes;
use http::{Method, Response};
use prost::Message;
use serde_json::{Map, Value, json};

use crate::codec::grpc::budget::{self, Caps};
use crate::codec::grpc::json as tr;
use crate::codec::grpc::proto::inference as pb;
use crate::codec::v2::path::{self, ModelAction, V2Path};
use crate::http::body::Body;
use crate::infer::ModelRef;

pub(crate) use crate::upstream::grpc::Answer as GrpcAnswer;

/// What a call other than infer is, whatever protocol it came in.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Op {
    ServerLive,
    ServerReady,
    ServerMetadata,
    ModelReady(ModelRef),
    ModelMetadata(ModelRef),
    ModelConfig(ModelRef),
    /// `None`: every model's.
    ModelStatistics(Option<ModelRef>),
    RepositoryIndex {
        repository: String,
        ready: bool,
    },
    RepositoryLoad {
        model: String,
        parameters: Parameters,
    },
    RepositoryUnload {
        model: String,
        parameters: Parameters,
    },
    /// What one protocol has and the other does not (shared memory, trace
    /// and log settings, generate, an unknown endpoint): it goes only to a
    /// backend of the protocol it came in. What it is, for the refusal.
    Untranslated(String),
}

/// Repository load and unload parameters.
pub(crate) type Parameters = BTreeMap<String, pb::ModelRepositoryParameter>;

/// A backend's answer to an [`Op`], in neutral form.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Reply {
    /// Live or ready.
    Flag(bool),
    ServerMetadata(pb::ServerMetadataResponse),
    ModelMetadata(pb::ModelMetadataResponse),
    ModelConfig(Box<pb::ModelConfigResponse>),
    ModelStatistics(pb::ModelStatisticsResponse),
    RepositoryIndex(pb::RepositoryIndexResponse),
    /// A load or unload done.
    Done,
}

/// A call as its client made it.
#[derive(Debug)]
pub(crate) enum Origin {
    /// A V2 HTTP request: its head, and its body, forwarded as it is.
    Http {
        parts: http::request::Parts,
        body: Option<Body>,
    },
    /// A gRPC call: its method's name and its one message.
    Grpc {
        method: &'static str,
        message: Bytes,
        /// The headers forwarded with it (request id, trace context).
        headers: http::HeaderMap,
        /// Safe to send again (it changes nothing on the server).
        idempotent: bool,
    },
}

/// A call other than infer, for the core.
#[derive(Debug)]
pub(crate) struct Call {
    pub origin: Origin,
    /// Statistics asked for without a model name: answered for the
    /// caller's route's models only ([`super::stats`]).
    pub all_stats: bool,
}

/// A backend's answer to a call.
#[derive(Debug)]
pub(crate) enum Answer {
    /// A V2 HTTP request forwarded: the backend's reply as it came.
    Http(Response<Body>),
    /// A gRPC call forwarded: the backend's message or status as it came.
    Grpc(GrpcAnswer),
    /// A call translated: what it was, and the backend's answer.
    Translated(Box<(Op, Reply)>),
    /// A call translated to a gRPC backend, refused with its status (a V2
    /// client gets the status it stands for and `{"error": message}`).
    Refused {
        code: crate::codec::grpc::status::Code,
        message: String,
    },
}

/// Why a call could not be read or answered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    #[error("{0} is not served by a backend that speaks {1}")]
    Untranslated(String, &'static str),
    #[error("invalid {message}: {reason}")]
    Decode {
        message: &'static str,
        reason: String,
    },
    #[error("the backend's {what} does not fit its protocol: {reason}")]
    Translate { what: &'static str, reason: String },
    #[error("{0}")]
    Budget(#[from] budget::BudgetError),
}

impl crate::error::Classify for CallError {
    fn classify(&self) -> crate::error::Classified {
        use crate::error::{Class, TensorLabel};
        match self {
            CallError::Untranslated(..) => Class::Unsupported.into(),
            CallError::Decode { .. } => Class::Malformed.into(),
            CallError::Budget(e) if e.is_malformed() => Class::Malformed.into(),
            CallError::Budget(_) => Class::TooLarge.violating(TensorLabel::Request, "limit"),
            CallError::Translate { .. } => Class::BadOutput {
                backend_fault: true,
            }
            .into(),
        }
    }
}

/// Decodes a small message (a call's request, a backend's answer), checked
/// on its wire form first (`name`: its full protobuf name).
pub(crate) fn decode<M: Message + Default>(
    bytes: &[u8],
    name: &'static str,
) -> Result<M, CallError> {
    if let Some(schema) = budget::schema(name) {
        budget::check(schema, bytes, &Caps::DEFAULT)?;
    }
    M::decode(bytes).map_err(|e| CallError::Decode {
        message: name,
        reason: e.to_string(),
    })
}

fn model(name: String, version: String) -> ModelRef {
    ModelRef {
        name,
        version: Some(version).filter(|v| !v.is_empty()),
    }
}

impl Op {
    /// What a gRPC call is.
    pub(crate) fn from_grpc(method: &str, message: &[u8]) -> Result<Op, CallError> {
        Ok(match method {
            "ServerLive" => Op::ServerLive,
            "ServerReady" => Op::ServerReady,
            "ServerMetadata" => Op::ServerMetadata,
            "ModelReady" => {
                let m: pb::ModelReadyRequest = decode(message, "inference.ModelReadyRequest")?;
                Op::ModelReady(model(m.name, m.version))
            }
            "ModelMetadata" => {
                let m: pb::ModelMetadataRequest =
                    decode(message, "inference.ModelMetadataRequest")?;
                Op::ModelMetadata(model(m.name, m.version))
            }
            "ModelConfig" => {
                let m: pb::ModelConfigRequest = decode(message, "inference.ModelConfigRequest")?;
                Op::ModelConfig(model(m.name, m.version))
            }
            "ModelStatistics" => {
                let m: pb::ModelStatisticsRequest =
                    decode(message, "inference.ModelStatisticsRequest")?;
                Op::ModelStatistics(Some(m.name).filter(|n| !n.is_empty()).map(|name| ModelRef {
                    name,
                    version: Some(m.version).filter(|v| !v.is_empty()),
                }))
            }
            "RepositoryIndex" => {
                let m: pb::RepositoryIndexRequest =
                    decode(message, "inference.RepositoryIndexRequest")?;
                Op::RepositoryIndex {
                    repository: m.repository_name,
                    ready: m.ready,
                }
            }
            "RepositoryModelLoad" => {
                let m: pb::RepositoryModelLoadRequest =
                    decode(message, "inference.RepositoryModelLoadRequest")?;
                Op::RepositoryLoad {
                    model: m.model_name,
                    parameters: m.parameters,
                }
            }
            "RepositoryModelUnload" => {
                let m: pb::RepositoryModelUnloadRequest =
                    decode(message, "inference.RepositoryModelUnloadRequest")?;
                Op::RepositoryUnload {
                    model: m.model_name,
                    parameters: m.parameters,
                }
            }
            other => Op::Untranslated(other.to_owned()),
        })
    }

    /// What a V2 HTTP request is (`body`: its body, read, for the
    /// endpoints that take one).
    pub(crate) fn from_http(method: &Method, path: &str, body: &[u8]) -> Op {
        let untranslated = || Op::Untranslated(format!("{method} {path}"));
        let Ok(segments) = path::split_path(path) else {
            return untranslated();
        };
        let (get, post) = (method == Method::GET, method == Method::POST);
        match V2Path::parse(&segments) {
            V2Path::Server if get => Op::ServerMetadata,
            V2Path::Live if get => Op::ServerLive,
            V2Path::Ready if get => Op::ServerReady,
            V2Path::AllStats if get => Op::ModelStatistics(None),
            V2Path::Model {
                name,
                version,
                action,
            } if get => {
                let m = ModelRef { name, version };
                match action {
                    ModelAction::Metadata => Op::ModelMetadata(m),
                    ModelAction::Ready => Op::ModelReady(m),
                    ModelAction::Config => Op::ModelConfig(m),
                    ModelAction::Stats => Op::ModelStatistics(Some(m)),
                    _ => untranslated(),
                }
            }
            V2Path::Control { .. } if post => {
                let segs: Vec<&str> = segments.iter().map(AsRef::as_ref).collect();
                let json = serde_json::from_slice::<Value>(body).ok();
                match segs.as_slice() {
                    ["v2", "repository", "index"] => Op::RepositoryIndex {
                        repository: String::new(),
                        ready: json
                            .as_ref()
                            .and_then(|v| v.get("ready").and_then(Value::as_bool))
                            .unwrap_or(false),
                    },
                    ["v2", "repository", "models", name, "load"] => Op::RepositoryLoad {
                        model: (*name).to_owned(),
                        parameters: Parameters::new(),
                    },
                    ["v2", "repository", "models", name, "unload"] => Op::RepositoryUnload {
                        model: (*name).to_owned(),
                        parameters: Parameters::new(),
                    },
                    _ => untranslated(),
                }
            }
            _ => untranslated(),
        }
    }

    /// Whether the V2 endpoint for it takes a request body.
    pub(crate) fn http_body(method: &Method) -> bool {
        method == Method::POST
    }

    /// The gRPC method that stands for it, and its message.
    pub(crate) fn grpc(&self) -> Result<(&'static str, Vec<u8>), CallError> {
        let named = |m: &ModelRef| (m.name.clone(), m.version.clone().unwrap_or_default());
        Ok(match self {
            Op::ServerLive => ("ServerLive", pb::ServerLiveRequest {}.encode_to_vec()),
            Op::ServerReady => ("ServerReady", pb::ServerReadyRequest {}.encode_to_vec()),
            Op::ServerMetadata => (
                "ServerMetadata",
                pb::ServerMetadataRequest {}.encode_to_vec(),
            ),
            Op::ModelReady(m) => {
                let (name, version) = named(m);
                let message = pb::ModelReadyRequest { name, version };
                ("ModelReady", message.encode_to_vec())
            }
            Op::ModelMetadata(m) => {
                let (name, version) = named(m);
                let message = pb::ModelMetadataRequest { name, version };
                ("ModelMetadata", message.encode_to_vec())
            }
            Op::ModelConfig(m) => {
                let (name, version) = named(m);
                let message = pb::ModelConfigRequest { name, version };
                ("ModelConfig", message.encode_to_vec())
            }
            Op::ModelStatistics(m) => {
                let (name, version) = m.as_ref().map(named).unwrap_or_default();
                let message = pb::ModelStatisticsRequest { name, version };
                ("ModelStatistics", message.encode_to_vec())
            }
            Op::RepositoryIndex { repository, ready } => {
                let message = pb::RepositoryIndexRequest {
                    repository_name: repository.clone(),
                    ready: *ready,
                };
                ("RepositoryIndex", message.encode_to_vec())
            }
            Op::RepositoryLoad { model, parameters } => {
                let message = pb::RepositoryModelLoadRequest {
                    repository_name: String::new(),
                    model_name: model.clone(),
                    parameters: parameters.clone(),
                };
                ("RepositoryModelLoad", message.encode_to_vec())
            }
            Op::RepositoryUnload { model, parameters } => {
                let message = pb::RepositoryModelUnloadRequest {
                    repository_name: String::new(),
                    model_name: model.clone(),
                    parameters: parameters.clone(),
                };
                ("RepositoryModelUnload", message.encode_to_vec())
            }
            Op::Untranslated(what) => return Err(CallError::Untranslated(what.clone(), "gRPC")),
        })
    }

    /// The V2 HTTP request that stands for it: method, path, JSON body.
    pub(crate) fn http(&self) -> Result<(Method, String, Option<Value>), CallError> {
        let model_path = |m: &ModelRef| path::model_base(&m.name, m.version.as_deref());
        Ok(match self {
            Op::ServerLive => (Method::GET, "/v2/health/live".into(), None),
            Op::ServerReady => (Method::GET, "/v2/health/ready".into(), None),
            Op::ServerMetadata => (Method::GET, "/v2".into(), None),
            Op::ModelReady(m) => (Method::GET, format!("{}/ready", model_path(m)), None),
            Op::ModelMetadata(m) => (Method::GET, model_path(m), None),
            Op::ModelConfig(m) => (Method::GET, format!("{}/config", model_path(m)), None),
            Op::ModelStatistics(None) => (Method::GET, "/v2/models/stats".into(), None),
            Op::ModelStatistics(Some(m)) => (Method::GET, format!("{}/stats", model_path(m)), None),
            Op::RepositoryIndex { repository, ready } => {
                let mut p = "/v2/repository".to_owned();
                if !repository.is_empty() {
                    p.push('/');
                    path::encode_segment(repository, &mut p);
                }
                p.push_str("/index");
                (Method::POST, p, Some(json!({ "ready": ready })))
            }
            Op::RepositoryLoad { model, parameters }
            | Op::RepositoryUnload { model, parameters } => {
                let action = match self {
                    Op::RepositoryLoad { .. } => "load",
                    _ => "unload",
                };
                let mut p = "/v2/repository/models/".to_owned();
                path::encode_segment(model, &mut p);
                p.push('/');
                p.push_str(action);
                let body = json!({ "parameters": repository_parameters(parameters) });
                (Method::POST, p, Some(body))
            }
            Op::Untranslated(what) => {
                return Err(CallError::Untranslated(what.clone(), "HTTP"));
            }
        })
    }

    /// Whether its answer is a flag (live, ready).
    pub(crate) fn is_flag(&self) -> bool {
        matches!(self, Op::ServerLive | Op::ServerReady | Op::ModelReady(_))
    }
}

impl Reply {
    /// An HTTP backend's answer to `op`: its status, and its JSON body
    /// (a flag's answer is its status alone).
    pub(crate) fn from_json(op: &Op, status: u16, body: &[u8]) -> Result<Reply, CallError> {
        let translate = |what: &'static str| {
            move |e: tr::JsonError| CallError::Translate {
                what,
                reason: e.to_string(),
            }
        };
        Ok(match op {
            Op::ServerLive | Op::ServerReady | Op::ModelReady(_) => {
                Reply::Flag(tr::ready_from_status(status))
            }
            Op::ServerMetadata => Reply::ServerMetadata(
                tr::server_metadata_from_json(body).map_err(translate("server metadata"))?,
            ),
            Op::ModelMetadata(_) => Reply::ModelMetadata(
                tr::model_metadata_from_json(body).map_err(translate("model metadata"))?,
            ),
            Op::ModelConfig(_) => Reply::ModelConfig(Box::new(
                tr::model_config_from_json(body).map_err(translate("model configuration"))?,
            )),
            Op::ModelStatistics(_) => Reply::ModelStatistics(
                tr::model_statistics_from_json(body).map_err(translate("model statistics"))?,
            ),
            Op::RepositoryIndex { .. } => Reply::RepositoryIndex(
                tr::repository_index_from_json(body).map_err(translate("repository index"))?,
            ),
            Op::RepositoryLoad { .. } | Op::RepositoryUnload { .. } => Reply::Done,
            Op::Untranslated(what) => return Err(CallError::Untranslated(what.clone(), "HTTP")),
        })
    }

    /// A gRPC backend's answer message to `op`, checked on its wire form
    /// and decoded.
    pub(crate) fn from_message(op: &Op, message: &[u8]) -> Result<Reply, CallError> {
        Ok(match op {
            Op::ServerLive => {
                let r: pb::ServerLiveResponse = decode(message, "inference.ServerLiveResponse")?;
                Reply::Flag(r.live)
            }
            Op::ServerReady => {
                let r: pb::ServerReadyResponse = decode(message, "inference.ServerReadyResponse")?;
                Reply::Flag(r.ready)
            }
            Op::ModelReady(_) => {
                let r: pb::ModelReadyResponse = decode(message, "inference.ModelReadyResponse")?;
                Reply::Flag(r.ready)
            }
            Op::ServerMetadata => {
                Reply::ServerMetadata(decode(message, "inference.ServerMetadataResponse")?)
            }
            Op::ModelMetadata(_) => {
                Reply::ModelMetadata(decode(message, "inference.ModelMetadataResponse")?)
            }
            Op::ModelConfig(_) => {
                Reply::ModelConfig(Box::new(decode(message, "inference.ModelConfigResponse")?))
            }
            Op::ModelStatistics(_) => {
                Reply::ModelStatistics(decode(message, "inference.ModelStatisticsResponse")?)
            }
            Op::RepositoryIndex { .. } => {
                Reply::RepositoryIndex(decode(message, "inference.RepositoryIndexResponse")?)
            }
            Op::RepositoryLoad { .. } | Op::RepositoryUnload { .. } => Reply::Done,
            Op::Untranslated(what) => return Err(CallError::Untranslated(what.clone(), "gRPC")),
        })
    }

    /// The reply as the V2 HTTP endpoint gives it: a flag is its status
    /// alone (200, or 400 as Triton answers a model that is not ready),
    /// the others JSON, a load or unload an empty 200.
    pub(crate) fn to_http(&self) -> Result<Response<Body>, CallError> {
        let translate = |e: tr::JsonError| CallError::Translate {
            what: "reply",
            reason: e.to_string(),
        };
        let json = match self {
            Reply::Flag(ready) => {
                let mut resp = Response::new(crate::http::body::empty());
                *resp.status_mut() = http::StatusCode::from_u16(tr::status_from_ready(*ready))
                    .unwrap_or(http::StatusCode::BAD_REQUEST);
                return Ok(resp);
            }
            Reply::Done => return Ok(Response::new(crate::http::body::empty())),
            Reply::ServerMetadata(m) => tr::server_metadata_to_json(m),
            Reply::ModelMetadata(m) => tr::model_metadata_to_json(m),
            Reply::ModelConfig(m) => tr::model_config_to_json(m),
            Reply::ModelStatistics(m) => tr::model_statistics_to_json(m),
            Reply::RepositoryIndex(m) => tr::repository_index_to_json(m),
        }
        .map_err(translate)?;
        let mut resp = Response::new(crate::http::body::full(json));
        resp.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        Ok(resp)
    }

    /// The reply as `op`'s gRPC answer message.
    pub(crate) fn to_message(&self, op: &Op) -> Vec<u8> {
        match self {
            Reply::Flag(live) if *op == Op::ServerLive => {
                pb::ServerLiveResponse { live: *live }.encode_to_vec()
            }
            Reply::Flag(ready) if matches!(op, Op::ModelReady(_)) => {
                pb::ModelReadyResponse { ready: *ready }.encode_to_vec()
            }
            Reply::Flag(ready) => pb::ServerReadyResponse { ready: *ready }.encode_to_vec(),
            Reply::ServerMetadata(m) => m.encode_to_vec(),
            Reply::ModelMetadata(m) => m.encode_to_vec(),
            Reply::ModelConfig(m) => m.encode_to_vec(),
            Reply::ModelStatistics(m) => m.encode_to_vec(),
            Reply::RepositoryIndex(m) => m.encode_to_vec(),
            // RepositoryModelLoadResponse and ...UnloadResponse are empty.
            Reply::Done => Vec::new(),
        }
    }
}

/// Repository parameters as the HTTP endpoint takes them.
fn repository_parameters(parameters: &Parameters) -> Value {
    use pb::model_repository_parameter::ParameterChoice;
    let mut out = Map::new();
    for (k, p) in parameters {
        let v = match &p.parameter_choice {
            Some(ParameterChoice::BoolParam(b)) => json!(b),
            Some(ParameterChoice::Int64Param(i)) => json!(i),
            Some(ParameterChoice::StringParam(s)) => json!(s),
            Some(ParameterChoice::BytesParam(b)) => json!(String::from_utf8_lossy(b)),
            None => continue,
        };
        out.insert(k.clone(), v);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str) -> ModelRef {
        ModelRef {
            name: name.into(),
            version: None,
        }
    }

    /// Each operation reads the same from its HTTP request and from its
    /// gRPC message, both ways.
    #[test]
    fn each_op_is_one_call_in_either_protocol() {
        for op in [
            Op::ServerLive,
            Op::ServerReady,
            Op::ServerMetadata,
            Op::ModelReady(m("simple")),
            Op::ModelMetadata(ModelRef {
                name: "simple".into(),
                version: Some("2".into()),
            }),
            Op::ModelConfig(m("a b")),
            Op::ModelStatistics(None),
            Op::ModelStatistics(Some(m("simple"))),
            Op::RepositoryIndex {
                repository: String::new(),
                ready: true,
            },
            Op::RepositoryLoad {
                model: "simple".into(),
                parameters: Parameters::new(),
            },
            Op::RepositoryUnload {
                model: "simple".into(),
                parameters: Parameters::new(),
            },
        ] {
            let (method, message) = op.grpc().unwrap();
            assert_eq!(Op::from_grpc(method, &message).unwrap(), op, "{method}");
            let (method, path, body) = op.http().unwrap();
            let body = body
                .map(|b| serde_json::to_vec(&b).unwrap())
                .unwrap_or_default();
            assert_eq!(Op::from_http(&method, &path, &body), op, "{method} {path}");
        }
        let other = Op::from_http(&Method::POST, "/v2/models/m/generate", b"{}");
        assert_eq!(other, Op::Untranslated("POST /v2/models/m/generate".into()));
        assert!(matches!(other.grpc(), Err(CallError::Untranslated(..))));
        let other = Op::from_grpc("LogSettings", b"").unwrap();
        assert!(matches!(other.http(), Err(CallError::Untranslated(..))));
    }
}
