//! The calls that are not inference, answered from the backend: each
//! becomes its V2 HTTP twin (`ServerReady` is `GET /v2/health/ready`,
//! `ModelMetadata` is `GET /v2/models/{m}[/versions/{v}]`, ...) and the
//! backend's JSON is translated into the reply message. A backend's error
//! status comes back as the gRPC status it stands for, with its message.
//! Shared-memory, trace and log settings calls have no translation: they
//! answer UNIMPLEMENTED (after the route's `allow_control` said yes).

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method as HttpMethod, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use prost::Message;
use serde_json::{Map, Value, json};

use super::message::{self, GrpcError};
use super::{Method, allowed, status};
use crate::codec::grpc::frame;
use crate::codec::grpc::json as tr;
use crate::codec::grpc::proto::inference as pb;
use crate::codec::v2::path::model_base;
use crate::config::Protocol;
use crate::error::Error;
use crate::frontend::{Call, Target};
use crate::http::body::Body;
use crate::http::headers::trace_headers;
use crate::infer::route::{self, RouteError};
use crate::infer::{Exchange, InferError, backend, stats};
use crate::upstream::grpc::{self as upstream_grpc, Answer};
use crate::upstream::{OutBody, Outgoing};

/// Serves a call other than `ModelInfer` and health.
pub async fn serve(method: Method, call: Call<'_>) -> Result<Response<Body>, Error> {
    let Call {
        head,
        body,
        obs,
        target,
        config,
        ..
    } = call;
    let mut body = body.into_read()?;
    let limits = message::limits(&head.headers, body.limit())?;
    let bytes = message::read_one(&mut body, limits).await?;
    let forwarded = trace_headers(&head.headers);
    let (exchange, bytes) = match target {
        Target::Bound { exchange, .. } => (exchange, bytes),
        Target::Deferred { services } => {
            let name = model_named(method, &bytes)?;
            let config = services.config();
            let route = match name.as_deref() {
                Some(n) if !n.is_empty() => route::for_model(config, n, |_| true)?,
                _ => route::for_path(config, None, head.uri.path())?,
            };
            let exchange = services
                .bind(route, name.as_deref().unwrap_or(""), &head, obs)
                .await?;
            allowed(Some(method), route)?;
            (exchange, bytes)
        }
        Target::Gateway { .. } => {
            return Err(RouteError::Internal {
                what: "a backend call came without a route".into(),
            }
            .into());
        }
    };
    drop(body);
    let all_stats = method == Method::ModelStatistics
        && model_named(method, &bytes)?.is_some_and(|n| n.is_empty());
    let mut reply = answer(method, exchange, bytes, forwarded).await?;
    if all_stats {
        // Every model's statistics: those of the route's own models.
        reply = stats::retain_grpc(config, exchange.route, &reply).map_err(|e| {
            GrpcError::Translate {
                what: "model statistics",
                reason: e.to_string(),
            }
        })?;
    }
    let framed = frame::encode(vec![reply]).map_err(|e| GrpcError::Translate {
        what: "reply",
        reason: e.to_string(),
    })?;
    Ok(status::reply(framed))
}

/// The model a call's message names.
fn model_named(method: Method, bytes: &Bytes) -> Result<Option<String>, GrpcError> {
    let b = bytes.clone();
    Ok(Some(match method {
        Method::ModelReady => {
            message::decode_small::<pb::ModelReadyRequest>(b, "ModelReadyRequest")?.name
        }
        Method::ModelMetadata => {
            message::decode_small::<pb::ModelMetadataRequest>(b, "ModelMetadataRequest")?.name
        }
        Method::ModelConfig => {
            message::decode_small::<pb::ModelConfigRequest>(b, "ModelConfigRequest")?.name
        }
        Method::ModelStatistics => {
            message::decode_small::<pb::ModelStatisticsRequest>(b, "ModelStatisticsRequest")?.name
        }
        Method::RepositoryModelLoad => {
            message::decode_small::<pb::RepositoryModelLoadRequest>(
                b,
                "RepositoryModelLoadRequest",
            )?
            .model_name
        }
        Method::RepositoryModelUnload => {
            message::decode_small::<pb::RepositoryModelUnloadRequest>(
                b,
                "RepositoryModelUnloadRequest",
            )?
            .model_name
        }
        _ => return Ok(None),
    }))
}

