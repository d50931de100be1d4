//! Reading a backend's successful reply: its framing, its JSON header
//! (checked against the route's output rules as soon as it is parsed), and
//! its binary part split per output. Frontends either collect the whole
//! reply into an [`InferReply`] (bounded by `max_response_bytes`) or take
//! the parsed header and the rest of the stream to translate while it
//! arrives.
//!
//! A reply that declares more than `max_response_bytes` (its
//! `Content-Length`, or its header's binary sizes) is refused from that
//! declaration, before its data is read; any replica would answer the same
//! request alike, so it is not held against the one that did. What a
//! correct backend never sends — a malformed reply, a body that runs past
//! the limit without having declared its length, one too slow to arrive —
//! is counted against the replica that sent it
//! ([`UpstreamBody::fault`](crate::upstream::UpstreamBody::fault)), which
//! ejects it after `eject_after` in a row.

use std::time::Instant;

use bytes::Bytes;
use http::HeaderMap;
use http::header::{self, HeaderName, HeaderValue};
use http_body_util::BodyExt;

use super::BackendBody;
use crate::codec::pieces::concat;
use crate::codec::v2::framing::{self, FramingError, HeaderReader};
use crate::codec::v2::{
    BinaryCollector, DocKind, DocLimits, DocParser, Document, EntryData, collect,
};
use crate::error::UpstreamKind;
use crate::infer::InferError;
use crate::infer::error::MalformedReply;
use crate::infer::{Exchange, InferReply, TensorData};
use crate::rules::Side;
use crate::tensor::{DataType, bytes_layout};
use crate::upstream::Upstream;

/// How the backend framed its reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReplyFraming {
    /// A JSON header of this many bytes, then binary outputs.
    Binary { header_len: u64 },
    /// One JSON document.
    Json,
}

/// The backend's body, counted as it is read, and read against the
/// deadline for the parts the gateway must hold.
#[derive(Debug)]
pub(crate) struct ReplyStream {
    inner: BackendBody,
    upstream: Upstream,
    deadline: Instant,
}

impl ReplyStream {
    pub(crate) async fn next(&mut self) -> Result<Option<Bytes>, InferError> {
        loop {
            // At the deadline itself: a timeout for the time left read the
            // clock twice more per frame (the time left, then its end).
            let deadline = tokio::time::Instant::from_std(self.deadline);
            let Ok(frame) = tokio::time::timeout_at(deadline, self.inner.frame()).await else {
                self.fault(UpstreamKind::Timeout);
                let limit = self.upstream.backend.request_timeout;
                return Err(self.upstream.timeout(limit).into());
            };
            match frame {
                None => return Ok(None),
                Some(Err(e)) => return Err(self.upstream.body_error(&*e).into()),
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        return Ok(Some(data));
                    }
                }
            }
        }
    }

    /// The rest of the body, within `limit` bytes (with `first` counted).
    async fn collect(
        &mut self,
        first: Bytes,
        limit: u64,
        route: &str,
    ) -> Result<Bytes, InferError> {
        let mut total = first.len() as u64;
        let mut pieces = vec![first];
        while let Some(b) = self.next().await? {
            total = total.saturating_add(b.len() as u64);
            if total > limit {
                // Its length was not declared (that is refused from the
                // head): an endless body, or one past what it should be.
                self.fault(UpstreamKind::Invalid);
                return Err(InferError::ReplyTooLarge {
                    route: route.to_owned(),
                    limit,
                });
            }
            pieces.push(b);
        }
        Ok(concat(pieces))
    }

    /// The body itself, for a reply passed on as it streams.
    pub(crate) fn into_inner(self) -> BackendBody {
        self.inner
    }

    /// Counts a fault of the reply against the replica that sent it.
    fn fault(&self, kind: UpstreamKind) {
        self.inner.fault(kind);
    }

    /// `e`, after counting it against the replica when it is a reply no
    /// correct backend sends.
    fn judged(&self, e: InferError) -> InferError {
        if matches!(e, InferError::BadReply { .. }) {
            self.fault(UpstreamKind::Invalid);
        }
        e
    }
}

