//! Translation through the gateway in front of the embedded demo backend:
//! JSON clients, binary clients and mixed clients, for every datatype; the
//! Triton output-selection rules; gzip both ways; JSON backends; SageMaker
//! framing; HTTP/2. Assertions are on real bytes.

mod common;

use bytes::Bytes;
use common::*;
use serde_json::{Value, json};
use tensorgate::http::encoding::{Coding, Decoder, compress};
use tensorgate_demo as demo;

/// A gateway (binary backend format) in front of a fresh demo backend.
async fn setup(format: &str) -> (demo::DemoServer, tensorgate::server::Running) {
    let backend = demo::spawn().await.unwrap();
    let route = format!(
        r#"
[[routes]]
name = "demo"
models = ["identity", "simple"]
backend = "b"
backend_format = "{format}"
"#
    );
    let gw = gateway(&simple_config(&backend.url(), &route)).await;
    (backend, gw)
}

/// One sample per datatype: shape, binary data, JSON values (as the gateway
/// writes them).
fn samples() -> Vec<(&'static str, Vec<u64>, Vec<u8>, Value)> {
    fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|&x| f(x)).collect()
    }
    let mut bytes = Vec::new();
    for e in ["hello", "", "sn\u{2603}w \"q\"\n\u{1}"] {
        bytes.extend_from_slice(&(e.len() as u32).to_le_bytes());
        bytes.extend_from_slice(e.as_bytes());
    }
    vec![
        (
            "BOOL",
            vec![2, 2],
            vec![1, 0, 0, 1],
            json!([true, false, false, true]),
        ),
        ("UINT8", vec![3], vec![0, 7, 255], json!([0, 7, 255])),
        (
            "UINT16",
            vec![3],
            le(&[0u16, 7, u16::MAX], u16::to_le_bytes),
            json!([0, 7, 65535]),
        ),
        (
            "UINT32",
            vec![3],
            le(&[0u32, 7, u32::MAX], u32::to_le_bytes),
            json!([0, 7, u32::MAX]),
        ),
        (
            "UINT64",
            vec![3],
            le(&[0u64, 7, u64::MAX], u64::to_le_bytes),
            json!([0, 7, u64::MAX]),
        ),
        (
            "INT8",
            vec![3],
            le(&[0i8, -7, i8::MIN], i8::to_le_bytes),
            json!([0, -7, -128]),
        ),
        (
            "INT16",
            vec![3],
            le(&[0i16, -7, i16::MIN], i16::to_le_bytes),
            json!([0, -7, i16::MIN]),
        ),
        (
            "INT32",
            vec![1, 3],
            le(&[0i32, -7, i32::MIN], i32::to_le_bytes),
            json!([0, -7, i32::MIN]),
        ),
        (
            "INT64",
            vec![3],
            le(&[0i64, -7, i64::MIN], i64::to_le_bytes),
            json!([0, -7, i64::MIN]),
        ),
        (
            "FP16",
            vec![4],
            le(&[1.5f32, -2.0, 0.099975586, 65504.0], |x| {
                half::f16::from_f32(x).to_le_bytes()
            }),
            json!([1.5, -2.0, 0.099975586, 65504.0]),
        ),
        (
            "BF16",
            vec![3],
            le(&[1.5f32, -2.0, 0.100097656], |x| {
                half::bf16::from_f32(x).to_le_bytes()
            }),
            json!([1.5, -2.0, 0.100097656]),
        ),
        (
            "FP32",
            vec![6],
            le(
                &[
                    1.5f32,
                    -0.0,
                    0.1,
                    f32::NAN,
                    f32::INFINITY,
                    f32::NEG_INFINITY,
                ],
                f32::to_le_bytes,
            ),
            json!([1.5, -0.0, 0.1, "NaN", "Infinity", "-Infinity"]),
        ),
        (
            "FP64",
            vec![3],
            le(&[0.1f64, 1e300, -5e-324], f64::to_le_bytes),
            json!([0.1, 1e300, -5e-324]),
        ),
        (
            "BYTES",
            vec![3],
            bytes,
            json!(["hello", "", "sn\u{2603}w \"q\"\n\u{1}"]),
        ),
        ("FP32", vec![0, 4], vec![], json!([])),
        ("BYTES", vec![0], vec![], json!([])),
    ]
}

