//! SageMaker record codecs against the real SageMaker Python SDK.
//!
//! - Every request body in `tests/fixtures/sagemaker/` (written by the SDK's
//!   serializers, see its README) decodes, in any chunking and batch size,
//!   to the values of its `.expect.json`, byte for byte.
//! - The reply writers' output matches the golden samples in
//!   `tests/fixtures/sagemaker/replies/`, which
//!   `scripts/sagemaker/client.sh check-replies` feeds to the SDK's own
//!   deserializers. `TENSORGATE_WRITE_REPLIES=1` rewrites the samples.
//! - Property tests (`chunking`): CSV and JSON Lines give the same batches,
//!   or the same error, however the body is chunked or batched.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tensorgate::codec::sagemaker::{
    Batch, DecodeConfig, OutputRef, ReplyFormat, ReplyWriter, RequestDecoder, request_format,
};
use tensorgate::tensor::DataType;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sagemaker")
}

/// Every fixture: its name, body and expectation.
fn cases() -> Vec<(String, Vec<u8>, Value)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".expect.json") else {
            continue;
        };
        let expect: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let body = ["csv", "json", "jsonl", "recordio"]
            .iter()
            .map(|ext| fixtures().join(format!("{stem}.{ext}")))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("no body for {stem}"));
        out.push((stem.to_owned(), std::fs::read(body).unwrap(), expect));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The expected values as little-endian bytes of `dtype`.
fn expected_bytes(dtype: DataType, values: &[Value]) -> Vec<u8> {
    let float = |v: &Value| match v.as_str() {
        Some("NaN") => f64::NAN,
        Some("Infinity") => f64::INFINITY,
        Some("-Infinity") => f64::NEG_INFINITY,
        _ => v.as_f64().unwrap(),
    };
    let mut out = Vec::new();
    for v in values {
        match dtype {
            DataType::F32 => out.extend_from_slice(&(float(v) as f32).to_le_bytes()),
            DataType::F64 => out.extend_from_slice(&float(v).to_le_bytes()),
            DataType::I32 => out.extend_from_slice(&(v.as_i64().unwrap() as i32).to_le_bytes()),
            DataType::I64 => out.extend_from_slice(&v.as_i64().unwrap().to_le_bytes()),
            DataType::U8 => out.push(v.as_u64().unwrap() as u8),
            other => panic!("no fixture uses {other}"),
        }
    }
    out
}

/// Decodes `body` in `chunk`-byte pieces into batches of `batch` records.
fn decode(
    content_type: &str,
    dtype: DataType,
    body: &[u8],
    chunk: usize,
    batch: usize,
) -> Vec<Batch> {
    let mut config = DecodeConfig::new(dtype);
    config.batch_records = batch;
    let mut dec = RequestDecoder::new(request_format(content_type).unwrap(), &config).unwrap();
    let mut out = Vec::new();
    for piece in body.chunks(chunk) {
        dec.feed(piece).unwrap();
        while let Some(b) = dec.next_batch().unwrap() {
            out.push(b);
        }
    }
    while let Some(b) = dec.finish().unwrap() {
        out.push(b);
    }
    out
}

#[test]
fn every_sdk_body_decodes_to_its_values() {
    let cases = cases();
    assert!(cases.len() >= 30, "fixtures missing: {}", cases.len());
    for (name, body, expect) in cases {
        let dtype = DataType::from_v2_name(expect["dtype"].as_str().unwrap()).unwrap();
        let shape: Vec<usize> = expect["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        let want = expected_bytes(dtype, expect["values"].as_array().unwrap());
        let content_type = expect["content_type"].as_str().unwrap();
        for (chunk, batch) in [(body.len().max(1), 1024), (1, 1), (7, 2), (64, 3)] {
            let batches = decode(content_type, dtype, &body, chunk, batch);
            let records: usize = batches.iter().map(|b| b.records).sum();
            assert_eq!(
                [records, batches[0].features],
                [shape[0], shape[1]],
                "{name}"
            );
            let mut next = 0;
            for b in &batches {
                assert_eq!(b.first_record, next, "{name}");
                assert!(b.records <= batch, "{name}");
                next += b.records as u64;
            }
            let got: Vec<u8> = batches
                .iter()
                .flat_map(|b| b.data.iter().copied())
                .collect();
            assert!(
                got == want,
                "{name}: decoded bytes differ ({chunk}-byte chunks)"
            );
        }
    }
}

fn le<T: Copy, const N: usize>(values: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| f(v)).collect()
}

