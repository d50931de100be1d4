//! tensorgate's Decthings encoder against the official client's decoder
//! (`OwnedDecthingsTensor::from_bytes` + `tensor()`), and back: random
//! tensors of every type and shape must decode to the same values, and the
//! client's own `serialize()` of what it decoded must be byte-identical to
//! what tensorgate wrote.

use bytes::{Bytes, BytesMut};
use decthings_api::tensor::OwnedDecthingsTensor;
use half::{bf16, f16};
use proptest::prelude::*;
use tensorgate::codec::decthings::{self, DecodeLimits, Layout};
use tensorgate::tensor::{
    BytesElements, DataType, DecthingsType, Semantic, Shape, Tensor, bytes_layout,
};

use super::dc::{Elems, Plain, plain};

// ---------------------------------------------------------------- expected

/// What a Decthings client must see for a tensorgate tensor: its Decthings
/// type, shape and elements (FP16/BF16 widened to f32, BOOL non-zero = true).
pub fn plain_of(t: &Tensor) -> Plain {
    let d = &t.data;
    fn le<const N: usize, T>(d: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
        d.chunks_exact(N)
            .map(|c| f(c.try_into().unwrap()))
            .collect()
    }
    let elements = || -> Vec<Vec<u8>> {
        BytesElements::new(d)
            .map(|e| e.expect("well-formed BYTES").to_vec())
            .collect()
    };
    let elems = match t.dtype {
        DataType::F16 => Elems::F32(le(d, |b| f16::from_le_bytes(b).to_f32().to_bits())),
        DataType::BF16 => Elems::F32(le(d, |b| bf16::from_le_bytes(b).to_f32().to_bits())),
        DataType::F32 => Elems::F32(le(d, u32::from_le_bytes)),
        DataType::F64 => Elems::F64(le(d, u64::from_le_bytes)),
        DataType::I8 => Elems::I8(le(d, i8::from_le_bytes)),
        DataType::I16 => Elems::I16(le(d, i16::from_le_bytes)),
        DataType::I32 => Elems::I32(le(d, i32::from_le_bytes)),
        DataType::I64 => Elems::I64(le(d, i64::from_le_bytes)),
        DataType::U8 => Elems::U8(d.to_vec()),
        DataType::U16 => Elems::U16(le(d, u16::from_le_bytes)),
        DataType::U32 => Elems::U32(le(d, u32::from_le_bytes)),
        DataType::U64 => Elems::U64(le(d, u64::from_le_bytes)),
        DataType::Bool => Elems::Boolean(d.iter().map(|&b| b != 0).collect()),
        DataType::Bytes => match &t.semantic {
            Semantic::String => Elems::String(
                elements()
                    .into_iter()
                    .map(|e| String::from_utf8(e).unwrap())
                    .collect(),
            ),
            Semantic::Media { formats, .. } => {
                Elems::Media(formats.iter().cloned().zip(elements()).collect())
            }
            Semantic::Plain | Semantic::Binary => Elems::Binary(elements()),
        },
    };
    Plain {
        typ: t.decthings_type().name(),
        shape: t.shape.dims().iter().map(|&d| d as usize).collect(),
        elems,
    }
}

// ---------------------------------------------------------------- strategies

/// Shapes: scalars, small dimensions, zero dimensions, and a zero beside
/// dimensions that take every varint width. The non-zero dimensions of a
/// wide shape multiply to at most `isize::MAX`: past that the client panics
/// (see `client_panics_on_empty_shapes_past_isize_max`), which is a finding,
/// not something to rediscover on every run.
fn shape(max_small: u64, max_rank: usize) -> impl Strategy<Value = Shape> {
    let small = prop::collection::vec(0..=max_small, 0..=max_rank);
    let wide = (
        prop::collection::vec(
            prop::sample::select(vec![1u64, 252, 253, 65_535, 65_536, 1 << 32]),
            1..=2,
        )
        .prop_filter("non-zero dimensions fit isize", |dims| {
            dims.iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d))
                .is_some_and(|n| n <= isize::MAX as u64)
        }),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(mut dims, at)| {
            let at = at.index(dims.len() + 1);
            dims.insert(at, 0);
            dims
        });
    prop_oneof![6 => small, 1 => wide].prop_map(Shape::new)
}

