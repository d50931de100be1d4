use super::*;
use crate::codec::sagemaker::batch::DecodeConfig;
use crate::tensor::DataType;

/// One JSON record as FP32 values, or the error text.
fn record32(text: &str) -> Result<Vec<f32>, String> {
    let mut rows = Rows::new(&DecodeConfig::new(DataType::F32));
    line_record::<f32>(text.as_bytes(), Location::Line(1), &mut rows).map_err(|e| e.to_string())?;
    let b = rows.take().unwrap();
    Ok(b.data
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

fn check(text: &str, want: &[f32]) {
    let got = record32(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(want), "{text}");
}

fn check_err(text: &str, want: &str) {
    assert_eq!(record32(text).unwrap_err(), want, "{text}");
}

#[test]
fn record_shapes() {
    check("[1.5, 16.0, 14, 23.0]", &[1.5, 16.0, 14.0, 23.0]);
    check("{\"features\": [1, 2]}", &[1.0, 2.0]);
    check(" { \"label\" : 3 , \"features\":[1,2] } ", &[1.0, 2.0]);
    check(
        "{\"data\": {\"features\": {\"values\": [1, 2]}}}",
        &[1.0, 2.0],
    );
    check("{\"data\": {\"features\": [1, 2]}}", &[1.0, 2.0]);
    check("{\"features\": {\"values\": [1, 2]}}", &[1.0, 2.0]);
    check(
        "{\"configuration\": {\"k\": [1, {\"x\": null}]}, \"data\": {\"features\": {\"values\": [5]}, \"other\": \"x\"}}",
        &[5.0],
    );
    check("{\"feat\\u0075res\": [4]}", &[4.0]);
}

#[test]
fn sparse_records() {
    check(
        "{\"data\": {\"features\": {\"keys\": [0, 1, 3], \"shape\": [4], \"values\": [1, 4, 1]}}}",
        &[1.0, 4.0, 0.0, 1.0],
    );
    // Members in any order; an all-zero row has no keys and no values.
    check(
        "{\"features\": {\"values\": [2.5], \"shape\": [3], \"keys\": [2]}}",
        &[0.0, 0.0, 2.5],
    );
    check(
        "{\"features\": {\"keys\": [], \"shape\": [2], \"values\": []}}",
        &[0.0, 0.0],
    );
    check(
        "{\"features\": {\"shape\": [2], \"values\": [1, 2]}}",
        &[1.0, 2.0],
    );
    check(
        "{\"features\": {\"keys\": [1, 4], \"shape\": [2, 3], \"values\": [1, 2]}}",
        &[0.0, 1.0, 0.0, 0.0, 2.0, 0.0],
    );
    check_err(
        "{\"features\": {\"keys\": [4], \"shape\": [4], \"values\": [1]}}",
        "line 1: sparse key 4 is out of range for 4 features",
    );
    check_err(
        "{\"features\": {\"keys\": [1, 1], \"shape\": [4], \"values\": [1, 2]}}",
        "line 1: sparse key 1 appears twice",
    );
    check_err(
        "{\"features\": {\"keys\": [-1], \"shape\": [4], \"values\": [1]}}",
        "line 1: sparse keys and shapes must be non-negative integers",
    );
    check_err(
        "{\"features\": {\"keys\": [0], \"shape\": [4], \"values\": [1], \"keys\": [1]}}",
        "line 1: malformed JSON at byte 63: a tensor member appears twice",
    );
}

#[test]
fn non_finite_and_string_elements() {
    let v = record32("[NaN, Infinity, -Infinity, \"NaN\", \"-Infinity\", \"1.5\"]").unwrap();
    assert!(v[0].is_nan() && v[3].is_nan());
    assert_eq!(&v[1..3], &[f32::INFINITY, f32::NEG_INFINITY]);
    assert_eq!(&v[4..], &[f32::NEG_INFINITY, 1.5]);
}

#[test]
fn errors() {
    check_err("[1, \"x\"]", "line 1, feature 1: \"x\" is not a number");
    check_err("[1, true]", "line 1, feature 1: \"true\" is not a number");
    check_err(
        "[1, [2]]",
        "line 1: features must be numbers, not lists or objects",
    );
    check_err("[1e39]", "line 1, feature 0: 1e39 is out of range for FP32");
    check_err("[]", "line 1: the record has no features");
    check_err(
        "[1, 2",
        "line 1: malformed JSON at byte 5: expected ',' or ']'",
    );
    check_err(
        "[1 2]",
        "line 1: malformed JSON at byte 3: expected ',' or ']'",
    );
    check_err(
        "[1,]",
        "line 1: malformed JSON at byte 3: expected a number",
    );
    check_err(
        "[1] x",
        "line 1: malformed JSON at byte 4: unexpected text after the record",
    );
    check_err(
        "{\"label\": 1}",
        "line 1: the record has no \"features\" or \"data\"",
    );
    check_err(
        "{\"features\": [1], \"data\": {\"features\": [2]}}",
        "line 1: the record has more than one \"features\" or \"data\"",
    );
    check_err("{\"data\": {}}", "line 1: \"data\" has no \"features\"");
    check_err(
        "{\"features\": 3}",
        "line 1: \"features\" must be a list of numbers or {\"values\", \"keys\", \"shape\"}",
    );
    check_err(
        "\"x\"",
        "line 1: malformed JSON at byte 0: expected a record: a list of numbers or an object",
    );
    check_err(
        "{\"features\": [1], \"x\": tru}",
        "line 1: malformed JSON at byte 23: expected a value",
    );
    let deep = format!(
        "{{\"x\": {}1{}, \"features\": [1]}}",
        "[".repeat(70),
        "]".repeat(70)
    );
    check_err(&deep, "line 1: JSON nests deeper than 64 levels");
}
