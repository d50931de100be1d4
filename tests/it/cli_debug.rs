//! The debugging commands `tensorgate tensor decode|encode` and
//! `tensorgate request to-binary|to-json`: every Decthings golden vector
//! round-trips through them, and V2 documents survive JSON -> binary -> JSON.
//!
//! Most tests call `run_tensor` / `run_request` on temporary files. The
//! `binary_*` tests run the real executable; they skip (saying so on stderr)
//! while `main.rs` does not yet route the `tensor` / `request` subcommands.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use tensorgate::cli::debug::{
    CliError, RequestCommand, TensorCommand, TensorFormat, run_request, run_tensor,
};
use tensorgate::codec::v2::{DocKind, DocLimits, DocParser, Document};

use crate::common;

/// `common::TempDir` with `write` taking bytes as the tests here give
/// them (with its generic `write`, clippy asks `&[5, 1, 3]` to lose its
/// borrow).
struct TempDir(common::TempDir);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        TempDir(common::TempDir::new(&format!("cli-{tag}")))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path(name)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        self.0.write(name, bytes)
    }
}

fn vectors(folder: &str) -> Vec<(String, PathBuf, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors/decthings")
        .join(folder);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, p.with_extension("bin"), p)
        })
        .collect();
    out.sort();
    out
}

/// The parts of a description that define the tensor.
fn essence(v: &Value) -> Value {
    json!({"type": v["type"], "shape": v["shape"], "values": v["values"]})
}

fn decode(format: TensorFormat, file: &Path, output: &Path) -> Result<Vec<Value>, CliError> {
    run_tensor(TensorCommand::Decode {
        format,
        file: file.to_owned(),
        output: Some(output.to_owned()),
    })?;
    let text = std::fs::read_to_string(output).unwrap();
    Ok(text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect())
}

fn encode(format: TensorFormat, file: &Path, output: &Path) -> Result<Vec<u8>, CliError> {
    run_tensor(TensorCommand::Encode {
        format,
        file: file.to_owned(),
        output: Some(output.to_owned()),
    })?;
    Ok(std::fs::read(output).unwrap())
}

fn check_folder(folder: &str, format: TensorFormat) {
    let tmp = TempDir::new(folder);
    let cases = vectors(folder);
    assert!(cases.len() > 50, "{folder}: {} vectors", cases.len());
    let (mut all_bin, mut all_lines) = (Vec::new(), Vec::new());
    for (name, bin, json) in &cases {
        let desc: Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
        let lines =
            decode(format, bin, &tmp.path("out.jsonl")).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(lines, [essence(&desc)], "{folder}/{name}: decode");
        let bytes =
            encode(format, json, &tmp.path("out.bin")).unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected = std::fs::read(bin).unwrap();
        assert_eq!(bytes, expected, "{folder}/{name}: encode");
        all_bin.extend_from_slice(&expected);
        all_lines.push(serde_json::to_string(&essence(&desc)).unwrap());
    }
    // All of them back to back: decode gives one line each, in order, and
    // those JSON lines encode back to the same bytes.
    let concatenated = tmp.write("all.bin", &all_bin);
    let lines = decode(format, &concatenated, &tmp.path("all.jsonl")).unwrap();
    assert_eq!(lines.len(), cases.len());
    let jsonl = tmp.write("in.jsonl", all_lines.join("\n").as_bytes());
    assert_eq!(
        encode(format, &jsonl, &tmp.path("again.bin")).unwrap(),
        all_bin
    );
}

#[test]
fn current_vectors_round_trip() {
    check_folder("current", TensorFormat::Decthings);
}

#[test]
fn legacy_vectors_round_trip() {
    check_folder("legacy", TensorFormat::DecthingsLegacy);
}

