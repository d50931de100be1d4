//! The failed state, the budget for JSON outside tensor data, and the
//! bounds on shapes, early data and binary sizes.

use super::tests::parse_chunked_with;
use super::*;
use crate::codec::v2::MAX_JSON_DEPTH;
use crate::codec::v2::framing::ChunkSplitter;
use crate::codec::v2::json_data::DataError;
use crate::codec::v2::model::EntryData;

const CHUNK: usize = 64 << 10;

/// Parses `json` with `limits` in every chunking and checks the message.
fn check(limits: DocLimits, json: &str, expected: Result<(), &str>) {
    let got = parse_chunked_with(DocKind::Request, limits, json);
    match expected {
        Ok(()) => assert!(got.is_ok(), "{json}: {got:?}"),
        Err(message) => assert_eq!(
            got.map(drop).map_err(|e| e.to_string()),
            Err(message.to_owned()),
            "{json}"
        ),
    }
}

fn budget(bytes: u64, values: u64) -> DocLimits {
    DocLimits::default().with_member_budget(bytes, values)
}

#[test]
fn no_document_after_an_error() {
    let mut p = DocParser::new(DocKind::Request, DocLimits::default());
    let err = p.feed(br#"{"inputs":[], "id": [1,}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed JSON at byte 20: expected value at line 1 column 4"
    );
    assert_eq!(p.feed(b"]}"), Err(err.clone()));
    assert_eq!(p.buffered(), 0);
    assert_eq!(p.finish(), Err(err));

    let mut p = DocParser::new(DocKind::Request, DocLimits::default());
    let err = p.feed(br#"{"inputs":[{"name":"X","shape":[2],"datatype":"INT32","data":[1,x"#);
    assert!(err.is_err());
    assert_eq!(p.finish(), Err(err.unwrap_err()));
}

#[test]
fn member_budget_counts_names_and_values() {
    // `"inputs"` (8 bytes), `"id"` (4) and `"ab"` (4): 16 bytes, 3 values.
    let json = r#"{"inputs": [], "id": "ab"}"#;
    check(budget(16, 3), json, Ok(()));
    check(
        budget(15, 3),
        json,
        Err(r#"member "id" goes over the limit of 15 bytes for JSON outside tensor data"#),
    );
    check(
        budget(16, 2),
        json,
        Err(r#"member "id" goes over the limit of 2 values for JSON outside tensor data"#),
    );
    check(
        budget(10, 3),
        json,
        Err("a member name goes over the limit of 10 bytes for JSON outside tensor data"),
    );
    // Tensor members count; tensor data does not.
    let json = r#"{"inputs":[{"name":"X","shape":[3],"datatype":"INT32","data":[1,2,3]}]}"#;
    // Five names (8+6+7+10+6 bytes) and "X", [3], "INT32" (3+3+7 bytes):
    // 50 bytes, 9 values.
    check(budget(50, 9), json, Ok(()));
    check(
        budget(49, 9),
        json,
        Err(
            r#"input "X": a member name goes over the limit of 49 bytes for JSON outside tensor data"#,
        ),
    );
    check(
        budget(43, 9),
        json,
        Err(
            r#"input "X": member "datatype" goes over the limit of 43 bytes for JSON outside tensor data"#,
        ),
    );
    check(
        budget(50, 8),
        json,
        Err(
            r#"input "X": a member name goes over the limit of 8 values for JSON outside tensor data"#,
        ),
    );
}

/// A document whose member `key` of the tensor (or of the top level when
/// `in_tensor` is false) is an array of `n` numbers, fed in 64 KiB chunks.
/// Returns the error, the bytes fed until it, and the most bytes the parser
/// held (and reserved) at any time.
fn feed_large(limits: DocLimits, in_tensor: bool, key: &str, n: usize) -> (DocError, usize, usize) {
    let head = if in_tensor {
        format!(r#"{{"inputs":[{{"name":"X","datatype":"FP32","shape":[1],"{key}":["#)
    } else {
        format!(r#"{{"inputs":[],"{key}":["#)
    };
    let mut doc = head.into_bytes();
    doc.extend(std::iter::repeat_n(*b"1234567890123456,", n).flatten());
    doc.extend_from_slice(b"0]}]}");
    let mut p = DocParser::new(DocKind::Request, limits);
    let (mut fed, mut held, mut reserved) = (0, 0, 0);
    for chunk in doc.chunks(CHUNK) {
        fed += chunk.len();
        if let Err(e) = p.feed(chunk) {
            return (e, fed, held.max(reserved));
        }
        held = held.max(p.buffered());
        reserved = reserved.max(p.pending.capacity());
    }
    panic!("{} bytes accepted", doc.len());
}

#[test]
fn a_32_mib_member_is_refused_within_the_budget() {
    const MIB: usize = 1 << 20;
    // 17 bytes a value: the byte budget runs out first.
    let n = 32 * MIB / 17;
    for (in_tensor, key) in [
        (false, "unknown"),
        (false, "parameters"),
        (true, "parameters"),
    ] {
        let (err, fed, held) = feed_large(DocLimits::default(), in_tensor, key, n);
        let member = if in_tensor {
            format!(r#"input "X": member "{key}""#)
        } else {
            format!(r#"member "{key}""#)
        };
        assert_eq!(
            err.to_string(),
            format!("{member} goes over the limit of 1048576 bytes for JSON outside tensor data")
        );
        assert!(fed <= MIB + CHUNK, "{key}: refused after {fed} bytes");
        assert!(held <= 2 * (MIB + CHUNK), "{key}: held {held} bytes");
    }
    // With a larger byte budget the value budget stops it.
    let limits = budget(64 * MIB as u64, 1 << 16);
    let (err, fed, held) = feed_large(limits, true, "parameters", n);
    assert!(
        matches!(err, DocError::TooManyValues { limit: 65536, .. }),
        "{err}"
    );
    assert!(fed <= 17 * (1 << 16) + CHUNK, "refused after {fed} bytes");
    assert!(held <= 2 * (17 * (1 << 16) + CHUNK), "held {held} bytes");
}

#[test]
fn long_shapes_are_refused_while_read() {
    let limits = DocLimits::default();
    let mut doc = br#"{"inputs":[{"name":"X","datatype":"INT32","shape":["#.to_vec();
    doc.extend(std::iter::repeat_n(*b"1,", 1 << 20).flatten());
    let mut p = DocParser::new(DocKind::Request, limits);
    let err = p.feed(&doc[..CHUNK]).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"input "X": shape has more than 64 dimensions, over the limit of 32"#
    );
    // Up to twice the limit, the shape is quoted whole.
    let dims = vec!["1"; 64].join(",");
    check(
        limits,
        &format!(r#"{{"inputs":[{{"name":"X","shape":[{dims}],"datatype":"INT32","data":[1]}}]}}"#),
        Err(&format!(
            r#"input "X": shape [{dims}] has 64 dimensions, over the limit of 32"#
        )),
    );
    let dims = vec!["1"; 65].join(",");
    check(
        limits,
        &format!(r#"{{"inputs":[{{"name":"X","shape":[{dims}],"datatype":"INT32","data":[1]}}]}}"#),
        Err(r#"input "X": shape has more than 64 dimensions, over the limit of 32"#),
    );
}

#[test]
fn early_data_is_kept_as_text_outside_the_budget() {
    // Data before its datatype costs nothing of the member budget...
    let values: Vec<String> = (0..5000).map(|i| i.to_string()).collect();
    let json = format!(
        r#"{{"inputs":[{{"data":[[{}]],"name":"X","shape":[1,5000],"datatype":"INT64"}}]}}"#,
        values.join(",")
    );
    let doc = DocParser::parse(DocKind::Request, budget(64, 12), json.as_bytes()).unwrap();
    let EntryData::Inline { elements, .. } = doc.tensors[0].data else {
        panic!("{:?}", doc.tensors[0].data);
    };
    assert_eq!(elements, 5000);
    // ...but is bounded by the element limit (nested arrays do not count).
    let limits = DocLimits::new(4, 8);
    check(
        limits,
        r#"{"inputs":[{"data":[[1,2],[3,4]],"name":"X","shape":[2,2],"datatype":"INT32"}]}"#,
        Ok(()),
    );
    check(
        limits,
        r#"{"inputs":[{"data":[[1,2],[3,4,5]],"name":"X","shape":[2,2],"datatype":"INT32"}]}"#,
        Err("input #0: data has more than 4 elements, the limit"),
    );
    let err = DocParser::parse(
        DocKind::Request,
        limits,
        br#"{"inputs":[{"data":[1,2,3,4,5],"name":"X"}]}"#,
    )
    .unwrap_err();
    assert_eq!(
        err,
        DocError::Data {
            subject: Subject {
                kind: DocKind::Request,
                name: None,
                index: 0
            },
            source: DataError::TooManyElements { max: 4 }
        }
    );
    // Malformed early data is still a syntax error where it is.
    check(
        DocLimits::default(),
        r#"{"inputs":[{"data":[1,,2],"name":"X","shape":[2],"datatype":"INT32"}]}"#,
        Err("malformed JSON at byte 19: expected value at line 1 column 4"),
    );
}

#[test]
fn binary_sizes_near_u64_max_do_not_wrap() {
    let size = u64::MAX - 7;
    let json = format!(
        r#"{{"outputs":[{{"name":"A","datatype":"BYTES","shape":[1],"parameters":{{"binary_data_size":{size}}}}},{{"name":"B","datatype":"BYTES","shape":[1],"parameters":{{"binary_data_size":{size}}}}}]}}"#
    );
    let doc = DocParser::parse(DocKind::Response, DocLimits::default(), json.as_bytes()).unwrap();
    assert_eq!(
        doc.binary_sizes().collect::<Vec<_>>(),
        vec![(0, size), (1, size)]
    );
    assert_eq!(doc.binary_total(), None);
    assert_eq!(
        ChunkSplitter::new(doc.binary_sizes().collect()).remaining_total(),
        None
    );
    let one = json.replacen(&size.to_string(), "7", 1);
    let doc = DocParser::parse(DocKind::Response, DocLimits::default(), one.as_bytes()).unwrap();
    assert_eq!(doc.binary_total(), Some(u64::MAX));
    // A fixed-size tensor whose byte size does not fit in 64 bits.
    let limits = DocLimits::new(u64::MAX, 64);
    let json = format!(
        r#"{{"outputs":[{{"name":"C","datatype":"INT64","shape":[{}],"parameters":{{"binary_data_size":{}}}}}]}}"#,
        1u64 << 62,
        u64::MAX
    );
    assert_eq!(
        DocParser::parse(DocKind::Response, limits, json.as_bytes())
            .unwrap_err()
            .to_string(),
        format!(
            r#"output "C": INT64 data of shape [4611686018427387904] is more than 2^64 bytes, but "binary_data_size" is {}"#,
            u64::MAX
        )
    );
}

#[test]
fn limits_constructors_keep_the_defaults() {
    let d = DocLimits::default();
    assert_eq!(d.max_depth, MAX_JSON_DEPTH);
    assert_eq!(
        (d.max_member_bytes, d.max_member_values),
        (1 << 20, 1 << 16)
    );
    let l = DocLimits::new(10, 3);
    assert_eq!(
        (l.max_elements, l.max_dims, l.max_depth),
        (10, 3, MAX_JSON_DEPTH)
    );
    assert_eq!(l.with_member_budget(5, 6).max_member_bytes, 5);
    assert_eq!(l.with_member_budget(5, 6).max_member_values, 6);
}