/// The demo model `rowsum`'s reply (each row summed in f64 from +0.0, and
/// the input) for three records, written as a batch of two and a batch of
/// one, as a frontend streams them.
fn rowsum_reply(format: ReplyFormat) -> Vec<u8> {
    let inputs: [[f32; 4]; 3] = [
        [1.5, 16.0, 14.0, 23.0],
        [1e-5, -0.0, 0.1, 3.4028235e38],
        [f32::NAN, f32::INFINITY, -7.038531e-26, 1e-45],
    ];
    let mut w = ReplyWriter::new(format);
    let mut out = Vec::new();
    w.open(&mut out);
    for rows in [&inputs[..2], &inputs[2..]] {
        let n = rows.len() as u64;
        let score: Vec<f32> = rows
            .iter()
            .map(|r| r.iter().fold(0.0, |acc, &v| acc + f64::from(v)) as f32)
            .collect();
        let score = le(&score, f32::to_le_bytes);
        let flat: Vec<f32> = rows.iter().flatten().copied().collect();
        let flat = le(&flat, f32::to_le_bytes);
        let (s1, s2) = ([n], [n, 4]);
        let outputs = [
            OutputRef {
                name: "score",
                dtype: DataType::F32,
                shape: &s1,
                data: &score,
            },
            OutputRef {
                name: "OUTPUT0",
                dtype: DataType::F32,
                shape: &s2,
                data: &flat,
            },
        ];
        w.write_batch(rows.len(), &outputs, &mut out).unwrap();
    }
    w.close(&mut out);
    out
}

/// Every other kind of output: integers, BOOL, BYTES that need CSV quoting,
/// FP64 nested three deep.
fn mixed_reply(format: ReplyFormat) -> Vec<u8> {
    let ids = le(&[7i64, -9_007_199_254_740_993], i64::to_le_bytes);
    let pixels = [0u8, 128, 255, 1, 2, 3];
    let flags = [1u8, 0, 0, 1];
    let mut labels = Vec::new();
    for s in ["cat, black", "say \"hi\"", "", "\u{e9}t\u{e9} \u{2603}"] {
        tensorgate::tensor::bytes_layout::push(&mut labels, s.as_bytes());
    }
    let cube = le(
        &[0.1f64, 1e300, -2.5, 5e-324, 1.0, 2.0, 3.0, 4.0],
        f64::to_le_bytes,
    );
    let outputs = [
        OutputRef {
            name: "id",
            dtype: DataType::I64,
            shape: &[2],
            data: &ids,
        },
        OutputRef {
            name: "pixels",
            dtype: DataType::U8,
            shape: &[2, 3],
            data: &pixels,
        },
        OutputRef {
            name: "flags",
            dtype: DataType::Bool,
            shape: &[2, 2],
            data: &flags,
        },
        OutputRef {
            name: "labels",
            dtype: DataType::Bytes,
            shape: &[2, 2],
            data: &labels,
        },
        OutputRef {
            name: "cube",
            dtype: DataType::F64,
            shape: &[2, 2, 2],
            data: &cube,
        },
    ];
    let mut w = ReplyWriter::new(format);
    let mut out = Vec::new();
    w.open(&mut out);
    w.write_batch(2, &outputs, &mut out).unwrap();
    w.close(&mut out);
    out
}

#[test]
fn replies_match_the_samples_the_sdk_reads() {
    let dir = fixtures().join("replies");
    let write = std::env::var_os("TENSORGATE_WRITE_REPLIES").is_some();
    for (case, make) in [
        ("rowsum", rowsum_reply as fn(ReplyFormat) -> Vec<u8>),
        ("mixed", mixed_reply),
    ] {
        for (ext, format) in [
            ("json", ReplyFormat::Json),
            ("jsonl", ReplyFormat::JsonLines),
            ("csv", ReplyFormat::Csv),
        ] {
            let path = dir.join(format!("{case}.{ext}"));
            let got = make(format);
            if write {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &got).unwrap();
            }
            let want = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want),
                "{case}.{ext}"
            );
        }
    }
}

mod chunking;
