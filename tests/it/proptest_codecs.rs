//! Property tests for the codecs: random tensors of every type and shape
//! survive each translation, in any chunking.
//!
//! What is asserted, and what is allowed to change:
//! - binary -> JSON (`ValueWriter`) -> binary (`DataParser`) is the identity
//!   up to [`canonical`]: BOOL bytes become 0/1 and every NaN becomes the one
//!   quiet NaN the parser writes (sign and payload dropped; JSON spells it
//!   `"NaN"`). Every other float, `-0.0`, infinities and subnormals included,
//!   comes back bit for bit. BYTES elements are valid UTF-8 here (others are
//!   refused by the writer, which is checked separately).
//! - a V2 document written by `write_document` parses back to the document it
//!   was written from, and the same in any chunking, 1-byte chunks included.
//! - a damaged document, with or without a tight budget for JSON outside
//!   tensor data, gives the same result in any chunking as whole, and after
//!   the first error every later `feed` and `finish` return that error.
//! - Decthings encode -> decode -> encode is byte-identical in both layouts,
//!   and `decode` on any strict prefix of a tensor is `Ok(None)`.
//! - `describe` -> `parse_description` gives the tensor back (NaN canonical).

use bytes::{Bytes, BytesMut};
use half::{bf16, f16};
use proptest::prelude::*;
use serde_json::Value;
use tensorgate::codec::decthings::{self, DecodeLimits, Layout};
use tensorgate::codec::describe::{describe, parse_description};
use tensorgate::codec::v2::json_data::{DataParser, Progress};
use tensorgate::codec::v2::json_write::{
    TensorForm, ValueWriter, WriteError, inline_data, write_document,
};
use tensorgate::codec::v2::{
    DocError, DocKind, DocLimits, DocParser, Document, EntryData, Params, TensorEntry,
};
use tensorgate::tensor::{DataType, DecthingsType, Semantic, Shape, Tensor, bytes_layout};

// ---------------------------------------------------------------- strategies

/// Shapes of at most 256 elements: scalars, zero dimensions, and sometimes a
/// zero beside huge dimensions (exercising every varint width).
fn shape() -> impl Strategy<Value = Shape> {
    let small = prop::collection::vec(0u64..=4, 0..=4);
    let wide = (
        prop::collection::vec(
            prop::sample::select(vec![1u64, 253, 65_535, 65_536, 1 << 32, i64::MAX as u64]),
            1..=3,
        ),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(mut dims, at)| {
            let at = at.index(dims.len() + 1);
            dims.insert(at, 0);
            dims
        });
    prop_oneof![4 => small, 1 => wide].prop_map(Shape::new)
}

fn count(shape: &Shape) -> usize {
    shape.element_count().unwrap() as usize
}

/// Text with the characters JSON must escape well represented.
fn text(max_chars: usize) -> impl Strategy<Value = String> {
    let special = prop::sample::select(vec!['"', '\\', '/', '\n', '\r', '\t', '\u{0}', '\u{1f}']);
    let c = prop_oneof![3 => any::<char>(), 1 => special, 2 => prop::char::range('a', 'z')];
    prop::collection::vec(c, 0..=max_chars).prop_map(String::from_iter)
}

