//! A backend that speaks V2 over HTTP (`http://`, `https://`): an infer
//! request goes to `/v2/models/{model}[/versions/{v}]/infer` (the path
//! from the request's [`ModelRef`], never from the client's path) in the
//! route's wire format — binary, with the JSON header's length in
//! `Inference-Header-Content-Length`, or JSON — and its reply is read as
//! it streams; a non-2xx reply is the backend refusing the request.

use std::time::Instant;

use bytes::Bytes;
use http::HeaderMap;
use http_body_util::{BodyExt, Limited};

use super::request::{self, RequestBody};
use super::{BackendReply, Sent, Wire, refused};
use crate::codec::v2::Document;
use crate::config::WireFormat;
use crate::cpu::{OFF_THREAD_BYTES, off_thread};
use crate::infer::metadata::{MetadataError, ModelMetadata};
use crate::infer::{Exchange, InferError, ModelRef, TensorData};
use crate::observe::Metered;
use crate::upstream::{Outgoing, Upstream, UpstreamBody};

/// Most bytes of a metadata reply the gateway reads.
const MAX_METADATA_BYTES: usize = 1 << 20;

/// V2 over HTTP.
#[derive(Debug)]
pub struct Http;

impl Wire for Http {
    /// Writing a large request as JSON (for a JSON backend) happens on a
    /// blocking thread.
    async fn build(
        exchange: Exchange<'_>,
        _model: &ModelRef,
        header: Document,
        data: Vec<TensorData>,
    ) -> Result<RequestBody, InferError> {
        let format = exchange.route.backend_format;
        let size: u64 = data.iter().map(TensorData::len).sum();
        if format == WireFormat::Json && size >= OFF_THREAD_BYTES {
            let route = exchange.route.name.clone();
            off_thread(move || request::build(&route, header, data, format)).await
        } else {
            request::build(&exchange.route.name, header, data, format)
        }
    }

    fn build_raw(_exchange: Exchange<'_>, raw: Bytes) -> Result<RequestBody, InferError> {
        Ok(RequestBody {
            chunks: vec![raw],
            header_len: Some(0),
            content_type: "application/octet-stream",
        })
    }

    fn target(model: &ModelRef, _headers: &mut HeaderMap) -> String {
        model.infer_path()
    }

    async fn answer(
        exchange: Exchange<'_>,
        parts: http::response::Parts,
        body: Metered<UpstreamBody>,
        deadline: Instant,
    ) -> Result<Sent, InferError> {
        if !parts.status.is_success() {
            return Ok(refused(exchange, parts, body));
        }
        let body = super::BackendBody::Wire(body);
        BackendReply::new(exchange, parts, body, deadline).map(|r| Sent::Reply(Box::new(r)))
    }

    fn sends_early() -> bool {
        true
    }

    /// `GET /v2/models/{name}[/versions/{v}]`.
    async fn metadata(
        upstream: &Upstream,
        model: &ModelRef,
    ) -> Result<ModelMetadata, MetadataError> {
        let mut req = Outgoing::get(model.path());
        req.model = Some(model.name.clone());
        let resp = upstream.send(req, None).await?;
        let status = resp.status();
        let invalid = |detail: String| MetadataError::Invalid {
            backend: upstream.name().to_owned(),
            model: model.name.clone(),
            detail,
        };
        let body = Limited::new(resp.into_body(), MAX_METADATA_BYTES)
            .collect()
            .await
            .map_err(|e| invalid(format!("reading the reply failed: {e}")))?
            .to_bytes();
        if !status.is_success() {
            return Err(MetadataError::NotFound {
                backend: upstream.name().to_owned(),
                model: model.name.clone(),
                status,
            });
        }
        ModelMetadata::parse(&body).map_err(invalid)
    }
}
