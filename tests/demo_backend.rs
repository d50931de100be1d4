//! The embedded demo V2 server, end to end over real sockets: exact status
//! lines, headers (and their order) and body bytes, compared with the
//! Triton 2.51 behaviour recorded in docs/TRITON-FACTS.md.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{Value, json};
use tensorgate_demo as demo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response as read off the wire.
#[derive(Debug)]
struct Resp {
    status: u16,
    reason: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn header_names(&self) -> Vec<String> {
        self.headers
            .iter()
            .map(|(k, _)| k.to_ascii_lowercase())
            .collect()
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.text()))
    }

    fn error(&self) -> String {
        self.json()["error"].as_str().unwrap().to_owned()
    }
}

fn build_request(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: demo\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if method != "GET" {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    let mut out = req.into_bytes();
    out.extend_from_slice(body);
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Sends one HTTP/1.1 request and reads exactly one response (by
/// Content-Length, or chunked to the last chunk).
async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Resp {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&build_request(method, path, headers, body))
        .await
        .unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if let Some(resp) = parse_complete(&raw) {
            return resp;
        }
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "connection closed mid-response: {raw:?}");
        raw.extend_from_slice(&buf[..n]);
    }
}

/// Parses `raw` if it holds a whole response.
fn parse_complete(raw: &[u8]) -> Option<Resp> {
    let end = find(raw, b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).unwrap();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let mut parts = status_line.splitn(3, ' ');
    assert_eq!(parts.next(), Some("HTTP/1.1"));
    let status = parts.next().unwrap().parse().unwrap();
    let reason = parts.next().unwrap_or("").to_owned();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.to_owned(), v.trim().to_owned())
        })
        .collect();
    let rest = &raw[end + 4..];
    let mut resp = Resp {
        status,
        reason,
        headers,
        body: Vec::new(),
    };
    if let Some(len) = resp.header("content-length") {
        let len: usize = len.parse().unwrap();
        if rest.len() < len {
            return None;
        }
        resp.body = rest[..len].to_vec();
        return Some(resp);
    }
    assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
    resp.body = dechunk(rest)?;
    Some(resp)
}

/// The data of a complete chunked body, or `None` if it is not complete.
fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = find(rest, b"\r\n")?;
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line]).unwrap(), 16).unwrap();
        rest = &rest[line + 2..];
        if size == 0 {
            return rest.starts_with(b"\r\n").then_some(body);
        }
        if rest.len() < size + 2 {
            return None;
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

async fn post_json(addr: SocketAddr, path: &str, body: &Value) -> Resp {
    send(addr, "POST", path, &[], &serde_json::to_vec(body).unwrap()).await
}

/// A binary-extension body: the JSON header, then the chunks.
fn binary_body(header: &Value, chunks: &[&[u8]]) -> (Vec<u8>, String) {
    let mut body = serde_json::to_vec(header).unwrap();
    let header_len = body.len().to_string();
    for c in chunks {
        body.extend_from_slice(c);
    }
    (body, header_len)
}

/// POSTs a binary-extension body (JSON header + chunks) with its IHCL.
async fn post_binary(addr: SocketAddr, path: &str, header: &Value, chunks: &[&[u8]]) -> Resp {
    let (body, ihcl) = binary_body(header, chunks);
    let ihcl = [("Inference-Header-Content-Length", ihcl.as_str())];
    send(addr, "POST", path, &ihcl, &body).await
}

fn i32_bytes(values: impl IntoIterator<Item = i32>) -> Vec<u8> {
    values.into_iter().flat_map(i32::to_le_bytes).collect()
}

fn simple_inputs() -> Value {
    json!([
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": (0..16).collect::<Vec<i32>>()},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": vec![1; 16]},
    ])
}