/// One element of a fixed-size type, as little-endian bytes: arbitrary bit
/// patterns mixed with typical values.
fn fixed_element(dtype: DataType) -> BoxedStrategy<Vec<u8>> {
    fn le<T: Strategy + 'static>(s: T, f: fn(T::Value) -> Vec<u8>) -> BoxedStrategy<Vec<u8>>
    where
        T::Value: 'static,
    {
        s.prop_map(f).boxed()
    }
    let size = dtype.fixed_size().expect("fixed-size type");
    let typical: BoxedStrategy<f64> = prop_oneof![
        (-1e6f64..1e6),
        (-1.0f64..1.0),
        (-1000i32..1000).prop_map(f64::from),
        prop::num::f64::ANY,
    ]
    .boxed();
    let bits = prop::collection::vec(any::<u8>(), size);
    match dtype {
        DataType::F16 => prop_oneof![
            bits,
            le(typical, |v| f16::from_f64(v).to_le_bytes().to_vec())
        ]
        .boxed(),
        DataType::BF16 => prop_oneof![
            bits,
            le(typical, |v| bf16::from_f64(v).to_le_bytes().to_vec())
        ]
        .boxed(),
        DataType::F32 => prop_oneof![
            bits,
            le(typical, |v| (v as f32).to_le_bytes().to_vec()),
            le(prop::num::f32::ANY, |v| v.to_le_bytes().to_vec()),
        ]
        .boxed(),
        DataType::F64 => prop_oneof![bits, le(typical, |v| v.to_le_bytes().to_vec())].boxed(),
        DataType::Bool => prop_oneof![
            3 => (0u8..=1).prop_map(|b| vec![b]),
            1 => bits,
        ]
        .boxed(),
        _ => prop_oneof![bits, le(-1000i64..1000, |v| v.to_le_bytes()[..8].to_vec()),]
            .prop_map(move |mut v| {
                v.truncate(size);
                v
            })
            .boxed(),
    }
}

/// V2 binary data for `n` elements of `dtype`; BYTES elements are UTF-8.
fn v2_data(dtype: DataType, n: usize) -> BoxedStrategy<Vec<u8>> {
    match dtype {
        DataType::Bytes => prop::collection::vec(text(12), n)
            .prop_map(|v| bytes_layout::build(v).to_vec())
            .boxed(),
        _ => prop::collection::vec(fixed_element(dtype), n)
            .prop_map(|v| v.concat())
            .boxed(),
    }
}

fn v2_tensor() -> impl Strategy<Value = (DataType, Shape, Vec<u8>)> {
    (prop::sample::select(DataType::ALL.to_vec()), shape()).prop_flat_map(|(dtype, shape)| {
        let n = count(&shape);
        (Just(dtype), Just(shape), v2_data(dtype, n))
    })
}

/// Chunk sizes for splitting a byte stream, cycled; biased to tiny chunks,
/// with some past the 64 bytes `DocParser` first takes from a chunk to
/// finish a held-back token (then it goes on in the chunk itself).
fn chunk_sizes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(
        prop_oneof![4 => 1usize..=3, 2 => 1usize..=64, 1 => 65usize..=700],
        1..=8,
    )
}

fn split<'a>(data: &'a [u8], sizes: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut at = 0;
    sizes.iter().cycle().map_while(move |&n| {
        if at >= data.len() {
            return None;
        }
        let end = at.saturating_add(n).min(data.len());
        let piece = &data[at..end];
        at = end;
        Some(piece)
    })
}

// ---------------------------------------------------------------- helpers

/// `default` cases, or `PROPTEST_CASES` when set (for long soak runs:
/// `PROPTEST_CASES=100000 cargo test --release --test it proptest_codecs::`).
fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig::with_cases(cases)
}

/// Rewrites `data` to the form a JSON round trip gives: BOOL 0/1, one NaN.
fn canonical(dtype: DataType, data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    match dtype {
        DataType::Bool => out.iter_mut().for_each(|b| *b = u8::from(*b != 0)),
        DataType::F16 => out.chunks_exact_mut(2).for_each(|c| {
            if f16::from_le_bytes([c[0], c[1]]).is_nan() {
                c.copy_from_slice(&f16::from_f64(f64::NAN).to_le_bytes());
            }
        }),
        DataType::BF16 => out.chunks_exact_mut(2).for_each(|c| {
            if bf16::from_le_bytes([c[0], c[1]]).is_nan() {
                c.copy_from_slice(&bf16::from_f64(f64::NAN).to_le_bytes());
            }
        }),
        DataType::F32 => out.chunks_exact_mut(4).for_each(|c| {
            if f32::from_le_bytes(c.try_into().unwrap()).is_nan() {
                c.copy_from_slice(&(f64::NAN as f32).to_le_bytes());
            }
        }),
        DataType::F64 => out.chunks_exact_mut(8).for_each(|c| {
            if f64::from_le_bytes(c.try_into().unwrap()).is_nan() {
                c.copy_from_slice(&f64::NAN.to_le_bytes());
            }
        }),
        _ => {}
    }
    out
}

