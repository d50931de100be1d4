//! Every V2 endpoint that is not `infer`, answered by a backend that speaks
//! gRPC: the endpoint becomes its call (`GET /v2/health/ready` is
//! `ServerReady`, `GET /v2/models/{m}` is `ModelMetadata`, `POST
//! /v2/repository/index` is `RepositoryIndex`, ...) and the reply is
//! written in the V2 HTTP JSON form. Endpoints without a call (generate,
//! shared memory, trace and log settings) answer 501 naming what is
//! missing. A backend's gRPC status becomes the HTTP status it stands for
//! with `{"error": message}`.

use bytes::Bytes;
use http::{HeaderValue, Method, Response, StatusCode, header};
use prost::Message;
use serde_json::Value;

use crate::codec::grpc::budget::{self, Caps};
use crate::codec::grpc::json as tr;
use crate::codec::grpc::proto::inference as pb;
use crate::codec::grpc::status::Code;
use crate::codec::v2::path;
use crate::config::Config;
use crate::error::Error;
use crate::http::body::{Body, error_body, full};
use crate::http::client_body::BodyError;
use crate::http::headers::trace_headers;
use crate::infer::{Exchange, InferError, backend, stats};
use crate::upstream::grpc::{self, Answer};

/// Most bytes of a request body read for an endpoint that takes one
/// (`{"ready": true}`, load parameters).
const MAX_BODY: u64 = 1 << 20;