/// JSON values equal as the dtype: float text may differ, values may not.
fn same_values(dtype: &str, got: &Value, want: &Value) -> bool {
    match dtype {
        "FP16" | "BF16" | "FP32" | "FP64" => {
            let (Some(g), Some(w)) = (got.as_array(), want.as_array()) else {
                return false;
            };
            g.len() == w.len()
                && g.iter().zip(w).all(|(g, w)| match (g, w) {
                    (Value::Number(a), Value::Number(b)) => {
                        let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
                        a.to_bits() == b.to_bits()
                            || (dtype != "FP64"
                                && a as f32 == b as f32
                                && a.is_sign_negative() == b.is_sign_negative())
                    }
                    _ => g == w,
                })
        }
        _ => got == want,
    }
}

#[tokio::test]
async fn json_client_binary_backend_every_datatype() {
    let (_backend, gw) = setup("binary").await;
    for (dtype, shape, _, values) in samples() {
        let body = json!({"id": "42", "inputs": [{"name": "IN", "shape": shape, "datatype": dtype, "data": values}]});
        let got = post_json(gw.data_addr, "/v2/models/identity/infer", &body.to_string()).await;
        assert_eq!(
            got.status,
            200,
            "{dtype}: {}",
            String::from_utf8_lossy(&got.body)
        );
        assert_eq!(got.header("content-type"), Some("application/json"));
        assert_eq!(got.header("inference-header-content-length"), None);
        let reply = got.json();
        assert_eq!(reply["id"], "42");
        assert_eq!(reply["model_name"], "identity");
        assert_eq!(reply["model_version"], "1");
        let out = &reply["outputs"][0];
        assert_eq!(out["name"], "OUTPUT0");
        assert_eq!(out["datatype"], dtype);
        assert_eq!(out["shape"], json!(shape));
        assert!(out.get("parameters").is_none(), "{dtype}: {out}");
        assert!(
            same_values(dtype, &out["data"], &values),
            "{dtype}: {} != {values}",
            out["data"]
        );
    }
}

#[tokio::test]
async fn binary_client_gets_the_same_bytes_back() {
    let (_backend, gw) = setup("binary").await;
    for (dtype, shape, data, _) in samples() {
        let header = json!({"inputs": [{"name": "IN", "shape": shape, "datatype": dtype, "parameters": {"binary_data_size": data.len()}}],
                            "parameters": {"binary_data_output": true}});
        let got = post_binary(gw.data_addr, "/v2/models/identity/infer", &header, &[&data]).await;
        assert_eq!(
            got.status,
            200,
            "{dtype}: {}",
            String::from_utf8_lossy(&got.body)
        );
        assert_eq!(got.header("content-type"), Some("application/octet-stream"));
        assert_eq!(
            got.header("content-length"),
            Some(got.body.len().to_string().as_str())
        );
        let (h, rest) = split_binary(&got);
        assert_eq!(
            h["outputs"][0]["parameters"]["binary_data_size"],
            data.len(),
            "{dtype}"
        );
        assert_eq!(&rest[..], &data[..], "{dtype}");
    }
}

#[tokio::test]
async fn json_in_binary_out_and_binary_in_json_out() {
    let (_backend, gw) = setup("binary").await;
    for (dtype, shape, data, values) in samples() {
        // JSON in, binary out.
        let body = json!({"inputs": [{"name": "IN", "shape": shape, "datatype": dtype, "data": values}],
                          "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": true}}]});
        let got = post_json(gw.data_addr, "/v2/models/identity/infer", &body.to_string()).await;
        assert_eq!(got.status, 200, "{dtype}");
        let (_, rest) = split_binary(&got);
        if dtype == "FP32" && !data.is_empty() {
            // NaN may come back as any quiet NaN; compare the rest bit for bit.
            assert_eq!(&rest[..12], &data[..12]);
            assert!(f32::from_le_bytes(rest[12..16].try_into().unwrap()).is_nan());
            assert_eq!(&rest[16..], &data[16..]);
        } else {
            assert_eq!(&rest[..], &data[..], "{dtype}");
        }
        // Binary in, JSON out.
        let header = json!({"inputs": [{"name": "IN", "shape": shape, "datatype": dtype, "parameters": {"binary_data_size": data.len()}}]});
        let got = post_binary(gw.data_addr, "/v2/models/identity/infer", &header, &[&data]).await;
        assert_eq!(got.status, 200, "{dtype}");
        assert_eq!(got.header("content-type"), Some("application/json"));
        assert!(
            same_values(dtype, &got.json()["outputs"][0]["data"], &values),
            "{dtype}"
        );
    }
}

