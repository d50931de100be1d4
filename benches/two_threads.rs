//! What the two-thread conversions of one request buy on this machine:
//!
//! - a 1M-element FP32 V2 JSON request (Python's text, 22 MB) fed to
//!   `DocParser` in 408 KiB chunks (hyper's largest reads) whole, and cut
//!   in two per chunk with the second part on tokio's blocking pool (the
//!   V2 frontend's own `feed`);
//! - a 1M-element FP32 binary reply written as JSON by `ValueWriter` in
//!   pieces of 100K values (Triton's reply frames), whole, and each piece
//!   in two parts at once (the V2 frontend's own `write_values`).
//!
//!     cargo bench --bench two_threads

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tensorgate::codec::v2::json_write::ValueWriter;
use tensorgate::codec::v2::{DocKind, DocLimits, DocParser, Document};
use tensorgate::cpu::Pair;
use tensorgate::frontend::v2::{feed, write_values};
use tensorgate::tensor::DataType;

const N: usize = 1 << 20;
const CHUNK: usize = 417_792;

/// `N` pseudo-random FP32 values in [-1, 1), the same for the same seed.
fn uniform(mut s: u64) -> impl Iterator<Item = f32> {
    (0..N).map(move |_| {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    })
}

/// A V2 request with one FP32 input of `N` values in [-1, 1), written as
/// `json.dumps` writes a numpy float32 array's `tolist()`.
fn request() -> Bytes {
    let values: Vec<String> = uniform(0x2545_f491_4f6c_dd1d)
        .map(|v| format!("{:?}", f64::from(v)))
        .collect();
    let json = format!(
        r#"{{"inputs":[{{"name":"INPUT0","shape":[{N}],"datatype":"FP32","data":[{}]}}]}}"#,
        values.join(", ")
    );
    Bytes::from(json)
}

fn parse(body: &Bytes, two: bool) -> Document {
    let mut p = DocParser::new(DocKind::Request, DocLimits::default());
    let mut pair = Pair::new();
    let mut at = 0;
    while at < body.len() {
        let end = (at + CHUNK).min(body.len());
        let chunk = body.slice(at..end);
        at = end;
        if two {
            feed(&mut pair, &mut p, chunk).unwrap();
        } else {
            p.feed(&chunk).unwrap();
        }
    }
    p.finish().unwrap()
}

fn request_parse(c: &mut Criterion) {
    let body = request();
    assert_eq!(parse(&body, true), parse(&body, false));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let _in_runtime = rt.enter();
    let mut g = c.benchmark_group("request_1m_fp32");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("one_thread", |b| b.iter(|| black_box(parse(&body, false))));
    g.bench_function("two_threads", |b| b.iter(|| black_box(parse(&body, true))));
    g.finish();
}

/// Bytes of FP32 values per reply piece.
const PIECE: usize = 100_000 * 4;

fn write(data: &Bytes, two: bool) -> usize {
    let mut vw = ValueWriter::new(DataType::F32);
    let mut out = Vec::new();
    let mut ready = VecDeque::new();
    let mut sent = 0;
    let mut pair = Pair::new();
    for at in (0..data.len()).step_by(PIECE) {
        let piece = data.slice(at..(at + PIECE).min(data.len()));
        if two {
            write_values(&mut pair, &mut vw, &piece, &mut out, &mut ready).unwrap();
        } else {
            vw.write(&piece, &mut out).unwrap();
        }
        sent += ready.drain(..).map(|b| b.len()).sum::<usize>() + std::mem::take(&mut out).len();
    }
    vw.finish().unwrap();
    sent
}

fn reply_write(c: &mut Criterion) {
    let data: Vec<u8> = uniform(0x9e37_79b9_7f4a_7c15)
        .flat_map(f32::to_le_bytes)
        .collect();
    let data = Bytes::from(data);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let _in_runtime = rt.enter();
    assert_eq!(write(&data, true), write(&data, false));
    let mut g = c.benchmark_group("reply_1m_fp32");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("one_thread", |b| b.iter(|| black_box(write(&data, false))));
    g.bench_function("two_threads", |b| b.iter(|| black_box(write(&data, true))));
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(800))
        .measurement_time(Duration::from_secs(4))
}

criterion_group! {
    name = benches;
    config = config();
    targets = request_parse, reply_write
}
criterion_main!(benches);
