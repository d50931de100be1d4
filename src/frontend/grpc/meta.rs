//! The calls that are not inference: the call's message read (its model,
//! when it names one, binds the route), handed to the core as the gRPC
//! call it is ([`calls`](crate::infer::calls)), and the answer written
//! back: a gRPC backend's message or status as they came, or the neutral
//! reply of a backend that speaks HTTP as this call's reply message.

use bytes::Bytes;
use http::Response;

use super::message::{self, GrpcError};
use super::{Method, Read, status};
use crate::codec::grpc::frame;
use crate::codec::grpc::proto::inference as pb;
use crate::error::Error;
use crate::frontend::{Call, Target};
use crate::http::body::Body;
use crate::http::headers::trace_headers;
use crate::infer::calls::{self, Answer, GrpcAnswer, Origin};
use crate::infer::route::RouteError;

/// Serves a call other than `ModelInfer` and health.
pub(super) async fn serve(method: Method, call: Call<'_, Read>) -> Result<Response<Body>, Error> {
    let Call {
        head,
        body,
        target,
        config,
        named,
        ..
    } = call;
    // A server-wide call the head bound; one naming a model, its message.
    let (exchange, bytes) = match (target, named) {
        (Target::Bound { exchange, .. }, Some(Read::Message(bytes, body))) => {
            drop(body);
            (exchange, bytes)
        }
        (Target::Bound { exchange, .. }, None) => {
            let mut body = body.into_read()?;
            let limits = message::limits(&head.headers, body.limit())?;
            (exchange, message::read_one(&mut body, limits).await?)
        }
        _ => {
            return Err(RouteError::Internal {
                what: "a backend call came without a route".into(),
            }
            .into());
        }
    };
    let name = model_named(method, &bytes)?;
    let call = calls::Call {
        all_stats: method == Method::ModelStatistics && name.as_deref() == Some(""),
        origin: Origin::Grpc {
            method: method.name(),
            message: bytes,
            headers: trace_headers(&head.headers),
            idempotent: method.control().is_none(),
        },
    };
    let reply: Bytes = match crate::infer::backend::call(exchange, config, call).await? {
        Answer::Grpc(GrpcAnswer::Message(m)) => m,
        Answer::Grpc(GrpcAnswer::Status { code, message }) | Answer::Refused { code, message } => {
            return Err(GrpcError::Backend { code, message }.into());
        }
        Answer::Translated(translated) => {
            let (op, reply) = *translated;
            reply.to_message(&op).into()
        }
        Answer::Http(_) => {
            return Err(RouteError::Internal {
                what: "a gRPC call was answered in HTTP".into(),
            }
            .into());
        }
    };
    let framed = frame::encode(vec![reply]).map_err(|e| GrpcError::Translate {
        what: "reply",
        reason: e.to_string(),
    })?;
    Ok(status::reply(framed))
}

/// The model a call's message names (empty when it names none; `None`
/// for a call that never names one).
pub(super) fn model_named(method: Method, bytes: &Bytes) -> Result<Option<String>, GrpcError> {
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