#[tokio::test]
async fn mixed_reply_has_correct_lengths() {
    let (_backend, gw) = setup("binary").await;
    let body = json!({
        "inputs": [
            {"name": "A", "shape": [2], "datatype": "INT32", "data": [1, 2]},
            {"name": "B", "shape": [2], "datatype": "FP32", "data": [0.5, 1.5]},
            {"name": "C", "shape": [1], "datatype": "BYTES", "data": ["x"]}
        ],
        "outputs": [
            {"name": "OUTPUT0", "parameters": {"binary_data": true}},
            {"name": "OUTPUT1"},
            {"name": "OUTPUT2", "parameters": {"binary_data": false}}
        ],
        "parameters": {"binary_data_output": true}
    });
    let got = post_json(gw.data_addr, "/v2/models/identity/infer", &body.to_string()).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.header("content-type"), Some("application/octet-stream"));
    assert_eq!(
        got.header("content-length"),
        Some(got.body.len().to_string().as_str())
    );
    let (h, rest) = split_binary(&got);
    let outs = h["outputs"].as_array().unwrap();
    assert_eq!(outs[0]["parameters"]["binary_data_size"], 8);
    assert_eq!(outs[1]["data"], json!([0.5, 1.5]));
    assert_eq!(outs[2]["data"], json!(["x"]));
    assert_eq!(&rest[..], &le_i32(&[1, 2])[..]);
}

#[tokio::test]
async fn output_selection_follows_triton() {
    let (_backend, gw) = setup("binary").await;
    let inputs = json!([
        {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": (0..16).collect::<Vec<i32>>()},
        {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": vec![1; 16]}
    ]);
    // (request parameters, outputs list) -> [(name, binary?)]
    let cases = [
        (
            json!({}),
            Value::Null,
            vec![("OUTPUT0", false), ("OUTPUT1", false)],
        ),
        (
            json!({"binary_data_output": true}),
            Value::Null,
            vec![("OUTPUT0", true), ("OUTPUT1", true)],
        ),
        (
            json!({"binary_data_output": true}),
            json!([{"name": "OUTPUT1"}]),
            vec![("OUTPUT1", false)],
        ),
        (
            json!({"binary_data_output": false}),
            json!([{"name": "OUTPUT1", "parameters": {"binary_data": true}}]),
            vec![("OUTPUT1", true)],
        ),
        (
            json!({}),
            json!([{"name": "OUTPUT0", "parameters": {"binary_data": true}}, {"name": "OUTPUT1"}]),
            vec![("OUTPUT0", true), ("OUTPUT1", false)],
        ),
    ];
    for (params, outputs, expect) in cases {
        let mut body = json!({"inputs": inputs, "parameters": params});
        if !outputs.is_null() {
            body["outputs"] = outputs.clone();
        }
        let got = post_json(gw.data_addr, "/v2/models/simple/infer", &body.to_string()).await;
        assert_eq!(got.status, 200);
        let header = if got.header("inference-header-content-length").is_some() {
            split_binary(&got).0
        } else {
            got.json()
        };
        let seen: Vec<(String, bool)> = header["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o["name"].as_str().unwrap().to_owned(),
                    o.get("data").is_none(),
                )
            })
            .collect();
        let expect: Vec<(String, bool)> = expect.iter().map(|(n, b)| (n.to_string(), *b)).collect();
        assert_eq!(seen, expect, "params {params} outputs {outputs}");
    }
}

fn gunzip(data: &[u8], coding: Coding) -> Vec<u8> {
    let mut d = Decoder::new(coding, 1 << 30).unwrap();
    let mut out = d.push(data).unwrap().to_vec();
    out.extend_from_slice(&d.finish().unwrap());
    out
}