fn list(values: impl IntoIterator<Item = i32>) -> String {
    values
        .into_iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

#[tokio::test]
async fn server_health_and_model_metadata() {
    let server = demo::spawn().await.unwrap();
    let addr = server.addr;
    let r = send(addr, "GET", "/v2", &[], b"").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header_names(), ["content-type", "content-length"]);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        r.text(),
        format!(
            r#"{{"name":"tensorgate-demo","version":"{version}","extensions":["binary_tensor_data","model_configuration","parameters"]}}"#
        )
    );
    for path in [
        "/v2/health/live",
        "/v2/health/ready",
        "/v2/models/simple/ready",
        "/v2/models/repeat/versions/1/ready",
    ] {
        let r = send(addr, "GET", path, &[], b"").await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(
            r.headers,
            [
                ("content-length".to_owned(), "0".to_owned()),
                ("content-type".to_owned(), "text/plain".to_owned())
            ],
            "{path}"
        );
        assert!(r.body.is_empty());
    }
    let r = send(addr, "GET", "/v2/models/simple/versions/1", &[], b"").await;
    assert_eq!(
        r.text(),
        r#"{"name":"simple","versions":["1"],"platform":"tensorgate_demo","inputs":[{"name":"INPUT0","datatype":"INT32","shape":[-1,16]},{"name":"INPUT1","datatype":"INT32","shape":[-1,16]}],"outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[-1,16]},{"name":"OUTPUT1","datatype":"INT32","shape":[-1,16]}]}"#
    );
    let r = send(addr, "GET", "/v2/models/simple/config", &[], b"").await;
    let config = r.json();
    assert_eq!(config["max_batch_size"], 8);
    assert_eq!(
        config["input"][1],
        json!({"name":"INPUT1","data_type":"TYPE_INT32","dims":[16]})
    );
    let r = send(addr, "GET", "/v2/models/identity", &[], b"").await;
    assert_eq!(r.json()["inputs"], json!([]));
    let r = send(addr, "GET", "/v2/models/repeat/config", &[], b"").await;
    assert_eq!(r.json()["model_transaction_policy"]["decoupled"], true);
}

#[tokio::test]
async fn simple_json_matches_triton_byte_for_byte() {
    let server = demo::spawn().await.unwrap();
    let body = json!({"id": "req-42", "inputs": simple_inputs()});
    let r = post_json(server.addr, "/v2/models/simple/infer", &body).await;
    assert_eq!((r.status, r.reason.as_str()), (200, "OK"));
    assert_eq!(
        r.headers,
        [
            ("content-type".to_owned(), "application/json".to_owned()),
            ("content-length".to_owned(), "270".to_owned())
        ]
    );
    let expected = format!(
        r#"{{"id":"req-42","model_name":"simple","model_version":"1","outputs":[{{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"data":[{}]}},{{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"data":[{}]}}]}}"#,
        list(1..17),
        list(-1..15)
    );
    assert_eq!(r.text(), expected);
    // The versioned path, nested data, and no id.
    let body = json!({"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [2, 16], "data": [vec![i32::MAX; 16], vec![5; 16]]},
        {"name": "INPUT1", "datatype": "INT32", "shape": [2, 16], "data": [vec![1; 16], vec![7; 16]]},
    ]});
    let r = post_json(server.addr, "/v2/models/simple/versions/1/infer", &body).await;
    let out = r.json();
    assert!(out.get("id").is_none());
    assert_eq!(out["outputs"][0]["shape"], json!([2, 16]));
    assert_eq!(out["outputs"][0]["data"][0], i32::MIN);
    assert_eq!(out["outputs"][0]["data"][16], 12);
    assert_eq!(out["outputs"][1]["data"][31], -2);
}

