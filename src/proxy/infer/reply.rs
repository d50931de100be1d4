//! Turning the backend's reply into the one the client asked for.
//!
//! - errors (non-2xx) pass through untouched;
//! - every output binary, as the client wants: the backend's bytes pass
//!   through as they stream;
//! - every output JSON: streamed as JSON while the backend's bytes arrive
//!   ([`JsonReplyBody`]), unless a BYTES output must be checked for UTF-8
//!   first;
//! - otherwise (mixed, or a JSON backend answering a binary client) the
//!   reply is assembled whole, bounded by `max_response_bytes`, because its
//!   `Inference-Header-Content-Length` depends on every JSON value in it.

use std::time::Instant;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{HeaderMap, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::json_reply::JsonReplyBody;
use super::prefs::OutputPrefs;
use crate::codec::v2::framing::{self, ChunkSplitter, FramingError, HeaderReader, IHCL_HEADER};
use crate::codec::v2::json_write::{DocWriter, TensorForm, ValueWriter};
use crate::codec::v2::{DocKind, DocLimits, DocParser, Document, EntryData};
use crate::config::{Route, WireFormat};
use crate::proxy::body::{Body, ChunksBody, PrefixedBody, full};
use crate::proxy::client_body::concat;
use crate::proxy::encoding::{Coding, CompressBody, compress};
use crate::proxy::error::GatewayError;
use crate::proxy::headers::{strip_body_headers, strip_hop_by_hop};
use crate::proxy::observe::{Metered, Observation};
use crate::proxy::upstream::Upstream;
use crate::rules::Side;
use crate::tensor::DataType;

/// How the client framed its request, which decides how binary replies are
/// labelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientFraming {
    /// `Inference-Header-Content-Length` (or plain JSON).
    Standard,
    /// `application/vnd.sagemaker-triton.binary+json;json-header-size=N`.
    SageMaker,
    /// A raw binary request (`Inference-Header-Content-Length: 0`): the
    /// reply is passed through as the backend sends it.
    Raw,
}

/// Everything reply translation needs to know about the exchange.
#[derive(Debug)]
pub struct ReplyPlan<'a> {
    pub route: &'a Route,
    pub upstream: &'a Upstream,
    pub prefs: &'a OutputPrefs,
    pub coding: Coding,
    pub framing: ClientFraming,
    /// Until when the backend may take to deliver what must be buffered.
    pub deadline: Instant,
    pub obs: &'a Observation,
    /// When the request went to the backend.
    pub sent: Instant,
}

/// The backend's body, counted as it is read.
type UpstreamBody = Metered<Incoming>;