#[test]
fn tensor_errors_name_the_tensor() {
    let tmp = TempDir::new("tensor-errors");
    let json = tmp.write(
        "bad.jsonl",
        br#"{"type":"u8","shape":[1],"values":[1]}
{"type":"u8","shape":[1],"values":[300]}"#,
    );
    let err = encode(TensorFormat::Decthings, &json, &tmp.path("o")).unwrap_err();
    assert_eq!(err.to_string(), "tensor 1: value 0 (300) is not a valid u8");
    let truncated = tmp.write("t.bin", &[5, 1, 3, 0, 0]);
    let err = decode(TensorFormat::Decthings, &truncated, &tmp.path("o")).unwrap_err();
    assert!(
        err.to_string().starts_with("truncated Decthings tensor"),
        "{err}"
    );
    let missing = tmp.path("missing.bin");
    let err = decode(TensorFormat::Decthings, &missing, &tmp.path("o")).unwrap_err();
    assert!(
        err.to_string().starts_with(&missing.display().to_string()),
        "{err}"
    );
}

#[test]
fn unknown_type_names_list_the_valid_ones() {
    let tmp = TempDir::new("type-names");
    let all = "the Decthings types are f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, \
               string, binary, boolean, image, audio, video";
    for (given, why) in [
        ("float32", " (did you mean \"f32\"?)"),
        ("FP64", " (did you mean \"f64\"?)"),
        ("INT8", " (did you mean \"i8\"?)"),
        ("uint16", " (did you mean \"u16\"?)"),
        ("BOOL", " (did you mean \"boolean\"?)"),
        ("f16", " (Decthings has no 16-bit float type)"),
        ("FP16", " (Decthings has no 16-bit float type)"),
        ("tensor", ""),
    ] {
        let json = tmp.write(
            "t.json",
            format!(r#"{{"type":"{given}","shape":[1],"values":[1]}}"#).as_bytes(),
        );
        let err = encode(TensorFormat::Decthings, &json, &tmp.path("o")).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("tensor 0: unknown tensor type {given:?}{why}; {all}")
        );
    }
}

const REQUEST: &str = r#"{"id":"r1","inputs":[
  {"name":"INPUT0","datatype":"INT32","shape":[2,2],"data":[[1,2],[3,-4]]},
  {"name":"T","datatype":"BYTES","shape":[2],"data":["a","snow \u2603 \"q\""],"parameters":{"foo":"bar"}},
  {"name":"H","datatype":"FP16","shape":[3],"data":[1.5,"NaN",-0.0]},
  {"name":"B","datatype":"BOOL","shape":[1],"data":[true]},
  {"name":"E","datatype":"FP64","shape":[0],"data":[]}
 ],
 "outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}],
 "parameters":{"binary_data_output":true}}"#;

const RESPONSE: &str = r#"{"model_name":"m","model_version":"1","outputs":[
  {"name":"OUTPUT0","datatype":"UINT64","shape":[2],"data":[18446744073709551615,0]},
  {"name":"OUTPUT1","datatype":"FP32","shape":[2],"data":[0.1,"-Infinity"]}]}"#;

fn parse(kind: DocKind, bytes: &[u8]) -> Document {
    DocParser::parse(kind, DocLimits::default(), bytes).unwrap()
}

/// to-binary then to-json; returns (binary body, header length, JSON).
fn round_trip(tmp: &TempDir, json: &str, response: bool) -> (Vec<u8>, usize, Vec<u8>) {
    let input = tmp.write("doc.json", json.as_bytes());
    run_request(RequestCommand::ToBinary {
        response,
        file: input,
        output: Some(tmp.path("body.bin")),
        header_length_to: tmp.path("ihcl.txt"),
    })
    .unwrap();
    let ihcl = std::fs::read_to_string(tmp.path("ihcl.txt")).unwrap();
    let header_len: usize = ihcl.trim().parse().unwrap();
    run_request(RequestCommand::ToJson {
        response,
        file: tmp.path("body.bin"),
        header_length: None,
        header_length_from: Some(tmp.path("ihcl.txt")),
        output: Some(tmp.path("back.json")),
    })
    .unwrap();
    let body = std::fs::read(tmp.path("body.bin")).unwrap();
    (
        body,
        header_len,
        std::fs::read(tmp.path("back.json")).unwrap(),
    )
}

