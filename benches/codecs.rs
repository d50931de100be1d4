//! Codec throughput on 1M-element tensors, each beside a `serde_json`
//! baseline measured in the same run. See docs/PERFORMANCE.md for the
//! commands, the machine and the numbers.
//!
//! Inputs are generated deterministically (splitmix64), so every run parses
//! the same bytes:
//! - FP32 "python": uniform f32 in [-1, 1) widened to double and printed with
//!   Python's `repr`, joined with `", "`: exactly `json.dumps(a.tolist())`
//!   for a numpy float32 array (`0.7213459014892578`).
//! - FP32 "fixed8": the same values as `%.8f`, joined with `","`.
//! - INT64 "pm1e6": uniform in [-1e6, 1e6]; "tokens": uniform in [0, 50000).
//! - BYTES: ASCII strings of 8 to 16 letters.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Mutex;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tensorgate::codec::decthings::{self, DecodeLimits, Layout};
use tensorgate::codec::describe::python_float;
use tensorgate::codec::v2::json_data::{DataParser, Progress};
use tensorgate::codec::v2::json_write::ValueWriter;
use tensorgate::codec::v2::{DocKind, DocLimits, DocParser};
use tensorgate::tensor::{DataType, Shape, Tensor, bytes_layout};

const N: usize = 1 << 20;

/// Records the JSON (or wire) size behind a benchmark id, so that
/// `benches/report.py` can give MB/s for every row: written to
/// `target/criterion/codecs-input-sizes.json`.
fn record_size(id: &str, bytes: usize) {
    static SIZES: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());
    let mut sizes = SIZES.lock().unwrap_or_else(|e| e.into_inner());
    sizes.insert(id.to_owned(), bytes);
    let dir = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".to_owned());
    let path = std::path::Path::new(&dir).join("criterion");
    let _ = std::fs::create_dir_all(&path);
    let _ = std::fs::write(
        path.join("codecs-input-sizes.json"),
        serde_json::to_vec_pretty(&*sizes).unwrap_or_default(),
    );
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit_f32(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

fn f32_values() -> Vec<f32> {
    let mut rng = Rng(1);
    (0..N).map(|_| rng.unit_f32()).collect()
}

fn json_array<T>(values: &[T], sep: &str, f: impl Fn(&mut String, &T)) -> Vec<u8> {
    let mut s = String::with_capacity(values.len() * 22);
    s.push('[');
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            s.push_str(sep);
        }
        f(&mut s, v);
    }
    s.push(']');
    s.into_bytes()
}

fn python_json(values: &[f32]) -> Vec<u8> {
    json_array(values, ", ", |s, &v| python_float(s, f64::from(v)))
}

fn fixed8_json(values: &[f32]) -> Vec<u8> {
    json_array(values, ",", |s, v| {
        use std::fmt::Write;
        let _ = write!(s, "{v:.8}");
    })
}

fn i64_values(tokens: bool) -> Vec<i64> {
    let mut rng = Rng(2);
    (0..N)
        .map(|_| {
            if tokens {
                rng.below(50_000) as i64
            } else {
                rng.below(2_000_001) as i64 - 1_000_000
            }
        })
        .collect()
}

fn strings() -> Vec<String> {
    let mut rng = Rng(3);
    (0..N)
        .map(|_| {
            let len = 8 + rng.below(9) as usize;
            (0..len)
                .map(|_| char::from(b'a' + rng.below(26) as u8))
                .collect()
        })
        .collect()
}

fn le_bytes<T: Copy, const W: usize>(values: &[T], f: fn(T) -> [u8; W]) -> Vec<u8> {
    values.iter().flat_map(|&v| f(v)).collect()
}

/// JSON -> binary through `DataParser`, in one call.
fn parse_data(dtype: DataType, json: &[u8]) -> Vec<u8> {
    let mut p = DataParser::new(
        dtype,
        Some(N as u64),
        1 << 28,
        tensorgate::codec::v2::MAX_JSON_DEPTH,
    );
    match p.parse(json, true) {
        Ok(Progress::Done(_)) => {}
        other => panic!("{dtype}: {other:?}"),
    }
    p.into_data().0
}

/// Binary -> JSON values through `ValueWriter`.
fn write_data(dtype: DataType, data: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut w = ValueWriter::new(dtype);
    w.write(data, out).unwrap();
    w.finish().unwrap();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(800))
        .measurement_time(Duration::from_secs(3))
        .noise_threshold(0.05)
}