pub async fn reply(
    plan: &ReplyPlan<'_>,
    resp: Response<Incoming>,
) -> Result<Response<Body>, GatewayError> {
    let (mut parts, body) = resp.into_parts();
    let body = plan.obs.backend_body(body, plan.sent);
    strip_hop_by_hop(&mut parts.headers);
    if !parts.status.is_success() {
        return Ok(Response::from_parts(parts, body.boxed_unsync()));
    }
    if plan.framing == ClientFraming::Raw {
        // The backend's own reply, compressed if the client accepts it.
        return Ok(passthrough(plan, parts, body.boxed_unsync()));
    }
    let header_len = backend_header_len(plan, &parts.headers)?;
    let mut body = BackendBody {
        inner: body,
        upstream: plan.upstream,
        deadline: plan.deadline,
    };
    let (doc, header, after) = match header_len {
        Some(n) => read_binary_header(plan, &mut body, n).await?,
        None => {
            if !plan.prefs.any_binary()
                && plan.route.backend_format == WireFormat::Json
                && plan.route.rules.outputs.is_empty()
            {
                // JSON in, JSON wanted, no output rules to check: stream it
                // through (compressing if asked).
                return Ok(passthrough(plan, parts, body.inner.boxed_unsync()));
            }
            // Asked for binary outputs, the backend sent no binary part.
            // Its outputs may still be `binary_data_size` 0: Triton answers
            // so when every output is empty.
            let all = body
                .collect(
                    Bytes::new(),
                    plan.route.limits.max_response_bytes,
                    plan.route,
                )
                .await?;
            let doc = DocParser::parse(DocKind::Response, response_limits(), &all)
                .map_err(|e| plan.bad_response(format!("unparsable JSON reply: {e}")))?;
            let json_only = doc
                .tensors
                .iter()
                .all(|t| !matches!(t.data, EntryData::Binary { .. }));
            if json_only && !plan.prefs.any_binary() {
                check_outputs(plan, &doc)?;
                return Ok(passthrough(plan, parts, full(all)));
            }
            (doc, Bytes::new(), Bytes::new())
        }
    };
    check_outputs(plan, &doc)?;
    let wants: Vec<bool> = doc
        .tensors
        .iter()
        .map(|t| plan.prefs.wants_binary(&t.name))
        .collect();
    let all_binary_already = doc
        .tensors
        .iter()
        .zip(&wants)
        .all(|(t, &w)| w && !matches!(t.data, EntryData::Json { .. }));
    if header_len.is_some() && all_binary_already && plan.framing == ClientFraming::Standard {
        return Ok(passthrough_binary(plan, parts, header, body, after));
    }
    plan.obs.elements(
        "response",
        doc.tensors
            .iter()
            .map(|t| t.shape.element_count().unwrap_or(0))
            .sum(),
    );
    let no_binary = !wants.iter().any(|&w| w);
    let needs_check = doc
        .tensors
        .iter()
        .any(|t| t.datatype == DataType::Bytes && matches!(t.data, EntryData::Binary { .. }));
    if no_binary && !needs_check && header_len.is_some() {
        let stream = JsonReplyBody::new(body.inner, doc, after, plan.obs.clone());
        return Ok(json_response(plan, parts.status, parts.headers, stream));
    }
    assemble(plan, parts.status, parts.headers, doc, body, after, &wants).await
}

/// Limits on a backend's reply document. The route's element and dimension
/// limits are for what clients send; a reply is bounded by the bytes the
/// gateway agrees to hold (`max_json_header_bytes`, `max_response_bytes`),
/// and binary outputs are never allocated from their declared shape.
fn response_limits() -> DocLimits {
    DocLimits {
        max_elements: u64::MAX,
        max_dims: 64,
        ..DocLimits::default()
    }
}

/// The backend's JSON header length, from IHCL or the SageMaker type.
fn backend_header_len(
    plan: &ReplyPlan<'_>,
    headers: &HeaderMap,
) -> Result<Option<u64>, GatewayError> {
    if let Some(v) = headers.get(IHCL_HEADER) {
        return framing::parse_ihcl(v.as_bytes())
            .map(Some)
            .map_err(|e| plan.bad_response(e.to_string()));
    }
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    match ct.and_then(framing::sagemaker_header_size) {
        Some(r) => r.map(Some).map_err(|e| plan.bad_response(e.to_string())),
        None => Ok(None),
    }
}

impl ReplyPlan<'_> {
    fn bad_response(&self, detail: String) -> GatewayError {
        GatewayError::BadBackendResponse {
            backend: self.upstream.name().to_owned(),
            detail,
        }
    }
}

/// The backend's body, read against the deadline.
struct BackendBody<'a> {
    inner: UpstreamBody,
    upstream: &'a Upstream,
    deadline: Instant,
}

impl BackendBody<'_> {
    async fn next(&mut self) -> Result<Option<Bytes>, GatewayError> {
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            let frame = tokio::time::timeout(left, self.inner.frame())
                .await
                .map_err(|_| self.upstream.timeout(self.upstream.backend.request_timeout))?;
            match frame {
                None => return Ok(None),
                Some(Err(e)) => return Err(self.upstream.body_error(&*e)),
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        return Ok(Some(data));
                    }
                }
            }
        }
    }

    async fn collect(
        &mut self,
        first: Bytes,
        limit: u64,
        route: &Route,
    ) -> Result<Bytes, GatewayError> {
        let mut pieces = vec![first];
        let mut total = pieces[0].len() as u64;
        while let Some(b) = self.next().await? {
            total += b.len() as u64;
            if total > limit {
                return Err(GatewayError::ResponseTooLarge {
                    route: route.name.clone(),
                    limit,
                });
            }
            pieces.push(b);
        }
        Ok(concat(pieces))
    }
}