/// The reply message for `method`, from the backend's V2 HTTP twin.
async fn answer(
    method: Method,
    exchange: Exchange<'_>,
    bytes: Bytes,
    headers: HeaderMap,
) -> Result<Bytes, Error> {
    if exchange.upstream.backend.protocol() == Protocol::Grpc {
        return forward(method, exchange, bytes, headers).await;
    }
    let get = Twin::get;
    let reply: Vec<u8> = match method {
        Method::ServerLive => {
            let (status, _) = fetch(exchange, get("/v2/health/live".into()), headers).await?;
            pb::ServerLiveResponse {
                live: tr::ready_from_status(status.as_u16()),
            }
            .encode_to_vec()
        }
        Method::ServerReady => {
            let (status, _) = fetch(exchange, get("/v2/health/ready".into()), headers).await?;
            pb::ServerReadyResponse {
                ready: tr::ready_from_status(status.as_u16()),
            }
            .encode_to_vec()
        }
        Method::ModelReady => {
            let m: pb::ModelReadyRequest = message::decode_small(bytes, "ModelReadyRequest")?;
            let path = format!("{}/ready", model_path(&m.name, &m.version));
            let (status, _) = fetch(exchange, get(path), headers).await?;
            pb::ModelReadyResponse {
                ready: tr::ready_from_status(status.as_u16()),
            }
            .encode_to_vec()
        }
        Method::ServerMetadata => {
            let body = fetch_ok(exchange, get("/v2".into()), headers).await?;
            translate("server metadata", tr::server_metadata_from_json(&body))?
        }
        Method::ModelMetadata => {
            let m: pb::ModelMetadataRequest = message::decode_small(bytes, "ModelMetadataRequest")?;
            let body = fetch_ok(exchange, get(model_path(&m.name, &m.version)), headers).await?;
            translate("model metadata", tr::model_metadata_from_json(&body))?
        }
        Method::ModelConfig => {
            let m: pb::ModelConfigRequest = message::decode_small(bytes, "ModelConfigRequest")?;
            let path = format!("{}/config", model_path(&m.name, &m.version));
            let body = fetch_ok(exchange, get(path), headers).await?;
            translate("model configuration", tr::model_config_from_json(&body))?
        }
        Method::ModelStatistics => {
            let m: pb::ModelStatisticsRequest =
                message::decode_small(bytes, "ModelStatisticsRequest")?;
            let path = if m.name.is_empty() {
                "/v2/models/stats".to_owned()
            } else {
                format!("{}/stats", model_path(&m.name, &m.version))
            };
            let body = fetch_ok(exchange, get(path), headers).await?;
            translate("model statistics", tr::model_statistics_from_json(&body))?
        }
        Method::RepositoryIndex => {
            let m: pb::RepositoryIndexRequest =
                message::decode_small(bytes, "RepositoryIndexRequest")?;
            let mut path = "/v2/repository".to_owned();
            if !m.repository_name.is_empty() {
                path.push('/');
                crate::codec::v2::path::encode_segment(&m.repository_name, &mut path);
            }
            path.push_str("/index");
            let twin = Twin::post(path, json!({ "ready": m.ready }));
            let body = fetch_ok(exchange, twin, headers).await?;
            translate("repository index", tr::repository_index_from_json(&body))?
        }
        Method::RepositoryModelLoad | Method::RepositoryModelUnload => {
            let (name, parameters, action) = if method == Method::RepositoryModelLoad {
                let m: pb::RepositoryModelLoadRequest =
                    message::decode_small(bytes, "RepositoryModelLoadRequest")?;
                (m.model_name, m.parameters, "load")
            } else {
                let m: pb::RepositoryModelUnloadRequest =
                    message::decode_small(bytes, "RepositoryModelUnloadRequest")?;
                (m.model_name, m.parameters, "unload")
            };
            let mut path = "/v2/repository/models/".to_owned();
            crate::codec::v2::path::encode_segment(&name, &mut path);
            path.push('/');
            path.push_str(action);
            let twin = Twin::post(
                path,
                json!({ "parameters": repository_parameters(&parameters) }),
            );
            fetch_ok(exchange, twin, headers).await?;
            Vec::new()
        }
        _ => {
            return Err(GrpcError::Unimplemented(
                "this call",
                "shared-memory, trace and log settings calls are not translated to an HTTP backend",
            )
            .into());
        }
    };
    Ok(Bytes::from(reply))
}

