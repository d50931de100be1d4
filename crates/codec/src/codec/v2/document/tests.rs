use bytes::Bytes;

use super::*;
use crate::codec::v2::json_write::{TensorForm, inline_data, write_document};
use crate::codec::v2::model::EntryData;
use crate::tensor::{DataType, Shape};

fn parse(kind: DocKind, json: &str) -> Result<Document, DocError> {
    DocParser::parse(kind, DocLimits::default(), json.as_bytes())
}

/// Parses `json` whole and in every chunk size from 1 to 7; all must agree.
fn parse_chunked(kind: DocKind, json: &str) -> Result<Document, DocError> {
    parse_chunked_with(kind, DocLimits::default(), json)
}

/// Feeds `chunk`, or with `cut` the chunk cut in two where
/// [`DocParser::split`] says ([`DocParser::feed_cut`]).
fn feed(p: &mut DocParser, chunk: &[u8], cut: bool) -> Result<(), DocError> {
    if cut {
        p.feed_cut(chunk)
    } else {
        p.feed(chunk)
    }
}

/// [`parse_chunked`] with other limits. Chunks keep being fed after an
/// error: every later call must fail with the same error. Each chunking is
/// fed as it is and cut in two by [`DocParser::split`].
pub(super) fn parse_chunked_with(
    kind: DocKind,
    limits: DocLimits,
    json: &str,
) -> Result<Document, DocError> {
    let whole = DocParser::parse(kind, limits, json.as_bytes());
    let sizes = (1..8).chain([16, 40, 100]);
    for (size, cut) in sizes.flat_map(|size| [(size, false), (size, true)]) {
        let mut p = DocParser::new(kind, limits);
        let mut first: Option<DocError> = None;
        for chunk in json.as_bytes().chunks(size) {
            let result = feed(&mut p, chunk, cut);
            match &first {
                Some(e) => assert_eq!(result, Err(e.clone()), "feed after an error"),
                None => first = result.err(),
            }
        }
        let chunked = p.finish();
        if let Some(e) = first {
            assert_eq!(chunked, Err(e), "finish after an error");
        }
        assert_eq!(chunked, whole, "chunk size {size} (cut: {cut}) for {json}");
    }
    whole
}

const SIMPLE: &str = r#"{
  "id": "42",
  "inputs": [
    {"name": "INPUT0", "shape": [1, 3], "datatype": "INT32", "data": [[1, 2, 3]]},
    {"name": "INPUT1", "datatype": "FP32", "shape": [2], "parameters": {"binary_data_size": 8}},
    {"name": "S", "datatype": "BYTES", "shape": [1], "data": ["héllo"], "extra": {"k": 1}}
  ],
  "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": true}}],
  "parameters": {"binary_data_output": false}
}"#;

