//! Active health checks. Every `health_interval` (and at once when a
//! replica or a followed model appears), each replica is asked
//! `GET /v2/health/ready`; its verdict changes after `healthy_threshold` /
//! `unhealthy_threshold` results in a row. A replica that answers at all is
//! then asked `GET /v2/models/{m}/ready` for each followed model; that
//! answer is the server's own word on the model and counts at once (a
//! model unloaded from one Triton stops getting requests there within one
//! interval). A check that gets no answer changes no model's state.

use std::sync::{Arc, Weak};
use std::time::Duration;

use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;

use super::grpc;
use super::models::Followed;
use super::{Inner, Replica, now_ms};
use crate::codec::v2::path::model_base;
use crate::config::Backend;
use crate::config::Protocol;
use crate::http::body::BoxError;
use crate::http::body::empty;
use http::HeaderMap;

/// Most bytes of a check's reply read (and dropped) so the connection
/// can be reused.
const MAX_CHECK_BODY: usize = 4096;

/// Model checks in flight at once on one replica.
const MODEL_CHECKS_AT_ONCE: usize = 8;

/// Runs rounds of checks until the upstream is gone.
pub(super) async fn run(inner: Weak<Inner>, wake: Arc<Notify>, interval: Duration) {
    loop {
        {
            let Some(inner) = inner.upgrade() else {
                return;
            };
            round(&inner).await;
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = wake.notified() => {}
        }
    }
}

/// One round over every replica, concurrently.
async fn round(inner: &Inner) {
    let models: Arc<[Arc<Followed>]> = inner.models.to_check().into();
    let mut checks = JoinSet::new();
    for r in inner.set.snapshot().iter() {
        let (r, models, backend) = (r.clone(), models.clone(), inner.backend.clone());
        checks.spawn(async move { check_replica(&backend, &r, &models).await });
    }
    while checks.join_next().await.is_some() {}
}

async fn check_replica(backend: &Arc<Backend>, r: &Arc<Replica>, models: &[Arc<Followed>]) {
    let cfg = &backend.health;
    let status = probe(backend, r, Probe::Server).await;
    let passed = status.is_some_and(|s| s.is_success());
    if let Some(up) = r.health.checked(passed, cfg) {
        if up {
            tracing::info!(
                backend = backend.name,
                replica = r.label,
                "replica healthy again"
            );
        } else {
            tracing::warn!(
                backend = backend.name,
                replica = r.label,
                status = status.map(|s| s.as_u16()),
                checks = cfg.unhealthy_threshold,
                "replica unhealthy: its readiness checks failed"
            );
        }
    }
    r.health.show(now_ms(), r.series.as_ref());
    // Any answer means the server is there to ask about its models: Triton
    // answers 400 to the server check for about a second while it unloads
    // a model, and that is when the model's own answer matters most.
    if status.is_none() {
        return;
    }
    let at_once = Arc::new(Semaphore::new(MODEL_CHECKS_AT_ONCE));
    let mut checks = JoinSet::new();
    for t in models {
        let (t, r, at_once) = (t.clone(), r.clone(), at_once.clone());
        let backend = backend.clone();
        checks.spawn(async move {
            let _turn = at_once.acquire_owned().await;
            let Some(status) = probe(&backend, &r, Probe::Model(&t.name)).await else {
                return;
            };
            let ready = status.is_success();
            if r.model_state(t.slot) != Some(ready) {
                tracing::info!(
                    backend = backend.name,
                    replica = r.label,
                    model = t.name,
                    ready,
                    "model readiness changed"
                );
                r.set_model(t.slot, Some(ready));
            }
        });
    }
    while checks.join_next().await.is_some() {}
}

/// What a check asks.
#[derive(Clone, Copy, Debug)]
enum Probe<'a> {
    /// Whether the server is ready.
    Server,
    /// Whether the model of this name is ready.
    Model(&'a str),
}

/// The check on the replica within the check timeout: its status (for a
/// gRPC backend, the one its answer stands for), or `None` when no answer
/// came.
async fn probe(backend: &Backend, r: &Replica, what: Probe<'_>) -> Option<StatusCode> {
    let limit = backend.health.timeout;
    let answered = match backend.protocol() {
        Protocol::Grpc => tokio::time::timeout(limit, probe_grpc(r, what)).await,
        Protocol::Http => tokio::time::timeout(limit, probe_http(r, what)).await,
    };
    answered.ok().flatten()
}

/// `GET /v2/health/ready` or `/v2/models/{m}/ready` on an HTTP replica:
/// its status.
async fn probe_http(r: &Replica, what: Probe<'_>) -> Option<StatusCode> {
    let path = match what {
        Probe::Server => "/v2/health/ready".to_owned(),
        Probe::Model(name) => format!("{}/ready", model_base(name, None)),
    };
    let mut req = Request::new(empty());
    *req.method_mut() = Method::GET;
    *req.uri_mut() = r.target(&path);
    req.headers_mut().insert(header::HOST, r.host().clone());
    let resp = r.request(req, None).await.ok()?;
    let status = resp.status();
    // Read what little there is, so the connection can be reused.
    let _ = Limited::new(resp.into_body(), MAX_CHECK_BODY)
        .collect()
        .await;
    Some(status)
}

/// `ServerReady` or `ModelReady` on a gRPC replica: 200 when it says
/// ready, 503 when it says not, the status a refusal stands for (an
/// unknown model: 404).
async fn probe_grpc(r: &Replica, what: Probe<'_>) -> Option<StatusCode> {
    use prost::Message;

    use crate::codec::grpc::proto::inference as pb;
    let (method, message) = match what {
        Probe::Server => ("ServerReady", pb::ServerReadyRequest {}.encode_to_vec()),
        Probe::Model(name) => (
            "ModelReady",
            pb::ModelReadyRequest {
                name: name.to_owned(),
                version: String::new(),
            }
            .encode_to_vec(),
        ),
    };
    let out = grpc::call(method, vec![message.into()], HeaderMap::new(), None, true).ok()?;
    let mut req = Request::new(
        crate::http::body::ChunksBody::new(match out.body {
            super::OutBody::Chunks(c) => c,
            _ => Vec::new(),
        })
        .boxed(),
    );
    *req.method_mut() = Method::POST;
    *req.uri_mut() = r.uri_for(&out.path);
    *req.headers_mut() = out.headers;
    let resp = r.request(req, None).await.ok()?;
    let (parts, body) = resp.into_parts();
    let mut body = body.map_err(BoxError::from).boxed_unsync();
    let answer = grpc::read_answer(&parts.headers, &mut body, MAX_CHECK_BODY as u64)
        .await
        .ok()?;
    let ready = match answer {
        grpc::Answer::Status { code, .. } => return StatusCode::from_u16(code.http()).ok(),
        grpc::Answer::Message(m) => match what {
            Probe::Server => pb::ServerReadyResponse::decode(m).ok()?.ready,
            Probe::Model(_) => pb::ModelReadyResponse::decode(m).ok()?.ready,
        },
    };
    Some(if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    })
}