/// The reply's `Content-Length`, when it has a valid one.
fn declared_len(parts: &http::response::Parts) -> Option<u64> {
    find(&parts.headers, &header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// Past this many names, a hash lookup is cheaper than comparing them.
const SCAN: usize = 8;

/// The first value of `name`, found without hashing the name when the
/// headers are few (a backend's reply carries three or four): a lookup
/// hashes a custom name such as `Inference-Header-Content-Length` byte by
/// byte, where comparing a few names costs a fraction of that (see
/// docs/PERFORMANCE.md, "What each decision bought").
fn find<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Option<&'h HeaderValue> {
    if headers.keys_len() <= SCAN {
        headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v)
    } else {
        headers.get(name)
    }
}

/// A reply of `len` bytes declared over `limit` (after `header` bytes of
/// JSON header): refused before its data is read.
fn check_declared(
    exchange: Exchange<'_>,
    len: Option<u64>,
    header: u64,
    limit: u64,
) -> Result<(), InferError> {
    match len {
        Some(len) if len.saturating_sub(header) > limit => Err(InferError::ReplyTooLarge {
            route: exchange.route.name.clone(),
            limit,
        }),
        _ => Ok(()),
    }
}

/// A backend's 2xx reply, head received, body not yet read.
#[derive(Debug)]
pub(crate) struct BackendReply {
    pub parts: http::response::Parts,
    pub framing: ReplyFraming,
    body: ReplyStream,
}

/// A reply whose JSON header has been parsed and checked.
#[derive(Debug)]
pub(crate) struct ReplyHead {
    pub parts: http::response::Parts,
    /// The reply header (for a JSON reply: the whole document, data inline).
    pub doc: Document,
    /// The header's bytes as the backend sent them (for a JSON reply: the
    /// whole body).
    pub raw: Bytes,
    /// Body bytes already read past the header.
    pub after: Bytes,
    pub stream: ReplyStream,
}

/// Limits on a backend's reply document. The route's element and dimension
/// limits are for what clients send; a reply is bounded by the bytes the
/// gateway agrees to hold (`max_json_header_bytes`, `max_response_bytes`),
/// and binary outputs are never allocated from their declared shape.
fn response_limits() -> DocLimits {
    DocLimits::new(u64::MAX, 64)
}

