//! Turning the backend's reply into the one the V2 client asked for.
//!
//! - errors (non-2xx) pass through untouched;
//! - every output binary, as the client wants: the backend's bytes pass
//!   through as they stream;
//! - every output JSON: streamed as JSON while the backend's bytes arrive
//!   ([`JsonReplyBody`]), unless a BYTES output must be checked for UTF-8
//!   first;
//! - otherwise (mixed, or a JSON backend answering a binary client) the
//!   reply is collected by the core (bounded by `max_response_bytes`) and
//!   written whole, because its `Inference-Header-Content-Length` depends on
//!   every JSON value in it.

use std::time::Instant;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, Response};
use http_body_util::BodyExt;

use super::V2Error;
use super::json_stream::JsonReplyBody;
use super::read::BinaryLabel;
use crate::codec::v2::OutputSelection;
use crate::codec::v2::framing;
use crate::codec::v2::json_write::{DocWriter, TensorForm, ValueWriter};
use crate::codec::v2::{EntryData, TensorEntry};
use crate::config::WireFormat;
use crate::cpu::{OFF_THREAD_BYTES, off_thread};
use crate::error::Error;
use crate::http::body::{Body, ChunksBody, PrefixedBody, full};
use crate::http::encoding::{Coding, CompressBody, compress_all};
use crate::http::headers::{lacks, strip_body_headers, strip_hop_by_hop};
use crate::infer::backend::{BackendReply, IHCL, ReplyFraming, ReplyHead, Sent};
use crate::infer::{Exchange, InferReply, TensorData};
use crate::observe::Direction;
use crate::tensor::DataType;

/// How the client wants its reply.
#[derive(Clone, Debug)]
pub struct Wanted {
    pub outputs: OutputSelection,
    pub coding: Coding,
    /// `None` for a raw binary request: the backend's reply as it is.
    pub label: Option<BinaryLabel>,
}

pub(super) async fn render(
    exchange: Exchange<'_>,
    sent: Sent,
    wanted: &Wanted,
) -> Result<Response<Body>, Error> {
    let reply = match sent {
        // The backend's refusal, as it came (a gRPC backend's as the
        // status its code stands for).
        Sent::Failed(refusal) => {
            let (mut parts, body) = refusal.resp.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            return Ok(Response::from_parts(parts, body.boxed_unsync()));
        }
        Sent::Reply(reply) => reply,
    };
    let Some(label) = wanted.label else {
        return Ok(passthrough(*reply, wanted.coding));
    };
    if reply.framing == ReplyFraming::Json
        && !wanted.outputs.any_binary()
        && exchange.route.backend_format == WireFormat::Json
        && exchange.route.rules.outputs.is_empty()
    {
        // JSON in, JSON wanted, no output rules to check: stream it through.
        return Ok(passthrough(*reply, wanted.coding));
    }
    let binary_framing = matches!(reply.framing, ReplyFraming::Binary { .. });
    let mut head = reply.head(exchange).await?;
    let doc = &head.doc;
    let wants: Vec<bool> = doc
        .tensors
        .iter()
        .map(|t| wanted.outputs.wants_binary(&t.name))
        .collect();
    if !binary_framing {
        let json_only = doc
            .tensors
            .iter()
            .all(|t| !matches!(t.data, EntryData::Binary { .. }));
        if json_only && !wanted.outputs.any_binary() {
            let (mut parts, raw) = (head.parts, head.raw);
            strip_hop_by_hop(&mut parts.headers);
            return Ok(compressed(parts, full(raw), wanted.coding));
        }
    }
    let all_binary_already = doc
        .tensors
        .iter()
        .zip(&wants)
        .all(|(t, &w)| w && !matches!(t.data, EntryData::Inline { .. }));
    if binary_framing && all_binary_already && label == BinaryLabel::Ihcl {
        return Ok(passthrough_binary(head, wanted.coding));
    }
    exchange
        .obs
        .elements(Direction::Response, doc.element_count());
    let no_binary = !wants.iter().any(|&w| w);
    let needs_check = doc
        .tensors
        .iter()
        .any(|t| t.datatype == DataType::Bytes && matches!(t.data, EntryData::Binary { .. }));
    let small = doc
        .binary_total()
        .is_some_and(|total| total <= WHOLE_REPLY_BYTES);
    if binary_framing && no_binary && !needs_check && !small {
        return Ok(stream_json(exchange, head, wanted.coding));
    }
    // Read with the head borrowed, then taken apart: collecting it by
    // value copied the head into that future, and the future into this.
    let data = head.read_data(exchange).await?;
    let ReplyHead {
        parts, doc, stream, ..
    } = head;
    drop(stream);
    let reply = InferReply { header: doc, data };
    // Written here rather than in an async helper: moving that helper's
    // future (the reply and its head in it) into this one cost a copy.
    let size: u64 = reply.data.iter().map(TensorData::len).sum();
    let coding = wanted.coding;
    let written = if size >= OFF_THREAD_BYTES {
        let route = exchange.route.name.clone();
        off_thread(move || write_reply(&route, &reply, &wants, coding)).await?
    } else {
        write_reply(&exchange.route.name, &reply, &wants, coding)?
    };
    Ok(assemble(exchange, parts, written, label, coding))
}

