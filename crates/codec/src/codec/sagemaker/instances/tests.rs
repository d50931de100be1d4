use super::*;
use crate::tensor::DataType;

fn decode(config: &DecodeConfig, body: &str) -> Result<Vec<Batch>, String> {
    let mut dec = JsonDecoder::new(config).unwrap();
    let mut out = Vec::new();
    let mut run = || -> Result<(), RecordError> {
        for piece in body.as_bytes().chunks(7) {
            dec.feed(piece)?;
            assert_eq!(dec.next_batch()?, None);
        }
        while let Some(b) = dec.finish()? {
            out.push(b);
        }
        Ok(())
    };
    run().map_err(|e| e.to_string())?;
    Ok(out)
}

/// The records of an INT32 body, row by row.
fn rows(body: &str) -> Result<Vec<Vec<i32>>, String> {
    let batches = decode(&DecodeConfig::new(DataType::I32), body)?;
    Ok(batches
        .iter()
        .flat_map(|b| {
            let v: Vec<i32> = b
                .data
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            v.chunks(b.features)
                .map(<[i32]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect())
}

#[test]
fn body_shapes() {
    let check = |body: &str, want: &[&[i32]]| {
        let want: Vec<Vec<i32>> = want.iter().map(|r| r.to_vec()).collect();
        assert_eq!(rows(body), Ok(want), "{body}");
    };
    check(
        "{\"instances\": [{\"features\": [1, 2]}, [3, 4]]}",
        &[&[1, 2], &[3, 4]],
    );
    check(
        "{\"configuration\": {\"top_k\": 3}, \"instances\": [{\"data\": {\"features\": {\"values\": [1]}}}], \"x\": [[]]}",
        &[&[1]],
    );
    check("[1, 2, 3]", &[&[1, 2, 3]]);
    check("[[1, 2], [3, 4]]", &[&[1, 2], &[3, 4]]);
    check("[{\"features\": [5]}, [6]]", &[&[5], &[6]]);
    check(" {\"features\": [7, 8]} ", &[&[7, 8]]);
}

#[test]
fn errors_name_the_instance() {
    let check = |body: &str, want: &str| assert_eq!(rows(body).unwrap_err(), want, "{body}");
    check(
        "{\"instances\": [[1, 2], [3, 4.5]]}",
        "instance 1, feature 1: INT32 needs an integer, found 4.5",
    );
    check(
        "{\"instances\": [[1, 2], [3]]}",
        "instance 1: 1 features, expected 2",
    );
    check("{\"instances\": []}", "the request body holds no records");
    check("[]", "the request body holds no records");
    check(
        "{\"instances\": {}}",
        "instance 0: malformed JSON at byte 14: \"instances\" must be a list",
    );
    check(
        "{\"instances\": [[1]], \"instances\": [[2]]}",
        "instance 0: malformed JSON at byte 33: \"instances\" appears twice",
    );
    // Syntax is checked before any batch: a broken tail yields nothing.
    check(
        "[[1], [2]] x",
        "instance 0: malformed JSON at byte 11: unexpected text after the JSON value",
    );
    check(
        "[[1], [2]",
        "instance 0: malformed JSON at byte 9: expected ',' or ']'",
    );
    check(
        "3",
        "instance 0: malformed JSON at byte 0: expected {\"instances\": [...]} or a list",
    );
    check(
        "",
        "instance 0: malformed JSON at byte 0: expected {\"instances\": [...]} or a list",
    );
}

#[test]
fn batches_are_converted_one_at_a_time() {
    let mut config = DecodeConfig::new(DataType::U8);
    config.batch_records = 2;
    let b = decode(&config, "{\"instances\": [[1], [2], [3], [4], [5]]}").unwrap();
    let got: Vec<(u64, usize, &[u8])> = b
        .iter()
        .map(|b| (b.first_record, b.records, &b.data[..]))
        .collect();
    assert_eq!(
        got,
        [(0, 2, &[1, 2][..]), (2, 2, &[3, 4][..]), (4, 1, &[5][..])]
    );
}

#[test]
fn the_body_limit_holds_while_feeding() {
    let mut config = DecodeConfig::new(DataType::U8);
    config.max_body_bytes = 10;
    let mut dec = JsonDecoder::new(&config).unwrap();
    dec.feed(b"[[1], [2],").unwrap();
    let err = dec.feed(b" [3]]").unwrap_err();
    assert_eq!(
        err.to_string(),
        "the request body is larger than 10 bytes, the limit for this format"
    );
    assert_eq!(dec.finish().unwrap_err(), err);
}

/// Sparse records are held to what one request may densify to before the
/// first batch: 3000 records of `"shape": [65536]` (192 KB of JSON) used
/// to become 786 MB of batches; now the first `finish` refuses them.
#[test]
fn sparse_records_are_bounded_before_the_first_batch() {
    let record = r#"{"data": {"features": {"values": [1.5], "keys": [7], "shape": [65536]}}}"#;
    let body = format!("{{\"instances\": [{}]}}", vec![record; 3000].join(","));
    assert!(body.len() < 250_000);
    let config = DecodeConfig::new(DataType::F32);
    let mut dec = JsonDecoder::new(&config).unwrap();
    dec.feed(body.as_bytes()).unwrap();
    let err = dec.finish().unwrap_err();
    assert_eq!(
        err.to_string(),
        "instance 256: the sparse records of this request densify to more than 16777216 elements, the route's max_elements_per_tensor"
    );
    // Within the bound they densify, in batches within the element limit.
    let body = format!("{{\"instances\": [{}]}}", vec![record; 256].join(","));
    let mut config = DecodeConfig::new(DataType::F32);
    config.max_batch_elements = 100 * 65536;
    let batches = decode(&config, &body).unwrap();
    let records: Vec<usize> = batches.iter().map(|b| b.records).collect();
    assert_eq!(records, [100, 100, 56]);
    assert_eq!(batches[0].data.len(), 100 * 65536 * 4);
    // A bad record after the sparse ones is found before the first batch.
    let body = format!("{{\"instances\": [{record}, [1, 2]]}}");
    assert_eq!(
        decode(&DecodeConfig::new(DataType::F32), &body).unwrap_err(),
        "instance 1: 2 features, expected 65536"
    );
}