#[tokio::test]
async fn simple_binary_matches_triton_byte_for_byte() {
    let server = demo::spawn().await.unwrap();
    let a = i32_bytes(0..16);
    let b = i32_bytes([1; 16]);
    let inputs = json!([
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}},
    ]);
    let header = json!({"id": "b1", "inputs": inputs, "parameters": {"binary_data_output": true}});
    let (body, ihcl) = binary_body(&header, &[&a, &b]);
    let path = "/v2/models/simple/infer";
    let r = send(
        server.addr,
        "POST",
        path,
        &[("Inference-Header-Content-Length", &ihcl)],
        &body,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.headers,
        [
            (
                "content-type".to_owned(),
                "application/octet-stream".to_owned()
            ),
            (
                "inference-header-content-length".to_owned(),
                "245".to_owned()
            ),
            ("content-length".to_owned(), "373".to_owned())
        ]
    );
    let head = r#"{"id":"b1","model_name":"simple","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}},{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}}]}"#;
    let mut expected = head.as_bytes().to_vec();
    expected.extend(i32_bytes(1..17));
    expected.extend(i32_bytes(-1..15));
    assert_eq!(r.body, expected);
    // Without an id the header is 235 bytes, as with Triton.
    let header = json!({"inputs": inputs, "parameters": {"binary_data_output": true}});
    let r = post_binary(server.addr, path, &header, &[&a, &b]).await;
    assert_eq!(r.header("inference-header-content-length"), Some("235"));
    // Binary in, JSON out (no binary_data_output).
    let header = json!({"inputs": inputs});
    let r = post_binary(server.addr, path, &header, &[&a, &b]).await;
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["outputs"][1]["data"][0], -1);
}

/// One sample per datatype: binary data, and the same values as JSON.
fn samples() -> Vec<(&'static str, Vec<u8>, Value)> {
    let le = |v: &[u64], n: usize| -> Vec<u8> {
        v.iter()
            .flat_map(|x| x.to_le_bytes()[..n].to_vec())
            .collect()
    };
    let f16 = |v: &[f32]| -> Vec<u8> {
        v.iter()
            .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
            .collect()
    };
    let bf16 = |v: &[f32]| -> Vec<u8> {
        v.iter()
            .flat_map(|x| half::bf16::from_f32(*x).to_le_bytes())
            .collect()
    };
    let mut bytes = Vec::new();
    for e in [&b"hello"[..], b"", "sn\u{2603}w \"q\"\n".as_bytes()] {
        bytes.extend_from_slice(&(e.len() as u32).to_le_bytes());
        bytes.extend_from_slice(e);
    }
    vec![
        ("BOOL", vec![1, 0, 1], json!([true, false, true])),
        ("UINT8", vec![0, 7, 255], json!([0, 7, 255])),
        ("UINT16", le(&[0, 7, 65535], 2), json!([0, 7, 65535])),
        (
            "UINT32",
            le(&[0, 7, u32::MAX as u64], 4),
            json!([0, 7, u32::MAX]),
        ),
        ("UINT64", le(&[0, 7, u64::MAX], 8), json!([0, 7, u64::MAX])),
        ("INT8", vec![0, 7, 0x80], json!([0, 7, -128])),
        ("INT16", le(&[0, 7, 0x8000], 2), json!([0, 7, i16::MIN])),
        (
            "INT32",
            i32_bytes([0, 7, i32::MIN]),
            json!([0, 7, i32::MIN]),
        ),
        (
            "INT64",
            le(&[0, 7, i64::MIN as u64], 8),
            json!([0, 7, i64::MIN]),
        ),
        ("FP16", f16(&[1.5, -2.0, 0.25]), json!([1.5, -2.0, 0.25])),
        ("BF16", bf16(&[1.5, -2.0, 0.25]), json!([1.5, -2.0, 0.25])),
        (
            "FP32",
            [1.5f32, -2.25, 0.5]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
            json!([1.5, -2.25, 0.5]),
        ),
        (
            "FP64",
            [1.5f64, -2.25, 1e300]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
            json!([1.5, -2.25, 1e300]),
        ),
        ("BYTES", bytes, json!(["hello", "", "sn\u{2603}w \"q\"\n"])),
    ]
}

