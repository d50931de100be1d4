//! Golden vectors from the official Decthings clients: every `.bin` decodes
//! to its `.json` description and re-encodes byte-identically, in both
//! layouts, and the `Model.evaluate` framing vectors split and re-frame
//! exactly.
//!
//! The vectors are vendored under `tests/vectors/decthings` (a copy of the
//! team's shared set; `vendored_copy_matches_shared_set` catches drift when
//! the shared set is present beside the checkout).

use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use serde_json::Value;
use tensorgate::codec::decthings::{self, DecodeLimits, Layout, rpc};
use tensorgate::codec::describe::{describe, parse_description};

fn vectors_dir() -> PathBuf {
    std::env::var_os("TENSORGATE_VECTORS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/decthings"))
}

fn cases(folder: &str) -> Vec<(String, Value, Bytes)> {
    let dir = vectors_dir().join(folder);
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let desc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            let bin = std::fs::read(path.with_extension("bin")).unwrap();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            out.push((name, desc, Bytes::from(bin)));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The parts of a description that define the tensor.
fn essence(v: &Value) -> Value {
    serde_json::json!({"type": v["type"], "shape": v["shape"], "values": v["values"]})
}

fn check_tensor_folder(folder: &str, layout: Layout) -> usize {
    let cases = cases(folder);
    assert!(
        cases.len() > 50,
        "{folder}: only {} vectors found",
        cases.len()
    );
    for (name, desc, bin) in &cases {
        let tensors = decthings::decode_all(bin, layout, &DecodeLimits::default())
            .unwrap_or_else(|e| panic!("{folder}/{name}: {e}"));
        assert_eq!(tensors.len(), 1, "{folder}/{name}");
        let t = &tensors[0];
        // Decodes to its description, value for value.
        let ours: Value = serde_json::from_str(&describe(t)).unwrap();
        assert_eq!(ours, essence(desc), "{folder}/{name}: decoded description");
        // Re-encodes byte-identically.
        let mut out = BytesMut::new();
        decthings::encode(t, layout, &mut out).unwrap();
        assert_eq!(&out[..], &bin[..], "{folder}/{name}: re-encoded bytes");
        // And encoding from the description alone gives the same bytes.
        let from_desc = parse_description(desc).unwrap_or_else(|e| panic!("{folder}/{name}: {e}"));
        let mut out = BytesMut::new();
        decthings::encode(&from_desc, layout, &mut out).unwrap();
        assert_eq!(
            &out[..],
            &bin[..],
            "{folder}/{name}: encoded from description"
        );
    }
    cases.len()
}

#[test]
fn current_layout_vectors() {
    let n = check_tensor_folder("current", Layout::Current);
    assert_eq!(n, 83);
}

#[test]
fn legacy_layout_vectors() {
    let n = check_tensor_folder("legacy", Layout::Legacy);
    assert_eq!(n, 88);
}

/// Serializes JSON the way Python's `json.dumps` does by default (the RPC
/// vectors were produced by the Python client): `", "` and `": "`
/// separators, non-ASCII escaped as `\uXXXX`.
fn python_dumps(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_str(k, out);
                out.push_str(": ");
                python_dumps(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_dumps(v, out);
            }
            out.push(']');
        }
        Value::String(s) => python_str(s, out),
        other => out.push_str(&other.to_string()),
    }
}

fn python_str(s: &str, out: &mut String) {
    let escaped = serde_json::to_string(s).unwrap();
    for c in escaped.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut buf = [0u16; 2];
            for unit in c.encode_utf16(&mut buf) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
}

/// The blobs the description implies: one per parameter without inline
/// `data`, each the parameter's tensors back to back.
fn blobs_from_description(desc: &Value) -> Vec<Bytes> {
    let mut blobs = Vec::new();
    for param in desc["params_json_sent"]["params"].as_array().unwrap() {
        if param.get("data").is_some() {
            continue;
        }
        let name = param["name"].as_str().unwrap();
        let mut blob = BytesMut::new();
        for t in desc["tensors"][name].as_array().unwrap() {
            let tensor = parse_description(t).unwrap();
            decthings::encode(&tensor, Layout::Legacy, &mut blob).unwrap();
        }
        blobs.push(blob.freeze());
    }
    blobs
}