/// Writes `data` as the comma-separated values of a JSON array, in pieces.
fn write_values(dtype: DataType, data: &[u8], sizes: &[usize]) -> Result<Vec<u8>, WriteError> {
    let mut out = Vec::new();
    let mut w = ValueWriter::new(dtype);
    for piece in split(data, sizes) {
        w.write(piece, &mut out)?;
    }
    w.finish()?;
    Ok(out)
}

/// Converts a JSON `data` value to binary, fed in pieces as a caller does
/// (keeping the unconsumed tail).
fn parse_values(dtype: DataType, json: &[u8], n: usize, sizes: &[usize]) -> (Vec<u8>, u64) {
    let mut p = DataParser::new(dtype, Some(n as u64), 1 << 20, 100);
    let mut pending = Vec::new();
    for piece in split(json, sizes) {
        pending.extend_from_slice(piece);
        match p.parse(&pending, false).unwrap() {
            Progress::Done(used) => {
                assert_eq!(used, pending.len(), "value ended early");
                return p.into_data();
            }
            Progress::NeedMore(used) => drop(pending.drain(..used)),
        }
    }
    assert_eq!(
        p.parse(&pending, true).unwrap(),
        Progress::Done(pending.len())
    );
    p.into_data()
}

/// The elements' texts nested by `dims`, as a client would send them.
fn nest(dims: &[u64], elems: &mut impl Iterator<Item = Vec<u8>>, out: &mut Vec<u8>) {
    out.push(b'[');
    match dims.split_first() {
        None => {}
        Some((&d, [])) => {
            for i in 0..d {
                if i > 0 {
                    out.push(b',');
                }
                out.extend(elems.next().unwrap());
            }
        }
        Some((&d, rest)) => {
            for i in 0..d {
                if i > 0 {
                    out.push(b',');
                }
                nest(rest, elems, out);
            }
        }
    }
    out.push(b']');
}

fn element_texts(dtype: DataType, data: &[u8]) -> Vec<Vec<u8>> {
    let pieces: Vec<&[u8]> = match dtype.fixed_size() {
        Some(size) => data.chunks_exact(size).collect(),
        None => {
            let mut v = Vec::new();
            let mut rest = data;
            while let Some((len, tail)) = rest.split_first_chunk::<4>() {
                let n = 4 + u32::from_le_bytes(*len) as usize;
                v.push(&rest[..n]);
                rest = &tail[n - 4..];
            }
            v
        }
    };
    pieces
        .into_iter()
        .map(|p| write_values(dtype, p, &[usize::MAX]).unwrap())
        .collect()
}

// ---------------------------------------------------------------- properties

proptest! {
    #![proptest_config(cases(384))]

    /// binary -> JSON -> binary, flat and nested, in random pieces.
    #[test]
    fn binary_json_binary((dtype, shape, data) in v2_tensor(), sizes in chunk_sizes()) {
        let n = count(&shape);
        let values = write_values(dtype, &data, &sizes).unwrap();
        prop_assert_eq!(&values, &write_values(dtype, &data, &[usize::MAX]).unwrap());
        let json = [&b"["[..], &values, b"]"].concat();
        let parsed: Value = serde_json::from_slice(&json).expect("writer output is JSON");
        prop_assert_eq!(parsed.as_array().map(Vec::len), Some(n));
        let (back, got) = parse_values(dtype, &json, n, &sizes);
        prop_assert_eq!(got, n as u64);
        prop_assert_eq!(&back, &canonical(dtype, &data), "{} {}", dtype, String::from_utf8_lossy(&json));

        // The same values nested by the shape (not for the huge-but-empty
        // shapes, whose nesting would be billions of `[]`).
        if shape.dims().iter().all(|&d| d <= 4) {
            let mut nested = Vec::new();
            let dims = if shape.rank() == 0 { &[1][..] } else { shape.dims() };
            nest(dims, &mut element_texts(dtype, &data).into_iter(), &mut nested);
            let (back_nested, _) = parse_values(dtype, &nested, n, &sizes);
            prop_assert_eq!(back_nested, back);
        }
    }

    /// BYTES that are not UTF-8 are refused by the writer, never mangled.
    #[test]
    fn non_utf8_bytes_are_refused(
        good in prop::collection::vec(text(4), 0..4),
        (mut bad, at) in (prop::collection::vec(any::<u8>(), 0..8), any::<prop::sample::Index>()),
    ) {
        // 0xFF never occurs in UTF-8.
        bad.insert(at.index(bad.len() + 1), 0xff);
        let mut data = bytes_layout::build(&good).to_vec();
        bytes_layout::push(&mut data, &bad);
        let err = write_values(DataType::Bytes, &data, &[3]).unwrap_err();
        prop_assert_eq!(err, WriteError::NotUtf8 { index: good.len() as u64 });
    }
}

