//! `ModelInfer`: the request message read and decoded (raw contents stay
//! slices of it), its model's route bound, its tensors checked against the
//! route's rules, sent through the core as every frontend's infer is, and
//! the reply written back as a `ModelInferResponse` whose raw output
//! contents are slices of the backend's reply.

use std::time::Instant;

use bytes::Bytes;
use http::Response;

use super::message::{self, GrpcError};
use super::status;
use crate::codec::grpc::proto::inference::ModelInferRequest;
use crate::codec::grpc::{self, budget, frame};
use crate::error::Error;
use crate::frontend::{Call, Target};
use crate::http::body::Body;
use crate::http::headers::trace_headers;
use crate::infer::call::InferCall;
use crate::infer::checks::{check_request, doc_limits, grpc_caps};
use crate::infer::route::{self, RouteError};
use crate::infer::{InferRequest, ModelRef, TensorData};
use crate::observe::Direction;

/// Serves one `ModelInfer` call.
pub async fn serve(call: Call<'_>) -> Result<Response<Body>, Error> {
    let Target::Deferred { services } = call.target else {
        return Err(RouteError::Internal {
            what: "a ModelInfer call came bound before its message was read".into(),
        }
        .into());
    };
    let (head, obs) = (call.head, call.obs);
    let mut body = call.body.into_read()?;
    let limits = message::limits(&head.headers, body.limit())?;
    let bytes = message::read_one(&mut body, limits).await?;
    let started = Instant::now();
    // Bound from the model it names, read off its top level: nothing of
    // it is decoded before its caller is checked and it is within its
    // route's limits.
    let (model_name, _) = budget::model_of_request(&bytes).map_err(GrpcError::from)?;
    let config = services.config();
    let route = route::for_model(config, model_name, |_| true)?;
    let exchange = services.bind(route, model_name, &head, obs).await?;
    // Counted under the route, now that it is known.
    drop(body);
    message::within_route(route, &bytes)?;
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
