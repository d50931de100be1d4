use super::*;
use crate::tensor::bytes_layout;

fn le<T: Copy, const N: usize>(values: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| f(v)).collect()
}

fn strings(items: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in items {
        bytes_layout::push(&mut out, s);
    }
    out
}

/// The whole body for `outputs` of `records` records, written in one batch
/// and, when the records split evenly, in two; both must agree.
fn write(
    format: ReplyFormat,
    records: usize,
    outputs: &[OutputRef<'_>],
) -> Result<String, ReplyError> {
    let mut w = ReplyWriter::new(format);
    let mut out = Vec::new();
    w.open(&mut out);
    w.write_batch(records, outputs, &mut out)?;
    w.close(&mut out);
    assert_eq!(w.records(), records as u64);
    Ok(String::from_utf8(out).unwrap())
}

fn check(format: ReplyFormat, records: usize, outputs: &[OutputRef<'_>], want: &str) {
    assert_eq!(write(format, records, outputs).unwrap(), want, "{format:?}");
}

#[test]
fn scalar_list_and_nested_rows() {
    let score = le(&[1.5f32, f32::NAN], f32::to_le_bytes);
    let rows = le(&[1.0f32, -0.0, 1e-5, f32::INFINITY], f32::to_le_bytes);
    let cube = le(&[1i64, 2, 3, 4, 5, 6, 7, 8], i64::to_le_bytes);
    let outputs = [
        OutputRef {
            name: "score",
            dtype: DataType::F32,
            shape: &[2],
            data: &score,
        },
        OutputRef {
            name: "OUTPUT0",
            dtype: DataType::F32,
            shape: &[2, 2],
            data: &rows,
        },
        OutputRef {
            name: "cube",
            dtype: DataType::I64,
            shape: &[2, 2, 2],
            data: &cube,
        },
    ];
    check(
        ReplyFormat::Json,
        2,
        &outputs,
        r#"{"predictions":[{"score":1.5,"OUTPUT0":[1.0,-0.0],"cube":[[1,2],[3,4]]},{"score":"NaN","OUTPUT0":[0.00001,"Infinity"],"cube":[[5,6],[7,8]]}]}"#,
    );
    check(
        ReplyFormat::JsonLines,
        2,
        &outputs,
        "{\"score\":1.5,\"OUTPUT0\":[1.0,-0.0],\"cube\":[[1,2],[3,4]]}\n{\"score\":\"NaN\",\"OUTPUT0\":[0.00001,\"Infinity\"],\"cube\":[[5,6],[7,8]]}\n",
    );
    check(
        ReplyFormat::Csv,
        2,
        &outputs,
        "1.5,1.0,-0.0,1,2,3,4\nnan,0.00001,inf,5,6,7,8\n",
    );
}

#[test]
fn bool_and_bytes() {
    let flags = [1u8, 0, 0, 1];
    let text = strings(&[b"a,b", b"say \"hi\"", b"", "\u{e9}t\u{e9}".as_bytes()]);
    let outputs = [
        OutputRef {
            name: "flag",
            dtype: DataType::Bool,
            shape: &[2, 2],
            data: &flags,
        },
        OutputRef {
            name: "label",
            dtype: DataType::Bytes,
            shape: &[2, 2],
            data: &text,
        },
    ];
    check(
        ReplyFormat::Json,
        2,
        &outputs,
        "{\"predictions\":[{\"flag\":[true,false],\"label\":[\"a,b\",\"say \\\"hi\\\"\"]},{\"flag\":[false,true],\"label\":[\"\",\"\u{e9}t\u{e9}\"]}]}",
    );
    check(
        ReplyFormat::Csv,
        2,
        &outputs,
        "1,0,\"a,b\",\"say \"\"hi\"\"\"\n0,1,\"\",\u{e9}t\u{e9}\n",
    );
}

#[test]
fn batches_continue_the_list() {
    let a = le(&[1u8, 2], |v| [v]);
    let b = le(&[3u8], |v| [v]);
    let mut w = ReplyWriter::new(ReplyFormat::Json);
    let mut out = Vec::new();
    w.open(&mut out);
    let o = |data: &'static [u8], shape: &'static [u64]| OutputRef {
        name: "y",
        dtype: DataType::U8,
        shape,
        data,
    };
    w.write_batch(2, &[o(a.leak(), &[2])], &mut out).unwrap();
    w.write_batch(1, &[o(b.leak(), &[1])], &mut out).unwrap();
    w.close(&mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        r#"{"predictions":[{"y":1},{"y":2},{"y":3}]}"#
    );
}

#[test]
fn errors_leave_nothing_behind() {
    let err = |records, outputs: &[OutputRef<'_>]| {
        let mut out = b"kept".to_vec();
        let e = ReplyWriter::new(ReplyFormat::Csv)
            .write_batch(records, outputs, &mut out)
            .unwrap_err();
        assert_eq!(out, b"kept");
        e.to_string()
    };
    let four = [0u8; 4];
    let o = |dtype, shape: &'static [u64], data: &'static [u8]| OutputRef {
        name: "y",
        dtype,
        shape,
        data,
    };
    assert_eq!(err(2, &[]), "the backend returned no outputs");
    assert_eq!(
        err(3, &[o(DataType::U8, &[4], &[0; 4])]),
        "output \"y\" has shape [4]; a reply needs the record dimension first (3 records)"
    );
    assert_eq!(
        err(2, &[o(DataType::U8, &[], &[0])]),
        "output \"y\" has shape []; a reply needs the record dimension first (2 records)"
    );
    assert_eq!(
        err(2, &[o(DataType::F32, &[2, 1], &[0; 4])]),
        "output \"y\": FP32 data of shape [2,1] needs 8 bytes, got 4"
    );
    let bad = strings(&[b"ok", b"\xff"]).leak();
    assert_eq!(
        err(
            2,
            &[
                o(DataType::U8, &[2], &four[..2].to_vec().leak()[..]),
                o(DataType::Bytes, &[2], bad)
            ]
        ),
        "output \"y\", record 1: a BYTES element is not valid UTF-8 and cannot be written as text"
    );
    assert_eq!(
        err(2, &[o(DataType::Bytes, &[2], &[1, 0, 0, 0])]),
        "output \"y\": BYTES element 0 declares 1 bytes but only 0 remain at byte 0"
    );
    assert_eq!(
        err(2, &[o(DataType::Bytes, &[2], strings(&[b"a"]).leak())]),
        "output \"y\": BYTES data holds 1 elements, expected 2"
    );
}

#[test]
fn empty_rows() {
    let outputs = [OutputRef {
        name: "e",
        dtype: DataType::Bytes,
        shape: &[2, 0],
        data: &[],
    }];
    check(
        ReplyFormat::Json,
        2,
        &outputs,
        r#"{"predictions":[{"e":[]},{"e":[]}]}"#,
    );
    let outputs = [OutputRef {
        name: "e",
        dtype: DataType::F32,
        shape: &[1, 2, 0],
        data: &[],
    }];
    check(
        ReplyFormat::Json,
        1,
        &outputs,
        r#"{"predictions":[{"e":[[],[]]}]}"#,
    );
}