// ---------------------------------------------------------------- documents

fn key() -> impl Strategy<Value = String> {
    text(6)
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop::num::f64::NORMAL.prop_map(Value::from),
        text(6).prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            prop::collection::vec((key(), inner), 0..3)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Members with distinct keys, none of them in `reserved`.
fn members(reserved: &'static [&'static str]) -> impl Strategy<Value = Vec<(String, Value)>> {
    prop::collection::vec((key(), json_value()), 0..3).prop_map(move |kv| {
        let mut out: Vec<(String, Value)> = Vec::new();
        for (k, v) in kv {
            if !reserved.contains(&k.as_str()) && out.iter().all(|(o, _)| *o != k) {
                out.push((k, v));
            }
        }
        out
    })
}

fn entry() -> impl Strategy<Value = TensorEntry> {
    const RESERVED: &[&str] = &["name", "datatype", "shape", "parameters", "data"];
    const PARAMS: &[&str] = &["binary_data_size", "shared_memory_region"];
    (
        v2_tensor(),
        text(8),
        members(RESERVED),
        members(PARAMS),
        0..3u8,
        0u64..1000,
    )
        .prop_map(
            |((datatype, shape, data), name, extra, params, form, size)| {
                let mut parameters: Params = params.into_iter().collect();
                let n = count(&shape) as u64;
                let data = match form {
                    0 => EntryData::Inline {
                        data: Bytes::from(canonical(datatype, &data)),
                        elements: n,
                    },
                    1 => {
                        let size = datatype.fixed_size().map_or(size, |s| n * s as u64);
                        parameters.insert("binary_data_size".into(), Value::from(size));
                        EntryData::Binary { size }
                    }
                    _ => {
                        parameters.insert("shared_memory_region".into(), Value::from("region0"));
                        EntryData::SharedMemory
                    }
                };
                TensorEntry {
                    name,
                    datatype,
                    shape,
                    parameters,
                    extra,
                    data,
                }
            },
        )
}

fn document() -> impl Strategy<Value = Document> {
    (
        prop::sample::select(vec![DocKind::Request, DocKind::Response]),
        members(&[]),
        prop::collection::vec(entry(), 0..4),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(kind, mut members, tensors, at)| {
            members.retain(|(k, _)| k != kind.tensors_key());
            let tensors_at = at.index(members.len() + 1);
            Document {
                kind,
                members,
                tensors_at,
                tensors,
            }
        })
}

fn form(entry: &TensorEntry) -> TensorForm {
    match entry.data {
        EntryData::Inline { .. } => TensorForm::Json,
        EntryData::Binary { size } => TensorForm::Binary(size),
        EntryData::SharedMemory => TensorForm::AsIs,
    }
}

/// Feeds `piece`, or with `cut` the piece cut in two where
/// `DocParser::split` says (`DocParser::feed_cut`).
fn feed(p: &mut DocParser, piece: &[u8], cut: bool) -> Result<(), DocError> {
    if cut {
        p.feed_cut(piece)
    } else {
        p.feed(piece)
    }
}