/// JSON -> binary, ours against `serde_json::from_slice::<Vec<T>>`.
fn json_to_binary(c: &mut Criterion) {
    let f32s = f32_values();
    let f32_bin = le_bytes(&f32s, f32::to_le_bytes);
    let mut g = c.benchmark_group("json_to_binary");
    g.throughput(Throughput::Elements(N as u64));
    for (style, json) in [
        ("python", python_json(&f32s)),
        ("fixed8", fixed8_json(&f32s)),
    ] {
        if style == "python" {
            // The python style is exact: it parses back to the same floats.
            assert_eq!(parse_data(DataType::F32, &json), f32_bin);
        }
        eprintln!("FP32 {style}: {} JSON bytes", json.len());
        record_size(&format!("json_to_binary/fp32/{style}"), json.len());
        g.bench_function(BenchmarkId::new("fp32_tensorgate", style), |b| {
            b.iter(|| parse_data(DataType::F32, black_box(&json)))
        });
        g.bench_function(BenchmarkId::new("fp32_serde_json", style), |b| {
            b.iter(|| serde_json::from_slice::<Vec<f32>>(black_box(&json)).unwrap())
        });
    }
    for (style, tokens) in [("pm1e6", false), ("tokens", true)] {
        let ints = i64_values(tokens);
        let json = json_array(&ints, ",", |s, v| s.push_str(&v.to_string()));
        assert_eq!(
            parse_data(DataType::I64, &json),
            le_bytes(&ints, i64::to_le_bytes)
        );
        eprintln!("INT64 {style}: {} JSON bytes", json.len());
        record_size(&format!("json_to_binary/int64/{style}"), json.len());
        g.bench_function(BenchmarkId::new("int64_tensorgate", style), |b| {
            b.iter(|| parse_data(DataType::I64, black_box(&json)))
        });
        g.bench_function(BenchmarkId::new("int64_serde_json", style), |b| {
            b.iter(|| serde_json::from_slice::<Vec<i64>>(black_box(&json)).unwrap())
        });
    }
    let strs = strings();
    let json = serde_json::to_vec(&strs).unwrap();
    assert_eq!(
        parse_data(DataType::Bytes, &json),
        bytes_layout::build(&strs).to_vec()
    );
    eprintln!("BYTES: {} JSON bytes", json.len());
    record_size("json_to_binary/bytes/ascii8to16", json.len());
    g.bench_function(BenchmarkId::new("bytes_tensorgate", "ascii8to16"), |b| {
        b.iter(|| parse_data(DataType::Bytes, black_box(&json)))
    });
    g.bench_function(BenchmarkId::new("bytes_serde_json", "ascii8to16"), |b| {
        b.iter(|| serde_json::from_slice::<Vec<String>>(black_box(&json)).unwrap())
    });
    g.finish();

    // The same FP32 parse in bytes of JSON per second.
    let mut g = c.benchmark_group("json_to_binary_bytes");
    for (style, json) in [
        ("python", python_json(&f32s)),
        ("fixed8", fixed8_json(&f32s)),
    ] {
        g.throughput(Throughput::Bytes(json.len() as u64));
        g.bench_function(BenchmarkId::new("fp32_tensorgate", style), |b| {
            b.iter(|| parse_data(DataType::F32, black_box(&json)))
        });
        g.bench_function(BenchmarkId::new("fp32_serde_json", style), |b| {
            b.iter(|| serde_json::from_slice::<Vec<f32>>(black_box(&json)).unwrap())
        });
    }
    g.finish();
}

/// Binary -> JSON, ours against `serde_json::to_vec(&Vec<T>)`.
fn binary_to_json(c: &mut Criterion) {
    let mut g = c.benchmark_group("binary_to_json");
    g.throughput(Throughput::Elements(N as u64));
    let mut out = Vec::new();

    let f32s = f32_values();
    let bin = le_bytes(&f32s, f32::to_le_bytes);
    write_data(DataType::F32, &bin, &mut out);
    record_size("binary_to_json/fp32", out.len() + 2);
    let back: Vec<f32> = serde_json::from_slice(&[b"[", &out[..], b"]"].concat()).unwrap();
    assert_eq!(back, f32s);
    g.bench_function("fp32_tensorgate", |b| {
        b.iter(|| write_data(DataType::F32, black_box(&bin), &mut out))
    });
    g.bench_function("fp32_serde_json", |b| {
        b.iter(|| serde_json::to_vec(black_box(&f32s)).unwrap())
    });

    let ints = i64_values(false);
    let bin = le_bytes(&ints, i64::to_le_bytes);
    write_data(DataType::I64, &bin, &mut out);
    record_size("binary_to_json/int64", out.len() + 2);
    g.bench_function("int64_tensorgate", |b| {
        b.iter(|| write_data(DataType::I64, black_box(&bin), &mut out))
    });
    g.bench_function("int64_serde_json", |b| {
        b.iter(|| serde_json::to_vec(black_box(&ints)).unwrap())
    });

    let strs = strings();
    let bin = bytes_layout::build(&strs);
    write_data(DataType::Bytes, &bin, &mut out);
    record_size("binary_to_json/bytes", out.len() + 2);
    g.bench_function("bytes_tensorgate", |b| {
        b.iter(|| write_data(DataType::Bytes, black_box(&bin), &mut out))
    });
    g.bench_function("bytes_serde_json", |b| {
        b.iter(|| serde_json::to_vec(black_box(&strs)).unwrap())
    });
    g.finish();
}