impl BackendReply {
    pub(super) fn new(
        exchange: Exchange<'_>,
        parts: http::response::Parts,
        body: BackendBody,
        deadline: Instant,
    ) -> Result<BackendReply, InferError> {
        let bad = |e: FramingError| bad_response(exchange, MalformedReply::Framing(e));
        let framing = if let Some(v) = find(&parts.headers, &super::IHCL) {
            ReplyFraming::Binary {
                header_len: framing::parse_ihcl(v.as_bytes()).map_err(bad)?,
            }
        } else {
            let ct = find(&parts.headers, &header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
            match ct.and_then(framing::sagemaker_header_size) {
                Some(r) => ReplyFraming::Binary {
                    header_len: r.map_err(bad)?,
                },
                None => ReplyFraming::Json,
            }
        };
        Ok(BackendReply {
            parts,
            framing,
            body: ReplyStream {
                inner: body,
                upstream: exchange.upstream.clone(),
                deadline,
            },
        })
    }

    /// A reply in the V2 binary layout already in hand (a gRPC backend's,
    /// decoded): a JSON header of `header_len` bytes, then the outputs'
    /// pieces. Its head says so as an HTTP backend's binary reply would
    /// (`Content-Type`, `Inference-Header-Content-Length`), for frontends
    /// that pass it on as it is.
    pub(super) fn decoded(
        exchange: Exchange<'_>,
        header_len: u64,
        chunks: Vec<Bytes>,
        deadline: Instant,
    ) -> Result<BackendReply, InferError> {
        let mut resp = http::Response::new(());
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        h.insert(super::IHCL, HeaderValue::from(header_len));
        let (parts, ()) = resp.into_parts();
        BackendReply::new(exchange, parts, BackendBody::decoded(chunks), deadline)
    }

    /// The reply as it is, for frontends that pass it on unread.
    pub(crate) fn into_stream(self) -> (http::response::Parts, BackendBody) {
        (self.parts, self.body.inner)
    }

    /// Reads and parses the JSON header (a JSON reply is read whole) and
    /// checks every output's head against the route's output rules. The
    /// reply is read where it is boxed: moving it out of its box into this
    /// future first cost a copy of it.
    pub(crate) async fn head(
        mut self: Box<Self>,
        exchange: Exchange<'_>,
    ) -> Result<ReplyHead, InferError> {
        let this = &mut *self;
        let read = read_document(exchange, &this.parts, this.framing, &mut this.body).await;
        let (doc, raw, after) = read.map_err(|e| this.body.judged(e))?;
        check_outputs(exchange, &doc)?;
        let BackendReply { parts, body, .. } = *self;
        Ok(ReplyHead {
            parts,
            doc,
            raw,
            after,
            stream: body,
        })
    }
}

/// The reply's document: the JSON header of a binary reply (the rest of
/// the body left to read), or a JSON reply whole.
async fn read_document(
    exchange: Exchange<'_>,
    parts: &http::response::Parts,
    framing: ReplyFraming,
    body: &mut ReplyStream,
) -> Result<(Document, Bytes, Bytes), InferError> {
    Ok(match framing {
        ReplyFraming::Binary { header_len } => read_header(exchange, body, header_len).await?,
        ReplyFraming::Json => {
            let limits = &exchange.route.limits;
            let limit = limits.max_response_bytes;
            check_declared(exchange, declared_len(parts), 0, limit)?;
            let all = body
                .collect(Bytes::new(), limit, &exchange.route.name)
                .await?;
            let parse = {
                let all = all.clone();
                move || DocParser::parse(DocKind::Response, response_limits(), &all)
            };
            let parsed = if all.len() as u64 >= crate::cpu::OFF_THREAD_BYTES {
                crate::cpu::off_thread(parse).await
            } else {
                parse()
            };
            let doc = parsed.map_err(|e| bad_response(exchange, MalformedReply::Document(e)))?;
            (doc, all, Bytes::new())
        }
    })
}

impl ReplyHead {
    /// Reads the rest of the reply: every output's data, split per output
    /// (slices of the backend's frames), BYTES outputs checked element by
    /// element. Bounded by the route's `max_response_bytes`.
    pub(crate) async fn collect(
        mut self,
        exchange: Exchange<'_>,
    ) -> Result<(http::response::Parts, InferReply), InferError> {
        let data = self.read_data(exchange).await?;
        let ReplyHead {
            parts, doc, stream, ..
        } = self;
        drop(stream);
        Ok((parts, InferReply { header: doc, data }))
    }