#[tokio::test]
async fn identity_echoes_every_datatype() {
    let server = demo::spawn().await.unwrap();
    let path = "/v2/models/identity/infer";
    for (dtype, data, values) in samples() {
        // Binary in, binary out: the same bytes.
        let header = json!({
            "inputs": [{"name": "x", "datatype": dtype, "shape": [3], "parameters": {"binary_data_size": data.len()}}],
            "parameters": {"binary_data_output": true},
        });
        let r = post_binary(server.addr, path, &header, &[&data]).await;
        assert_eq!(r.status, 200, "{dtype}: {}", r.text());
        let head_len: usize = r
            .header("inference-header-content-length")
            .unwrap()
            .parse()
            .unwrap();
        let head: Value = serde_json::from_slice(&r.body[..head_len]).unwrap();
        assert_eq!(
            head["outputs"],
            json!([{"name": "OUTPUT0", "datatype": dtype, "shape": [3], "parameters": {"binary_data_size": data.len()}}]),
            "{dtype}"
        );
        assert_eq!(&r.body[head_len..], &data[..], "{dtype}");

        // JSON in, JSON out: the same values.
        let input =
            json!({"inputs": [{"name": "x", "datatype": dtype, "shape": [3], "data": values}]});
        let r = post_json(server.addr, path, &input).await;
        assert_eq!(r.status, 200, "{dtype}: {}", r.text());
        let out = &r.json()["outputs"][0];
        assert_eq!(out["data"], values, "{dtype}");
        assert_eq!(out["datatype"], dtype);

        // JSON in, binary out: the bytes of the binary sample.
        let input = json!({
            "inputs": [{"name": "x", "datatype": dtype, "shape": [1, 3], "data": values}],
            "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": true}}],
        });
        let r = post_json(server.addr, path, &input).await;
        let head_len: usize = r
            .header("inference-header-content-length")
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(&r.body[head_len..], &data[..], "{dtype}");
    }
}

#[tokio::test]
async fn identity_keeps_every_input_and_raw_bytes() {
    let server = demo::spawn().await.unwrap();
    let junk = [3u8, 0, 0, 0, 0xff, 0xfe, 0x00];
    let header = json!({
        "id": "many",
        "inputs": [
            {"name": "a", "datatype": "BYTES", "shape": [1], "parameters": {"binary_data_size": junk.len()}},
            {"name": "b", "datatype": "INT8", "shape": [2, 0], "data": []},
            {"name": "c", "datatype": "FP32", "shape": [], "data": [2.5]},
        ],
        "parameters": {"binary_data_output": true},
    });
    let r = post_binary(server.addr, "/v2/models/identity/infer", &header, &[&junk]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let head_len: usize = r
        .header("inference-header-content-length")
        .unwrap()
        .parse()
        .unwrap();
    let head: Value = serde_json::from_slice(&r.body[..head_len]).unwrap();
    let names: Vec<&str> = head["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["OUTPUT0", "OUTPUT1", "OUTPUT2"]);
    assert_eq!(head["outputs"][1]["shape"], json!([2, 0]));
    assert_eq!(head["outputs"][2]["shape"], json!([]));
    let mut tail = junk.to_vec();
    tail.extend_from_slice(&2.5f32.to_le_bytes());
    assert_eq!(&r.body[head_len..], &tail[..]);
    // Non-UTF-8 BYTES cannot be a JSON string: the demo refuses, naming it.
    let header = json!({"inputs": [{"name": "a", "datatype": "BYTES", "shape": [1], "parameters": {"binary_data_size": junk.len()}}]});
    let r = post_binary(server.addr, "/v2/models/identity/infer", &header, &[&junk]).await;
    assert_eq!(r.status, 400);
    assert!(
        r.error()
            .starts_with("output 'OUTPUT0': BYTES element 0 is not valid UTF-8"),
        "{}",
        r.error()
    );
}

/// Names and forms (`json` / `binary`) of the outputs in a response.
fn outputs_of(r: &Resp) -> Vec<(String, &'static str)> {
    let head_len = r
        .header("inference-header-content-length")
        .map_or(r.body.len(), |v| v.parse().unwrap());
    let head: Value = serde_json::from_slice(&r.body[..head_len]).unwrap();
    head["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let form = if o.get("data").is_some() {
                "json"
            } else {
                "binary"
            };
            (o["name"].as_str().unwrap().to_owned(), form)
        })
        .collect()
}

