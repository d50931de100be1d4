use super::*;

fn check(dtype: DataType, c: InferTensorContents, expected: &[u8]) {
    let count = match dtype {
        DataType::Bytes => c.bytes_contents.len() as u64,
        _ => (expected.len() / dtype.fixed_size().unwrap()) as u64,
    };
    assert_eq!(
        &to_binary(dtype, count, &c).unwrap()[..],
        expected,
        "{dtype}"
    );
}

fn contents() -> InferTensorContents {
    InferTensorContents::default()
}

#[test]
fn every_datatype_in_little_endian() {
    check(
        DataType::Bool,
        InferTensorContents {
            bool_contents: vec![true, false],
            ..contents()
        },
        &[1, 0],
    );
    check(
        DataType::I8,
        InferTensorContents {
            int_contents: vec![-1, 127],
            ..contents()
        },
        &[0xff, 0x7f],
    );
    check(
        DataType::I16,
        InferTensorContents {
            int_contents: vec![-2, 258],
            ..contents()
        },
        &[0xfe, 0xff, 2, 1],
    );
    check(
        DataType::I32,
        InferTensorContents {
            int_contents: vec![-1, 1 << 24],
            ..contents()
        },
        &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1],
    );
    check(
        DataType::I64,
        InferTensorContents {
            int64_contents: vec![i64::MIN],
            ..contents()
        },
        &[0, 0, 0, 0, 0, 0, 0, 0x80],
    );
    check(
        DataType::U8,
        InferTensorContents {
            uint_contents: vec![0, 255],
            ..contents()
        },
        &[0, 255],
    );
    check(
        DataType::U16,
        InferTensorContents {
            uint_contents: vec![65535],
            ..contents()
        },
        &[0xff, 0xff],
    );
    check(
        DataType::U32,
        InferTensorContents {
            uint_contents: vec![0x0102_0304],
            ..contents()
        },
        &[4, 3, 2, 1],
    );
    check(
        DataType::U64,
        InferTensorContents {
            uint64_contents: vec![u64::MAX],
            ..contents()
        },
        &[0xff; 8],
    );
    check(
        DataType::F32,
        InferTensorContents {
            fp32_contents: vec![1.0, -0.5],
            ..contents()
        },
        &[0, 0, 0x80, 0x3f, 0, 0, 0, 0xbf],
    );
    check(
        DataType::F64,
        InferTensorContents {
            fp64_contents: vec![2.0],
            ..contents()
        },
        &[0, 0, 0, 0, 0, 0, 0, 0x40],
    );
    check(
        DataType::Bytes,
        InferTensorContents {
            bytes_contents: vec![Bytes::from_static(b"hi"), Bytes::new()],
            ..contents()
        },
        b"\x02\x00\x00\x00hi\x00\x00\x00\x00",
    );
}

#[test]
fn empty_tensors_need_no_field() {
    assert_eq!(to_binary(DataType::F32, 0, &contents()), Ok(Bytes::new()));
    assert_eq!(to_binary(DataType::F16, 0, &contents()), Ok(Bytes::new()));
}

#[test]
fn refusals() {
    let ints = InferTensorContents {
        int_contents: vec![1, 2],
        ..contents()
    };
    assert_eq!(
        to_binary(DataType::F32, 2, &ints).unwrap_err().to_string(),
        "FP32 data must be in fp32_contents, not int_contents"
    );
    assert_eq!(
        to_binary(DataType::I32, 3, &ints).unwrap_err().to_string(),
        "int_contents holds 2 elements but the shape has 3"
    );
    assert_eq!(
        to_binary(DataType::F16, 2, &ints).unwrap_err().to_string(),
        "FP16 has no typed contents; send its data in raw_input_contents"
    );
    let wide = InferTensorContents {
        int_contents: vec![1, 300],
        ..contents()
    };
    assert_eq!(
        to_binary(DataType::I8, 2, &wide).unwrap_err().to_string(),
        "element 1 (300) is out of range for INT8"
    );
    let big = InferTensorContents {
        uint_contents: vec![70000],
        ..contents()
    };
    assert_eq!(
        to_binary(DataType::U16, 1, &big),
        Err(ContentsError::OutOfRange {
            dtype: DataType::U16,
            index: 0,
            value: 70000
        })
    );
    // A second filled field is refused even when the right one is there.
    let both = InferTensorContents {
        int_contents: vec![1],
        fp32_contents: vec![1.0],
        ..contents()
    };
    assert!(matches!(
        to_binary(DataType::I32, 1, &both),
        Err(ContentsError::WrongField {
            found: "fp32_contents",
            ..
        })
    ));
}
