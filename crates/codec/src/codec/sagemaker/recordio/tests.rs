use super::*;
use crate::codec::sagemaker::proto::{Float32Tensor, Float64Tensor, Int32Tensor, Value as Holder};
use crate::tensor::DataType;

/// A frame around `payload`, padded as the SDK pads.
fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = RECORDIO_MAGIC.to_le_bytes().to_vec();
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    out.resize(out.len() + padding(payload.len()), 0);
    out
}

fn record(value: Value) -> Vec<u8> {
    let mut r = Record::default();
    r.features
        .insert("values".into(), Holder { value: Some(value) });
    frame(&r.encode_to_vec())
}

fn f32s(values: &[f32]) -> Value {
    Value::Float32Tensor(Float32Tensor {
        values: values.to_vec(),
        ..Default::default()
    })
}

fn decode(config: &DecodeConfig, body: &[u8], chunk: usize) -> Result<Vec<Batch>, String> {
    let mut dec = RecordIoDecoder::new(config).unwrap();
    let mut out = Vec::new();
    let mut run = || -> Result<(), RecordError> {
        for piece in body.chunks(chunk.max(1)) {
            dec.feed(piece);
            while let Some(b) = dec.next_batch()? {
                out.push(b);
            }
        }
        while let Some(b) = dec.finish()? {
            out.push(b);
        }
        Ok(())
    };
    run().map_err(|e| e.to_string())?;
    Ok(out)
}

fn check_err(body: &[u8], want: &str) {
    for chunk in [1, 3, body.len()] {
        let got = decode(&DecodeConfig::new(DataType::F32), body, chunk);
        assert_eq!(got.unwrap_err(), want, "{chunk}-byte chunks");
    }
}

#[test]
fn dense_tensors_of_each_type() {
    let mut body = record(f32s(&[1.0, 2.0]));
    body.extend(record(Value::Float64Tensor(Float64Tensor {
        values: vec![3.0, 4.0],
        ..Default::default()
    })));
    body.extend(record(Value::Int32Tensor(Int32Tensor {
        values: vec![-5, 6],
        ..Default::default()
    })));
    let mut config = DecodeConfig::new(DataType::I64);
    config.batch_records = 2;
    for chunk in [1, 5, body.len()] {
        let b = decode(&config, &body, chunk).unwrap();
        assert_eq!(b.len(), 2);
        let all: Vec<i64> = b
            .iter()
            .flat_map(|b| {
                b.data
                    .chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            })
            .collect();
        assert_eq!(all, [1, 2, 3, 4, -5, 6]);
        assert_eq!((b[1].first_record, b[1].records), (2, 1));
    }
}

#[test]
fn framing_errors() {
    let good = record(f32s(&[1.0]));
    let mut bad_magic = good.clone();
    bad_magic[0] = 0;
    check_err(
        &bad_magic,
        "record 0: RecordIO magic is 0xced72300, expected 0xced7230a",
    );
    let mut two = good.clone();
    two.extend_from_slice(&good[..good.len() - 1]);
    check_err(
        &two,
        "record 1: the body ends 1 bytes before the end of the record",
    );
    check_err(
        &good[..5],
        "record 0: the body ends 3 bytes before the end of the record",
    );
    let mut flagged = good.clone();
    flagged[7] |= 0x20;
    check_err(
        &flagged,
        "record 0: multi-part RecordIO records (continuation flag 1) are not supported",
    );
    let mut huge = good.clone();
    huge[4..8].copy_from_slice(&(2u32 << 20).to_le_bytes());
    check_err(
        &huge,
        "record 0: longer than 1048576 bytes, the record size limit",
    );
    check_err(
        &frame(b"\xff\xff"),
        "record 0: not an aialgs.data.Record: failed to decode Protobuf message: invalid varint",
    );
    check_err(b"", "the request body holds no records");
}

#[test]
fn record_errors() {
    check_err(
        &frame(&Record::default().encode_to_vec()),
        "record 0: the record has no \"values\" feature",
    );
    let bytes = Value::Bytes(crate::codec::sagemaker::proto::Bytes::default());
    check_err(
        &record(bytes),
        "record 0: the \"values\" feature holds bytes; float32, float64 and int32 tensors are supported",
    );
    check_err(
        &record(Value::Float64Tensor(Float64Tensor {
            values: vec![1.0, 1e300],
            ..Default::default()
        })),
        "record 0, feature 1: 1e300 is out of range for FP32",
    );
    let sparse = Value::Float32Tensor(Float32Tensor {
        values: vec![1.0],
        keys: vec![9],
        shape: vec![3],
    });
    check_err(
        &record(sparse),
        "record 0: sparse key 9 is out of range for 3 features",
    );
    let mut body = record(f32s(&[1.0, 2.0]));
    body.extend(record(f32s(&[1.0])));
    check_err(&body, "record 1: 1 features, expected 2");
}
