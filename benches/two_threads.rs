//! What the two-thread conversions of one request buy on this machine:
//!
//! - a 1M-element FP32 V2 JSON request (Python's text, 22 MB) fed to
//!   `DocParser` in 408 KiB chunks (hyper's largest reads) whole, and cut
//!   in two per chunk with the second part on tokio's blocking pool
//!   (`DocParser::split`, `parallel::join`), as `frontend/v2/read.rs` does;
//! - a 1M-element FP32 binary reply written as JSON by `ValueWriter` in
//!   pieces of 100K values (Triton's reply frames), whole, and each piece
//!   in two parts at once (`ValueWriter::split`), as
//!   `frontend/v2/json_stream.rs` does.
//!
//!     cargo bench --bench two_threads

use std::hint::black_box;
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tensorgate::codec::v2::json_write::ValueWriter;
use tensorgate::codec::v2::{DocKind, DocLimits, DocParser, Document};
use tensorgate::gateway::parallel;
use tensorgate::tensor::DataType;

const N: usize = 1 << 20;
const CHUNK: usize = 417_792;

/// A V2 request with one FP32 input of `N` values in [-1, 1), written as
/// `json.dumps` writes a numpy float32 array's `tolist()`.
fn request() -> Bytes {
    let mut s: u64 = 0x2545_f491_4f6c_dd1d;
    let values: Vec<String> = (0..N)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let v = ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
            format!("{:?}", f64::from(v))
        })
        .collect();
    let json = format!(
        r#"{{"inputs":[{{"name":"INPUT0","shape":[{N}],"datatype":"FP32","data":[{}]}}]}}"#,
        values.join(", ")
    );
    Bytes::from(json)
}

fn parse(body: &Bytes, cut: bool) -> Document {
    let mut p = DocParser::new(DocKind::Request, DocLimits::default());
    let mut at = 0;
    while at < body.len() {
        let end = (at + CHUNK).min(body.len());
        let chunk = body.slice(at..end);
        at = end;
        let Some((cut, mut tail)) = p.split(&chunk).filter(|_| cut) else {
            p.feed(&chunk).unwrap();
            continue;
        };
        let rest = chunk.slice(cut..);
        let (first, tail) = parallel::join(
            || p.feed(&chunk[..cut]),
            move || {
                tail.run(&rest);
                tail
            },
        );
        first.unwrap();
        p.join_tail(tail, &chunk[cut..]).unwrap();
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
    let mut sent = 0;
    for at in (0..data.len()).step_by(PIECE) {
        let piece = data.slice(at..(at + PIECE).min(data.len()));
        let Some((mid, end)) = vw.split(&piece).filter(|_| two) else {
            vw.write(&piece, &mut out).unwrap();
            sent += std::mem::take(&mut out).len();
            continue;
        };
        let mut later = vw.continuation();
        let whole = piece.slice(mid..end);
        let mut text = Vec::with_capacity(ValueWriter::max_text_len(DataType::F32, whole.len()));
        let (first, second) = parallel::join(
            || vw.write(&piece[..mid], &mut out),
            move || later.write(&whole, &mut text).map(|()| (later, text)),
        );
        first.unwrap();
        let (later, text) = second.unwrap();
        sent += std::mem::take(&mut out).len() + text.len();
        vw.absorb(&later);
        vw.write(&piece[end..], &mut out).unwrap();
    }
    vw.finish().unwrap();
    sent + out.len()
}

fn reply_write(c: &mut Criterion) {
    let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
    let data: Vec<u8> = (0..N)
        .flat_map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0).to_le_bytes()
        })
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
