//! Reading a V2 client's inference request: a JSON body is converted as it
//! streams in; a binary-extension body has its header parsed and its tensor
//! bytes split off (slices, not copies). Rules are checked on each tensor's
//! head as soon as it is known, before its data is read.

use bytes::Bytes;
use http::HeaderMap;
use http::header;

use super::V2Error;
use crate::codec::v2::framing::{self, FramingError, HeaderReader, check_header_length};
use crate::codec::v2::{BinaryCollector, DocError, DocKind, DocParser, Document, EntryData};
use crate::config::Route;
use crate::cpu;
use crate::error::Error;
use crate::http::client_body::BodyError;
use crate::http::client_body::ClientBody;
use crate::http::headers::lacks;
use crate::infer::backend::IHCL;
use crate::infer::call::{Attempt, EarlySend};
use crate::infer::checks::doc_limits;
use crate::infer::checks::{check_heads, check_request};
use crate::infer::{Exchange, ModelRef, TensorData};
use crate::tensor::{DataType, bytes_layout};

/// How a client framed its binary request, which decides how binary
/// replies are labelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryLabel {
    /// `Inference-Header-Content-Length`.
    Ihcl,
    /// Triton's SageMaker content type
    /// `application/vnd.sagemaker-triton.binary+json;json-header-size=N`.
    TritonSageMaker,
}

/// How the client framed its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientFraming {
    Json,
    Binary {
        header_len: u64,
        label: BinaryLabel,
    },
    /// `Inference-Header-Content-Length: 0`: the whole body is the single
    /// input.
    Raw,
}

impl ClientFraming {
    pub fn of(route: &Route, headers: &HeaderMap) -> Result<ClientFraming, V2Error> {
        let bad = |source| V2Error::Framing {
            route: route.name.clone(),
            source,
        };
        // Most requests are JSON: the few names are compared rather than
        // the header looked up.
        if !lacks(headers, &IHCL)
            && let Some(v) = headers.get(&IHCL)
        {
            return match framing::parse_ihcl(v.as_bytes()).map_err(bad)? {
                0 => Ok(ClientFraming::Raw),
                n => Ok(ClientFraming::Binary {
                    header_len: n,
                    label: BinaryLabel::Ihcl,
                }),
            };
        }
        let ct = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        match ct.and_then(framing::sagemaker_header_size) {
            Some(size) => Ok(ClientFraming::Binary {
                header_len: size.map_err(bad)?,
                label: BinaryLabel::TritonSageMaker,
            }),
            None => Ok(ClientFraming::Json),
        }
    }
}

fn bad_doc(route: &Route) -> impl Fn(DocError) -> V2Error + '_ {
    move |source| V2Error::Document {
        route: route.name.clone(),
        source,
    }
}

fn bad_framing(route: &Route) -> impl Fn(FramingError) -> V2Error + '_ {
    move |source| V2Error::Framing {
        route: route.name.clone(),
        source,
    }
}

/// What a backend request may be started from while a JSON request is
/// read (see [`EarlySend`]).
pub(super) struct EarlyStart<'a, 'b> {
    pub exchange: Exchange<'a>,
    pub model: &'b ModelRef,
    pub headers: &'b HeaderMap,
}

/// A JSON request read whole, and the backend request started while it
/// was read, if one was.
pub(super) struct JsonRequest<'a> {
    pub header: Document,
    pub data: Vec<TensorData>,
    pub early: Option<EarlySend<'a>>,
}