fn count(shape: &Shape) -> usize {
    shape.element_count().unwrap() as usize
}

/// Text with multi-byte UTF-8 well represented.
fn text(max_chars: usize) -> impl Strategy<Value = String> {
    let c = prop_oneof![
        2 => prop::char::range('a', 'z'),
        1 => prop::sample::select(vec!['é', '\u{2603}', '\u{1F600}', '\u{0}', '"']),
        1 => any::<char>(),
    ];
    prop::collection::vec(c, 0..=max_chars).prop_map(String::from_iter)
}

/// Byte lengths near the varint boundaries, and small ones.
fn length() -> impl Strategy<Value = usize> {
    prop_oneof![
        8 => 0usize..=8,
        1 => prop::sample::select(vec![252usize, 253, 65_534, 65_535, 65_536, 65_537]),
    ]
}

/// A media format of 0..=255 bytes (multi-byte characters included).
fn format() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => text(6),
        1 => (0usize..=255).prop_map(|n| "f".repeat(n)),
        1 => Just("\u{1F600}".repeat(63) + "abc"), // 255 bytes
    ]
}

fn fixed(dtype: DataType) -> impl Strategy<Value = Tensor> {
    let size = dtype.fixed_size().unwrap();
    shape(4, 4).prop_flat_map(move |shape| {
        let n = count(&shape) * size;
        prop::collection::vec(any::<u8>(), n)
            .prop_map(move |data| Tensor::new(dtype, shape.clone(), data.into()).unwrap())
    })
}

/// A 1-D fixed-size tensor of 65,535..=65,537 elements.
fn long_u8() -> impl Strategy<Value = Tensor> {
    (65_535u64..=65_537).prop_map(|n| {
        let data: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
        Tensor::new(DataType::U8, Shape::new(vec![n]), data.into()).unwrap()
    })
}

fn bytes_tensor(shape: Shape, elements: Vec<Vec<u8>>, semantic: Semantic) -> Tensor {
    Tensor::new(DataType::Bytes, shape, bytes_layout::build(elements))
        .unwrap()
        .with_semantic(semantic)
}

/// Variable-size tensors: at most 6 elements, one of them sometimes long.
fn variable() -> impl Strategy<Value = Tensor> {
    let kinds = vec![
        DecthingsType::String,
        DecthingsType::Binary,
        DecthingsType::Image,
        DecthingsType::Audio,
        DecthingsType::Video,
    ];
    (prop::sample::select(kinds), shape(2, 3))
        .prop_filter("at most 6 elements", |(_, s)| count(s) <= 6)
        .prop_flat_map(|(kind, shape)| {
            let n = count(&shape);
            match kind {
                DecthingsType::String => prop::collection::vec(
                    prop_oneof![4 => text(8), 1 => length().prop_map(|n| "é".repeat(n / 2))],
                    n,
                )
                .prop_map(move |v| {
                    let e = v.into_iter().map(String::into_bytes).collect();
                    bytes_tensor(shape.clone(), e, Semantic::String)
                })
                .boxed(),
                DecthingsType::Binary => prop::collection::vec(
                    length().prop_flat_map(|n| prop::collection::vec(any::<u8>(), n)),
                    n,
                )
                .prop_map(move |e| bytes_tensor(shape.clone(), e, Semantic::Binary))
                .boxed(),
                media => prop::collection::vec(
                    (
                        format(),
                        length().prop_flat_map(|n| prop::collection::vec(any::<u8>(), n)),
                    ),
                    n,
                )
                .prop_map(move |v| {
                    let (formats, e): (Vec<String>, Vec<Vec<u8>>) = v.into_iter().unzip();
                    let semantic = Semantic::Media {
                        kind: media,
                        formats,
                    };
                    bytes_tensor(shape.clone(), e, semantic)
                })
                .boxed(),
            }
        })
}

