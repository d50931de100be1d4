//! The one-pass parser against the streaming state machine: on every
//! document it reads it must build exactly what the state machine builds
//! (members, tensors, heads), and every document it leaves must still be
//! read (or refused, with the same error) as before, in any chunking.

use proptest::prelude::*;

use super::super::{DocError, DocParser};
use super::*;
use crate::codec::v2::model::Document;

/// The infer request of the gateway's benchmark (`scripts/bench/infer.lua`).
const BENCH_REQUEST: &str = r#"{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}"#;

/// A binary reply's JSON header as Triton writes it.
const TRITON_HEADER: &str = r#"{"model_name":"simple","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}},{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}}]}"#;

/// The document and heads the streaming state machine gives for `input`
/// fed in chunks of `size` bytes (0: whole).
fn streaming(
    kind: DocKind,
    limits: DocLimits,
    input: &[u8],
    size: usize,
) -> (Result<Document, DocError>, Vec<EntryHead>) {
    let mut p = DocParser::streaming(kind, limits);
    let mut heads = Vec::new();
    let mut first = None;
    for chunk in input.chunks(if size == 0 { input.len().max(1) } else { size }) {
        let result = p.feed(chunk);
        heads.extend(p.take_heads());
        if let Err(e) = result {
            first.get_or_insert(e);
        }
    }
    let done = p.finish();
    if let Some(e) = first {
        assert_eq!(done.as_ref().err(), Some(&e));
    }
    (done, heads)
}

/// What the gateway's parser gives for `input` in one chunk (taking the
/// one-pass path when it can).
fn gateway(
    kind: DocKind,
    limits: DocLimits,
    input: &[u8],
) -> (Result<Document, DocError>, Vec<EntryHead>) {
    let mut p = DocParser::new(kind, limits);
    let result = p.feed(input);
    // `check_heads` visits the heads `take_heads` gives.
    let mut q = DocParser::new(kind, limits);
    let _ = q.feed(input);
    let mut visited = Vec::new();
    let _ = q.check_heads(|name, datatype, shape| {
        visited.push((name.to_owned(), datatype, shape.clone()));
        Ok::<_, ()>(())
    });
    let heads = p.take_heads();
    let taken: Vec<_> = heads
        .iter()
        .map(|h| (h.name.clone(), h.datatype, h.shape.clone()))
        .collect();
    assert_eq!(visited, taken);
    let done = match result {
        Ok(()) => p.finish(),
        Err(e) => Err(e),
    };
    (done, heads)
}

/// Checks `input` both ways: the one-pass parser's document, when it gives
/// one, is the state machine's; the gateway's parser (one chunk) agrees with
/// the state machine fed in every chunking. Returns whether the one-pass
/// parser read it.
fn check(kind: DocKind, limits: DocLimits, input: &[u8]) -> bool {
    let fast = parse(kind, &limits, input, true);
    let (reference, ref_heads) = streaming(kind, limits, input, 0);
    if let Some(w) = &fast {
        let doc = reference
            .as_ref()
            .expect("the one-pass parser read a document the state machine refuses");
        assert_eq!(w.members, doc.members);
        assert_eq!(w.tensors_at, doc.tensors_at);
        assert_eq!(w.tensors, doc.tensors);
        assert_eq!(w.heads, ref_heads);
    }
    assert_eq!(
        DocParser::parse(kind, limits, input),
        reference,
        "parsed whole"
    );
    let got = gateway(kind, limits, input);
    assert_eq!(got, (reference.clone(), ref_heads.clone()), "one chunk");
    for size in 1..input.len() {
        let (chunked, heads) = streaming(kind, limits, input, size);
        assert_eq!(chunked, reference, "chunks of {size}");
        if chunked.is_ok() {
            assert_eq!(heads, ref_heads, "heads, chunks of {size}");
        }
    }
    fast.is_some()
}

#[test]
fn reads_the_benchmark_documents() {
    assert!(check(
        DocKind::Request,
        DocLimits::default(),
        BENCH_REQUEST.as_bytes()
    ));
    assert!(check(
        DocKind::Response,
        DocLimits::new(u64::MAX, 64),
        TRITON_HEADER.as_bytes()
    ));
}

#[test]
fn reads_plain_members_of_every_kind() {
    let doc = r#" {"id": "é-1", "parameters": {"a": [1, -2, true, null], "b": {"c": false}},
        "inputs": [ {"shape": [], "name": "X", "datatype": "FP32", "data": 1.5,
          "extra": "kept"}, {"name":"B","datatype":"BYTES","shape":[2],"data":["a","é"]},
          {"name":"S","datatype":"INT8","shape":[3],"parameters":{"shared_memory_region":"r"}} ],
        "outputs": [{"name": "Y", "parameters": {"binary_data": true}}] } "#;
    assert!(check(
        DocKind::Request,
        DocLimits::default(),
        doc.as_bytes()
    ));
}

#[test]
fn knows_every_datatype_by_its_v2_name() {
    for d in DataType::ALL {
        assert_eq!(datatype(d.v2_name().as_bytes()), Some(d));
        assert_eq!(DataType::from_v2_name(d.v2_name()), Some(d));
    }
    assert_eq!(datatype(b"INT33"), None);
    assert_eq!(datatype(b"int32"), None);
}