/// Sends `simple` a request with these `binary_data_output` and `outputs`;
/// returns the outputs it got, checking the content type.
async fn selected(addr: SocketAddr, binary_output: Option<bool>, outputs: Value) -> Vec<String> {
    let mut body = json!({"inputs": simple_inputs()});
    if let Some(b) = binary_output {
        body["parameters"] = json!({"binary_data_output": b});
    }
    if !outputs.is_null() {
        body["outputs"] = outputs;
    }
    let r = post_json(addr, "/v2/models/simple/infer", &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let got: Vec<String> = outputs_of(&r)
        .into_iter()
        .map(|(name, form)| format!("{name} {form}"))
        .collect();
    let binary = got.iter().any(|o| o.ends_with("binary"));
    let content_type = if binary {
        "application/octet-stream"
    } else {
        "application/json"
    };
    assert_eq!(r.header("content-type"), Some(content_type), "{got:?}");
    got
}

#[tokio::test]
async fn output_selection_follows_triton() {
    let server = demo::spawn().await.unwrap();
    let a = server.addr;
    let (bin0, json1) = ("OUTPUT0 binary", "OUTPUT1 json");
    assert_eq!(
        selected(a, None, Value::Null).await,
        ["OUTPUT0 json", json1]
    );
    assert_eq!(
        selected(a, Some(true), Value::Null).await,
        [bin0, "OUTPUT1 binary"]
    );
    // With a list, binary_data_output no longer matters.
    let listed = json!([{"name": "OUTPUT1"}]);
    assert_eq!(selected(a, Some(true), listed).await, [json1]);
    let listed = json!([{"name": "OUTPUT0", "parameters": {"binary_data": false}}]);
    assert_eq!(selected(a, Some(true), listed).await, ["OUTPUT0 json"]);
    let listed = json!([{"name": "OUTPUT1", "parameters": {"binary_data": true}}]);
    assert_eq!(selected(a, Some(false), listed).await, ["OUTPUT1 binary"]);
    let listed = json!([
        {"name": "OUTPUT0", "parameters": {"binary_data": true}},
        {"name": "OUTPUT1", "parameters": {"binary_data": false}},
    ]);
    assert_eq!(selected(a, None, listed).await, [bin0, json1]);
    // Model order, not request order; a name listed twice comes once.
    let listed = json!([{"name": "OUTPUT1"}, {"name": "OUTPUT0"}]);
    assert_eq!(selected(a, None, listed).await, ["OUTPUT0 json", json1]);
    let listed = json!([{"name": "OUTPUT0"}, {"name": "OUTPUT0"}]);
    assert_eq!(selected(a, None, listed).await, ["OUTPUT0 json"]);

    let body = json!({"inputs": simple_inputs(), "outputs": [{"name": "NOPE"}]});
    let r = post_json(a, "/v2/models/simple/infer", &body).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.error(),
        "unexpected inference output 'NOPE' for model 'simple'"
    );
}

/// Reads a streamed response, noting when each SSE event arrived.
async fn read_events(addr: SocketAddr, body: &Value) -> (String, Vec<Duration>, Duration, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let body = serde_json::to_vec(body).unwrap();
    let req = build_request("POST", "/v2/models/repeat/generate_stream", &[], &body);
    let start = Instant::now();
    s.write_all(&req).await.unwrap();
    let mut raw = Vec::new();
    let mut arrivals = Vec::new();
    let mut buf = [0u8; 4096];
    while parse_complete(&raw).is_none() {
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed early");
        raw.extend_from_slice(&buf[..n]);
        let events = raw.windows(6).filter(|w| w == b"data: ").count();
        while arrivals.len() < events {
            arrivals.push(start.elapsed());
        }
    }
    let resp = parse_complete(&raw).unwrap();
    let head = String::from_utf8_lossy(&raw[..find(&raw, b"\r\n\r\n").unwrap()]).into_owned();
    (head, arrivals, start.elapsed(), resp.text())
}