/// An all-JSON reply whose binary outputs add up to at most this many bytes
/// (8K FP32 values) is written whole, with a `Content-Length`, instead of
/// streamed chunked: its bytes are in hand with the header or right after
/// it, so streaming would gain nothing, and clients read a sized body with
/// less work than a chunked one. Below the size a piece is written on two
/// threads ([`super::json_stream::PARALLEL_MIN_ELEMENTS`]).
pub(super) const WHOLE_REPLY_BYTES: u64 = 32 << 10;

/// The backend's reply as it is, compressed if the client accepts it.
fn passthrough(reply: BackendReply, coding: Coding) -> Response<Body> {
    let (mut parts, body) = reply.into_stream();
    strip_hop_by_hop(&mut parts.headers);
    compressed(parts, body.boxed_unsync(), coding)
}

fn compressed(mut parts: http::response::Parts, body: Body, coding: Coding) -> Response<Body> {
    if coding == Coding::Identity || parts.headers.contains_key(header::CONTENT_ENCODING) {
        return Response::from_parts(parts, body);
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    set_encoding(&mut parts.headers, coding);
    Response::from_parts(parts, CompressBody::new(body, coding).boxed_unsync())
}

fn passthrough_binary(head: ReplyHead, coding: Coding) -> Response<Body> {
    let ReplyHead {
        mut parts,
        raw,
        after,
        stream,
        ..
    } = head;
    strip_hop_by_hop(&mut parts.headers);
    let header_len = raw.len() as u64;
    let whole = PrefixedBody::new([raw, after], stream.into_inner());
    let length = parts.headers.get(header::CONTENT_LENGTH).cloned();
    strip_body_headers(&mut parts.headers);
    let h = &mut parts.headers;
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(IHCL, HeaderValue::from(header_len));
    if coding == Coding::Identity {
        if let Some(length) = length {
            h.insert(header::CONTENT_LENGTH, length);
        }
        return Response::from_parts(parts, whole.boxed_unsync());
    }
    set_encoding(h, coding);
    Response::from_parts(
        parts,
        CompressBody::new(whole.boxed_unsync(), coding).boxed_unsync(),
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
fn stream_json(exchange: Exchange<'_>, head: ReplyHead, coding: Coding) -> Response<Body> {
    let ReplyHead {
        mut parts,
        doc,
        after,
        stream,
        ..
    } = head;
    strip_hop_by_hop(&mut parts.headers);
    strip_body_headers(&mut parts.headers);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let body =
        JsonReplyBody::new(stream.into_inner(), doc, after, exchange.obs.clone()).boxed_unsync();
    compressed(parts, body, coding)
}

/// The response of a collected reply written whole (JSON outputs inline,
/// binary outputs after the header; a large reply written and compressed
/// on a blocking thread): its headers set for the body.
fn assemble(
    exchange: Exchange<'_>,
    mut parts: http::response::Parts,
    written: Written,
    label: BinaryLabel,
    coding: Coding,
) -> Response<Body> {
    exchange.obs.translation(Direction::Response, written.took);

    strip_hop_by_hop(&mut parts.headers);
    // Each body header the backend sent is replaced in place or removed:
    // removing all of them first cost a hash lookup more per header. A
    // reply of nothing but body headers (Triton's, the demo's) is emptied
    // whole instead: its `Inference-Header-Content-Length` then needs no
    // removal, which hashed the name byte by byte.
    let headers = &mut parts.headers;
    if only_body_headers(headers) {
        headers.clear();
    }
    let header_len = written.header_len;
    let mut ihcl = None;
    let content_type = if !written.any_binary {
        HeaderValue::from_static("application/json")
    } else if label == BinaryLabel::TritonSageMaker {
        HeaderValue::from_str(&format!(
            "{};json-header-size={header_len}",
            framing::SAGEMAKER_BINARY_CONTENT_TYPE
        ))
        .unwrap_or(HeaderValue::from_static("application/octet-stream"))
    } else {
        ihcl = Some(HeaderValue::from(header_len));
        HeaderValue::from_static("application/octet-stream")
    };
    headers.insert(header::CONTENT_TYPE, content_type);
    match ihcl {
        Some(ihcl) => {
            headers.insert(IHCL, ihcl);
        }
        None => remove_present(headers, &IHCL),
    }
    let body = ChunksBody::new(written.chunks);
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    if coding == Coding::Identity {
        remove_present(headers, &header::CONTENT_ENCODING);
    } else {
        set_encoding(headers, coding);
    }
    Response::from_parts(parts, body.boxed())
}

/// Whether every header is one [`assemble`] sets or removes.
fn only_body_headers(headers: &HeaderMap) -> bool {
    // A static, not a const: a const array of names was built, and its
    // custom name dropped, for every header compared.
    static BODY: [HeaderName; 4] = [
        header::CONTENT_TYPE,
        header::CONTENT_LENGTH,
        header::CONTENT_ENCODING,
        IHCL,
    ];
    headers.keys().all(|k| BODY.contains(k))
}

/// Removes `name`, without a hash lookup when the headers are few and lack
/// it (a backend's reply rarely carries `Content-Encoding`).
fn remove_present(headers: &mut HeaderMap, name: &HeaderName) {
    if !lacks(headers, name) {
        headers.remove(name);
    }
}

/// A reply written whole.
struct Written {
    /// The body: the JSON header then binary outputs, or all of it
    /// compressed.
    chunks: Vec<Bytes>,
    /// The JSON header's length (uncompressed).
    header_len: u64,
    /// Some output is sent as binary data.
    any_binary: bool,
    /// Time spent writing JSON (not compressing).
    took: std::time::Duration,
}

/// Most bytes reserved up front for a reply's JSON data; a larger one
/// grows as it is written.
const MAX_HEADER_RESERVE: usize = 64 << 10;

fn write_reply(
    route: &str,
    reply: &InferReply,
    wants: &[bool],
    coding: Coding,
) -> Result<Written, V2Error> {
    let started = Instant::now();
    // Room for the JSON data too (up to a point): growing the header while
    // the values are written cost a copy of it.
    let text: usize = reply
        .outputs()
        .zip(wants)
        .map(|((t, data), &binary)| match data {
            TensorData::Pieces(_) if !binary => {
                let len = usize::try_from(data.len()).unwrap_or(usize::MAX);
                ValueWriter::max_text_len(t.datatype, len)
            }
            _ => 0,
        })
        .fold(0, usize::saturating_add);
    let mut header = Vec::with_capacity(256 + text.min(MAX_HEADER_RESERVE));
    let mut w = DocWriter::new();
    let doc = &reply.header;
    w.open(doc, &mut header);
    let mut binary_chunks: Vec<Bytes> = Vec::new();
    for ((t, data), &binary) in reply.outputs().zip(wants) {
        match data {
            TensorData::SharedMemory => w.tensor_open(t, TensorForm::AsIs, &mut header),
            TensorData::Pieces(pieces) if binary => {
                w.tensor_open(t, TensorForm::Binary(data.len()), &mut header);
                binary_chunks.extend(pieces.iter().cloned());
            }
            TensorData::Pieces(pieces) => write_json_tensor(route, &mut w, t, pieces, &mut header)?,
        }
    }
    w.close(doc, &mut header);
    let took = started.elapsed();
    let header_len = header.len() as u64;
    let any_binary = wants
        .iter()
        .zip(&reply.data)
        .any(|(&w, d)| w && *d != TensorData::SharedMemory);
    let mut chunks: Vec<Bytes> = std::iter::once(Bytes::from(header))
        .chain(binary_chunks)
        .collect();
    if coding != Coding::Identity {
        chunks = vec![compress_all(&chunks, coding)];
    }
    Ok(Written {
        chunks,
        header_len,
        any_binary,
        took,
    })
}

fn write_json_tensor(
    route: &str,
    w: &mut DocWriter,
    t: &TensorEntry,
    pieces: &[Bytes],
    out: &mut Vec<u8>,
) -> Result<(), V2Error> {
    w.tensor_open(t, TensorForm::Json, out);
    let mut vw = ValueWriter::new(t.datatype);
    let not_json = |source| V2Error::OutputNotJson {
        route: route.to_owned(),
        output: t.name.clone(),
        source,
    };
    for p in pieces {
        vw.write(p, out).map_err(not_json)?;
    }
    vw.finish().map_err(not_json)?;
    w.tensor_close(out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use http::HeaderMap;
    use http::header::HeaderValue;

    use super::only_body_headers;

    /// Triton's reply headers are all body headers: emptied whole; any
    /// other header keeps the map (and the per-header replacement).
    #[test]
    fn body_headers_only() {
        let mut h = HeaderMap::new();
        for name in [
            "content-type",
            "inference-header-content-length",
            "content-length",
        ] {
            h.insert(name, HeaderValue::from_static("1"));
        }
        assert!(only_body_headers(&h));
        h.insert("date", HeaderValue::from_static("today"));
        assert!(!only_body_headers(&h));
        assert!(only_body_headers(&HeaderMap::new()));
    }
}
