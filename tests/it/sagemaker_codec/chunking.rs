//! CSV and JSON Lines decoding does not depend on how the body is cut
//! into chunks (1 byte up to whole) or batches: random records in every
//! spelling Python writes decode to their exact values every time.

use proptest::prelude::*;
use tensorgate::codec::sagemaker::{Batch, DecodeConfig, RequestDecoder, RequestFormat};
use tensorgate::tensor::DataType;

/// An FP32 value: any bit pattern, or one of the awkward ones.
fn value() -> impl Strategy<Value = f32> {
    prop_oneof![
        3 => any::<u32>().prop_map(f32::from_bits),
        1 => prop::sample::select(vec![
            0.0f32, -0.0, 1e-5, 1.5e20, f32::MAX, f32::MIN_POSITIVE, 1e-45,
            -7.038531e-26, f32::NAN, f32::INFINITY, f32::NEG_INFINITY,
        ]),
    ]
}

/// `v` as CSV text in the spelling `style` picks: Python's `repr` of the
/// widened double in several forms, quoted, padded; infinities and NaN
/// in Python's and numpy's spellings. (The widened double's text reads
/// back exactly; FP32's own shortest digits can round twice.)
fn csv_text(v: f32, style: u8) -> String {
    if v.is_nan() {
        return ["nan", "NaN", "\"nan\""][usize::from(style % 3)].to_owned();
    }
    if v.is_infinite() {
        let s = ["inf", "Infinity", "INF"][usize::from(style % 3)];
        return if v < 0.0 {
            format!("-{s}")
        } else {
            s.to_owned()
        };
    }
    let d = f64::from(v);
    match style % 5 {
        0 => format!("{d:?}"),
        1 => format!("{d:e}"),
        2 => format!("\"{d:?}\""),
        3 => format!(" {d} "),
        _ => format!("{d:E}"),
    }
}

fn json_text(v: f32, style: u8) -> String {
    if v.is_nan() {
        return ["NaN", "\"NaN\""][usize::from(style % 2)].to_owned();
    }
    if v.is_infinite() {
        let s = if v < 0.0 { "-Infinity" } else { "Infinity" };
        return if style.is_multiple_of(2) {
            s.to_owned()
        } else {
            format!("\"{s}\"")
        };
    }
    let d = f64::from(v);
    if style.is_multiple_of(2) {
        format!("{d:?}")
    } else {
        format!("{d:e}")
    }
}

/// One JSON record in the shape `style` picks; sparse keeps the
/// non-zero values only.
fn json_record(row: &[f32], styles: &[u8], style: u8) -> String {
    let list = |vals: Vec<String>| format!("[{}]", vals.join(", "));
    let all = || {
        list(
            row.iter()
                .zip(styles)
                .map(|(&v, &s)| json_text(v, s))
                .collect(),
        )
    };
    match style % 4 {
        0 => all(),
        1 => format!("{{\"features\": {}}}", all()),
        2 => format!(
            "{{\"data\": {{\"features\": {{\"values\": {}}}}}, \"label\": 1}}",
            all()
        ),
        _ => {
            // -0.0 is a value too: only +0.0 may be left to densifying.
            let nz: Vec<usize> = (0..row.len()).filter(|&i| row[i].to_bits() != 0).collect();
            let keys = list(nz.iter().map(|k| k.to_string()).collect());
            let vals = list(nz.iter().map(|&k| json_text(row[k], styles[k])).collect());
            format!(
                "{{\"data\": {{\"features\": {{\"shape\": [{}], \"keys\": {keys}, \"values\": {vals}}}}}}}",
                row.len()
            )
        }
    }
}

#[derive(Debug, Clone)]
struct Body {
    rows: Vec<Vec<f32>>,
    csv: Vec<u8>,
    jsonl: Vec<u8>,
}

