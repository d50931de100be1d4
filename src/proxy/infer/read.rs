//! Reading a client's inference request into a [`ParsedRequest`]: a JSON
//! body is converted as it streams in; a binary-extension body has its
//! header parsed and its tensor bytes split off (slices, not copies). Rules
//! are checked on each tensor's head as soon as it is known, before its data
//! is read.

use bytes::Bytes;

use crate::codec::v2::framing::{
    ChunkSplitter, HeaderReader, Piece, ShortTensor, check_header_length,
};
use crate::codec::v2::{DocKind, DocLimits, DocParser, Document, EntryData, EntryHead};
use crate::config::Route;
use crate::proxy::client_body::{ClientBody, concat};
use crate::proxy::error::GatewayError;
use crate::rules::Side;
use crate::tensor::DataType;

/// Where each tensor's bytes are, in the V2 binary layout.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorBytes {
    /// One or more slices of the body (or of converted JSON).
    Pieces(Vec<Bytes>),
    /// In shared memory: nothing in the body.
    SharedMemory,
}

impl TensorBytes {
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u64 {
        match self {
            TensorBytes::Pieces(p) => p.iter().map(|b| b.len() as u64).sum(),
            TensorBytes::SharedMemory => 0,
        }
    }

    /// All the bytes in one buffer (copies only when split).
    pub fn joined(&self) -> Bytes {
        match self {
            TensorBytes::Pieces(p) => concat(p.clone()),
            TensorBytes::SharedMemory => Bytes::new(),
        }
    }
}

impl ParsedRequest {
    /// Elements in every tensor of the request.
    pub fn element_count(&self) -> u64 {
        self.doc
            .tensors
            .iter()
            .map(|t| t.shape.element_count().unwrap_or(0))
            .sum()
    }
}

/// A client request, parsed and checked.
#[derive(Debug)]
pub struct ParsedRequest {
    pub doc: Document,
    /// Per tensor of `doc`, in order.
    pub data: Vec<TensorBytes>,
}

pub fn doc_limits(route: &Route) -> DocLimits {
    DocLimits {
        max_elements: route.limits.max_elements_per_tensor,
        max_dims: route.limits.max_dims,
        ..DocLimits::default()
    }
}

fn check_heads(route: &Route, heads: &[EntryHead]) -> Result<(), GatewayError> {
    for h in heads {
        route
            .rules
            .check(Side::Input, &h.name, h.datatype, &h.shape)
            .map_err(|violation| GatewayError::Rule {
                route: route.name.clone(),
                violation,
            })?;
    }
    Ok(())
}

/// Rules that need the whole list of inputs: required inputs, duplicates.
fn check_document(route: &Route, doc: &Document) -> Result<(), GatewayError> {
    let heads: Vec<EntryHead> = doc
        .tensors
        .iter()
        .enumerate()
        .map(|(index, t)| EntryHead {
            index,
            name: t.name.clone(),
            datatype: t.datatype,
            shape: t.shape.clone(),
        })
        .collect();
    check_heads(route, &heads)?;
    route
        .rules
        .check_names(Side::Input, doc.tensors.iter().map(|t| t.name.as_str()))
        .map_err(|violation| GatewayError::Rule {
            route: route.name.clone(),
            violation,
        })
}

fn bad_doc(route: &Route) -> impl Fn(crate::codec::v2::DocError) -> GatewayError + '_ {
    move |source| GatewayError::BadDocument {
        route: route.name.clone(),
        source,
    }
}