/// A whole V2 request with one 1M FP32 input (python style), against
/// `serde_json::from_slice::<Value>` of the same body.
fn document(c: &mut Criterion) {
    let f32s = f32_values();
    let mut body = br#"{"id": "bench", "inputs": [{"name": "INPUT0", "shape": [1, 1048576], "datatype": "FP32", "data": "#.to_vec();
    body.extend(python_json(&f32s));
    body.extend_from_slice(br#"}], "outputs": [{"name": "OUTPUT0"}]}"#);
    let parse = |body: &[u8]| DocParser::parse(DocKind::Request, DocLimits::default(), body);
    assert_eq!(
        parse(&body).unwrap().tensors[0].binary_size(),
        Some(4 * N as u64)
    );
    record_size("document/request_fp32", body.len());
    let mut g = c.benchmark_group("document");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("request_fp32_tensorgate", |b| {
        b.iter(|| parse(black_box(&body)).unwrap())
    });
    g.bench_function("request_fp32_serde_json_value", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(&body)).unwrap())
    });
    g.finish();
    let mut g = c.benchmark_group("document_bytes");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("request_fp32_tensorgate", |b| {
        b.iter(|| parse(black_box(&body)).unwrap())
    });
    g.bench_function("request_fp32_serde_json_value", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(&body)).unwrap())
    });
    g.finish();
    // The small request of the proxy benchmark (scripts/bench/infer.lua):
    // what a document costs when it is mostly names, types and shapes.
    let small: &[u8] = br#"{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}"#;
    assert_eq!(parse(small).unwrap().tensors.len(), 2);
    let mut g = c.benchmark_group("document_small");
    g.throughput(Throughput::Elements(1));
    g.bench_function("request_int32_tensorgate", |b| {
        b.iter(|| parse(black_box(small)).unwrap())
    });
    g.bench_function("request_int32_serde_json_value", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(small)).unwrap())
    });
    g.finish();
}

/// Decthings -> V2 (decode) and V2 -> Decthings (encode) of an f32 tensor:
/// both are zero-copy, so the time per call does not grow with the size.
fn decthings(c: &mut Criterion) {
    let mut g = c.benchmark_group("decthings_f32");
    for (label, n) in [("1K", 1usize << 10), ("1M", N)] {
        let data: Vec<u8> = f32_values()[..n]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let t = Tensor::new(DataType::F32, Shape::new(vec![n as u64]), Bytes::from(data)).unwrap();
        let mut wire = BytesMut::new();
        decthings::encode(&t, Layout::Current, &mut wire).unwrap();
        let wire = wire.freeze();
        record_size(&format!("decthings_f32/{label}"), wire.len());
        let limits = DecodeLimits::default();
        // Zero-copy evidence: the decoded data lies inside the input buffer,
        // and the encoded data part is the tensor's own buffer.
        let (decoded, _) = decthings::decode(&wire, Layout::Current, &limits)
            .unwrap()
            .unwrap();
        let inside = wire.as_ptr_range();
        assert!(inside.contains(&decoded.data.as_ptr()));
        assert_eq!(decoded.data.as_ptr(), wire[wire.len() - 4 * n..].as_ptr());
        let (_, part) = decthings::encode_parts(&decoded, Layout::Current).unwrap();
        assert_eq!(part.as_ptr(), decoded.data.as_ptr());
        eprintln!(
            "decthings {label}: input {:p}..{:p}, decoded data at {:p} (zero-copy)",
            inside.start,
            inside.end,
            decoded.data.as_ptr()
        );
        g.bench_function(BenchmarkId::new("decode", label), |b| {
            b.iter(|| decthings::decode(black_box(&wire), Layout::Current, &limits))
        });
        g.bench_function(BenchmarkId::new("encode_parts", label), |b| {
            b.iter(|| decthings::encode_parts(black_box(&decoded), Layout::Current))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = json_to_binary, binary_to_json, document, decthings
}
criterion_main!(benches);
