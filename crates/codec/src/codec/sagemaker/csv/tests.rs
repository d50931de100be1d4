use super::*;
use crate::tensor::DataType;

/// Decodes `body` fed in `chunk`-byte pieces: every batch, or the error
/// text.
fn decode(config: &DecodeConfig, body: &[u8], chunk: usize) -> Result<Vec<Batch>, String> {
    let mut dec = CsvDecoder::new(config).unwrap();
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

/// The f32 rows of an FP32 body, the same in every chunking.
fn rows(body: &str) -> Result<Vec<Vec<f32>>, String> {
    let config = DecodeConfig::new(DataType::F32);
    let whole = decode(&config, body.as_bytes(), body.len());
    for chunk in [1, 2, 5] {
        assert_eq!(
            decode(&config, body.as_bytes(), chunk),
            whole,
            "{chunk}-byte chunks"
        );
    }
    let batches = whole?;
    Ok(batches
        .iter()
        .flat_map(|b| {
            let v: Vec<f32> = b
                .data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            v.chunks(b.features)
                .map(<[f32]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect())
}

fn check(body: &str, want: &[&[f32]]) {
    let got = rows(body).unwrap();
    let want: Vec<Vec<f32>> = want.iter().map(|r| r.to_vec()).collect();
    assert_eq!(
        got.iter()
            .flatten()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>(),
        want.iter()
            .flatten()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>(),
        "{body:?}"
    );
    assert_eq!(got.len(), want.len());
}

fn check_err(body: &str, want: &str) {
    assert_eq!(rows(body).unwrap_err(), want, "{body:?}");
}

#[test]
fn records_and_line_ends() {
    check("1.5,16.0,14,23.0", &[&[1.5, 16.0, 14.0, 23.0]]);
    check("1,2\n3,4\n", &[&[1.0, 2.0], &[3.0, 4.0]]);
    check("1,2\r\n3,4\r\n\r\n", &[&[1.0, 2.0], &[3.0, 4.0]]);
    check("1,2\n3,4\n\n\n", &[&[1.0, 2.0], &[3.0, 4.0]]);
}

#[test]
fn python_spellings_quotes_and_blanks() {
    check(
        "1e-05,1.5e+20,-0.0,inf,-inf",
        &[&[1e-5, 1.5e20, -0.0, f32::INFINITY, f32::NEG_INFINITY]],
    );
    check("1.,.5, 2 ,\t3\t", &[&[1.0, 0.5, 2.0, 3.0]]);
    check("\"1.5\",\"2\", \"3\" ", &[&[1.5, 2.0, 3.0]]);
    let nan = rows("nan,NaN").unwrap();
    assert!(nan[0].iter().all(|v| v.is_nan()));
}

#[test]
fn errors_name_line_and_feature() {
    check_err("1,2\n3,x\n", "line 2, feature 1: \"x\" is not a number");
    check_err("1,2\n3\n", "line 2: 1 features, expected 2");
    check_err("1,2\n3,4,5", "line 2: 3 features, expected 2");
    check_err("1,2,\n", "line 1, feature 2: \"\" is not a number");
    check_err("1,2\n\n3,4\n", "line 2: blank line between records");
    check_err("1e39", "line 1, feature 0: 1e39 is out of range for FP32");
    check_err(
        "\"1.5,2",
        "line 1, feature 0: a quoted field has no closing quote",
    );
    check_err(
        "\"1\"x,2",
        "line 1, feature 0: \"\\\"1\\\"x\" is not a number",
    );
    check_err("\"1,5\",2", "line 1, feature 0: \"1,5\" is not a number");
    check_err("", "the request body holds no records");
    check_err("\n\n", "the request body holds no records");
}

#[test]
fn integer_targets() {
    let mut config = DecodeConfig::new(DataType::U8);
    let b = decode(&config, b"0,255,1.0\n", 3).unwrap();
    assert_eq!(&b[0].data[..], &[0, 255, 1]);
    assert_eq!(
        decode(&config, b"0,300,1\n", 3).unwrap_err(),
        "line 1, feature 1: 300 is out of range for UINT8"
    );
    config.dtype = DataType::I32;
    assert_eq!(
        decode(&config, b"1\n1.5\n", 3).unwrap_err(),
        "line 2, feature 0: INT32 needs an integer, found 1.5"
    );
}

#[test]
fn batches_and_configured_features() {
    let mut config = DecodeConfig::new(DataType::F32);
    config.batch_records = 2;
    let body = b"1,2\n3,4\n5,6\n7,8\n9,10";
    let b = decode(&config, body, 3).unwrap();
    let shape: Vec<(u64, usize)> = b.iter().map(|b| (b.first_record, b.records)).collect();
    assert_eq!(shape, [(0, 2), (2, 2), (4, 1)]);
    config.features = Some(3);
    assert_eq!(
        decode(&config, body, 3).unwrap_err(),
        "line 1: 2 features, expected 3"
    );
}

#[test]
fn limits() {
    let mut config = DecodeConfig::new(DataType::F32);
    config.max_record_bytes = 8;
    assert_eq!(
        decode(&config, b"1,2\n1,2,3,4,5\n", 2).unwrap_err(),
        "line 2: longer than 8 bytes, the record size limit"
    );
    config.max_record_bytes = 100;
    config.max_features = 3;
    assert_eq!(
        decode(&config, b"1,2,3,4\n", 2).unwrap_err(),
        "line 1: more than 3 features, the limit"
    );
}

#[test]
fn the_first_error_is_final() {
    let mut dec = CsvDecoder::new(&DecodeConfig::new(DataType::F32)).unwrap();
    dec.feed(b"x\n1\n");
    let first = dec.next_batch().unwrap_err();
    dec.feed(b"2\n");
    assert_eq!(dec.next_batch().unwrap_err(), first);
    assert_eq!(dec.finish().unwrap_err(), first);
}