/// A whole-JSON request body, converted while it streams in.
pub async fn read_json(
    route: &Route,
    body: &mut ClientBody,
) -> Result<ParsedRequest, GatewayError> {
    let mut parser = DocParser::new(DocKind::Request, doc_limits(route));
    while let Some(chunk) = body.next().await? {
        parser.feed(&chunk).map_err(bad_doc(route))?;
        check_heads(route, &parser.take_heads())?;
    }
    let doc = parser.finish().map_err(bad_doc(route))?;
    check_document(route, &doc)?;
    let data = doc
        .tensors
        .iter()
        .map(|t| match &t.data {
            EntryData::Json { data, .. } => Ok(TensorBytes::Pieces(vec![data.clone()])),
            EntryData::SharedMemory => Ok(TensorBytes::SharedMemory),
            EntryData::Binary { .. } => Err(GatewayError::BadFraming {
                route: route.name.clone(),
                source: crate::codec::v2::framing::FramingError::ShortBody {
                    subject: format!("input '{}'", t.name),
                    missing: t.binary_size().unwrap_or(0),
                },
            }),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ParsedRequest { doc, data })
}

/// A binary-extension body whose JSON header is `header_len` bytes.
pub async fn read_binary(
    route: &Route,
    body: &mut ClientBody,
    header_len: u64,
    content_length: Option<u64>,
) -> Result<ParsedRequest, GatewayError> {
    let limits = &route.limits;
    check_header_length(header_len, content_length, limits.max_json_header_bytes).map_err(
        |source| match source {
            crate::codec::v2::framing::FramingError::HeaderTooLarge { .. } => {
                GatewayError::HeaderTooLarge {
                    route: route.name.clone(),
                    source,
                }
            }
            source => GatewayError::BadFraming {
                route: route.name.clone(),
                source,
            },
        },
    )?;
    let mut reader = HeaderReader::new(header_len as usize);
    let (header, mut rest) = loop {
        let Some(mut chunk) = body.next().await? else {
            return Err(GatewayError::BadFraming {
                route: route.name.clone(),
                source: crate::codec::v2::framing::FramingError::HeaderOutOfRange {
                    header: header_len,
                    body: header_len - reader.missing() as u64,
                },
            });
        };
        if let Some(header) = reader.push(&mut chunk) {
            break (header, chunk);
        }
    };
    let doc =
        DocParser::parse(DocKind::Request, doc_limits(route), &header).map_err(bad_doc(route))?;
    check_document(route, &doc)?;
    let sizes: Vec<(usize, u64)> = doc.binary_sizes().collect();
    let total: u64 = sizes
        .iter()
        .map(|s| s.1)
        .sum::<u64>()
        .saturating_add(header_len);
    if total > limits.max_body_bytes {
        return Err(GatewayError::BodyTooLarge {
            route: route.name.clone(),
            limit: limits.max_body_bytes,
        });
    }
    let mut data: Vec<TensorBytes> = doc
        .tensors
        .iter()
        .map(|t| match &t.data {
            EntryData::Json { data, .. } => TensorBytes::Pieces(vec![data.clone()]),
            EntryData::Binary { .. } => TensorBytes::Pieces(Vec::new()),
            EntryData::SharedMemory => TensorBytes::SharedMemory,
        })
        .collect();
    let mut splitter = ChunkSplitter::new(sizes);
    let mut pieces: Vec<Piece> = Vec::new();
    let framing = |source| GatewayError::BadFraming {
        route: route.name.clone(),
        source,
    };
    loop {
        splitter
            .push(std::mem::take(&mut rest), &mut pieces)
            .map_err(framing)?;
        for p in pieces.drain(..) {
            if let TensorBytes::Pieces(v) = &mut data[p.tensor] {
                v.push(p.data);
            }
        }
        match body.next().await? {
            Some(chunk) => rest = chunk,
            None => break,
        }
    }
    if let Err(ShortTensor { tensor, missing }) = splitter.finish(&mut pieces) {
        return Err(framing(
            crate::codec::v2::framing::FramingError::ShortBody {
                subject: format!("input '{}'", doc.tensors[tensor].name),
                missing,
            },
        ));
    }
    for p in pieces.drain(..) {
        if let TensorBytes::Pieces(v) = &mut data[p.tensor] {
            v.push(p.data);
        }
    }
    // BYTES inputs must be whole, well-framed elements.
    for (t, bytes) in doc.tensors.iter().zip(data.iter_mut()) {
        if t.datatype == DataType::Bytes && matches!(t.data, EntryData::Binary { .. }) {
            let joined = bytes.joined();
            let count = t.shape.element_count().unwrap_or(0);
            crate::tensor::bytes_layout::validate(&joined, count).map_err(|e| {
                GatewayError::BadRequest {
                    route: route.name.clone(),
                    message: format!("input \"{}\": {e}", t.name),
                }
            })?;
            *bytes = TensorBytes::Pieces(vec![joined]);
        }
    }
    Ok(ParsedRequest { doc, data })
}