#[test]
fn parses_a_request_in_any_chunking() {
    let doc = parse_chunked(DocKind::Request, SIMPLE).unwrap();
    assert_eq!(doc.tensors_at, 1);
    assert_eq!(doc.members[0], ("id".to_owned(), Value::from("42")));
    assert_eq!(doc.members[1].0, "outputs");
    assert_eq!(doc.members[2].0, "parameters");
    let t = &doc.tensors;
    assert_eq!(t.len(), 3);
    assert_eq!(t[0].name, "INPUT0");
    assert_eq!(t[0].datatype, DataType::I32);
    assert_eq!(t[0].shape, Shape::new(vec![1, 3]));
    let ints: Vec<u8> = [1i32, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(
        t[0].data,
        EntryData::Inline {
            data: Bytes::from(ints),
            elements: 3
        }
    );
    assert_eq!(t[1].data, EntryData::Binary { size: 8 });
    assert_eq!(
        t[2].extra,
        vec![("extra".to_owned(), serde_json::json!({"k": 1}))]
    );
    assert_eq!(
        t[2].data,
        EntryData::Inline {
            data: Bytes::from_static(b"\x06\0\0\0h\xc3\xa9llo"),
            elements: 1
        }
    );
    assert_eq!(doc.binary_sizes().collect::<Vec<_>>(), vec![(1, 8)]);
}

#[test]
fn data_before_datatype_is_deferred() {
    let doc = parse_chunked(
        DocKind::Request,
        r#"{"inputs":[{"data":[true,false],"name":"B","shape":[2],"datatype":"BOOL"}]}"#,
    )
    .unwrap();
    assert_eq!(
        doc.tensors[0].data,
        EntryData::Inline {
            data: Bytes::from_static(&[1, 0]),
            elements: 2
        }
    );
}

#[test]
fn heads_are_announced_before_data_is_read() {
    let mut p = DocParser::new(DocKind::Request, DocLimits::default());
    p.feed(br#"{"inputs":[{"name":"A","shape":[2,3],"datatype":"FP32","data":[1.0,"#)
        .unwrap();
    let heads = p.take_heads();
    assert_eq!(
        heads,
        vec![EntryHead {
            index: 0,
            name: "A".to_owned(),
            datatype: DataType::F32,
            shape: Shape::new(vec![2, 3]),
        }]
    );
    assert!(p.take_heads().is_empty());
}

/// `check_heads` visits the heads `take_heads` gives, in order, whether the
/// document was read whole or in pieces, takes them all, and stops at the
/// first error.
#[test]
fn check_heads_visits_the_heads_take_heads_gives() {
    let json = br#"{"inputs":[{"name":"A","shape":[2],"datatype":"INT32","data":[1,2]},{"name":"B","shape":[1,1],"datatype":"FP32","data":[[0.5]]}]}"#;
    let expected = [
        ("A".to_owned(), DataType::I32, Shape::new(vec![2])),
        ("B".to_owned(), DataType::F32, Shape::new(vec![1, 1])),
    ];
    for size in [json.len(), 40, 7] {
        let mut visited = Vec::new();
        let mut taken = Vec::new();
        let mut p = DocParser::new(DocKind::Request, DocLimits::default());
        let mut q = DocParser::new(DocKind::Request, DocLimits::default());
        for chunk in json.chunks(size) {
            p.feed(chunk).unwrap();
            q.feed(chunk).unwrap();
            p.check_heads(|name, datatype, shape| {
                visited.push((name.to_owned(), datatype, shape.clone()));
                Ok::<_, ()>(())
            })
            .unwrap();
            taken.extend(q.take_heads());
        }
        assert_eq!(visited, expected, "chunks of {size}");
        let taken: Vec<_> = taken
            .into_iter()
            .map(|h| (h.name, h.datatype, h.shape))
            .collect();
        assert_eq!(taken, expected, "chunks of {size}");
        assert_eq!(p.check_heads(|_, _, _| Err(())), Ok(()));
    }
    let mut p = DocParser::new(DocKind::Request, DocLimits::default());
    p.feed(json).unwrap();
    let mut seen = 0;
    let first = p.check_heads(|name, _, _| {
        seen += 1;
        Err(name.to_owned())
    });
    assert_eq!((first, seen), (Err("A".to_owned()), 1));
    assert!(p.take_heads().is_empty());
}

#[test]
fn response_documents() {
    let doc = parse_chunked(
        DocKind::Response,
        r#"{"model_name":"simple","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,2],"parameters":{"binary_data_size":8}}]}"#,
    )
    .unwrap();
    assert_eq!(doc.tensors_at, 2);
    assert_eq!(doc.tensors[0].data, EntryData::Binary { size: 8 });
}

#[test]
fn errors_name_the_tensor() {
    let cases: &[(&str, &str)] = &[
        (
            r#"{"inputs":[{"name":"X","shape":[2],"datatype":"UINT8","data":[1,300]}]}"#,
            r#"input "X": element 1: 300 is out of range for UINT8"#,
        ),
        (
            r#"{"inputs":[{"name":"X","shape":[3],"datatype":"INT32","data":[1,2]}]}"#,
            r#"input "X": shape [3] holds 3 elements but "data" has 2"#,
        ),
        (
            r#"{"inputs":[{"name":"X","shape":[1],"datatype":"INT32","data":[1,2]}]}"#,
            r#"input "X": data has more elements than the 1 its shape holds"#,
        ),
        (
            r#"{"inputs":[{"name":"X","shape":[2],"datatype":"FP8","data":[1,2]}]}"#,
            r#"input "X": unknown datatype "FP8""#,
        ),
        (
            r#"{"inputs":[{"shape":[2],"datatype":"INT32","data":[1,2]}]}"#,
            r#"input #0: missing "name""#,
        ),
        (
            r#"{"inputs":[{"name":"X","datatype":"INT32","data":[1,2]}]}"#,
            r#"input "X": missing "shape""#,
        ),
        (
            r#"{"inputs":[{"name":"X","shape":[-1],"datatype":"INT32","data":[1]}]}"#,
            r#"input "X": "shape" must be an array of non-negative integers"#,
        ),
        (
            r#"{"inputs":[{"name":"X","shape":[2],"datatype":"INT32"}]}"#,
            r#"input "X": exactly one of "data", "binary_data_size" and "shared_memory_region" must be given"#,
        ),
        (
            r#"{"inputs":[{"name":"X","shape":[2],"datatype":"INT32","data":[1,2],"parameters":{"binary_data_size":8}}]}"#,
            r#"input "X": exactly one of "data", "binary_data_size" and "shared_memory_region" must be given"#,
        ),
        (
            r#"{"inputs":[{"name":"X","shape":[2],"datatype":"INT32","parameters":{"binary_data_size":7}}]}"#,
            r#"input "X": INT32 data of shape [2] is 8 bytes, but "binary_data_size" is 7"#,
        ),
        (
            r#"{"inputs":[{"name":"X","shape":[2],"datatype":"INT32","parameters":{"binary_data_size":-8}}]}"#,
            r#"input "X": "binary_data_size" must be a non-negative integer"#,
        ),
        (
            r#"{"inputs":[{"name":"X","name":"Y"}]}"#,
            r#"duplicate member "name""#,
        ),
        (
            r#"{"inputs":[],"inputs":[]}"#,
            r#"duplicate member "inputs""#,
        ),
        (
            r#"{"inputs":{}}"#,
            r#""inputs" must be an array of tensor objects"#,
        ),
        (r#"{"outputs":[]}"#, r#"missing "inputs""#),
        (
            r#"{"inputs":[]} x"#,
            "malformed JSON at byte 14: unexpected data after the document",
        ),
        (
            r#"{"inputs":[],}"#,
            "malformed JSON at byte 13: expected a member name",
        ),
        (
            r#"{"inputs":[]"#,
            "malformed JSON at byte 12: unexpected end of input",
        ),
        (
            r#"[]"#,
            "malformed JSON at byte 0: expected '{' at the start of the document",
        ),
        (
            r#"{"id":{"a":}, "inputs":[]}"#,
            "malformed JSON at byte 6: expected value at line 1 column 6",
        ),
        (
            r#"{"inputs":[{"name":"X","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"datatype":"INT32","data":[1]}]}"#,
            r#"input "X": shape [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1] has 33 dimensions, over the limit of 32"#,
        ),
        (
            r#"{"inputs":[{"name":"X","shape":[4294967296,4294967296],"datatype":"INT32","data":[1]}]}"#,
            r#"input "X": shape [4294967296,4294967296] has more than 2^64 elements, over the limit of 268435456"#,
        ),
    ];
    for (json, message) in cases {
        let err = parse_chunked(DocKind::Request, json).unwrap_err();
        assert_eq!(err.to_string(), *message, "{json}");
    }
}

#[test]
fn depth_over_100_is_refused() {
    let deep = format!(
        r#"{{"id":{}1{},"inputs":[]}}"#,
        "[".repeat(101),
        "]".repeat(101)
    );
    let err = parse(DocKind::Request, &deep).unwrap_err();
    assert!(err.to_string().contains("nests too deep"), "{err}");
    let deep_data = format!(
        r#"{{"inputs":[{{"name":"X","shape":[1],"datatype":"INT32","data":{}1{}}}]}}"#,
        "[".repeat(101),
        "]".repeat(101)
    );
    let err = parse(DocKind::Request, &deep_data).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"input "X": data nests deeper than 100 levels"#
    );
}

#[test]
fn writes_back_with_binary_and_json_forms() {
    let doc = parse(DocKind::Request, SIMPLE).unwrap();
    let mut out = Vec::new();
    write_document(
        &doc,
        |i, _| {
            if i == 0 {
                TensorForm::Json
            } else {
                TensorForm::Binary(8)
            }
        },
        |_, e| inline_data(e),
        &mut out,
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        concat!(
            r#"{"id":"42","inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,3],"data":[1,2,3]},"#,
            r#"{"name":"INPUT1","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8}},"#,
            r#"{"name":"S","datatype":"BYTES","shape":[1],"extra":{"k":1},"parameters":{"binary_data_size":8}}],"#,
            r#""outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}],"parameters":{"binary_data_output":false}}"#
        )
    );
}

/// A request with one `datatype` input of `shape` whose data is `data`.
fn request_with(datatype: &str, shape: &str, data: &str) -> String {
    format!(
        r#"{{"inputs":[{{"name":"X","datatype":"{datatype}","shape":{shape},"data":{data}}}],"id":"after"}}"#
    )
}

/// Feeds `json` in `size`-byte chunks, each cut in two where it can be;
/// returns the result and how many chunks were cut.
fn parse_cut(json: &str, size: usize) -> (Result<Document, DocError>, usize) {
    let mut p = DocParser::new(DocKind::Request, DocLimits::default());
    let mut cuts = 0;
    for chunk in json.as_bytes().chunks(size) {
        cuts += usize::from(p.split(chunk).is_some());
        if feed(&mut p, chunk, true).is_err() {
            break;
        }
    }
    (p.finish(), cuts)
}

#[test]
fn cut_chunks_convert_large_data_as_whole_ones_do() {
    let values: Vec<String> = (0..3000).map(|i| format!("{}", i * 7 - 5000)).collect();
    let flat = format!("[{}]", values.join(", "));
    let rows: Vec<String> = values
        .chunks(100)
        .map(|r| format!("[{}]", r.join(",")))
        .collect();
    let nested = format!("[{}]", rows.join(",\n "));
    for (shape, data) in [("[3000]", &flat), ("[30,100]", &nested)] {
        for dtype in ["INT64", "FP32", "FP64", "INT32"] {
            let json = request_with(dtype, shape, data);
            let whole = parse(DocKind::Request, &json).unwrap();
            for size in [37, 256, 1000, 4096] {
                let (doc, cuts) = parse_cut(&json, size);
                assert_eq!(doc.unwrap(), whole, "{dtype} {shape} in {size}-byte chunks");
                assert!(cuts >= json.len() / size / 2, "{cuts} cuts at {size}");
            }
        }
    }
    let whole = parse(DocKind::Request, &request_with("INT64", "[3000]", &flat)).unwrap();
    let EntryData::Inline { data, elements } = &whole.tensors[0].data else {
        panic!("inline data expected");
    };
    assert_eq!(*elements, 3000);
    assert_eq!(&data[8 * 2999..], &(2999i64 * 7 - 5000).to_le_bytes());
}

#[test]
fn errors_after_a_cut_are_the_errors_of_whole_feeding() {
    let values: Vec<String> = (0..2000).map(|i| i.to_string()).collect();
    let mut bad = values.clone();
    bad[1500] = "\"x\"".to_owned();
    let mut float = values.clone();
    float[1200] = "1.5".to_owned();
    let mut small: Vec<String> = (0..2000).map(|i| (i % 100).to_string()).collect();
    small[1900] = "300".to_owned();
    let mut syntax = values.clone();
    syntax[1700] = "1 2".to_owned();
    let cases = [
        ("INT32", "[2000]", bad.join(",")),
        ("INT32", "[2000]", float.join(",")),
        ("INT8", "[2000]", small.join(",")),
        ("INT32", "[1000]", values.join(",")),
        ("FP32", "[2000]", syntax.join(",")),
    ];
    for (dtype, shape, data) in cases {
        let json = request_with(dtype, shape, &format!("[{data}]"));
        let whole = parse(DocKind::Request, &json).unwrap_err();
        for size in [300, 1000, 3000] {
            let (result, cuts) = parse_cut(&json, size);
            assert!(cuts > 0, "{dtype} {shape}: no cut at {size}");
            assert_eq!(result.unwrap_err(), whole, "{dtype} {shape} at {size}");
        }
    }
    // The element indices are counted from the start of the data.
    let json = request_with("INT32", "[2000]", &format!("[{}]", bad.join(",")));
    let message = parse(DocKind::Request, &json).unwrap_err().to_string();
    assert!(message.contains("element 1500"), "{message}");
}

#[test]
fn a_cut_past_the_end_of_the_data_falls_back_to_whole_feeding() {
    // The comma past the middle is the document's, after the data: the
    // tail's guess is wrong and its work is dropped.
    let json = r#"{"inputs":[{"name":"X","datatype":"INT32","shape":[4],"data":[1,2,3,4]}],"parameters":{"a":1,"b":2}}"#;
    let at = json.find("[1,").unwrap() + 1;
    let mut p = DocParser::new(DocKind::Request, DocLimits::default());
    p.feed(&json.as_bytes()[..at]).unwrap();
    let rest = &json.as_bytes()[at..];
    let (cut, _) = p.split(rest).expect("inside data");
    assert!(cut > rest.iter().position(|&c| c == b']').unwrap());
    p.feed_cut(rest).unwrap();
    assert_eq!(p.finish().unwrap(), parse(DocKind::Request, json).unwrap());
}

#[test]
fn a_cut_in_the_next_tensors_data_is_not_taken_for_this_ones() {
    // Found by the property test: the part before the cut ends A's data
    // and begins B's, and stands after a comma at the depth the tail was
    // made for. The tail was made for A (INT8, 4 elements) and must be
    // dropped, not joined to B.
    let b: Vec<String> = (0..40).map(|i| format!("{}.5", i * 100)).collect();
    let json = format!(
        r#"{{"inputs":[{{"name":"A","datatype":"INT8","shape":[4],"data":[1,2,3,4]}},{{"name":"B","datatype":"FP32","shape":[40],"data":[{}]}}]}}"#,
        b.join(",")
    );
    let at = json.find("[1,").unwrap() + 3;
    let mut p = DocParser::new(DocKind::Request, DocLimits::default());
    p.feed(&json.as_bytes()[..at]).unwrap();
    let rest = &json.as_bytes()[at..];
    let (cut, _) = p.split(rest).expect("inside A's data");
    let b_data = json[at..].find("\"data\":[0.5").unwrap();
    assert!(cut > b_data, "the cut falls in B's data");
    p.feed_cut(rest).unwrap();
    assert_eq!(p.finish().unwrap(), parse(DocKind::Request, &json).unwrap());
}

/// Inside a tensor's data the provisional document is the finished one
/// with that data as `binary_data_size`, when nothing but the data follows;
/// members after it make the two differ. `converted` gives the data so far.
#[test]
fn the_provisional_document_is_the_finished_one_when_only_data_follows() {
    let json = r#"{"id":"a","inputs":[{"name":"B","datatype":"INT8","shape":[1],"data":[5]},{"name":"A","datatype":"FP32","shape":[3],"data":[1.5, 2, -3]}]}"#;
    let inside = json.find("2, -3").unwrap();
    let mut p = DocParser::new(DocKind::Request, DocLimits::default());
    assert!(p.provisional().is_none());
    p.feed(&json.as_bytes()[..inside]).unwrap();
    let provisional = p.provisional().unwrap();
    let (index, converted) = p.converted().unwrap();
    assert_eq!(index, 1);
    assert_eq!(converted, 1.5f32.to_le_bytes());
    p.feed(&json.as_bytes()[inside..]).unwrap();
    assert!(p.provisional().is_none(), "past the data");
    let mut finished = p.finish().unwrap();
    let EntryData::Inline { data, .. } = &finished.tensors[1].data else {
        panic!("{:?}", finished.tensors[1].data);
    };
    assert_eq!(data.len(), 12);
    finished.tensors[1].data = EntryData::Binary { size: 12 };
    assert_eq!(provisional, finished);

    for after in [
        r#"]}],"outputs":[{"name":"Y"}]}"#,
        r#"],"parameters":{"p":1}}]}"#,
        r#"]},{"name":"C","datatype":"INT8","shape":[1],"data":[1]}]}"#,
    ] {
        let json = format!(
            r#"{{"inputs":[{{"name":"A","datatype":"FP32","shape":[2],"data":[1, 2{after}"#
        );
        let mut p = DocParser::new(DocKind::Request, DocLimits::default());
        let inside = json.find(", 2").unwrap();
        p.feed(&json.as_bytes()[..inside]).unwrap();
        let provisional = p.provisional().unwrap();
        p.feed(&json.as_bytes()[inside..]).unwrap();
        let mut finished = p.finish().unwrap();
        finished.tensors[0].data = EntryData::Binary { size: 8 };
        assert_ne!(provisional, finished, "{json}");
    }

    // No guess for data whose size is not known from its head.
    for json in [
        r#"{"inputs":[{"name":"A","datatype":"BYTES","shape":[2],"data":["a", "b"]}]}"#,
        r#"{"inputs":[{"name":"A","datatype":"FP32","parameters":{"binary_data_size":8},"shape":[2],"data":[1, 2]}]}"#,
    ] {
        let mut p = DocParser::new(DocKind::Request, DocLimits::default());
        p.feed(&json.as_bytes()[..json.find(", ").unwrap()])
            .unwrap();
        assert!(p.converted().is_some(), "{json}");
        assert!(p.provisional().is_none(), "{json}");
    }
}
