//! Shared by the `sagemaker_*` targets (included with `#[path]`): decode a
//! fuzzer-chosen body with a fuzzer-chosen element type, batch size and
//! chunking, and check that the outcome does not depend on either.

use tensorgate_codec::codec::sagemaker::{
    Batch, DecodeConfig, RecordError, RequestDecoder, RequestFormat,
};
use tensorgate_codec::tensor::DataType;

const TYPES: [DataType; 12] = [
    DataType::F32,
    DataType::F64,
    DataType::F16,
    DataType::BF16,
    DataType::I8,
    DataType::I16,
    DataType::I32,
    DataType::I64,
    DataType::U8,
    DataType::U16,
    DataType::U32,
    DataType::U64,
];

fn decode(
    format: RequestFormat,
    config: &DecodeConfig,
    body: &[u8],
    chunk: usize,
) -> Result<Vec<Batch>, RecordError> {
    let mut dec = RequestDecoder::new(format, config).expect("valid config");
    let mut out = Vec::new();
    for piece in body.chunks(chunk.max(1)) {
        dec.feed(piece)?;
        while let Some(b) = dec.next_batch()? {
            out.push(b);
        }
    }
    while let Some(b) = dec.finish()? {
        out.push(b);
    }
    Ok(out)
}

/// The rows of all batches, joined: what must not depend on batching.
fn joined(batches: &[Batch]) -> (u64, usize, Vec<u8>) {
    let records = batches.iter().map(|b| b.records as u64).sum();
    let features = batches.first().map_or(0, |b| b.features);
    (
        records,
        features,
        batches
            .iter()
            .flat_map(|b| b.data.iter().copied())
            .collect(),
    )
}

/// `data`: element type, batch size, chunk size, then the body.
pub fn run(format: RequestFormat, data: &[u8]) {
    let Some((&[ty, batch, chunk], body)) = data.split_first_chunk::<3>() else {
        return;
    };
    let mut config = DecodeConfig::new(TYPES[usize::from(ty) % TYPES.len()]);
    config.batch_records = usize::from(batch % 8) + 1;
    config.max_record_bytes = 256;
    config.max_features = 64;
    config.max_body_bytes = 4096;
    let size = config.dtype.fixed_size().unwrap_or(0);
    let whole = decode(format, &config, body, body.len());
    let pieces = decode(format, &config, body, usize::from(chunk));
    assert_eq!(whole, pieces, "chunks of {chunk}");
    let Ok(batches) = whole else {
        return;
    };
    let mut next = 0;
    for b in &batches {
        assert!(b.records >= 1 && b.records <= config.batch_records);
        assert!(b.features >= 1 && b.features <= config.max_features);
        assert_eq!(b.data.len(), b.records * b.features * size);
        assert_eq!(b.first_record, next);
        next += b.records as u64;
    }
    let mut one = config.clone();
    one.batch_records = 1024;
    let single = decode(format, &one, body, body.len()).expect("same body, larger batches");
    assert_eq!(joined(&single), joined(&batches));
}