/// Feeds `text` in pieces; returns the document and the heads announced.
fn parse_doc(
    kind: DocKind,
    text: &[u8],
    sizes: &[usize],
    cut: bool,
) -> (Document, Vec<(String, DataType, Shape)>) {
    let mut p = DocParser::new(kind, DocLimits::default());
    let mut heads = Vec::new();
    for piece in split(text, sizes) {
        feed(&mut p, piece, cut).unwrap();
        heads.extend(
            p.take_heads()
                .into_iter()
                .map(|h| (h.name, h.datatype, h.shape)),
        );
    }
    (p.finish().unwrap(), heads)
}

proptest! {
    #![proptest_config(cases(128))]

    /// A written document parses back to itself, in any chunking.
    #[test]
    fn document_round_trips_in_any_chunking(doc in document(), sizes in chunk_sizes()) {
        let mut text = Vec::new();
        write_document(&doc, |_, e| form(e), |_, e| inline_data(e), &mut text).unwrap();
        serde_json::from_slice::<Value>(&text).expect("writer output is JSON");
        let whole = DocParser::parse(doc.kind, DocLimits::default(), &text).unwrap();
        prop_assert_eq!(&whole, &doc);
        let (chunked, heads) = parse_doc(doc.kind, &text, &sizes, false);
        prop_assert_eq!(&chunked, &whole);
        let (cut, cut_heads) = parse_doc(doc.kind, &text, &sizes, true);
        prop_assert_eq!(&cut, &whole);
        prop_assert_eq!(&cut_heads, &heads);
        let (bytewise, _) = parse_doc(doc.kind, &text, &[1], false);
        prop_assert_eq!(&bytewise, &whole);
        let want: Vec<_> = doc
            .tensors
            .iter()
            .map(|t| (t.name.clone(), t.datatype, t.shape.clone()))
            .collect();
        prop_assert_eq!(heads, want);
    }
}

/// Feeds `text` in pieces and goes on feeding after an error: every call
/// after the first error must return that error, `finish` included.
fn parse_after_errors(
    kind: DocKind,
    limits: DocLimits,
    text: &[u8],
    sizes: &[usize],
    cut: bool,
) -> Result<Document, DocError> {
    let mut p = DocParser::new(kind, limits);
    let mut first: Option<DocError> = None;
    for piece in split(text, sizes) {
        let result = feed(&mut p, piece, cut);
        match &first {
            Some(e) => assert_eq!(result.as_ref(), Err(e), "feed after an error"),
            None => first = result.err(),
        }
    }
    let done = p.finish();
    if let Some(e) = first {
        assert_eq!(done.as_ref().err(), Some(&e), "finish after an error");
    }
    done
}