#[tokio::test]
async fn gzip_and_deflate_both_ways() {
    let (_backend, gw) = setup("binary").await;
    let body =
        json!({"inputs": [{"name": "IN", "shape": [3], "datatype": "INT32", "data": [1, 2, 3]}]})
            .to_string();
    for coding in [Coding::Gzip, Coding::Deflate] {
        let name = coding.name();
        // Compressed JSON request, compressed JSON reply.
        let packed = compress(body.as_bytes(), coding);
        let got = send(
            gw.data_addr,
            "POST",
            "/v2/models/identity/infer",
            &[("content-encoding", name), ("accept-encoding", name)],
            packed,
        )
        .await;
        assert_eq!(got.status, 200, "{name}");
        assert_eq!(got.header("content-encoding"), Some(name));
        let plain: Value = serde_json::from_slice(&gunzip(&got.body, coding)).unwrap();
        assert_eq!(plain["outputs"][0]["data"], json!([1, 2, 3]));

        // Compressed binary request; compressed binary reply whose IHCL is
        // the uncompressed header length.
        let header = json!({"inputs": [{"name": "IN", "shape": [2], "datatype": "INT32", "parameters": {"binary_data_size": 8}}],
                            "parameters": {"binary_data_output": true}});
        let (raw, n) = binary_body(&header, &[&le_i32(&[7, 8])]);
        let got = send(
            gw.data_addr,
            "POST",
            "/v2/models/identity/infer",
            &[
                ("content-encoding", name),
                ("accept-encoding", name),
                ("inference-header-content-length", &n.to_string()),
            ],
            compress(&raw, coding),
        )
        .await;
        assert_eq!(got.status, 200, "{name}");
        assert_eq!(got.header("content-encoding"), Some(name));
        let plain = gunzip(&got.body, coding);
        let ihcl: usize = got
            .header("inference-header-content-length")
            .unwrap()
            .parse()
            .unwrap();
        let h: Value = serde_json::from_slice(&plain[..ihcl]).unwrap();
        assert_eq!(h["outputs"][0]["parameters"]["binary_data_size"], 8);
        assert_eq!(&plain[ihcl..], &le_i32(&[7, 8])[..]);
    }
}

#[tokio::test]
async fn json_backend_format() {
    // The backend is sent JSON `data`; a binary client still gets binary.
    let (_backend, gw) = setup("json").await;
    for (dtype, shape, data, values) in samples() {
        let header = json!({"inputs": [{"name": "IN", "shape": shape, "datatype": dtype, "parameters": {"binary_data_size": data.len()}}],
                            "parameters": {"binary_data_output": true}});
        let got = post_binary(gw.data_addr, "/v2/models/identity/infer", &header, &[&data]).await;
        assert_eq!(
            got.status,
            200,
            "{dtype}: {}",
            String::from_utf8_lossy(&got.body)
        );
        let (h, rest) = split_binary(&got);
        assert_eq!(h["outputs"][0]["datatype"], dtype);
        if dtype == "FP32" && !data.is_empty() {
            assert!(f32::from_le_bytes(rest[12..16].try_into().unwrap()).is_nan());
            assert_eq!(&rest[16..], &data[16..]);
        } else {
            assert_eq!(&rest[..], &data[..], "{dtype}");
        }
        let body =
            json!({"inputs": [{"name": "IN", "shape": shape, "datatype": dtype, "data": values}]});
        let got = post_json(gw.data_addr, "/v2/models/identity/infer", &body.to_string()).await;
        assert_eq!(got.status, 200);
        assert!(
            same_values(dtype, &got.json()["outputs"][0]["data"], &values),
            "{dtype}"
        );
    }
}

#[tokio::test]
async fn what_a_json_client_sends_reaches_the_backend_as_binary() {
    let backend = TestBackend::start(|_| async { reply(500, &[], "") }).await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    let body = r#"{"id":"7","inputs":[{"name":"A","shape":[2],"datatype":"FP32","data":[1.5,-2]},{"name":"S","shape":[1],"datatype":"BYTES","data":["hé"]}],"outputs":[{"name":"O","parameters":{"classification":2}}]}"#;
    let _ = post_json(gw.data_addr, "/v2/models/m/versions/3/infer", body).await;
    let seen = &backend.requests()[0];
    assert_eq!(seen.path, "/v2/models/m/versions/3/infer");
    assert_eq!(seen.headers["content-type"], "application/octet-stream");
    let n: usize = seen.headers["inference-header-content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        std::str::from_utf8(&seen.body[..n]).unwrap(),
        r#"{"id":"7","inputs":[{"name":"A","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8}},{"name":"S","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":7}}],"outputs":[{"name":"O","parameters":{"classification":2,"binary_data":true}}]}"#
    );
    let mut data = le_f32(&[1.5, -2.0]);
    data.extend_from_slice(b"\x03\x00\x00\x00h\xc3\xa9");
    assert_eq!(&seen.body[n..], &data[..]);
    assert_eq!(seen.headers["content-length"], seen.body.len().to_string());
}

