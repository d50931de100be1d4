use super::*;

fn write_all(dtype: DataType, data: &[u8]) -> Result<String, WriteError> {
    let mut whole = Vec::new();
    let mut w = ValueWriter::new(dtype);
    w.write(data, &mut whole)?;
    w.finish()?;
    // The same bytes in 1..=9-byte pieces give the same text.
    for size in 1..10 {
        let mut out = Vec::new();
        let mut w = ValueWriter::new(dtype);
        for piece in data.chunks(size) {
            w.write(piece, &mut out)?;
        }
        w.finish()?;
        assert_eq!(out, whole, "piece size {size}");
    }
    Ok(String::from_utf8(whole).unwrap())
}

fn le<T: Copy, const N: usize>(values: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| f(v)).collect()
}

#[test]
fn every_datatype() {
    let check = |dtype, data: Vec<u8>, text: &str| {
        assert_eq!(write_all(dtype, &data).unwrap(), text, "{dtype}");
    };
    check(DataType::Bool, vec![1, 0, 2], "true,false,true");
    check(DataType::U8, vec![0, 255], "0,255");
    check(DataType::I8, vec![0x80, 1], "-128,1");
    check(DataType::U16, le(&[65535u16], u16::to_le_bytes), "65535");
    check(DataType::I16, le(&[-300i16], i16::to_le_bytes), "-300");
    check(
        DataType::U32,
        le(&[u32::MAX], u32::to_le_bytes),
        "4294967295",
    );
    check(
        DataType::I32,
        le(&[1i32, -2, 3], i32::to_le_bytes),
        "1,-2,3",
    );
    check(
        DataType::U64,
        le(&[u64::MAX], u64::to_le_bytes),
        "18446744073709551615",
    );
    check(
        DataType::I64,
        le(&[i64::MIN, 5], i64::to_le_bytes),
        "-9223372036854775808,5",
    );
    check(
        DataType::F32,
        le(
            &[
                1.5f32,
                0.1,
                -0.0,
                1e30,
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
            ],
            f32::to_le_bytes,
        ),
        r#"1.5,0.1,-0.0,1e+30,"NaN","Infinity","-Infinity""#,
    );
    check(
        DataType::F64,
        le(&[0.1f64, 1e-7], f64::to_le_bytes),
        "0.1,1e-7",
    );
    check(
        DataType::F16,
        le(&[1.5f32, 0.1], |v| half::f16::from_f32(v).to_le_bytes()),
        "1.5,0.099975586",
    );
    check(
        DataType::BF16,
        le(&[1.0f32, 0.1], |v| half::bf16::from_f32(v).to_le_bytes()),
        "1.0,0.100097656",
    );
    check(
        DataType::Bytes,
        b"\x00\x00\x00\x00\x03\x00\x00\x00a\"\n\x02\x00\x00\x00\xc3\xa9".to_vec(),
        r#""","a\"\n","é""#,
    );
    check(DataType::F32, vec![], "");
}

/// The one float magnitude whose shortest digits do not survive the double
/// rounding of FP32 readers (found by an exhaustive scan of all floats):
/// it is written as its widened double, and reads back bit for bit.
#[test]
fn fp32_text_survives_double_rounding() {
    for bits in [0x15ae_43fd_u32, 0x95ae_43fd] {
        let v = f32::from_bits(bits);
        let shortest = zmij::Buffer::new().format_finite(v).to_owned();
        let (double, _) = crate::codec::v2::number::parse_f64(shortest.as_bytes(), true)
            .unwrap()
            .unwrap();
        assert_ne!((double as f32).to_bits(), bits, "{shortest} now survives");
        let text = write_all(DataType::F32, &bits.to_le_bytes()).unwrap();
        assert_eq!(text.trim_start_matches('-'), "7.038530691851209e-26");
        let mut p = crate::codec::v2::json_data::DataParser::new(DataType::F32, None, 1, 1);
        p.parse(format!("[{text}]").as_bytes(), true).unwrap();
        assert_eq!(p.into_data().0, bits.to_le_bytes());
    }
    let text = write_all(DataType::F32, &7.038532e-26f32.to_le_bytes()).unwrap();
    assert_eq!(text, "7.038532e-26");
}

#[test]
fn truncated_and_invalid() {
    let mut w = ValueWriter::new(DataType::I32);
    let mut out = Vec::new();
    w.write(&[1, 0, 0, 0, 2, 0], &mut out).unwrap();
    assert_eq!(
        w.finish(),
        Err(WriteError::Truncated {
            index: 1,
            missing: 2
        })
    );
    let mut w = ValueWriter::new(DataType::Bytes);
    w.write(b"\x05\x00\x00\x00ab", &mut out).unwrap();
    assert_eq!(
        w.finish(),
        Err(WriteError::Truncated {
            index: 0,
            missing: 3
        })
    );
    assert_eq!(
        write_all(DataType::Bytes, b"\x01\x00\x00\x00\xff"),
        Err(WriteError::NotUtf8 { index: 0 })
    );
}