fn check_blob_tensors(blob: &Bytes, expected: &Value) {
    let tensors = decthings::decode_all(blob, Layout::Legacy, &DecodeLimits::default()).unwrap();
    let described: Vec<Value> = tensors
        .iter()
        .map(|t| serde_json::from_str(&describe(t)).unwrap())
        .collect();
    let expected: Vec<Value> = expected.as_array().unwrap().iter().map(essence).collect();
    assert_eq!(described, expected);
}

#[test]
fn rpc_http_body() {
    let dir = vectors_dir().join("rpc");
    let desc: Value =
        serde_json::from_slice(&std::fs::read(dir.join("evaluate_http_body.json")).unwrap())
            .unwrap();
    let bin = Bytes::from(std::fs::read(dir.join("evaluate_http_body.bin")).unwrap());

    let frame = rpc::decode_request(&bin).unwrap();
    let json: Value = serde_json::from_slice(&frame.json).unwrap();
    assert_eq!(json, desc["params_json_sent"]);
    assert_eq!(frame.blobs.len(), 2);
    check_blob_tensors(&frame.blobs[0], &desc["tensors"]["input"]);
    check_blob_tensors(&frame.blobs[1], &desc["tensors"]["flag"]);

    // Re-framing what was split gives the same bytes ...
    assert_eq!(rpc::encode_request(&frame.json, &frame.blobs).unwrap(), bin);
    // ... and so does building it from the description alone.
    let mut text = String::new();
    python_dumps(&desc["params_json_sent"], &mut text);
    let built = rpc::encode_request(text.as_bytes(), &blobs_from_description(&desc)).unwrap();
    assert_eq!(built, bin);
}

#[test]
fn rpc_param_blobs() {
    let dir = vectors_dir().join("rpc");
    for (file, param) in [
        ("evaluate_param_blob_input", "input"),
        ("evaluate_param_blob_flag", "flag"),
    ] {
        let desc: Value =
            serde_json::from_slice(&std::fs::read(dir.join(format!("{file}.json"))).unwrap())
                .unwrap();
        let bin = Bytes::from(std::fs::read(dir.join(format!("{file}.bin"))).unwrap());
        check_blob_tensors(&bin, &desc["tensors"][param]);
        let mut out = BytesMut::new();
        for t in decthings::decode_all(&bin, Layout::Legacy, &DecodeLimits::default()).unwrap() {
            decthings::encode(&t, Layout::Legacy, &mut out).unwrap();
        }
        assert_eq!(&out[..], &bin[..], "{file}");
    }
}

#[test]
fn rpc_websocket_frame() {
    let dir = vectors_dir().join("rpc");
    let desc: Value =
        serde_json::from_slice(&std::fs::read(dir.join("evaluate_ws_frame.json")).unwrap())
            .unwrap();
    let bin = Bytes::from(std::fs::read(dir.join("evaluate_ws_frame.bin")).unwrap());
    let ws = rpc::decode_ws_request(&bin).unwrap();
    assert_eq!(ws.id, 5);
    let json: Value = serde_json::from_slice(&ws.frame.json).unwrap();
    assert_eq!(json["api"], "Model");
    assert_eq!(json["method"], "evaluate");
    assert_eq!(json["apiKey"], Value::Null);
    assert_eq!(json["params"], desc["params_json_sent"]);
    check_blob_tensors(&ws.frame.blobs[0], &desc["tensors"]["input"]);
    check_blob_tensors(&ws.frame.blobs[1], &desc["tensors"]["flag"]);
    assert_eq!(
        rpc::encode_ws_request(ws.id, &ws.frame.json, &ws.frame.blobs).unwrap(),
        bin
    );
    let mut text = String::new();
    python_dumps(&json, &mut text);
    assert_eq!(
        rpc::encode_ws_request(5, text.as_bytes(), &blobs_from_description(&desc)).unwrap(),
        bin
    );
}

#[test]
fn vendored_copy_matches_shared_set() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/vectors/decthings");
    if !shared.is_dir() {
        eprintln!("shared vector set not beside this checkout; vendored copy used as is");
        return;
    }
    for folder in ["current", "legacy", "rpc"] {
        for entry in std::fs::read_dir(shared.join(folder)).unwrap() {
            let path = entry.unwrap().path();
            let ours = vectors_dir().join(folder).join(path.file_name().unwrap());
            assert_eq!(
                std::fs::read(&path).unwrap(),
                std::fs::read(&ours).unwrap_or_default(),
                "{} differs from the shared set",
                ours.display()
            );
        }
    }
}