async fn read_binary_header(
    plan: &ReplyPlan<'_>,
    body: &mut BackendBody<'_>,
    header_len: u64,
) -> Result<(Document, Bytes, Bytes), GatewayError> {
    let limit = plan.route.limits.max_json_header_bytes;
    if header_len > limit {
        return Err(plan.bad_response(format!(
            "JSON header of {header_len} bytes is over the limit of {limit}"
        )));
    }
    let mut reader = HeaderReader::new(header_len as usize);
    loop {
        let Some(mut chunk) = body.next().await? else {
            return Err(plan.bad_response(format!(
                "body ended {} bytes into a {header_len}-byte JSON header",
                header_len - reader.missing() as u64
            )));
        };
        if let Some(header) = reader.push(&mut chunk) {
            let doc = DocParser::parse(DocKind::Response, response_limits(), &header)
                .map_err(|e| plan.bad_response(format!("unparsable JSON header: {e}")))?;
            return Ok((doc, header, chunk));
        }
    }
}

fn check_outputs(plan: &ReplyPlan<'_>, doc: &Document) -> Result<(), GatewayError> {
    for t in &doc.tensors {
        plan.route
            .rules
            .check(Side::Output, &t.name, t.datatype, &t.shape)
            .map_err(|v| plan.bad_response(format!("route \"{}\": {v}", plan.route.name)))?;
    }
    Ok(())
}

