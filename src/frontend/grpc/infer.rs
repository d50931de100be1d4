//! `ModelInfer`: the request message read and decoded (raw contents stay
//! slices of it), its model's route bound, its tensors checked against the
//! route's rules, sent through the core as every frontend's infer is, and
//! the reply written back as a `ModelInferResponse` whose raw output
//! contents are slices of the backend's reply.

use std::time::Instant;

use bytes::Bytes;
use http::Response;

use super::message::{self, GrpcError};
use super::{Read, status};
use crate::codec::grpc::proto::inference::ModelInferRequest;
use crate::codec::grpc::{self, budget, frame};
use crate::error::Error;
use crate::frontend::{Call, Target};
use crate::http::body::Body;
use crate::http::headers::trace_headers;
use crate::infer::call::InferCall;
use crate::infer::checks::{check_request, doc_limits, grpc_caps};
use crate::infer::route::RouteError;
use crate::infer::{InferRequest, ModelRef, TensorData};
use crate::observe::Direction;

/// Serves one `ModelInfer` call.
pub(super) async fn serve(call: Call<'_, Read>) -> Result<Response<Body>, Error> {
    let (Target::Bound { exchange, .. }, Some(Read::Message(bytes, body))) =
        (call.target, call.named)
    else {
        return Err(RouteError::Internal {
            what: "a ModelInfer call came without its message".into(),
        }
        .into());
    };
    let (head, obs) = (call.head, call.obs);
    let started = Instant::now();
    // Counted under the route, now that it is known.
    drop(body);
    let route = exchange.route;
    let request: ModelInferRequest =
        message::decode_within(bytes, &budget::MODEL_INFER_REQUEST, &grpc_caps(route))?;
    let version = Some(request.model_version.clone()).filter(|v| !v.is_empty());
    let v2 = grpc::request_to_v2(request, &doc_limits(route)).map_err(GrpcError::from)?;
    let model = ModelRef {
        name: v2.model_name,
        version,
    };
    check_request(route, &v2.header)?;
    let data = v2
        .header
        .tensors
        .iter()
        .zip(v2.data)
        .map(|(t, pieces)| match t.data {
            crate::codec::v2::EntryData::SharedMemory => TensorData::SharedMemory,
            _ => TensorData::Pieces(pieces),
        })
        .collect();
    let req = InferRequest {
        model: model.clone(),
        header: v2.header,
        data,
    };
    let reply = InferCall::new(exchange, trace_headers(&head.headers), started)
        .collect(req)
        .await?;
    let converting = Instant::now();
    let data: Vec<Vec<Bytes>> = reply.data.iter().map(|d| d.pieces().to_vec()).collect();
    let pieces = grpc::encode_response(&reply.header, &data).map_err(GrpcError::from)?;
    let framed = frame::encode(pieces).map_err(|e| GrpcError::Translate {
        what: "reply",
        reason: e.to_string(),
    })?;
    obs.translation(Direction::Response, converting.elapsed());
    Ok(status::reply(framed))
}