    /// [`collect`](Self::collect)'s reading, the head borrowed: a future
    /// that owned the head (its parts, document and stream) was copied
    /// whole, twice, to be awaited. The body is read to its end; the
    /// caller drops the stream once it takes the head apart.
    pub(crate) async fn read_data(
        &mut self,
        exchange: Exchange<'_>,
    ) -> Result<Vec<TensorData>, InferError> {
        let declared = declared_len(&self.parts);
        let limit = exchange.route.limits.max_response_bytes;
        check_declared(exchange, declared, self.raw.len() as u64, limit)?;
        let after = std::mem::take(&mut self.after);
        let stream = &mut self.stream;
        collect_data(exchange, &self.doc, after, stream)
            .await
            .map_err(|e| stream.judged(e))
    }
}

/// Every output's data, from `after` (what was read past the header) and
/// the rest of `stream`.
async fn collect_data(
    exchange: Exchange<'_>,
    doc: &Document,
    after: Bytes,
    stream: &mut ReplyStream,
) -> Result<Vec<TensorData>, InferError> {
    let total = doc
        .binary_sizes()
        .try_fold(0u64, |sum, (_, size)| sum.checked_add(size))
        .ok_or_else(|| bad_response(exchange, MalformedReply::SizeOverflow))?;
    let limit = exchange.route.limits.max_response_bytes;
    if total > limit {
        return Err(InferError::ReplyTooLarge {
            route: exchange.route.name.clone(),
            limit,
        });
    }
    let mut collector = BinaryCollector::new(doc);
    let mut next = Some(after);
    while let Some(chunk) = next {
        collector
            .push(chunk)
            .map_err(|e| bad_response(exchange, MalformedReply::Framing(e)))?;
        next = stream.next().await?;
    }
    let binary = collector.finish().map_err(|short| {
        bad_response(
            exchange,
            MalformedReply::ShortOutput {
                output: doc.tensors[short.tensor].name.clone(),
                missing: short.missing_total,
            },
        )
    })?;
    let mut data: Vec<TensorData> = collect::tensor_data(doc, binary)
        .into_iter()
        .map(|d| d.map_or(TensorData::SharedMemory, TensorData::Pieces))
        .collect();
    // BYTES outputs are checked element by element (and joined: every
    // reader of them wants one buffer).
    for (t, d) in doc.tensors.iter().zip(data.iter_mut()) {
        if t.datatype == DataType::Bytes && matches!(t.data, EntryData::Binary { .. }) {
            let count = t.shape.element_count().unwrap_or(0);
            let joined = d.joined();
            bytes_layout::validate(&joined, count).map_err(|source| {
                bad_response(
                    exchange,
                    MalformedReply::BytesLayout {
                        output: t.name.clone(),
                        source,
                    },
                )
            })?;
            *d = TensorData::Pieces(vec![joined]);
        }
    }
    Ok(data)
}

fn bad_response(exchange: Exchange<'_>, source: MalformedReply) -> InferError {
    InferError::BadReply {
        backend: exchange.upstream.name().to_owned(),
        source: Box::new(source),
    }
}

async fn read_header(
    exchange: Exchange<'_>,
    body: &mut ReplyStream,
    header_len: u64,
) -> Result<(Document, Bytes, Bytes), InferError> {
    let limit = exchange.route.limits.max_json_header_bytes;
    if header_len > limit {
        return Err(bad_response(
            exchange,
            MalformedReply::HeaderTooLarge {
                len: header_len,
                limit,
            },
        ));
    }
    let mut reader = HeaderReader::new(header_len as usize);
    loop {
        let Some(mut chunk) = body.next().await? else {
            let got = header_len - reader.missing() as u64;
            return Err(bad_response(
                exchange,
                MalformedReply::HeaderCutShort {
                    got,
                    len: header_len,
                },
            ));
        };
        if let Some(header) = reader.push(&mut chunk) {
            let doc = DocParser::parse(DocKind::Response, response_limits(), &header)
                .map_err(|e| bad_response(exchange, MalformedReply::Header(e)))?;
            return Ok((doc, header, chunk));
        }
    }
}

fn check_outputs(exchange: Exchange<'_>, doc: &Document) -> Result<(), InferError> {
    for t in &doc.tensors {
        exchange
            .route
            .rules
            .check(Side::Output, &t.name, t.datatype, &t.shape)
            .map_err(|violation| InferError::OutputRule {
                backend: exchange.upstream.name().to_owned(),
                route: exchange.route.name.clone(),
                violation: Box::new(violation),
            })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use http::HeaderMap;
    use http::header::{self, HeaderValue};

    use super::{SCAN, find};
    use crate::infer::backend::IHCL;

    /// Scanned among a few headers or looked up among many, the same value:
    /// the first of a repeated name, none for a missing one.
    #[test]
    fn finds_as_a_lookup_does() {
        for extra in [0, SCAN] {
            let mut h = HeaderMap::new();
            for i in 0..extra {
                h.insert(
                    format!("x-{i}")
                        .as_str()
                        .parse::<http::HeaderName>()
                        .unwrap(),
                    HeaderValue::from(i),
                );
            }
            h.append(header::CONTENT_LENGTH, HeaderValue::from_static("12"));
            h.append(header::CONTENT_LENGTH, HeaderValue::from_static("13"));
            h.insert(IHCL, HeaderValue::from_static("7"));
            assert_eq!(h.keys_len() <= SCAN, extra == 0);
            assert_eq!(find(&h, &header::CONTENT_LENGTH).unwrap(), "12");
            assert_eq!(find(&h, &IHCL).unwrap(), "7");
            assert_eq!(find(&h, &header::CONTENT_TYPE), None);
        }
    }
}