/// `split` + `continuation` + `absorb` give the text and count of one
/// `write`, wherever the piece starts and ends (carried partial elements
/// on both sides) and for every fixed-size type.
#[test]
fn split_halves_write_the_same_text() {
    let data: Vec<u8> = (0..203u32).map(|i| (i * 37 % 251) as u8).collect();
    for dtype in [
        DataType::Bool,
        DataType::U8,
        DataType::I16,
        DataType::F16,
        DataType::F32,
        DataType::I64,
        DataType::F64,
    ] {
        let size = dtype.fixed_size().unwrap();
        for cut in [0, 1, 3, size, 2 * size + 1] {
            for end in [data.len(), data.len() - 1, data.len() - size + 1] {
                let (before, piece) = (&data[..cut], &data[cut..end]);
                let mut one = Vec::new();
                let mut w = ValueWriter::new(dtype);
                w.write(before, &mut one).unwrap();
                w.write(piece, &mut one).unwrap();
                let mut two = Vec::new();
                let mut main = ValueWriter::new(dtype);
                main.write(before, &mut two).unwrap();
                let (mid, whole_end) = main.split(piece).expect("room for two halves");
                let mut later = main.continuation();
                let mut tail = Vec::new();
                later.write(&piece[mid..whole_end], &mut tail).unwrap();
                main.write(&piece[..mid], &mut two).unwrap();
                two.extend_from_slice(&tail);
                main.absorb(&later);
                main.write(&piece[whole_end..], &mut two).unwrap();
                let ctx = format!("{dtype} cut {cut} end {end}");
                assert_eq!(
                    String::from_utf8(two).unwrap(),
                    String::from_utf8(one).unwrap(),
                    "{ctx}"
                );
                assert_eq!(main.count(), w.count(), "{ctx}");
                assert_eq!(main.finish().is_ok(), w.finish().is_ok(), "{ctx}");
                assert!(piece.len() - whole_end < size, "{ctx}");
            }
        }
    }
    // Nothing to split: BYTES, or under two whole elements.
    assert_eq!(ValueWriter::new(DataType::Bytes).split(&data), None);
    assert_eq!(ValueWriter::new(DataType::F32).split(&data[..7]), None);
    assert_eq!(
        ValueWriter::new(DataType::F32).split(&data[..8]),
        Some((4, 8))
    );
}

/// Every finite FP16 and BF16 value is written as the shortest text of its
/// FP32 widening, the same text whether `f32_text` or zmij writes it.
#[test]
fn every_half_value_is_its_widened_shortest_text() {
    for (dtype, widen) in [
        (
            DataType::F16,
            (|b| half::f16::from_bits(b).to_f32()) as fn(u16) -> f32,
        ),
        (DataType::BF16, |b| half::bf16::from_bits(b).to_f32()),
    ] {
        let finite: Vec<u16> = (0..=u16::MAX).filter(|&b| widen(b).is_finite()).collect();
        let data: Vec<u8> = finite.iter().flat_map(|b| b.to_le_bytes()).collect();
        let mut out = Vec::new();
        let mut w = ValueWriter::new(dtype);
        w.write(&data, &mut out).unwrap();
        assert_eq!(w.finish().unwrap(), finite.len() as u64);
        let want: Vec<String> = finite
            .iter()
            .map(|&b| zmij::Buffer::new().format_finite(widen(b)).to_owned())
            .collect();
        assert_eq!(String::from_utf8(out).unwrap(), want.join(","), "{dtype}");
    }
}

/// The `"parameters"` member as tensor heads wrote it before
/// `write_parameters`: the map copied, changed, and written by serde.
fn parameters_by_copy(params: &serde_json::Map<String, Value>, form: TensorForm) -> Vec<u8> {
    let mut params = params.clone();
    match form {
        TensorForm::Binary(size) => {
            params.insert("binary_data_size".to_owned(), Value::from(size));
        }
        TensorForm::Json => {
            params.remove("binary_data_size");
        }
        TensorForm::AsIs => {}
    }
    let mut out = Vec::new();
    if !params.is_empty() {
        out.extend_from_slice(b",\"parameters\":");
        serde_json::to_writer(&mut out, &params).unwrap();
    }
    out
}

/// `write_parameters` of the map's members as [`Params`] against serde's
/// map.
fn check_parameters(params: &serde_json::Map<String, Value>) {
    for form in [TensorForm::Binary(64), TensorForm::Json, TensorForm::AsIs] {
        let mut out = Vec::new();
        write_parameters(&Params::from(params.clone()), form, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            String::from_utf8(parameters_by_copy(params, form)).unwrap(),
            "{params:?} as {form:?}"
        );
    }
}

#[test]
fn parameters_are_written_as_the_changed_copy_was() {
    let map = |json: &str| match serde_json::from_str(json).unwrap() {
        Value::Object(m) => m,
        _ => unreachable!(),
    };
    for json in [
        r#"{}"#,
        r#"{"binary_data_size": 8}"#,
        r#"{"binary_data_size": 8, "a": 1}"#,
        r#"{"a": 1, "binary_data_size": 8}"#,
        r#"{"a": 1, "binary_data_size": 8, "b": "x", "c": [true]}"#,
        r#"{"a": {"k": null}, "b\"\n\u0001é": 2.5}"#,
    ] {
        check_parameters(&map(json));
    }
}

