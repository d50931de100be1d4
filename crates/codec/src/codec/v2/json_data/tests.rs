use super::*;

/// Converts `json` in one piece, and again in every 1-byte split, checking
/// both agree.
fn convert(dtype: DataType, json: &str) -> Result<(Vec<u8>, u64), DataError> {
    let whole = {
        let mut p = DataParser::new(dtype, None, 1 << 20, 100);
        match p.parse(json.as_bytes(), true)? {
            Progress::Done(n) => assert_eq!(json[n..].trim(), "", "trailing input"),
            Progress::NeedMore(_) => panic!("need more at eof"),
        }
        p.into_data()
    };
    // Byte by byte, keeping unconsumed tails as a real caller does.
    let mut p = DataParser::new(dtype, None, 1 << 20, 100);
    let mut pending: Vec<u8> = Vec::new();
    let mut done = false;
    for &b in json.as_bytes() {
        pending.push(b);
        match p.parse(&pending, false)? {
            Progress::Done(_) => {
                done = true;
                break;
            }
            Progress::NeedMore(n) => {
                pending.drain(..n);
            }
        }
    }
    if !done {
        match p.parse(&pending, true)? {
            Progress::Done(_) => {}
            Progress::NeedMore(_) => panic!("need more at eof"),
        }
    }
    assert_eq!(p.into_data(), whole, "1-byte chunks differ for {json}");
    Ok(whole)
}

fn le<T: Copy, const N: usize>(values: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| f(v)).collect()
}

#[test]
fn every_datatype() {
    let check = |dtype, json: &str, bytes: Vec<u8>, count| {
        assert_eq!(
            convert(dtype, json).unwrap(),
            (bytes, count),
            "{dtype} {json}"
        );
    };
    check(DataType::Bool, "[true, false,true]", vec![1, 0, 1], 3);
    check(DataType::U8, "[0, 255]", vec![0, 255], 2);
    check(DataType::I8, "[-128, 127]", vec![0x80, 0x7f], 2);
    check(DataType::U16, "[65535]", vec![255, 255], 1);
    check(DataType::I16, "[-2]", le(&[-2i16], i16::to_le_bytes), 1);
    check(
        DataType::U32,
        "[4294967295]",
        le(&[u32::MAX], u32::to_le_bytes),
        1,
    );
    check(
        DataType::I32,
        "[[1,2],[3,-4]]",
        le(&[1i32, 2, 3, -4], i32::to_le_bytes),
        4,
    );
    check(
        DataType::U64,
        "[18446744073709551615, 0]",
        le(&[u64::MAX, 0], u64::to_le_bytes),
        2,
    );
    check(
        DataType::I64,
        "[-9223372036854775808,9223372036854775807]",
        le(&[i64::MIN, i64::MAX], i64::to_le_bytes),
        2,
    );
    check(
        DataType::F32,
        "[1.5, -0.0, 0.1, 3.4028234663852886e38, \"NaN\", \"-Infinity\"]",
        le(
            &[1.5f32, -0.0, 0.1, f32::MAX, f32::NAN, f32::NEG_INFINITY],
            f32::to_le_bytes,
        ),
        6,
    );
    check(
        DataType::F64,
        "[1e-300, 2]",
        le(&[1e-300f64, 2.0], f64::to_le_bytes),
        2,
    );
    check(
        DataType::F16,
        "[1.0, 0.1, 65504, -2.5]",
        le(&[1.0f32, 0.1, 65504.0, -2.5], |v| {
            half::f16::from_f32(v).to_le_bytes()
        }),
        4,
    );
    check(
        DataType::BF16,
        "[1.0, 0.1, -3e38]",
        le(&[1.0f64, 0.1, -3e38], |v| {
            half::bf16::from_f64(v).to_le_bytes()
        }),
        3,
    );
    check(
        DataType::Bytes,
        r#"["", "ab", "h\u00e9\n"]"#,
        b"\0\0\0\0\x02\0\0\0ab\x04\0\0\0h\xc3\xa9\n".to_vec(),
        3,
    );
    check(DataType::I32, "[]", vec![], 0);
    check(DataType::I32, "[[], [[]]]", vec![], 0);
    check(DataType::I32, " 7 ", le(&[7i32], i32::to_le_bytes), 1);
}

#[test]
fn fp16_rounds_to_nearest_even() {
    // 2049 lies halfway between the FP16 values 2048 and 2050: even wins.
    let (bytes, _) = convert(DataType::F16, "[2049, 2051, 0.000000059604644775390625]").unwrap();
    let got: Vec<f32> = bytes
        .chunks(2)
        .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
        .collect();
    assert_eq!(got, vec![2048.0, 2052.0, 5.9604645e-8]);
}

#[test]
fn f32_is_double_then_narrowed() {
    // Triton and numpy read the double first, then narrow to float.
    let (bytes, _) = convert(DataType::F32, "[0.7213459014892578, 16777217]").unwrap();
    assert_eq!(
        bytes,
        le(&[0.721_345_9_f64 as f32, 16777216.0f32], f32::to_le_bytes)
    );
}