/// A tensor of any type tensorgate can send to a Decthings client.
pub fn any_tensor() -> impl Strategy<Value = Tensor> {
    let fixed_types: Vec<DataType> = DataType::ALL
        .into_iter()
        .filter(|d| *d != DataType::Bytes)
        .collect();
    prop_oneof![
        6 => prop::sample::select(fixed_types).prop_flat_map(fixed),
        4 => variable(),
        1 => long_u8(),
    ]
}

/// `default` cases, or `PROPTEST_CASES` when set.
pub fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig::with_cases(cases)
}

pub fn encoded(t: &Tensor) -> Bytes {
    let mut out = BytesMut::new();
    decthings::encode(t, Layout::Current, &mut out).unwrap();
    out.freeze()
}

// ---------------------------------------------------------------- properties

proptest! {
    #![proptest_config(cases(256))]

    /// tensorgate encodes, the client decodes the same values, and the
    /// client's re-serialization is byte-identical.
    #[test]
    fn client_decodes_what_tensorgate_encodes(t in any_tensor()) {
        let wire = encoded(&t);
        let owned = OwnedDecthingsTensor::from_bytes(wire.clone())
            .unwrap_or_else(|e| panic!("client refused {:?}: {e:?}", &wire[..wire.len().min(64)]));
        prop_assert_eq!(owned.byte_size(), wire.len());
        let view = owned.tensor();
        prop_assert_eq!(plain(&view), plain_of(&t));
        prop_assert!(view.serialize() == wire, "client re-serialized differently");
    }

    /// Several tensors back to back in one blob: the client splits them
    /// where tensorgate joined them.
    #[test]
    fn client_splits_a_blob_of_several_tensors(ts in prop::collection::vec(any_tensor(), 0..=4)) {
        let mut blob = BytesMut::new();
        for t in &ts {
            decthings::encode(t, Layout::Current, &mut blob).unwrap();
        }
        let blob = blob.freeze();
        let mut pos = 0;
        let mut got = Vec::new();
        while pos < blob.len() {
            let owned = OwnedDecthingsTensor::from_bytes(blob.slice(pos..)).unwrap();
            pos += owned.byte_size();
            got.push(plain(&owned.tensor()));
        }
        let want: Vec<Plain> = ts.iter().map(plain_of).collect();
        prop_assert_eq!(got, want);
    }

    /// And the other way: what the client serializes, tensorgate decodes to
    /// the same values.
    #[test]
    fn tensorgate_decodes_what_the_client_encodes(t in any_tensor()) {
        let owned = OwnedDecthingsTensor::from_bytes(encoded(&t)).unwrap();
        let wire = Bytes::from(owned.tensor().serialize());
        let (back, used) = decthings::decode(&wire, Layout::Current, &DecodeLimits::default())
            .unwrap()
            .expect("whole tensor");
        prop_assert_eq!(used, wire.len());
        prop_assert_eq!(plain_of(&back), plain(&owned.tensor()));
    }
}

// ---------------------------------------------------------------- findings

/// FINDING: a tensor with a zero dimension has no elements, but when its
/// other dimensions multiply past `isize::MAX` the client panics: in
/// `from_bytes` when the running product overflows `usize` before reaching
/// the zero (debug builds: "attempt to multiply with overflow"), else in
/// `tensor()` (ndarray refuses the shape: `ShapeError/IncompatibleShape`).
/// tensorgate encodes both shapes without complaint.
#[test]
fn client_panics_on_empty_shapes_past_isize_max() {
    let huge = 1u64 << 32;
    for dims in [vec![huge, huge, 0], vec![0, huge, huge]] {
        let t = Tensor::new(DataType::U8, Shape::new(dims.clone()), Bytes::new()).unwrap();
        let wire = encoded(&t);
        let result = std::panic::catch_unwind(|| {
            let owned = OwnedDecthingsTensor::from_bytes(wire.clone()).unwrap();
            plain(&owned.tensor())
        });
        assert!(
            result.is_err(),
            "{dims:?}: the client no longer panics: {result:?}"
        );
    }
}