proptest::proptest! {
    #[test]
    fn any_parameters_are_written_as_the_changed_copy_was(
        keys in proptest::collection::vec("[ab\"\\\\é\u{1}]{0,3}|binary_data_size", 0..6),
    ) {
        let params: serde_json::Map<String, Value> = keys
            .into_iter()
            .enumerate()
            .map(|(i, k)| (k, Value::from(i)))
            .collect();
        check_parameters(&params);
    }
}

/// The widest text of every fixed-size type fits the capacity
/// `max_text_len` gives, without `write` reallocating it.
#[test]
fn the_widest_values_fit_max_text_len() {
    let cases: [(DataType, Vec<u8>); 13] = [
        (DataType::Bool, vec![0; 33]),
        (DataType::U8, vec![255; 33]),
        (DataType::I8, le(&[i8::MIN; 33], i8::to_le_bytes)),
        (DataType::U16, le(&[u16::MAX; 33], u16::to_le_bytes)),
        (DataType::I16, le(&[i16::MIN; 33], i16::to_le_bytes)),
        (DataType::U32, le(&[u32::MAX; 33], u32::to_le_bytes)),
        (DataType::I32, le(&[i32::MIN; 33], i32::to_le_bytes)),
        (DataType::U64, le(&[u64::MAX; 33], u64::to_le_bytes)),
        (DataType::I64, le(&[i64::MIN; 33], i64::to_le_bytes)),
        (
            DataType::F16,
            le(&[f16::from_f32(-6.1e-5); 33], f16::to_le_bytes),
        ),
        (
            DataType::BF16,
            le(&[bf16::from_f32(-1.1e-38); 33], bf16::to_le_bytes),
        ),
        (
            DataType::F32,
            le(
                &[-1.1754942e-38f32, f32::from_bits(0x95ae_43fd)],
                f32::to_le_bytes,
            ),
        ),
        (
            DataType::F64,
            le(&[-2.2250738585072014e-308f64; 33], f64::to_le_bytes),
        ),
    ];
    for (dtype, data) in cases {
        let max = ValueWriter::max_text_len(dtype, data.len());
        let mut out = Vec::with_capacity(max);
        let before = out.as_ptr();
        let mut w = ValueWriter::new(dtype);
        w.write(&data, &mut out).unwrap();
        w.finish().unwrap();
        assert!(out.len() <= max, "{dtype}: {} > {max}", out.len());
        assert_eq!(out.as_ptr(), before, "{dtype}: reallocated");
    }
}

/// Every value of the 8- and 16-bit types, and the 32- and 64-bit values
/// around the one- and two-byte fast path (0..=99) and their extremes, are
/// written as `Display` writes them.
#[test]
fn integers_are_their_display_text() {
    fn check<T: Copy + ToString, const N: usize>(
        dtype: DataType,
        values: &[T],
        f: impl Fn(T) -> [u8; N],
    ) {
        let text = values
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(write_all(dtype, &le(values, f)).unwrap(), text, "{dtype}");
    }
    check(
        DataType::U8,
        &(0..=u8::MAX).collect::<Vec<_>>(),
        u8::to_le_bytes,
    );
    check(
        DataType::I8,
        &(i8::MIN..=i8::MAX).collect::<Vec<_>>(),
        i8::to_le_bytes,
    );
    check(
        DataType::U16,
        &(0..=u16::MAX).collect::<Vec<_>>(),
        u16::to_le_bytes,
    );
    check(
        DataType::I16,
        &(i16::MIN..=i16::MAX).collect::<Vec<_>>(),
        i16::to_le_bytes,
    );
    let edges = [0i64, 1, 9, 10, 11, 99, 100, 101, 255, 256, 999, 1000];
    let wide = |v: i64| [v, -v, v + i64::from(i32::MAX) - 1000];
    let i32s: Vec<i32> = edges
        .iter()
        .flat_map(|&v| wide(v))
        .filter_map(|v| i32::try_from(v).ok())
        .chain([i32::MIN, i32::MAX])
        .collect();
    check(DataType::I32, &i32s, i32::to_le_bytes);
    let u32s: Vec<u32> = i32s.iter().map(|&v| v as u32).collect();
    check(DataType::U32, &u32s, u32::to_le_bytes);
    let i64s: Vec<i64> = edges
        .iter()
        .flat_map(|&v| [v, -v, i64::MAX - 1000 + v])
        .chain([i64::MIN, i64::MAX])
        .collect();
    check(DataType::I64, &i64s, i64::to_le_bytes);
    let u64s: Vec<u64> = i64s.iter().map(|&v| v as u64).collect();
    check(DataType::U64, &u64s, u64::to_le_bytes);
}