#[test]
fn request_round_trips_through_binary() {
    let tmp = TempDir::new("request");
    let (body, header_len, back) = round_trip(&tmp, REQUEST, false);
    let header: Value = serde_json::from_slice(&body[..header_len]).unwrap();
    assert_eq!(header["id"], "r1");
    assert_eq!(
        header["inputs"][1],
        json!({"name":"T","datatype":"BYTES","shape":[2],"parameters":{"foo":"bar","binary_data_size":21}})
    );
    assert!(
        header["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("data").is_none())
    );
    assert_eq!(
        header["outputs"],
        json!([{"name":"OUTPUT0","parameters":{"binary_data":true}}])
    );
    let mut tail = Vec::new();
    for v in [1i32, 2, 3, -4] {
        tail.extend_from_slice(&v.to_le_bytes());
    }
    tail.extend_from_slice(&[1, 0, 0, 0, b'a', 12, 0, 0, 0]);
    tail.extend_from_slice("snow \u{2603} \"q\"".as_bytes());
    for h in [1.5f32, f32::NAN, -0.0] {
        tail.extend_from_slice(&half::f16::from_f32(h).to_le_bytes());
    }
    tail.push(1);
    assert_eq!(&body[header_len..], &tail[..]);
    // Back to JSON: the same document, with the data flattened.
    assert_eq!(
        parse(DocKind::Request, &back),
        parse(DocKind::Request, REQUEST.as_bytes())
    );
    let back: Value = serde_json::from_slice(&back).unwrap();
    assert_eq!(back["inputs"][0]["data"], json!([1, 2, 3, -4]));
    assert_eq!(back["inputs"][1]["parameters"], json!({"foo": "bar"}));
}

#[test]
fn response_round_trips_through_binary() {
    let tmp = TempDir::new("response");
    let (body, header_len, back) = round_trip(&tmp, RESPONSE, true);
    assert_eq!(body.len(), header_len + 16 + 8);
    assert_eq!(
        parse(DocKind::Response, &back),
        parse(DocKind::Response, RESPONSE.as_bytes())
    );
}

fn to_json(tmp: &TempDir, body: &[u8], header_len: u64, response: bool) -> Result<Value, CliError> {
    run_request(RequestCommand::ToJson {
        response,
        file: tmp.write("in.bin", body),
        header_length: Some(header_len),
        header_length_from: None,
        output: Some(tmp.path("out.json")),
    })?;
    Ok(serde_json::from_slice(&std::fs::read(tmp.path("out.json")).unwrap()).unwrap())
}

#[test]
fn request_errors_name_the_tensor() {
    let tmp = TempDir::new("request-errors");
    let header = br#"{"outputs":[{"name":"OUTPUT0","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":6}}]}"#;
    let mut body = header.to_vec();
    body.extend_from_slice(&[2, 0, 0, 0, 0xff, 0xfe]);
    let n = header.len() as u64;
    let err = to_json(&tmp, &body, n, true).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("output \"OUTPUT0\": BYTES element 0 is not valid UTF-8"),
        "{err}"
    );
    let err = to_json(&tmp, &body[..body.len() - 2], n, true).unwrap_err();
    assert_eq!(
        err.to_string(),
        "output \"OUTPUT0\": binary data ends early: 2 more bytes were expected"
    );
    let mut long = body.clone();
    long.push(0);
    let err = to_json(&tmp, &long, n, true).unwrap_err();
    assert!(
        err.to_string()
            .contains("1 bytes after the last binary tensor"),
        "{err}"
    );
    let err = to_json(&tmp, &body, 999, true).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "inference header size should be in range (0, {}), got: 999",
            body.len()
        )
    );
    // The element count is checked against the shape.
    let header = br#"{"inputs":[{"name":"S","datatype":"BYTES","shape":[2],"parameters":{"binary_data_size":5}}]}"#;
    let mut body = header.to_vec();
    body.extend_from_slice(&[1, 0, 0, 0, b'x']);
    let err = to_json(&tmp, &body, header.len() as u64, false).unwrap_err();
    assert!(err.to_string().starts_with("input \"S\": "), "{err}");
    // A JSON file with binary_data_size has no data to convert.
    let file = tmp.write("h.json", header);
    let err = run_request(RequestCommand::ToBinary {
        response: false,
        file,
        output: Some(tmp.path("x")),
        header_length_to: tmp.path("y"),
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("input \"S\": has \"binary_data_size\""),
        "{err}"
    );
    // Wrong kind: a request read as a response (its "outputs" are requests).
    let file = tmp.write("r.json", REQUEST.as_bytes());
    let err = run_request(RequestCommand::ToBinary {
        response: true,
        file,
        output: Some(tmp.path("x")),
        header_length_to: tmp.path("y"),
    })
    .unwrap_err();
    assert_eq!(err.to_string(), "output \"OUTPUT0\": missing \"datatype\"");
    // JSON only (header length = body length) is fine.
    let v = to_json(&tmp, REQUEST.as_bytes(), REQUEST.len() as u64, false).unwrap();
    assert_eq!(v["inputs"][3]["data"], json!([true]));
}

