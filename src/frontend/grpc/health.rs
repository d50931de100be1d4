//! `grpc.health.v1.Health` for the gateway itself, so that Kubernetes'
//! native gRPC probes work: `Check` answers SERVING while the gateway is
//! ready (the service `""`), or while the route of that name is ready (a
//! route's name as the service), NOT_SERVING otherwise, and NOT_FOUND for a
//! service it does not know; `Watch` sends the status, then every change,
//! until the client goes. Readiness is what `/readyz` and each route's
//! replicas say (`gateway::readiness`). Never routed, never authenticated,
//! never shed: a probe refused would have the platform restart a healthy
//! gateway.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Response};
use prost::Message;

use super::message::{self, GrpcError};
use super::status::{self, Code};
use super::{Method, Read, Target};
use crate::codec::grpc::frame;
use crate::codec::grpc::proto::health::health_check_response::ServingStatus;
use crate::codec::grpc::proto::health::{HealthCheckRequest, HealthCheckResponse};
use crate::error::Error;
use crate::frontend::{Call, Health};
use crate::guard::clients::ClientSlot;
use crate::http::body::{Body, BoxError, ChannelBody};

/// How often `Watch` looks at readiness again.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// Serves `Check` or `Watch`.
pub(super) async fn serve(method: Method, call: Call<'_, Read>) -> Result<Response<Body>, Error> {
    let Target::Gateway {
        health,
        watch: slot,
    } = call.target
    else {
        return Err(GrpcError::Unimplemented("health", "no health source").into());
    };
    let mut body = call.body.into_read()?;
    let limits = message::limits(&call.head.headers, body.limit())?;
    let bytes = message::read_one(&mut body, limits).await?;
    let request: HealthCheckRequest = message::decode(bytes, "HealthCheckRequest")?;
    let service = request.service;
    let Some(ready) = health.ready(&service) else {
        return Ok(status::status_only(
            Code::NotFound,
            &format!("unknown service {service:?}"),
        ));
    };
    if method == Method::HealthCheck {
        let framed = frame::encode(vec![encode(ready)]).map_err(|e| GrpcError::Translate {
            what: "health reply",
            reason: e.to_string(),
        })?;
        return Ok(status::reply(framed));
    }
    Ok(watch(health, service, ready, slot))
}

fn encode(ready: bool) -> Bytes {
    let status = if ready {
        ServingStatus::Serving
    } else {
        ServingStatus::NotServing
    };
    Bytes::from(
        HealthCheckResponse {
            status: status as i32,
        }
        .encode_to_vec(),
    )
}

/// A `Watch` stream: the status now, then each change; `slot` (its
/// place among its client's watches) held until it ends.
fn watch(health: Health, service: String, first: bool, slot: Option<ClientSlot>) -> Response<Body> {
    let (tx, body) = ChannelBody::new(1);
    tokio::spawn(async move {
        let _slot = slot;
        let mut last = None;
        let mut current = Some(first);
        loop {
            let ready = current.unwrap_or(false);
            if last != Some(ready) {
                let Ok(framed) = frame::encode(vec![encode(ready)]) else {
                    break;
                };
                for piece in framed {
                    if tx.send(Ok(piece)).await.is_err() {
                        return; // the client went
                    }
                }
                last = Some(ready);
            }
            tokio::select! {
                () = tokio::time::sleep(WATCH_EVERY) => {}
                () = tx.closed() => return,
            }
            current = health.ready(&service);
        }
        let _ = tx
            .send(Err::<Bytes, BoxError>("health watch ended".into()))
            .await;
    });
    let mut resp = Response::new(http_body_util::BodyExt::boxed_unsync(body));
    let mut h = HeaderMap::new();
    h.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(status::CONTENT_TYPE),
    );
    *resp.headers_mut() = h;
    resp
}