/// A whole-JSON request body, converted while it streams in. With `start`,
/// the backend request is started as soon as its header can be guessed
/// (the first time a chunk ends inside a tensor's data; once).
pub(super) async fn read_json<'a>(
    route: &Route,
    body: &mut ClientBody,
    mut start: Option<EarlyStart<'a, '_>>,
) -> Result<JsonRequest<'a>, Error> {
    let mut parser = DocParser::new(DocKind::Request, doc_limits(route));
    let mut pair = cpu::Pair::new();
    let mut early: Option<EarlySend<'a>> = None;
    // The tensor the last attempt was made in: one attempt per tensor.
    let mut tried: Option<usize> = None;
    loop {
        let next = match early.as_mut() {
            Some(e) => e.drive(body.next()).await,
            None => body.next().await,
        };
        let Some(chunk) = next? else { break };
        feed(&mut pair, &mut parser, chunk).map_err(bad_doc(route))?;
        check_heads(route, &mut parser)?;
        if let Some(e) = early.as_mut() {
            e.push_from(&parser);
        } else if let Some((tensor, _)) = parser.converted()
            && tried != Some(tensor)
            && let Some(s) = start.as_ref()
        {
            tried = Some(tensor);
            match EarlySend::start(s.exchange, s.model, s.headers, &parser).await? {
                Attempt::Started(e) => (early, start) = (Some(e), None),
                Attempt::NotYet => {}
                Attempt::Never => start = None,
            }
        }
    }
    let doc = parser.finish().map_err(bad_doc(route))?;
    check_request(route, &doc)?;
    let data = doc
        .tensors
        .iter()
        .map(|t| match &t.data {
            EntryData::Inline { data, .. } => Ok(TensorData::Pieces(vec![data.clone()])),
            EntryData::SharedMemory => Ok(TensorData::SharedMemory),
            EntryData::Binary { size } => Err(bad_framing(route)(FramingError::ShortBody {
                subject: format!("input '{}'", t.name),
                missing: *size,
            })),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(JsonRequest {
        header: doc,
        data,
        early,
    })
}

/// Chunks of at least this many bytes inside a tensor's data are converted
/// in two halves at once (see [`cpu::Pair`]): converting 64 KiB of FP32
/// JSON takes many times what handing half of it to another thread does
/// (the conversion's speed: `cargo bench --bench codecs`, `json_to_binary`).
pub(super) const PARALLEL_MIN_BYTES: usize = 64 << 10;

/// Feeds one chunk of a JSON request: a large piece of tensor data in two
/// halves, the second on `pair`'s helper thread, the same as one `feed`.
/// Public for `benches/two_threads.rs`, which times exactly this step.
pub fn feed(pair: &mut cpu::Pair, parser: &mut DocParser, chunk: Bytes) -> Result<(), DocError> {
    let split = (chunk.len() >= PARALLEL_MIN_BYTES)
        .then(|| parser.split_after(&chunk, Some(chunk.len() / 2)))
        .flatten();
    let Some((cut, mut tail)) = split else {
        return parser.feed(&chunk);
    };
    let rest = chunk.slice(cut..);
    let (first, tail) = pair.join(
        || parser.feed(&chunk[..cut]),
        move || {
            tail.run(&rest);
            tail
        },
    );
    first?;
    parser.join_tail(tail, &chunk[cut..])
}

/// A binary-extension body whose JSON header is `header_len` bytes.
pub(super) async fn read_binary(
    route: &Route,
    body: &mut ClientBody,
    header_len: u64,
) -> Result<(Document, Vec<TensorData>), Error> {
    let limits = &route.limits;
    check_header_length(
        header_len,
        body.declared_length(),
        limits.max_json_header_bytes,
    )
    .map_err(|source| match source {
        FramingError::HeaderTooLarge { .. } => V2Error::HeaderTooLarge {
            route: route.name.clone(),
            source,
        },
        source => bad_framing(route)(source),
    })?;
    let (header, rest) = read_header(route, body, header_len).await?;
    let doc =
        DocParser::parse(DocKind::Request, doc_limits(route), &header).map_err(bad_doc(route))?;
    check_request(route, &doc)?;
    let total = doc
        .binary_sizes()
        .try_fold(header_len, |sum, (_, size)| sum.checked_add(size));
    if total.is_none_or(|t| t > limits.max_body_bytes) {
        return Err(BodyError::TooLarge {
            route: route.name.clone(),
            limit: limits.max_body_bytes,
        }
        .into());
    }
    let mut collector = BinaryCollector::new(&doc);
    let mut next = Some(rest);
    while let Some(chunk) = next {
        collector.push(chunk).map_err(bad_framing(route))?;
        next = body.next().await?;
    }
    let binary = collector.finish().map_err(|short| {
        bad_framing(route)(FramingError::ShortBody {
            subject: format!("input '{}'", doc.tensors[short.tensor].name),
            missing: short.missing_total,
        })
    })?;
    let mut data = Vec::with_capacity(doc.tensors.len());
    for (t, pieces) in doc.tensors.iter().zip(binary) {
        data.push(match &t.data {
            EntryData::Inline { data, .. } => TensorData::Pieces(vec![data.clone()]),
            EntryData::SharedMemory => TensorData::SharedMemory,
            EntryData::Binary { .. } if t.datatype == DataType::Bytes => {
                bytes_input(route, &t.name, t.shape.element_count().unwrap_or(0), pieces)?
            }
            EntryData::Binary { .. } => TensorData::Pieces(pieces),
        });
    }
    Ok((doc, data))
}

/// BYTES inputs must be whole, well-framed elements.
fn bytes_input(
    route: &Route,
    name: &str,
    count: u64,
    pieces: Vec<Bytes>,
) -> Result<TensorData, V2Error> {
    let joined = TensorData::Pieces(pieces).joined();
    bytes_layout::validate(&joined, count).map_err(|e| V2Error::BadBytes {
        route: route.name.clone(),
        input: name.to_owned(),
        detail: e.to_string(),
    })?;
    Ok(TensorData::Pieces(vec![joined]))
}

/// The JSON header, and what came after it in the same frame.
async fn read_header(
    route: &Route,
    body: &mut ClientBody,
    header_len: u64,
) -> Result<(Bytes, Bytes), Error> {
    let mut reader = HeaderReader::new(header_len as usize);
    loop {
        let Some(mut chunk) = body.next().await? else {
            return Err(bad_framing(route)(FramingError::HeaderOutOfRange {
                header: header_len,
                body: header_len - reader.missing() as u64,
            })
            .into());
        };
        if let Some(header) = reader.push(&mut chunk) {
            return Ok((header, chunk));
        }
    }
}