// ---- The real executable (needs main.rs to route the subcommands). ----

fn exe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tensorgate"))
}

/// Whether `main.rs` routes `tensor` and `request`; says so when not.
fn cli_wired() -> bool {
    let wired = ["tensor", "request"].iter().all(|sub| {
        exe()
            .args([sub, "--help"])
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
    });
    if !wired {
        eprintln!("SKIPPED: the tensorgate binary does not route `tensor` / `request` yet");
    }
    wired
}

fn run(cmd: &mut Command, stdin: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn binary_tensor_decode_and_encode() {
    if !cli_wired() {
        return;
    }
    let tmp = TempDir::new("bin-tensor");
    for (folder, format) in [("current", "decthings"), ("legacy", "decthings-legacy")] {
        for (name, bin, json) in vectors(folder).into_iter().take(12) {
            let bytes = std::fs::read(&bin).unwrap();
            let out = run(
                exe().args(["tensor", "decode", "--format", format, "-"]),
                &bytes,
            );
            assert!(
                out.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let line: Value = serde_json::from_slice(&out.stdout).unwrap();
            let desc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
            assert_eq!(line, essence(&desc), "{folder}/{name}");
            let o = tmp.path("o.bin");
            let out = run(
                exe()
                    .args(["tensor", "encode", "--format", format])
                    .arg(&json)
                    .arg("-o")
                    .arg(&o),
                b"",
            );
            assert!(
                out.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(std::fs::read(&o).unwrap(), bytes, "{folder}/{name}");
        }
    }
}

#[test]
fn binary_request_round_trip() {
    if !cli_wired() {
        return;
    }
    let tmp = TempDir::new("bin-request");
    let input = tmp.write("doc.json", REQUEST.as_bytes());
    let out = run(exe().args(["request", "to-binary"]).arg(&input), b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header_len = String::from_utf8(out.stderr).unwrap();
    let header_len = header_len.trim();
    let body = tmp.write("body.bin", &out.stdout);
    let out = run(
        exe()
            .args(["request", "to-json", "--header-length", header_len])
            .arg(&body),
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        parse(DocKind::Request, &out.stdout),
        parse(DocKind::Request, REQUEST.as_bytes())
    );
    let help = exe()
        .args(["request", "to-binary", "--help"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("--header-length-to"));
}

#[test]
fn binary_errors_exit_1() {
    if !cli_wired() {
        return;
    }
    let tmp = TempDir::new("bin-errors");
    let header = br#"{"outputs":[{"name":"OUT","datatype":"INT32","shape":[2],"parameters":{"binary_data_size":8}}]}"#;
    let mut body = header.to_vec();
    body.extend_from_slice(&[0; 4]);
    let file = tmp.write("short.bin", &body);
    let out = run(
        exe()
            .args(["request", "to-json", "--response", "--header-length"])
            .arg(header.len().to_string())
            .arg(&file),
        b"",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("output \"OUT\""));
}