#[tokio::test]
async fn shared_memory_requests_keep_their_output_parameters() {
    let backend = TestBackend::start(|_| async {
        reply(
            200,
            &[("content-type", "application/json")],
            r#"{"outputs":[]}"#,
        )
    })
    .await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    let body = r#"{"inputs":[{"name":"A","shape":[2],"datatype":"FP32","parameters":{"shared_memory_region":"in","shared_memory_byte_size":8}}],"outputs":[{"name":"O","parameters":{"shared_memory_region":"out","shared_memory_byte_size":8}}]}"#;
    let got = post_json(gw.data_addr, "/v2/models/m/infer", body).await;
    assert_eq!(got.status, 200);
    assert_eq!(&got.body[..], br#"{"outputs":[]}"#);
    let seen = &backend.requests()[0];
    let n: usize = seen.headers["inference-header-content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let sent: Value = serde_json::from_slice(&seen.body[..n]).unwrap();
    assert_eq!(
        sent["outputs"],
        json!([{"name":"O","parameters":{"shared_memory_region":"out","shared_memory_byte_size":8}}])
    );
    assert_eq!(
        sent["inputs"][0]["parameters"],
        json!({"shared_memory_region":"in","shared_memory_byte_size":8})
    );
    assert!(sent.get("parameters").is_none());
}

#[tokio::test]
async fn sagemaker_triton_content_type() {
    let (_backend, gw) = setup("binary").await;
    let header = json!({"inputs": [{"name": "IN", "shape": [2], "datatype": "INT32", "parameters": {"binary_data_size": 8}}],
                        "parameters": {"binary_data_output": true}});
    let (body, n) = binary_body(&header, &[&le_i32(&[4, 5])]);
    let ct = format!("application/vnd.sagemaker-triton.binary+json;json-header-size={n}");
    let got = send(
        gw.data_addr,
        "POST",
        "/v2/models/identity/infer",
        &[("content-type", &ct)],
        body,
    )
    .await;
    assert_eq!(got.status, 200);
    let ct = got.header("content-type").unwrap().to_owned();
    let size: usize = ct
        .strip_prefix("application/vnd.sagemaker-triton.binary+json;json-header-size=")
        .unwrap_or_else(|| panic!("{ct}"))
        .parse()
        .unwrap();
    assert_eq!(got.header("inference-header-content-length"), None);
    let h: Value = serde_json::from_slice(&got.body[..size]).unwrap();
    assert_eq!(h["outputs"][0]["parameters"]["binary_data_size"], 8);
    assert_eq!(&got.body[size..], &le_i32(&[4, 5])[..]);
}

#[tokio::test]
async fn http2_cleartext_clients() {
    let (_backend, gw) = setup("binary").await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build_http::<http_body_util::Full<Bytes>>();
    let req = http::Request::post(format!("http://{}/v2/models/identity/infer", gw.data_addr))
        .body(http_body_util::Full::new(Bytes::from_static(
            br#"{"inputs":[{"name":"IN","shape":[1],"datatype":"INT64","data":[9]}]}"#,
        )))
        .unwrap();
    let resp = client.request(req).await.unwrap();
    assert_eq!(resp.version(), http::Version::HTTP_2);
    assert_eq!(resp.status(), 200);
    use http_body_util::BodyExt;
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["outputs"][0]["data"], json!([9]));
    // Passthrough over HTTP/2 too: the backend gets HTTP/1.1.
    let req = http::Request::get(format!("http://{}/v2/models/identity", gw.data_addr))
        .body(http_body_util::Full::new(Bytes::new()))
        .unwrap();
    let resp = client.request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["name"], json!("identity"));
}