#[test]
fn malformed_and_wrong_values() {
    let cases: &[(DataType, &str, &str)] = &[
        (
            DataType::U8,
            "[300]",
            "element 0: 300 is out of range for UINT8",
        ),
        (
            DataType::U8,
            "[1, -1]",
            "element 1: -1 is out of range for UINT8",
        ),
        (
            DataType::I8,
            "[-129]",
            "element 0: -129 is out of range for INT8",
        ),
        (
            DataType::U64,
            "[18446744073709551616]",
            "element 0: 18446744073709551616 is out of range for UINT64",
        ),
        (
            DataType::I32,
            "[1.0]",
            "element 0: INT32 needs an integer, found 1.0",
        ),
        (
            DataType::I32,
            "[1e2]",
            "element 0: INT32 needs an integer, found 1e2",
        ),
        (
            DataType::I32,
            "[\"1\"]",
            "element 0: expected a INT32 value, found a string",
        ),
        (
            DataType::I32,
            "[true]",
            "element 0: expected a INT32 value, found a boolean",
        ),
        (
            DataType::I32,
            "[null]",
            "element 0: expected a INT32 value, found null",
        ),
        (
            DataType::I32,
            "[{}]",
            "element 0: expected a INT32 value, found an object",
        ),
        (
            DataType::Bool,
            "[1]",
            "element 0: expected a BOOL value, found a number",
        ),
        (
            DataType::Bytes,
            "[1]",
            "element 0: expected a BYTES value, found a number",
        ),
        (
            DataType::F32,
            "[1e39]",
            "element 0: 1e39 is out of range for FP32",
        ),
        (
            DataType::F64,
            "[1e999]",
            "element 0: 1e999 is out of range for FP64",
        ),
        (
            DataType::F16,
            "[70000]",
            "element 0: 70000 is out of range for FP16",
        ),
        (
            DataType::F32,
            "[\"nan\"]",
            "element 0: expected a FP32 value, found a string",
        ),
        (
            DataType::F32,
            "[1,]",
            "malformed JSON at element 1: unexpected character",
        ),
        (
            DataType::F32,
            "[1 2]",
            "malformed JSON at element 1: expected ',' or ']'",
        ),
        (
            DataType::F32,
            "[01]",
            "malformed JSON at element 0: invalid number",
        ),
        (
            DataType::F32,
            "[1",
            "malformed JSON at element 1: unexpected end of input",
        ),
        (DataType::F32, "[1]]", "trailing"),
        (DataType::Bytes, "[\"a\\x\"]", "element 0: invalid escape"),
        (DataType::Bytes, "[\"abc]", "element 0: unterminated string"),
        (
            DataType::Bool,
            "[tru]",
            "malformed JSON at element 0: invalid literal",
        ),
        (
            DataType::Bool,
            "[truex]",
            "malformed JSON at element 0: invalid literal",
        ),
    ];
    for (dtype, json, message) in cases {
        let mut p = DataParser::new(*dtype, None, 1 << 20, 100);
        let got = match p.parse(json.as_bytes(), true) {
            Err(e) => e.to_string(),
            Ok(Progress::Done(n)) if json[n..].trim().is_empty() => "ok".to_owned(),
            Ok(_) => "trailing".to_owned(),
        };
        assert_eq!(got, *message, "{dtype} {json}");
    }
}

#[test]
fn invalid_utf8_in_bytes_string() {
    let mut p = DataParser::new(DataType::Bytes, None, 10, 100);
    let err = p.parse(b"[\"\xff\"]", true).unwrap_err();
    assert_eq!(err.to_string(), "element 0: string is not valid UTF-8");
}

#[test]
fn depth_and_count_limits() {
    let deep = format!("{}1{}", "[".repeat(101), "]".repeat(101));
    let mut p = DataParser::new(DataType::I32, None, 10, 100);
    assert_eq!(
        p.parse(deep.as_bytes(), true),
        Err(DataError::TooDeep { max: 100 })
    );

    let mut p = DataParser::new(DataType::I32, None, 2, 100);
    assert_eq!(
        p.parse(b"[1,2,3]", true),
        Err(DataError::TooManyElements { max: 2 })
    );
    let mut p = DataParser::new(DataType::I32, Some(2), 100, 100);
    assert_eq!(
        p.parse(b"[1,2,3]", true),
        Err(DataError::MoreThanShape { expected: 2 })
    );
}

/// Found by the `v2_document` fuzz target: an error quoting the number
/// (`1.588+8888...` for INT8) quoted only the part of it before the chunk
/// boundary, so the message depended on where the input was split.
#[test]
fn quoted_number_errors_do_not_depend_on_the_split() {
    for (dtype, json) in [
        (DataType::I8, "[1.588+8888888888888684444444444444]"),
        (DataType::U8, "[300-5]"),
        (DataType::I64, "[123456789012345678901234567890]"),
        (DataType::F32, "[1e39e+5]"),
    ] {
        let whole = DataParser::new(dtype, None, 10, 10)
            .parse(json.as_bytes(), true)
            .unwrap_err();
        for at in 1..json.len() {
            let mut p = DataParser::new(dtype, None, 10, 10);
            let (first, rest) = json.as_bytes().split_at(at);
            let err = match p.parse(first, false) {
                Err(e) => e,
                Ok(Progress::NeedMore(used)) => {
                    let tail = [&first[used..], rest].concat();
                    p.parse(&tail, true).unwrap_err()
                }
                Ok(Progress::Done(_)) => panic!("{json} done at {at}"),
            };
            assert_eq!(err, whole, "{json} split at {at}");
        }
    }
}

#[test]
fn a_declared_shape_reserves_a_bounded_amount() {
    let p = DataParser::new(DataType::F64, Some(1 << 28), 1 << 28, 100);
    assert!(p.into_data().0.capacity() <= MAX_RESERVE);
}