/// The backend's reply as it is, compressed if the client accepts it.
fn passthrough(
    plan: &ReplyPlan<'_>,
    mut parts: http::response::Parts,
    body: Body,
) -> Response<Body> {
    if plan.coding == Coding::Identity || parts.headers.contains_key(header::CONTENT_ENCODING) {
        return Response::from_parts(parts, body);
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    set_encoding(&mut parts.headers, plan.coding);
    Response::from_parts(parts, CompressBody::new(body, plan.coding).boxed_unsync())
}

fn passthrough_binary(
    plan: &ReplyPlan<'_>,
    mut parts: http::response::Parts,
    header: Bytes,
    body: BackendBody<'_>,
    after: Bytes,
) -> Response<Body> {
    let header_len = header.len() as u64;
    let whole = PrefixedBody::new([header, after], body.inner);
    let length = parts.headers.get(header::CONTENT_LENGTH).cloned();
    strip_body_headers(&mut parts.headers);
    let h = &mut parts.headers;
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(IHCL_HEADER, HeaderValue::from(header_len));
    if plan.coding == Coding::Identity {
        if let Some(length) = length {
            h.insert(header::CONTENT_LENGTH, length);
        }
        return Response::from_parts(parts, whole.boxed_unsync());
    }
    set_encoding(h, plan.coding);
    Response::from_parts(
        parts,
        CompressBody::new(whole.boxed_unsync(), plan.coding).boxed_unsync(),
    )
}

fn set_encoding(headers: &mut HeaderMap, coding: Coding) {
    headers.insert(
        header::CONTENT_ENCODING,
        HeaderValue::from_static(coding.name()),
    );
    headers.append(header::VARY, HeaderValue::from_static("accept-encoding"));
}

/// A streamed all-JSON reply (chunked).
fn json_response(
    plan: &ReplyPlan<'_>,
    status: StatusCode,
    mut headers: HeaderMap,
    stream: JsonReplyBody,
) -> Response<Body> {
    strip_body_headers(&mut headers);
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let body = if plan.coding == Coding::Identity {
        stream.boxed_unsync()
    } else {
        set_encoding(&mut headers, plan.coding);
        CompressBody::new(stream.boxed_unsync(), plan.coding).boxed_unsync()
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    *resp.headers_mut() = headers;
    resp
}

/// Reads the rest of the reply and writes it whole: JSON outputs inline,
/// binary outputs after the header.
#[allow(clippy::too_many_arguments)]
async fn assemble(
    plan: &ReplyPlan<'_>,
    status: StatusCode,
    mut headers: HeaderMap,
    doc: Document,
    mut body: BackendBody<'_>,
    after: Bytes,
    wants: &[bool],
) -> Result<Response<Body>, GatewayError> {
    let limits = &plan.route.limits;
    let sizes: Vec<(usize, u64)> = doc.binary_sizes().collect();
    let total: u64 = sizes.iter().map(|s| s.1).sum();
    if total > limits.max_response_bytes {
        return Err(GatewayError::ResponseTooLarge {
            route: plan.route.name.clone(),
            limit: limits.max_response_bytes,
        });
    }
    let mut data: Vec<Vec<Bytes>> = doc
        .tensors
        .iter()
        .map(|t| match &t.data {
            EntryData::Json { data, .. } => vec![data.clone()],
            _ => Vec::new(),
        })
        .collect();
    let mut splitter = ChunkSplitter::new(sizes);
    let mut pieces = Vec::new();
    let mut next = Some(after);
    while let Some(chunk) = next {
        splitter
            .push(chunk, &mut pieces)
            .map_err(|e: FramingError| plan.bad_response(e.to_string()))?;
        for p in pieces.drain(..) {
            data[p.tensor].push(p.data);
        }
        next = body.next().await?;
    }
    if let Err(framing::ShortTensor { tensor, missing }) = splitter.finish(&mut pieces) {
        return Err(plan.bad_response(format!(
            "output \"{}\" is missing {missing} bytes",
            doc.tensors[tensor].name
        )));
    }
    for p in pieces.drain(..) {
        data[p.tensor].push(p.data);
    }
    let started = Instant::now();
    let mut header = Vec::with_capacity(256);
    let mut w = DocWriter::new();
    w.open(&doc, &mut header);
    let mut binary_chunks: Vec<Bytes> = Vec::new();
    for ((t, pieces), &binary) in doc.tensors.iter().zip(&data).zip(wants) {
        if t.data == EntryData::SharedMemory {
            w.tensor_open(t, TensorForm::AsIs, &mut header);
        } else if binary {
            let size: u64 = pieces.iter().map(|p| p.len() as u64).sum();
            w.tensor_open(t, TensorForm::Binary(size), &mut header);
            binary_chunks.extend(pieces.iter().cloned());
        } else {
            w.tensor_open(t, TensorForm::Json, &mut header);
            let mut vw = ValueWriter::new(t.datatype);
            let not_json = |source| GatewayError::OutputNotJson {
                route: plan.route.name.clone(),
                output: t.name.clone(),
                source,
            };
            for p in pieces {
                vw.write(p, &mut header).map_err(not_json)?;
            }
            vw.finish().map_err(not_json)?;
            w.tensor_close(&mut header);
        }
    }
    w.close(&doc, &mut header);
    plan.obs.translation("response", started.elapsed());

    strip_body_headers(&mut headers);
    let header_len = header.len() as u64;
    let any_binary = !binary_chunks.is_empty()
        || wants
            .iter()
            .zip(&doc.tensors)
            .any(|(&w, t)| w && t.data != EntryData::SharedMemory);
    let content_type = if !any_binary {
        HeaderValue::from_static("application/json")
    } else if plan.framing == ClientFraming::SageMaker {
        HeaderValue::from_str(&format!(
            "{};json-header-size={header_len}",
            framing::SAGEMAKER_BINARY_CONTENT_TYPE
        ))
        .unwrap_or(HeaderValue::from_static("application/octet-stream"))
    } else {
        headers.insert(IHCL_HEADER, HeaderValue::from(header_len));
        HeaderValue::from_static("application/octet-stream")
    };
    headers.insert(header::CONTENT_TYPE, content_type);
    let chunks = std::iter::once(Bytes::from(header)).chain(binary_chunks);
    let body = if plan.coding == Coding::Identity {
        let body = ChunksBody::new(chunks);
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
        body.boxed()
    } else {
        let packed = compress(&concat(chunks.collect()), plan.coding);
        set_encoding(&mut headers, plan.coding);
        headers.insert(
            header::CONTENT_LENGTH,
            HeaderValue::from(packed.len() as u64),
        );
        full(packed)
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    *resp.headers_mut() = headers;
    Ok(resp)
}
