use super::*;

fn dec(input: &[u8]) -> Result<Vec<Tensor>, DecodeError> {
    decode_all(
        &Bytes::copy_from_slice(input),
        Layout::Current,
        &DecodeLimits::default(),
    )
}

/// Decodes `input` and re-encodes it: the bytes must come back unchanged.
fn check(input: &[u8], layout: Layout) -> Tensor {
    let bytes = Bytes::copy_from_slice(input);
    let (t, used) = decode(&bytes, layout, &DecodeLimits::default())
        .unwrap()
        .unwrap();
    assert_eq!(used, input.len());
    let mut out = BytesMut::new();
    encode(&t, layout, &mut out).unwrap();
    assert_eq!(&out[..], input);
    t
}

#[test]
fn numeric_data_is_not_copied() {
    let input = Bytes::from_static(b"\x01\x01\x02\x00\x00\xc0\x3f\x00\x00\x10\xc0");
    let (t, _) = decode(&input, Layout::Current, &DecodeLimits::default())
        .unwrap()
        .unwrap();
    // Same allocation: the tensor's data points into the input buffer.
    assert_eq!(t.data.as_ptr(), input[3..].as_ptr());
    let (_, data) = encode_parts(&t, Layout::Current).unwrap();
    assert_eq!(data.as_ptr(), input[3..].as_ptr());
}

#[test]
fn string_and_media_round_trip() {
    let t = check(b"\x0b\x01\x02\x09\x05hello\x02hi", Layout::Current);
    assert_eq!(t.semantic, Semantic::String);
    assert_eq!(&t.data[..], b"\x05\0\0\0hello\x02\0\0\0hi");
    let t = check(b"\x0e\x00\x09\x08\x03png\x01\x02\x03\x04", Layout::Current);
    assert_eq!(
        t.semantic,
        Semantic::Media {
            kind: DecthingsType::Image,
            formats: vec!["png".to_owned()]
        }
    );
    let t = check(b"\x0f\x00\x06\x05mp3\x01\x02", Layout::Legacy);
    assert_eq!(&t.data[..], b"\x02\0\0\0\x01\x02");
}

#[test]
fn incomplete_input_is_none_not_an_error() {
    let full = b"\x0b\x01\x02\x09\x05hello\x02hi";
    for n in 0..full.len() {
        let part = Bytes::copy_from_slice(&full[..n]);
        assert_eq!(
            decode(&part, Layout::Current, &DecodeLimits::default()),
            Ok(None),
            "{n}"
        );
    }
}

#[test]
fn booleans_accept_any_nonzero_and_write_one() {
    let t = dec(b"\x0d\x01\x03\x00\x01\x07").unwrap().remove(0);
    assert_eq!(&t.data[..], &[0, 1, 1]);
    let mut out = BytesMut::new();
    encode(&t, Layout::Current, &mut out).unwrap();
    assert_eq!(&out[..], b"\x0d\x01\x03\x00\x01\x01");
}

#[test]
fn fp16_widens_to_f32() {
    let t = Tensor::new(
        DataType::F16,
        Shape::new(vec![2]),
        Bytes::from(
            [half::f16::from_f32(1.5), half::f16::from_f32(-0.25)]
                .iter()
                .flat_map(|h| h.to_le_bytes())
                .collect::<Vec<u8>>(),
        ),
    )
    .unwrap();
    let mut out = BytesMut::new();
    encode(&t, Layout::Current, &mut out).unwrap();
    let mut expect = vec![1u8, 1, 2];
    expect.extend_from_slice(&1.5f32.to_le_bytes());
    expect.extend_from_slice(&(-0.25f32).to_le_bytes());
    assert_eq!(&out[..], &expect[..]);
}

#[test]
fn malformed_inputs_are_typed_errors() {
    let cases: &[(&[u8], &str)] = &[
        (b"\x00\x00", "unknown Decthings type byte 0 at offset 0"),
        (b"\x11\x00", "unknown Decthings type byte 17 at offset 0"),
        (
            b"\x05",
            "truncated Decthings tensor: input ends inside the dimension count at offset 1",
        ),
        (
            b"\x05\x01",
            "truncated Decthings tensor: input ends inside the dimension at offset 2",
        ),
        (
            b"\x05\x01\x02\x01\x00\x00\x00",
            "truncated Decthings tensor: input ends inside the tensor data at offset 3",
        ),
        (
            b"\x05\x01\xfd\x00\x02",
            "dimension at offset 2 is an overlong varint (2 has a shorter form)",
        ),
        (
            b"\x05\x01\xfe\x00\x00\x00\xfc",
            "dimension at offset 2 is an overlong varint (252 has a shorter form)",
        ),
        (
            b"\x05\x02\xff\x00\x00\x00\x01\x00\x00\x00\x00\xff\x00\x00\x00\x01\x00\x00\x00\x00",
            "shape [4294967296,4294967296] has more elements than fit in 64 bits",
        ),
        (
            b"\x06\x01\xff\x20\x00\x00\x00\x00\x00\x00\x00",
            "shape [2305843009213693952] has more elements than fit in 64 bits",
        ),
        (
            b"\x07\x01\xff\x00\x00\x00\x01\x00\x00\x00\x01",
            "u8 tensor of shape [4294967297] declares 4294967297 data bytes, over the limit of 4294967296",
        ),
        (
            b"\x0b\x01\x02\x01\x00",
            "string tensor of shape [2]: element section of 1 bytes cannot hold 2 elements",
        ),
        (
            b"\x0b\x01\x01\x03\x05abc",
            "string element 0 declares 5 bytes, past the end of its 3-byte section",
        ),
        (
            b"\x0b\x01\x01\x03\x01abc",
            "string element section declares 3 bytes but its elements use 2",
        ),
        (
            b"\x0b\x01\x01\x01\xfd",
            "string element 0: its length prefix runs past the end of its 1-byte section",
        ),
        (
            b"\x0b\x01\x01\x02\x01\xff",
            "string element 0 is not valid UTF-8",
        ),
        (
            b"\x0e\x00\x02\x01\x05",
            "image element 0 is 1 bytes, too short for its media format",
        ),
        (
            b"\x0e\x00\x03\x02\x01\xff",
            "image element 0: media format is not valid UTF-8",
        ),
        (
            b"\x0b\x01\x01\x05\x03ab",
            "truncated Decthings tensor: input ends inside the element section at offset 4",
        ),
    ];
    for (input, message) in cases {
        let err = dec(input).unwrap_err();
        assert_eq!(err.to_string(), *message, "input {input:02x?}");
    }
}

#[test]
fn legacy_media_needs_three_format_bytes() {
    let t = dec(b"\x0e\x00\x0a\x09\x04jpeg\x01\x02\x03\x04")
        .unwrap()
        .remove(0);
    let mut out = BytesMut::new();
    assert_eq!(
        encode(&t, Layout::Legacy, &mut out),
        Err(EncodeError::LegacyFormat {
            format: "jpeg".to_owned()
        })
    );
    let err = decode_all(
        &Bytes::from_static(b"\x0e\x00\x03\x02pn"),
        Layout::Legacy,
        &DecodeLimits::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "image element 0 is 2 bytes, too short for its media format"
    );
}

#[test]
fn too_many_dims_to_encode() {
    let t = Tensor::new(
        DataType::U8,
        Shape::new(vec![1; 256]),
        Bytes::from_static(&[0]),
    )
    .unwrap();
    let mut out = BytesMut::new();
    assert!(matches!(
        encode(&t, Layout::Current, &mut out),
        Err(EncodeError::TooManyDims { rank: 256, .. })
    ));
}