/// A damaged copy of `text`: cut short, a byte replaced by one that matters
/// to JSON, a byte dropped, or left whole.
fn damage(text: &mut Vec<u8>, (how, at, byte): (u8, prop::sample::Index, u8)) {
    const BYTES: &[u8] = b"{}[]\",:0-e \\tn";
    if text.is_empty() {
        return;
    }
    let at = at.index(text.len());
    match how {
        0 => text.truncate(at),
        1 => text[at] = BYTES[usize::from(byte) % BYTES.len()],
        2 => {
            text.remove(at);
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(cases(256))]

    /// Damaged documents, with budgets for JSON outside tensor data tight
    /// enough to be hit: in any chunking the parser gives what it gives for
    /// the whole text, and never a document after an error.
    #[test]
    fn no_document_after_an_error_in_any_chunking(
        doc in document(),
        edit in (0..4u8, any::<prop::sample::Index>(), any::<u8>()),
        budget in prop::option::of((0u64..600, 0u64..60)),
        sizes in chunk_sizes(),
    ) {
        let mut text = Vec::new();
        write_document(&doc, |_, e| form(e), |_, e| inline_data(e), &mut text).unwrap();
        damage(&mut text, edit);
        let limits = match budget {
            Some((bytes, values)) => DocLimits::new(1 << 16, 4).with_member_budget(bytes, values),
            None => DocLimits::default(),
        };
        let whole = DocParser::parse(doc.kind, limits, &text);
        prop_assert_eq!(parse_after_errors(doc.kind, limits, &text, &sizes, false), whole.clone());
        prop_assert_eq!(parse_after_errors(doc.kind, limits, &text, &sizes, true), whole.clone());
        prop_assert_eq!(parse_after_errors(doc.kind, limits, &text, &[1], false), whole);
    }
}

// ---------------------------------------------------------------- Decthings

/// A media format: any UTF-8 up to 255 bytes (current layout), or exactly
/// three bytes (legacy).
fn format(layout: Layout) -> BoxedStrategy<String> {
    match layout {
        Layout::Current => text(5).boxed(),
        Layout::Legacy => prop_oneof![
            "[a-z0-9]{3}",
            ((0x20u8..0x7f), (0x80u32..0x800))
                .prop_map(|(a, c)| { format!("{}{}", a as char, char::from_u32(c).unwrap()) }),
            (0x800u32..0xd800).prop_map(|c| char::from_u32(c).unwrap().to_string()),
        ]
        .boxed(),
    }
}

fn decthings_tensor(layout: Layout) -> impl Strategy<Value = Tensor> {
    (prop::sample::select(DecthingsType::ALL.to_vec()), shape())
        .prop_flat_map(move |(kind, shape)| {
            let n = count(&shape);
            let binary = || prop::collection::vec(prop::collection::vec(any::<u8>(), 0..12), n);
            let parts: BoxedStrategy<(Vec<u8>, Semantic)> = match kind {
                DecthingsType::String => v2_data(DataType::Bytes, n)
                    .prop_map(|d| (d, Semantic::String))
                    .boxed(),
                DecthingsType::Binary => binary()
                    .prop_map(|e| (bytes_layout::build(e).to_vec(), Semantic::Binary))
                    .boxed(),
                _ if kind.is_media() => (binary(), prop::collection::vec(format(layout), n))
                    .prop_map(move |(e, formats)| {
                        (
                            bytes_layout::build(e).to_vec(),
                            Semantic::Media { kind, formats },
                        )
                    })
                    .boxed(),
                // Decthings keeps every bit (NaN payloads too); only BOOL is
                // normalised to 0/1 by the encoder.
                DecthingsType::Boolean => v2_data(DataType::Bool, n)
                    .prop_map(|d| (canonical(DataType::Bool, &d), Semantic::Plain))
                    .boxed(),
                _ => v2_data(kind.to_v2(), n)
                    .prop_map(|d| (d, Semantic::Plain))
                    .boxed(),
            };
            (Just(kind), Just(shape), parts)
        })
        .prop_map(|(kind, shape, (data, semantic))| {
            Tensor::new(kind.to_v2(), shape, Bytes::from(data))
                .unwrap()
                .with_semantic(semantic)
        })
}

fn layout_and_tensors() -> impl Strategy<Value = (Layout, Vec<Tensor>)> {
    prop::sample::select(vec![Layout::Current, Layout::Legacy])
        .prop_flat_map(|l| (Just(l), prop::collection::vec(decthings_tensor(l), 1..4)))
}

proptest! {
    #![proptest_config(cases(384))]

    /// encode -> decode_all -> encode is byte-identical; streaming `decode`
    /// says `Ok(None)` until a tensor is complete.
    #[test]
    fn decthings_round_trips((layout, tensors) in layout_and_tensors(), sizes in chunk_sizes()) {
        let limits = DecodeLimits::default();
        let mut wire = BytesMut::new();
        let mut ends = Vec::new();
        for t in &tensors {
            decthings::encode(t, layout, &mut wire).unwrap();
            ends.push(wire.len());
        }
        let wire = wire.freeze();
        let decoded = decthings::decode_all(&wire, layout, &limits).unwrap();
        prop_assert_eq!(&decoded, &tensors);
        let mut again = BytesMut::new();
        for t in &decoded {
            decthings::encode(t, layout, &mut again).unwrap();
        }
        prop_assert_eq!(&again[..], &wire[..]);

        // Streaming: grow a buffer piece by piece, taking tensors as they
        // complete.
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        let mut start = 0;
        for piece in split(&wire, &sizes) {
            buf.extend_from_slice(piece);
            while got.len() < tensors.len() {
                let frozen = Bytes::copy_from_slice(&buf);
                let Some((t, used)) = decthings::decode(&frozen, layout, &limits).unwrap() else {
                    prop_assert!(start + buf.len() < ends[got.len()], "complete but None");
                    break;
                };
                prop_assert_eq!(start + used, ends[got.len()]);
                got.push(t);
                start += used;
                let _ = buf.split_to(used);
            }
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(got, tensors);
    }

    /// Every strict prefix of one small tensor is "not enough bytes yet".
    #[test]
    fn decthings_prefixes_are_incomplete(t in decthings_tensor(Layout::Current)) {
        let mut wire = BytesMut::new();
        decthings::encode(&t, Layout::Current, &mut wire).unwrap();
        let limits = DecodeLimits::default();
        for n in 0..wire.len().min(300) {
            let prefix = Bytes::copy_from_slice(&wire[..n]);
            prop_assert_eq!(decthings::decode(&prefix, Layout::Current, &limits), Ok(None), "prefix {}", n);
        }
    }

    /// `describe` -> `parse_description` gives the tensor back.
    #[test]
    fn describe_round_trips((_, tensors) in layout_and_tensors()) {
        for t in tensors {
            let text = describe(&t);
            let value: Value = serde_json::from_str(&text).expect("describe writes JSON");
            let back = parse_description(&value).unwrap();
            prop_assert_eq!((back.dtype, &back.shape, &back.semantic), (t.dtype, &t.shape, &t.semantic));
            prop_assert_eq!(&back.data[..], &canonical(t.dtype, &t.data)[..]);
            prop_assert_eq!(describe(&back), text);
        }
    }
}

// ---------------------------------------------------------------- numbers

/// Decimal literals of up to 21 digits, biased to 16-19 digits (Python's
/// float repr) and to exponents where an f32 result is normal.
fn decimal_literal() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        prop_oneof![1 => 1u32..=15, 3 => 16u32..=19, 1 => 20u32..=21],
        any::<u128>(),
        -50i32..50,
        0u8..3,
    )
        .prop_map(|(neg, digits, m, exp, style)| {
            let m = (m % 10u128.pow(digits)).to_string();
            let sign = if neg { "-" } else { "" };
            match style {
                0 => format!("{sign}{m}e{exp}"),
                1 if m.len() > 1 => format!("{sign}{}.{}e{exp}", &m[..1], &m[1..]),
                _ => format!("{sign}0.{m}"),
            }
        })
}