/// The call as it came, to a backend that speaks gRPC: its reply message
/// as the backend wrote it (nothing of a `ModelConfig` is lost to a
/// translation), its status as it is.
async fn forward(
    method: Method,
    exchange: Exchange<'_>,
    bytes: Bytes,
    headers: HeaderMap,
) -> Result<Bytes, Error> {
    let read_only = method.control().is_none();
    let model = Some(exchange.obs.model().to_owned()).filter(|m| !m.is_empty());
    let out = upstream_grpc::call(method.name(), vec![bytes], headers, model, read_only).map_err(
        |e| GrpcError::Translate {
            what: "call",
            reason: e.to_string(),
        },
    )?;
    let answer = backend::unary(exchange, out)
        .await?
        .map_err(|e| GrpcError::Translate {
            what: "reply",
            reason: e.to_string(),
        })?;
    match answer {
        Answer::Message(m) => Ok(m),
        Answer::Status { code, message } => Err(GrpcError::Backend { code, message }.into()),
    }
}

/// `/v2/models/{name}[/versions/{v}]`.
fn model_path(name: &str, version: &str) -> String {
    model_base(name, Some(version).filter(|v| !v.is_empty()))
}

/// Repository parameters as the HTTP endpoint takes them.
fn repository_parameters(
    parameters: &std::collections::BTreeMap<String, pb::ModelRepositoryParameter>,
) -> Value {
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

fn translate(what: &'static str, r: Result<impl Message, tr::JsonError>) -> Result<Vec<u8>, Error> {
    r.map(|m| m.encode_to_vec()).map_err(|e| {
        GrpcError::Translate {
            what,
            reason: e.to_string(),
        }
        .into()
    })
}

/// A V2 HTTP request standing for a call.
struct Twin {
    method: HttpMethod,
    path: String,
    body: Option<Value>,
}

impl Twin {
    fn get(path: String) -> Twin {
        Twin {
            method: HttpMethod::GET,
            path,
            body: None,
        }
    }

    fn post(path: String, body: Value) -> Twin {
        Twin {
            method: HttpMethod::POST,
            path,
            body: Some(body),
        }
    }
}

/// Sends the twin; the status and the body (bounded by the route's
/// `max_response_bytes`).
async fn fetch(
    exchange: Exchange<'_>,
    twin: Twin,
    mut headers: HeaderMap,
) -> Result<(StatusCode, Bytes), Error> {
    let upstream = exchange.upstream;
    let body = match twin.body {
        Some(v) => {
            let bytes = Bytes::from(serde_json::to_vec(&v).unwrap_or_default());
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
            OutBody::Chunks(vec![bytes])
        }
        None => OutBody::Empty,
    };
    let out = Outgoing {
        method: twin.method,
        path: twin.path,
        headers,
        body,
        model: Some(exchange.obs.model().to_owned()).filter(|m| !m.is_empty()),
        idempotent: false,
        deadline: exchange.obs.deadline(),
    };
    let sent = std::time::Instant::now();
    let resp = upstream
        .send(out, Some(exchange.obs.watch()))
        .await
        .map_err(InferError::from)?;
    exchange.obs.upstream_first_byte(sent.elapsed());
    exchange.obs.backend_status(resp.status());
    let (parts, body) = resp.into_parts();
    let body = exchange.obs.backend_body(body, sent);
    let limit = usize::try_from(exchange.route.limits.max_response_bytes).unwrap_or(usize::MAX);
    let bytes = Limited::new(body, limit)
        .collect()
        .await
        .map_err(|e| upstream.body_error(&*e))
        .map_err(InferError::from)?
        .to_bytes();
    Ok((parts.status, bytes))
}

/// Sends the twin; a non-2xx status is the backend refusing the call.
async fn fetch_ok(exchange: Exchange<'_>, twin: Twin, headers: HeaderMap) -> Result<Bytes, Error> {
    let (status, body) = fetch(exchange, twin, headers).await?;
    if status.is_success() {
        return Ok(body);
    }
    let message = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&body).trim().to_owned());
    Err(InferError::Refused {
        backend: exchange.upstream.name().to_owned(),
        origin: crate::error::Origin::Http(status),
        message,
    }
    .into())
}
