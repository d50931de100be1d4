//! The small V2 documents of every small JSON infer, each beside a
//! `serde_json` baseline on the same bytes in the same run:
//! - the request body of `scripts/bench/infer.lua` (two INT32 [1,16]
//!   inputs), parsed whole (the one-pass parser) and in two chunks (the
//!   streaming state machine);
//! - a binary reply's JSON header as Triton writes it, parsed whole;
//! - the JSON reply to that request (two INT32 [1,16] outputs), written.
//!
//! `cargo bench --bench small_json`; medians in docs/PERFORMANCE.md.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tensorgate::codec::v2::json_write::{TensorForm, write_document};
use tensorgate::codec::v2::{DocKind, DocLimits, DocParser, Document};

/// The request body the gateway's load and instruction benchmarks send.
fn bench_request() -> &'static [u8] {
    let lua = include_str!("../scripts/bench/infer.lua");
    let start = lua.find("wrk.body = '").expect("infer.lua sets wrk.body") + 12;
    let len = lua[start..].find('\'').expect("wrk.body is quoted");
    &lua.as_bytes()[start..start + len]
}

/// A binary reply's JSON header for that request, as Triton writes it.
const TRITON_HEADER: &[u8] = br#"{"model_name":"simple","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}},{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}}]}"#;

/// What the gateway parses a backend's reply header with.
fn reply_limits() -> DocLimits {
    DocLimits::new(u64::MAX, 64)
}

fn parse(c: &mut Criterion) {
    let request = bench_request();
    let mut g = c.benchmark_group("small_json/parse");
    g.throughput(Throughput::Bytes(request.len() as u64));
    g.bench_function("request/whole", |b| {
        b.iter(|| DocParser::parse(DocKind::Request, DocLimits::default(), black_box(request)))
    });
    g.bench_function("request/two_chunks", |b| {
        let (first, second) = request.split_at(request.len() / 2);
        b.iter(|| {
            let mut p = DocParser::new(DocKind::Request, DocLimits::default());
            p.feed(black_box(first))?;
            p.feed(black_box(second))?;
            p.finish()
        })
    });
    g.bench_function("request/serde_json", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(request)))
    });
    g.throughput(Throughput::Bytes(TRITON_HEADER.len() as u64));
    g.bench_function("reply_header/whole", |b| {
        b.iter(|| DocParser::parse(DocKind::Response, reply_limits(), black_box(TRITON_HEADER)))
    });
    g.bench_function("reply_header/serde_json", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(TRITON_HEADER)))
    });
    g.finish();
}

fn write(c: &mut Criterion) {
    let doc: Document = DocParser::parse(DocKind::Response, reply_limits(), TRITON_HEADER)
        .expect("the header parses");
    let data: Vec<Bytes> = (0..2)
        .map(|t| {
            (0..16i32)
                .flat_map(|v| (v * (t + 1)).to_le_bytes())
                .collect()
        })
        .collect();
    let mut out = Vec::new();
    let write = |out: &mut Vec<u8>| {
        out.clear();
        write_document(
            &doc,
            |_, _| TensorForm::Json,
            |i, _| data.get(i).cloned(),
            out,
        )
    };
    write(&mut out).expect("the reply writes");
    let value: serde_json::Value = serde_json::from_slice(&out).expect("the reply is JSON");
    let mut g = c.benchmark_group("small_json/write");
    g.throughput(Throughput::Bytes(out.len() as u64));
    g.bench_function("reply/json", |b| b.iter(|| write(black_box(&mut out))));
    g.bench_function("reply/serde_json", |b| {
        let mut text = Vec::with_capacity(out.len());
        b.iter(|| {
            text.clear();
            serde_json::to_writer(&mut text, black_box(&value))
        })
    });
    g.finish();
}

criterion_group!(benches, parse, write);
criterion_main!(benches);