#[test]
fn reads_integer_data_of_every_type_as_the_converter_does() {
    for (datatype, values) in [
        ("INT8", "[-128, 127, 0]"),
        ("INT16", "[-32768, 32767, 5]"),
        ("INT32", "[-2147483648, 2147483647, 7]"),
        ("INT64", "[-999999999999999999, 999999999999999999, 0]"),
        ("UINT8", "[0, 255, 1]"),
        ("UINT16", "[0, 65535, 1]"),
        ("UINT32", "[0, 4294967295, 1]"),
        ("UINT64", "[0, 999999999999999999, 1]"),
        ("INT32", "[[1], [2], [3]]"),
        ("UINT64", "[18446744073709551615, 0, 1]"),
        ("UINT32", "[-0, 0, 1]"),
    ] {
        let doc = format!(
            r#"{{"inputs":[{{"name":"X","datatype":"{datatype}","shape":[3],"data":{values}}}]}}"#
        );
        assert!(
            check(DocKind::Request, DocLimits::default(), doc.as_bytes()),
            "{doc}"
        );
    }
}

#[test]
fn leaves_unusual_and_wrong_documents_to_the_state_machine() {
    for doc in [
        r#"{"id":"a\"b","inputs":[]}"#,
        r#"{"id":1.5,"inputs":[]}"#,
        r#"{"id":-0,"inputs":[]}"#,
        r#"{"inputs":[{"name":"X","data":[1],"datatype":"INT32","shape":[1]}]}"#,
        r#"{"inputs":[{"name":"X","datatype":"INT32","shape":[1],"data":[1]}],"inputs":[]}"#,
        r#"{"inputs":[{"name":"X","name":"Y","datatype":"INT32","shape":[1],"data":[1]}]}"#,
        r#"{"inputs":[{"name":"X","datatype":"INT33","shape":[1],"data":[1]}]}"#,
        r#"{"inputs":[{"name":"X","datatype":"INT8","shape":[1],"data":[300]}]}"#,
        r#"{"inputs":[{"name":"X","datatype":"INT8","shape":[2],"data":[1]}]}"#,
        r#"{"inputs":[{"name":"X","datatype":"INT8","shape":[1],"data":[1,2]}]}"#,
        r#"{"inputs":[{"name":"X","datatype":"INT8","shape":[1],"data":[-129]}]}"#,
        r#"{"inputs":[{"name":"X","datatype":"UINT8","shape":[1],"data":[-1]}]}"#,
        r#"{"inputs":[{"name":"X","datatype":"UINT16","shape":[1],"data":[65536]}]}"#,
        r#"{"inputs":[{"name":"X","datatype":"INT32","shape":[1],"data":[2147483648]}]}"#,
        r#"{"inputs":[{"name":"X","datatype":"INT32","shape":[1],"data":[1.0]}]}"#,
        r#"{"inputs":[{"name":"X","datatype":"INT32","shape":[1],"data":[1"#,
        r#"{"inputs":[{"name":"X","datatype":"INT8","shape":[-1],"data":[1]}]}"#,
        r#"{"inputs":[{"name":"X","datatype":"INT8","shape":[1]}]}"#,
        r#"{"inputs":[{"name":"X","datatype":"INT8","shape":[1],"data":[1],"p":{"a":{"b":{"c":{"d":{"e":1}}}}}}]}"#,
        r#"{"inputs":[{"name":"X","datatype":"INT8","shape":[1],"data":[1]}]} x"#,
        r#"{"inputs":{}}"#,
        r#"{"id":"1","id":"2","inputs":[]}"#,
        r#"{"outputs":[]}"#,
        r#"{}"#,
    ] {
        assert!(
            !check(DocKind::Request, DocLimits::default(), doc.as_bytes()),
            "{doc}"
        );
    }
}

#[test]
fn leaves_documents_near_the_member_budget() {
    let tight = DocLimits::default().with_member_budget(BENCH_REQUEST.len() as u64, 1 << 16);
    assert!(!check(DocKind::Request, tight, BENCH_REQUEST.as_bytes()));
    let roomy = DocLimits::default().with_member_budget(BENCH_REQUEST.len() as u64 + 1, 1 << 16);
    assert!(check(DocKind::Request, roomy, BENCH_REQUEST.as_bytes()));
}

/// A member value: mostly plain, sometimes a form only serde reads.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0i64..100_000).prop_map(|v| v.to_string()),
        1 => (-100i64..0).prop_map(|v| v.to_string()),
        3 => "[a-zé]{0,6}".prop_map(|s| format!("\"{s}\"")),
        1 => Just("true".to_owned()),
        1 => Just("null".to_owned()),
        1 => Just("1.5".to_owned()),
        1 => Just("\"a\\nb\"".to_owned()),
        1 => Just("[1, \"x\", [false]]".to_owned()),
        1 => Just("{\"k\": {\"j\": 1}}".to_owned()),
        1 => Just("01".to_owned()),
    ]
}