#[tokio::test]
async fn generate_stream_sends_each_event_as_it_happens() {
    let server = demo::spawn().await.unwrap();
    let delay = 150;
    let (head, arrivals, total, body) = read_events(
        server.addr,
        &json!({"id": "s1", "text_input": "hi", "count": 3, "delay_ms": delay}),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains("\r\ncontent-type: text/event-stream; charset=utf-8"),
        "{head}"
    );
    assert!(head.contains("\r\ntransfer-encoding: chunked"), "{head}");
    let expected: String = (0..3)
        .map(|i| format!("data: {{\"id\":\"s1\",\"index\":{i},\"model_name\":\"repeat\",\"model_version\":\"1\",\"text_output\":\"hi{i}\"}}\n\n"))
        .collect();
    assert_eq!(body, expected);
    assert_eq!(arrivals.len(), 3);
    // The server sleeps between events, so these are lower bounds only.
    let delay = Duration::from_millis(delay);
    assert!(arrivals[2] >= arrivals[0] + delay, "{arrivals:?}");
    assert!(
        arrivals[0] + delay <= total,
        "first event only at the end: {arrivals:?} {total:?}"
    );
}

#[tokio::test]
async fn generate_and_its_errors() {
    let server = demo::spawn().await.unwrap();
    let addr = server.addr;
    let r = post_json(
        addr,
        "/v2/models/repeat/generate",
        &json!({"text_input": "x", "count": 1}),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.text(),
        r#"{"index":0,"model_name":"repeat","model_version":"1","text_output":"x0"}"#
    );
    let r = post_json(
        addr,
        "/v2/models/repeat/generate",
        &json!({"text_input": "x", "count": 2}),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(
        r.error()
            .starts_with("generate expects model to produce exactly 1 response")
    );
    let r = post_json(
        addr,
        "/v2/models/repeat/generate_stream",
        &json!({"text_input": "x", "count": 0}),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    let r = post_json(
        addr,
        "/v2/models/repeat/generate_stream",
        &json!({"count": 2}),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    assert_eq!(
        r.text(),
        "data: {\"error\":\"input 'text_input' is required by model 'repeat'\"}\n\n"
    );
    let r = post_json(
        addr,
        "/v2/models/repeat/generate_stream",
        &json!({"text_input": "x", "count": "zz"}),
    )
    .await;
    assert_eq!(r.status, 400);
    let r = post_json(addr, "/v2/models/simple/generate", &json!({})).await;
    assert_eq!(r.status, 400);
    let r = post_json(addr, "/v2/models/repeat/infer", &json!({"inputs": []})).await;
    assert_eq!(r.status, 501);
    assert_eq!(
        r.error(),
        "HTTP end point doesn't support models with decoupled transaction policy"
    );
}

/// Sends a request that must fail; checks status, content type (and, for
/// text/plain, Triton's header order) and the error text.
async fn expect_error(
    addr: SocketAddr,
    req: (&str, &str, &[u8]),
    status: u16,
    plain: bool,
    error: &str,
) {
    let (method, path, body) = req;
    let r = send(addr, method, path, &[], body).await;
    assert_eq!(r.status, status, "{method} {path}: {}", r.text());
    if plain {
        assert_eq!(
            r.header_names(),
            ["content-length", "content-type"],
            "{path}"
        );
        assert_eq!(r.header("content-type"), Some("text/plain"), "{path}");
    } else {
        assert_eq!(
            r.header_names(),
            ["content-type", "content-length"],
            "{path}"
        );
        assert_eq!(r.header("content-type"), Some("application/json"), "{path}");
    }
    assert_eq!(r.error(), error, "{method} {path}");
}

#[tokio::test]
async fn errors_match_triton() {
    let server = demo::spawn().await.unwrap();
    let a = server.addr;
    let simple = "/v2/models/simple/infer";
    let unknown = "Request for unknown model: 'nope' is not found";
    expect_error(
        a,
        ("POST", "/v2/models/nope/infer", b"{}"),
        404,
        true,
        unknown,
    )
    .await;
    expect_error(a, ("GET", "/v2/models/nope", b""), 404, true, unknown).await;
    let version = "Request for unknown model: 'simple' version 7 is not found";
    expect_error(
        a,
        ("POST", "/v2/models/simple/versions/7/infer", b"{}"),
        404,
        true,
        version,
    )
    .await;
    expect_error(
        a,
        ("GET", "/v2/models/nope/ready", b""),
        400,
        true,
        "Model version not ready",
    )
    .await;
    expect_error(a, ("GET", simple, b""), 405, true, "Method Not Allowed").await;
    expect_error(a, ("PUT", simple, b""), 405, true, "Method Not Allowed").await;
    assert_eq!(send(a, "GET", simple, &[], b"").await.reason, "Not Allowed");
    expect_error(a, ("GET", "/v2/nope", b""), 404, true, "Not Found").await;
    expect_error(a, ("POST", "/invocations", b""), 404, true, "Not Found").await;

    let with_input1 = |input1: Value| {
        serde_json::to_vec(&json!({"id": "abc", "inputs": [simple_inputs()[0].clone(), input1]}))
            .unwrap()
    };
    let body = with_input1(
        json!({"name": "INPUT1", "datatype": "INT32", "shape": [1, 8], "data": vec![0; 8]}),
    );
    let shape = "[request id: abc] unexpected shape for input 'INPUT1' for model 'simple'. Expected [-1,16], got [1,8]. NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.";
    expect_error(a, ("POST", simple, &body), 400, false, shape).await;
    let body = with_input1(
        json!({"name": "INPUT1", "datatype": "INT32", "shape": [9, 16], "data": vec![0; 144]}),
    );
    let batch = "[request id: abc] inference request batch-size must be <= 8 for 'simple'";
    expect_error(a, ("POST", simple, &body), 400, false, batch).await;
    let body = with_input1(
        json!({"name": "INPUT1", "datatype": "INT64", "shape": [1, 16], "data": vec![0; 16]}),
    );
    let dtype = "[request id: abc] inference input 'INPUT1' data-type is 'INT64', but model 'simple' expects 'INT32'";
    expect_error(a, ("POST", simple, &body), 400, false, dtype).await;
    let body = with_input1(simple_inputs()[0].clone());
    let dup = "[request id: abc] input 'INPUT0' already exists in request";
    expect_error(a, ("POST", simple, &body), 400, false, dup).await;
    let body = serde_json::to_vec(&json!({"inputs": [simple_inputs()[0].clone()]})).unwrap();
    let missing = "[request id: <id_unknown>] expected 2 inputs but got 1 inputs for model 'simple'. Got input(s) ['INPUT0'], but missing required input(s) ['INPUT1']. Please provide all required input(s).";
    expect_error(a, ("POST", simple, &body), 400, false, missing).await;
    let malformed =
        "failed to parse the request JSON: malformed JSON at byte 11: unexpected end of input";
    expect_error(
        a,
        ("POST", simple, br#"{"inputs":["#),
        400,
        false,
        malformed,
    )
    .await;
    let id = "Unable to parse 'id': attempt to access JSON non-string as string";
    expect_error(
        a,
        ("POST", simple, br#"{"id":5,"inputs":[]}"#),
        400,
        false,
        id,
    )
    .await;
}

#[tokio::test]
async fn binary_framing_errors() {
    let server = demo::spawn().await.unwrap();
    let addr = server.addr;
    let simple = "/v2/models/simple/infer";
    let header = json!({"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}},
    ]});
    let chunk = [0u8; 64];
    let send_with = |body: Vec<u8>, ihcl: Option<String>| async move {
        let headers: Vec<(&str, &str)> = match &ihcl {
            Some(v) => vec![("Inference-Header-Content-Length", v.as_str())],
            None => vec![],
        };
        send(addr, "POST", simple, &headers, &body).await
    };
    let (body, ihcl) = binary_body(&header, &[&chunk, &chunk[..60]]);
    let r = send_with(body.clone(), Some(ihcl.clone())).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.error(),
        "unexpected size for input 'INPUT1', expecting 4 additional bytes for model 'simple'"
    );
    let (body, ihcl) = binary_body(&header, &[&chunk, &chunk, b"xx"]);
    let r = send_with(body, Some(ihcl)).await;
    assert_eq!(
        r.error(),
        "unexpected additional input data for model 'simple'"
    );
    let (body, _) = binary_body(&header, &[]);
    let r = send_with(body.clone(), None).await;
    assert_eq!(
        r.error(),
        "unexpected size for input 'INPUT0', expecting 64 additional bytes for model 'simple'"
    );
    let len = body.len();
    let r = send_with(body.clone(), Some((len + 10).to_string())).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(
        r.error(),
        format!(
            "inference header size should be in range (0, {len}), got: {}",
            len + 10
        )
    );
    let r = send_with(body.clone(), Some("-1".into())).await;
    assert_eq!(
        r.error(),
        format!("inference header size should be in range (0, {len}), got: -1")
    );
    // IHCL 0, a non-numeric IHCL, or an empty body: a raw request.
    let raw = "[request id: <id_unknown>] Raw request must only have 1 input (found 1) to be deduced but got 2 inputs in 'simple' model configuration";
    for ihcl in [Some("0".to_owned()), Some("abc".to_owned())] {
        let r = send_with(body.clone(), ihcl).await;
        assert_eq!((r.status, r.error()), (400, raw.to_owned()));
    }
    let r = send_with(Vec::new(), None).await;
    assert_eq!((r.status, r.error()), (400, raw.to_owned()));
    // A BYTES element longer than its data.
    let header = json!({"inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [1], "parameters": {"binary_data_size": 7}}]});
    let r = post_binary(
        addr,
        "/v2/models/identity/infer",
        &header,
        &[&[100, 0, 0, 0, b'a', b'b', b'c']],
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert!(r.error().starts_with("input 'INPUT0': "), "{}", r.error());
}

#[tokio::test]
async fn compressed_requests() {
    use std::io::Write;
    let server = demo::spawn().await.unwrap();
    let body = serde_json::to_vec(&json!({"inputs": simple_inputs()})).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&body).unwrap();
    let gz = gz.finish().unwrap();
    let r = send(
        server.addr,
        "POST",
        "/v2/models/simple/infer",
        &[("Content-Encoding", "gzip")],
        &gz,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["outputs"][0]["data"][15], 16);
    let r = send(
        server.addr,
        "POST",
        "/v2/models/simple/infer",
        &[("Content-Encoding", "br")],
        &gz,
    )
    .await;
    assert_eq!(r.status, 501);
    assert_eq!(r.header("accept-encoding"), Some("gzip, deflate"));
    assert_eq!(r.error(), "Unsupported compression type");
}

#[tokio::test]
async fn h2c_prior_knowledge() {
    use http_body_util::{BodyExt, Full};
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let server = demo::spawn().await.unwrap();
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http();
    let body = serde_json::to_vec(&json!({"inputs": simple_inputs()})).unwrap();
    let req = http::Request::post(format!("{}/v2/models/simple/infer", server.url()))
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let resp = client.request(req).await.unwrap();
    assert_eq!(resp.version(), http::Version::HTTP_2);
    assert_eq!(resp.status(), 200);
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["outputs"][1]["data"][0], -1);
}

#[tokio::test]
async fn serve_stops_on_shutdown_and_drop() {
    let server = demo::spawn().await.unwrap();
    let addr = server.addr;
    send(addr, "GET", "/v2/health/live", &[], b"").await;
    server.shutdown().await.unwrap();
    assert!(TcpStream::connect(addr).await.is_err());

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(demo::serve(listener, async move {
        let _ = stopped.await;
    }));
    assert_eq!(
        send(addr, "GET", "/v2/health/ready", &[], b"").await.status,
        200
    );
    drop(stop);
    task.await.unwrap().unwrap();

    let server = demo::spawn().await.unwrap();
    let addr = server.addr;
    drop(server);
    let mut closed = false;
    for _ in 0..100 {
        if TcpStream::connect(addr).await.is_err() {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(closed, "server still accepting after drop");
}