proptest! {
    #![proptest_config(cases(4096))]

    /// The FP32 fast path rounds exactly like "nearest double, then
    /// nearest float".
    #[test]
    fn f32_parse_is_double_then_narrow(text in decimal_literal()) {
        use tensorgate::codec::v2::number::{parse_f32, parse_f64};
        let want = parse_f64(text.as_bytes(), true).unwrap().map(|(v, n)| ((v as f32).to_bits(), n));
        let got = parse_f32(text.as_bytes(), true).unwrap().map(|(v, n)| (v.to_bits(), n));
        prop_assert_eq!(got, want, "{}", text);
    }
}

/// Every f32 bit pattern through `ValueWriter` and back through
/// `DataParser`. About five minutes in release:
/// `cargo test --release --test it proptest_codecs:: -- --ignored`.
#[test]
#[ignore = "exhaustive: run in release with --ignored"]
fn every_f32_round_trips_through_json() {
    const BATCH: u64 = 1 << 22;
    let mut json = Vec::new();
    for start in (0..1u64 << 32).step_by(BATCH as usize) {
        let data: Vec<u8> = (start..start + BATCH)
            .flat_map(|b| (b as u32).to_le_bytes())
            .collect();
        json.clear();
        json.push(b'[');
        let mut w = ValueWriter::new(DataType::F32);
        w.write(&data, &mut json).unwrap();
        json.push(b']');
        let mut p = DataParser::new(DataType::F32, Some(BATCH), BATCH, 1);
        assert_eq!(p.parse(&json, true).unwrap(), Progress::Done(json.len()));
        let back = p.into_data().0;
        assert!(
            back == canonical(DataType::F32, &data),
            "batch at {start:#x} differs"
        );
    }
}