/// A tensor's data for `count` elements (sometimes one too few, or of the
/// wrong kind).
fn data(count: usize) -> impl Strategy<Value = String> {
    let n = count.min(6);
    prop_oneof![
        4 => proptest::collection::vec(-200i64..200, n..=n).prop_map(|v| format!("{v:?}")),
        1 => proptest::collection::vec(-2.0f32..2.0, n..=n).prop_map(|v| format!("{v:?}")),
        1 => proptest::collection::vec("[a-z]{0,3}", n..=n).prop_map(|v| format!("{v:?}")),
        1 => Just("[[1, 2], [3]]".to_owned()),
        1 => Just("[]".to_owned()),
    ]
}

/// One tensor's members, in some order; sometimes one is left out,
/// doubled, or of the wrong form.
fn tensor() -> impl Strategy<Value = String> {
    let datatype = prop_oneof![
        Just("INT32"),
        Just("INT8"),
        Just("UINT8"),
        Just("INT64"),
        Just("FP32"),
        Just("BYTES"),
        Just("BOOL"),
        Just("FLOAT"),
    ];
    let shape = proptest::collection::vec(0u64..4, 0..3);
    (
        "[A-Z0-9é]{1,6}",
        datatype,
        shape,
        0usize..3,
        proptest::option::of(value()),
        proptest::bool::weighted(0.2),
        prop_oneof![
            6 => Just(vec![0usize, 1, 2, 3]),
            3 => Just(vec![2, 0, 1, 4, 3]),
            1 => Just(vec![3, 1, 2, 0]),
            1 => Just(vec![0, 1, 2]),
            1 => Just(vec![0, 1, 2, 3, 5]),
        ],
    )
        .prop_flat_map(|(name, dt, shape, how, extra, shuffle, order)| {
            let count: u64 = shape.iter().product();
            (
                Just((name, dt, shape, how, extra, shuffle, order)),
                data(count as usize),
            )
        })
        .prop_map(|((name, dt, shape, how, extra, shuffle, order), data)| {
            let count: u64 = shape.iter().product();
            let size = count * 4;
            let members = [
                format!("\"name\": \"{name}\""),
                format!("\"datatype\":\"{dt}\""),
                format!("\"shape\": {shape:?}"),
                match how {
                    0 => format!("\"data\": {data}"),
                    1 => format!("\"parameters\": {{\"binary_data_size\": {size}}}"),
                    _ => format!(
                        "\"parameters\": {{\"shared_memory_region\": \"r\", \"n\": {size}}}"
                    ),
                },
                extra.map_or_else(|| "\"x\": 1".to_owned(), |v| format!("\"x\":{v}")),
                "\"name\": \"again\"".to_owned(),
            ];
            let mut picked: Vec<&String> = order.iter().map(|&k| &members[k]).collect();
            if shuffle {
                picked.reverse();
            }
            let body: Vec<&str> = picked.iter().map(|s| s.as_str()).collect();
            format!("{{{}}}", body.join(", "))
        })
}

/// A small document, sometimes cut short or with one byte changed.
fn document() -> impl Strategy<Value = (bool, Vec<u8>)> {
    (
        any::<bool>(),
        proptest::option::of(value()),
        proptest::collection::vec(tensor(), 0..3),
        proptest::option::of(value()),
        0usize..4,
        any::<prop::sample::Index>(),
        prop_oneof![
            Just(b'}'),
            Just(b','),
            Just(b'"'),
            Just(b'\\'),
            Just(b' '),
            Just(b'1')
        ],
    )
        .prop_map(|(response, before, tensors, after, damage, at, byte)| {
            let key = if response { "outputs" } else { "inputs" };
            let mut members = Vec::new();
            members.extend(before.map(|v| format!("\"id\": {v}")));
            members.push(format!("\"{key}\": [{}]", tensors.join(",\n")));
            members.extend(after.map(|v| format!("\"parameters\": {{\"p\": {v}}}")));
            let mut doc = format!("{{{}}}", members.join(", ")).into_bytes();
            let k = at.index(doc.len());
            match damage {
                0 => doc.truncate(k),
                1 => doc[k] = byte,
                _ => {}
            }
            (response, doc)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn agrees_with_the_state_machine((response, doc) in document()) {
        let kind = if response { DocKind::Response } else { DocKind::Request };
        check(kind, DocLimits::default(), &doc);
        check(kind, DocLimits::new(8, 1), &doc);
    }
}

#[test]
fn the_generated_documents_often_take_the_one_pass_path() {
    // A generator that only ever made documents the one-pass parser leaves
    // would test nothing.
    use proptest::strategy::ValueTree;
    let mut r = proptest::test_runner::TestRunner::deterministic();
    let mut read = 0;
    for _ in 0..200 {
        let (response, doc) = document().new_tree(&mut r).unwrap().current();
        let kind = if response {
            DocKind::Response
        } else {
            DocKind::Request
        };
        read += u32::from(parse(kind, &DocLimits::default(), &doc, true).is_some());
    }
    assert!(read >= 30, "{read} of 200 read in one pass");
}
