//! SageMaker CSV request decoding of a 1M-value FP32 body (65,536 records of
//! 16 features), beside a baseline measured in the same run: the same text
//! split on `\n` and `,` with each field read by `str::parse::<f32>` into a
//! `Vec<f32>` (no feature-count checks, no batches, no error positions).
//!
//!     cargo bench --bench sagemaker_csv
//!
//! Bodies are deterministic (splitmix64): uniform f32 in [-1, 1) written as
//! - "numpy_str": `str(np.float32(v))`, what `CSVSerializer` writes for a
//!   float32 array (shortest FP32 digits, `0.7213459`);
//! - "python_repr": `repr(float(v))`, what it writes for Python lists of the
//!   same values (17 significant digits, `0.7213459014892578`).
//!
//! Our side feeds the body in 64 KiB chunks, as a frontend would, and gets
//! 1,024-record batches of little-endian FP32.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tensorgate::codec::sagemaker::{CsvDecoder, DecodeConfig};
use tensorgate::tensor::DataType;

const FEATURES: usize = 16;
const RECORDS: usize = (1 << 20) / FEATURES;
const CHUNK: usize = 64 << 10;

fn values() -> Vec<f32> {
    let mut state = 1u64;
    (0..RECORDS * FEATURES)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            (z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        })
        .collect()
}

fn body(values: &[f32], text: impl Fn(f32) -> String) -> Vec<u8> {
    let mut out = String::with_capacity(values.len() * 20);
    for row in values.chunks(FEATURES) {
        for (i, &v) in row.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&text(v));
        }
        out.push('\n');
    }
    out.into_bytes()
}

/// Ours: the body in chunks, every batch's data; returns the element count.
fn decode(body: &[u8]) -> usize {
    let mut dec = CsvDecoder::new(&DecodeConfig::new(DataType::F32)).unwrap();
    let mut bytes = 0;
    for chunk in body.chunks(CHUNK) {
        dec.feed(chunk);
        while let Some(b) = dec.next_batch().unwrap() {
            bytes += black_box(b.data).len();
        }
    }
    while let Some(b) = dec.finish().unwrap() {
        bytes += black_box(b.data).len();
    }
    bytes / 4
}

/// The baseline: split and `str::parse::<f32>`.
fn baseline(body: &[u8]) -> Vec<f32> {
    let text = std::str::from_utf8(body).unwrap();
    let mut out = Vec::with_capacity(RECORDS * FEATURES);
    for line in text.split('\n').filter(|l| !l.is_empty()) {
        for field in line.split(',') {
            out.push(field.parse::<f32>().unwrap());
        }
    }
    out
}

fn csv_decode(c: &mut Criterion) {
    let values = values();
    let bodies = [
        ("numpy_str", body(&values, |v| format!("{v:?}"))),
        (
            "python_repr",
            body(&values, |v| format!("{:?}", f64::from(v))),
        ),
    ];
    for (style, body) in &bodies {
        // Both sides read the same values.
        let mut dec = CsvDecoder::new(&DecodeConfig::new(DataType::F32)).unwrap();
        dec.feed(body);
        let mut ours = Vec::new();
        while let Some(b) = dec.finish().unwrap() {
            ours.extend(
                b.data
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap())),
            );
        }
        assert_eq!(ours, baseline(body), "{style}");
        eprintln!(
            "{style}: {} bytes, {RECORDS} records of {FEATURES}",
            body.len()
        );
    }
    for (unit, throughput) in [("records", false), ("bytes", true)] {
        let mut g = c.benchmark_group(format!("sagemaker_csv_{unit}"));
        for (style, body) in &bodies {
            g.throughput(if throughput {
                Throughput::Bytes(body.len() as u64)
            } else {
                Throughput::Elements(RECORDS as u64)
            });
            g.bench_function(BenchmarkId::new("tensorgate", style), |b| {
                b.iter(|| decode(black_box(body)))
            });
            g.bench_function(BenchmarkId::new("split_parse_f32", style), |b| {
                b.iter(|| baseline(black_box(body)))
            });
        }
        g.finish();
    }
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(800))
        .measurement_time(Duration::from_secs(3))
        .noise_threshold(0.05)
}

criterion_group! {
    name = benches;
    config = config();
    targets = csv_decode
}
criterion_main!(benches);