/// The call an endpoint stands for, and its message.
enum Rpc {
    /// A call whose answer is a status: `ready` (or `live`) is 200.
    Flag(&'static str, Vec<u8>),
    /// A call whose answer is translated to JSON by `to_json`.
    Json(&'static str, Vec<u8>, fn(&[u8]) -> Result<Vec<u8>, String>),
    /// A call answered with an empty body.
    Empty(&'static str, Vec<u8>),
}

/// Answers a passthrough request from a gRPC backend.
pub async fn serve(
    exchange: Exchange<'_>,
    config: &Config,
    head: http::request::Parts,
    body: Option<Body>,
) -> Result<Response<Body>, Error> {
    let segments = path::split_path(head.uri.path()).unwrap_or_default();
    let segs: Vec<&str> = segments.iter().map(AsRef::as_ref).collect();
    let wants_body = head.method == Method::POST;
    let request = match (wants_body, body) {
        (true, Some(b)) => read(b).await?,
        _ => Bytes::new(),
    };
    let Some(rpc) = rpc_for(&head.method, &segs, &request) else {
        return Ok(status_json(
            StatusCode::NOT_IMPLEMENTED,
            &format!(
                "{} {} has no gRPC call: the backend speaks gRPC",
                head.method,
                head.uri.path()
            ),
        ));
    };
    let (name, message) = match &rpc {
        Rpc::Flag(n, m) | Rpc::Json(n, m, _) | Rpc::Empty(n, m) => (*n, m.clone()),
    };
    let model = exchange.obs.model().to_owned();
    let out = grpc::call(
        name,
        vec![message.into()],
        trace_headers(&head.headers),
        Some(model).filter(|m| !m.is_empty()),
        true,
    )
    .map_err(|e| bad_reply(exchange, e.to_string()))?;
    let answer = backend::unary(exchange, out)
        .await?
        .map_err(|e| bad_reply(exchange, e.to_string()))?;
    let message = match answer {
        // Every model's statistics: those of the route's own models.
        Answer::Message(m) if segs == ["v2", "models", "stats"] => {
            stats::retain_grpc(config, exchange.route, &m)
                .map_err(|e| bad_reply(exchange, e.to_string()))?
        }
        Answer::Message(m) => m,
        Answer::Status { code, message } => {
            let status = StatusCode::from_u16(code.http()).unwrap_or(StatusCode::BAD_GATEWAY);
            exchange.obs.backend_status(status);
            // A flag a server cannot give is "not ready".
            if matches!(rpc, Rpc::Flag(..)) && code != Code::Unavailable {
                return Ok(flag(false));
            }
            return Ok(status_json(status, &message));
        }
    };
    Ok(match rpc {
        Rpc::Flag(name, _) => flag(flag_of(name, message)?),
        Rpc::Json(_, _, to_json) => {
            let json = to_json(&message).map_err(|e| bad_reply(exchange, e))?;
            json_ok(json)
        }
        Rpc::Empty(..) => Response::new(crate::http::body::empty()),
    })
}

/// The call for `method` and the decoded path's segments.
fn rpc_for(method: &Method, segs: &[&str], body: &Bytes) -> Option<Rpc> {
    let get = method == Method::GET;
    let post = method == Method::POST;
    let model =
        |name: &str, version: Option<&str>| (name.to_owned(), version.unwrap_or("").to_owned());
    Some(match segs {
        ["v2"] | ["v2", ""] if get => Rpc::Json(
            "ServerMetadata",
            pb::ServerMetadataRequest {}.encode_to_vec(),
            |m| {
                to_json(
                    m,
                    "inference.ServerMetadataResponse",
                    tr::server_metadata_to_json,
                )
            },
        ),
        ["v2", "health", "live"] if get => {
            Rpc::Flag("ServerLive", pb::ServerLiveRequest {}.encode_to_vec())
        }
        ["v2", "health", "ready"] if get => {
            Rpc::Flag("ServerReady", pb::ServerReadyRequest {}.encode_to_vec())
        }
        ["v2", "models", "stats"] if get => Rpc::Json(
            "ModelStatistics",
            pb::ModelStatisticsRequest::default().encode_to_vec(),
            |m| {
                to_json(
                    m,
                    "inference.ModelStatisticsResponse",
                    tr::model_statistics_to_json,
                )
            },
        ),
        ["v2", "repository", "index"] if post => {
            let ready = serde_json::from_slice::<Value>(body)
                .ok()
                .and_then(|v| v.get("ready").and_then(Value::as_bool))
                .unwrap_or(false);
            Rpc::Json(
                "RepositoryIndex",
                pb::RepositoryIndexRequest {
                    repository_name: String::new(),
                    ready,
                }
                .encode_to_vec(),
                |m| {
                    to_json(
                        m,
                        "inference.RepositoryIndexResponse",
                        tr::repository_index_to_json,
                    )
                },
            )
        }
        [
            "v2",
            "repository",
            "models",
            name,
            action @ ("load" | "unload"),
        ] if post => {
            let name = (*name).to_owned();
            if *action == "load" {
                Rpc::Empty(
                    "RepositoryModelLoad",
                    pb::RepositoryModelLoadRequest {
                        model_name: name,
                        ..Default::default()
                    }
                    .encode_to_vec(),
                )
            } else {
                Rpc::Empty(
                    "RepositoryModelUnload",
                    pb::RepositoryModelUnloadRequest {
                        model_name: name,
                        ..Default::default()
                    }
                    .encode_to_vec(),
                )
            }
        }
        ["v2", "models", name, rest @ ..] if get => {
            let (version, action) = match rest {
                ["versions", v, tail @ ..] => (Some(*v), tail),
                tail => (None, tail),
            };
            let (name, version) = model(name, version);
            match action {
                [] => Rpc::Json(
                    "ModelMetadata",
                    pb::ModelMetadataRequest { name, version }.encode_to_vec(),
                    |m| {
                        to_json(
                            m,
                            "inference.ModelMetadataResponse",
                            tr::model_metadata_to_json,
                        )
                    },
                ),
                ["ready"] => Rpc::Flag(
                    "ModelReady",
                    pb::ModelReadyRequest { name, version }.encode_to_vec(),
                ),
                ["config"] => Rpc::Json(
                    "ModelConfig",
                    pb::ModelConfigRequest { name, version }.encode_to_vec(),
                    |m| to_json(m, "inference.ModelConfigResponse", tr::model_config_to_json),
                ),
                ["stats"] => Rpc::Json(
                    "ModelStatistics",
                    pb::ModelStatisticsRequest { name, version }.encode_to_vec(),
                    |m| {
                        to_json(
                            m,
                            "inference.ModelStatisticsResponse",
                            tr::model_statistics_to_json,
                        )
                    },
                ),
                _ => return None,
            }
        }
        _ => return None,
    })
}

/// A backend's reply, checked on its wire form and decoded, as JSON.
fn to_json<M: Message + Default, E: std::fmt::Display>(
    message: &[u8],
    name: &'static str,
    write: fn(&M) -> Result<Vec<u8>, E>,
) -> Result<Vec<u8>, String> {
    if let Some(schema) = budget::schema(name) {
        budget::check(schema, message, &Caps::DEFAULT).map_err(|e| e.to_string())?;
    }
    let m = M::decode(message).map_err(|e| e.to_string())?;
    write(&m).map_err(|e| e.to_string())
}

fn flag_of(name: &str, message: Bytes) -> Result<bool, Error> {
    let ready = match name {
        "ServerLive" => pb::ServerLiveResponse::decode(message).map(|r| r.live),
        "ServerReady" => pb::ServerReadyResponse::decode(message).map(|r| r.ready),
        _ => pb::ModelReadyResponse::decode(message).map(|r| r.ready),
    };
    ready.map_err(|e| {
        InferError::BadReply {
            backend: String::new(),
            source: Box::new(crate::infer::backend::MalformedReply::Http {
                detail: e.to_string(),
            }),
        }
        .into()
    })
}

/// A ready / live answer as Triton's HTTP endpoints give it: 200, or 400.
fn flag(ready: bool) -> Response<Body> {
    let mut resp = Response::new(crate::http::body::empty());
    *resp.status_mut() =
        StatusCode::from_u16(tr::status_from_ready(ready)).unwrap_or(StatusCode::BAD_REQUEST);
    resp
}

fn json_ok(json: Vec<u8>) -> Response<Body> {
    let mut resp = Response::new(full(json));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

fn status_json(status: StatusCode, message: &str) -> Response<Body> {
    crate::http::body::json_response(status, error_body(message))
}

fn bad_reply(exchange: Exchange<'_>, detail: String) -> InferError {
    InferError::BadReply {
        backend: exchange.upstream.name().to_owned(),
        source: Box::new(crate::infer::backend::MalformedReply::Http { detail }),
    }
}

/// A small request body, whole (at most [`MAX_BODY`] bytes).
async fn read(mut body: Body) -> Result<Bytes, Error> {
    use http_body_util::BodyExt;
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError::Broken {
            detail: e.to_string(),
        })?;
        if let Ok(data) = frame.into_data() {
            out.extend_from_slice(&data);
            if out.len() as u64 > MAX_BODY {
                return Err(BodyError::TooLarge {
                    route: String::new(),
                    limit: MAX_BODY,
                }
                .into());
            }
        }
    }
    Ok(out.into())
}