fn body() -> impl Strategy<Value = Body> {
    (1usize..=6, 1usize..=12)
        .prop_flat_map(|(f, n)| {
            (
                prop::collection::vec(prop::collection::vec(value(), f), n),
                prop::collection::vec(prop::collection::vec(any::<u8>(), f + 1), n),
                any::<bool>(),
                0usize..=2,
            )
        })
        .prop_map(|(rows, styles, crlf, trailing)| {
            let end = if crlf { "\r\n" } else { "\n" };
            let mut csv = Vec::new();
            let mut jsonl = Vec::new();
            for (i, (row, st)) in rows.iter().zip(&styles).enumerate() {
                let fields: Vec<String> =
                    row.iter().zip(st).map(|(&v, &s)| csv_text(v, s)).collect();
                csv.extend_from_slice(fields.join(",").as_bytes());
                jsonl.extend_from_slice(json_record(row, st, st[row.len()]).as_bytes());
                // The last line may lack its line end; blank lines may follow.
                if i + 1 < rows.len() || trailing > 0 {
                    csv.extend_from_slice(end.as_bytes());
                    jsonl.extend_from_slice(end.as_bytes());
                }
            }
            for _ in 1..trailing {
                csv.extend_from_slice(end.as_bytes());
                jsonl.extend_from_slice(end.as_bytes());
            }
            Body { rows, csv, jsonl }
        })
}

fn decode(format: RequestFormat, body: &[u8], chunk: usize, batch: usize) -> Vec<Batch> {
    let mut config = DecodeConfig::new(DataType::F32);
    config.batch_records = batch;
    let mut dec = RequestDecoder::new(format, &config).unwrap();
    let mut out = Vec::new();
    for piece in body.chunks(chunk.max(1)) {
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

/// The decoded values with every NaN made the same.
fn values(batches: &[Batch]) -> Vec<u32> {
    let canon = |v: f32| {
        if v.is_nan() {
            f32::NAN.to_bits()
        } else {
            v.to_bits()
        }
    };
    batches
        .iter()
        .flat_map(|b| b.data.chunks_exact(4))
        .map(|c| canon(f32::from_le_bytes(c.try_into().unwrap())))
        .collect()
}

fn check(format: RequestFormat, text: &[u8], rows: &[Vec<f32>], chunk: usize, batch: usize) {
    let canon = |v: f32| {
        if v.is_nan() {
            f32::NAN.to_bits()
        } else {
            v.to_bits()
        }
    };
    let want: Vec<u32> = rows.iter().flatten().map(|&v| canon(v)).collect();
    let whole = decode(format, text, text.len(), 1024);
    assert_eq!(values(&whole), want, "{}", String::from_utf8_lossy(text));
    for (c, b) in [(1, 1), (chunk, batch), (chunk, 1024)] {
        let got = decode(format, text, c, b);
        assert_eq!(values(&got), want, "chunks of {c}, batches of {b}");
        let records: Vec<usize> = got.iter().map(|b| b.records).collect();
        assert!(records.iter().all(|&r| r <= b));
        assert_eq!(records.iter().sum::<usize>(), rows.len());
    }
}

/// Whatever the outcome, batches or error.
fn outcome(format: RequestFormat, body: &[u8], chunk: usize) -> Result<Vec<Batch>, String> {
    let mut config = DecodeConfig::new(DataType::I16);
    config.batch_records = 2;
    config.max_record_bytes = 12;
    let mut dec = RequestDecoder::new(format, &config).unwrap();
    let mut out = Vec::new();
    let mut run = || -> Result<(), tensorgate::codec::sagemaker::RecordError> {
        for piece in body.chunks(chunk.max(1)) {
            dec.feed(piece)?;
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

/// Bodies made of the bytes that matter to CSV and JSON Lines, most of
/// them broken somewhere.
fn noise() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop::sample::select(b"0123456789.-e,\n\r \"[]{}:nafxk".to_vec());
    prop::collection::vec(byte, 0..80)
}

proptest! {
    #[test]
    fn errors_do_not_depend_on_chunking(body in noise(), chunk in 1usize..16) {
        for format in [RequestFormat::Csv, RequestFormat::JsonLines] {
            let whole = outcome(format, &body, body.len());
            prop_assert_eq!(&outcome(format, &body, 1), &whole);
            prop_assert_eq!(&outcome(format, &body, chunk), &whole);
        }
    }

    #[test]
    fn csv_decoding_ignores_chunking(body in body(), chunk in 1usize..64, batch in 1usize..5) {
        check(RequestFormat::Csv, &body.csv, &body.rows, chunk, batch);
    }

    #[test]
    fn jsonlines_decoding_ignores_chunking(body in body(), chunk in 1usize..64, batch in 1usize..5) {
        check(RequestFormat::JsonLines, &body.jsonl, &body.rows, chunk, batch);
    }
}
