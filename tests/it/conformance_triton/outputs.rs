//! Which outputs come back and how: `outputs` lists, `binary_data_output`
//! and per-output `binary_data` (TRITON-FACTS §2), mixed JSON/binary
//! replies, compression both ways, raw binary requests and the SageMaker
//! content type.

use super::{conforms, plain_gateway};
use crate::common::{TestBackend, reply};
use crate::harness::reply::{EXACT, Reply, Strict, decode_pair, same};
use crate::harness::values::encode;
use crate::harness::{Matrix, Req, compress, infer_path};
use crate::{ensure, ensure_eq, triton};

const INPUT0: [i32; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, i32::MAX];
const INPUT1: [i32; 16] = [1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 8, i32::MIN];

fn le(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn join(v: &[i32]) -> String {
    v.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

/// A request to `simple` with `extra` members (`,"outputs":[...]` etc.),
/// JSON or binary input.
fn simple(extra: &str, binary: bool, batch: usize) -> Req {
    let path = infer_path("simple");
    let rows = |v: &[i32]| vec![join(v); batch].join(",");
    if binary {
        let (a, b) = (le(&INPUT0).repeat(batch), le(&INPUT1).repeat(batch));
        let header = format!(
            r#"{{"inputs":[{{"name":"INPUT0","datatype":"INT32","shape":[{batch},16],"parameters":{{"binary_data_size":{}}}}},{{"name":"INPUT1","datatype":"INT32","shape":[{batch},16],"parameters":{{"binary_data_size":{}}}}}]{extra}}}"#,
            a.len(),
            b.len()
        );
        Req::binary(path, &header, &[&a, &b])
    } else {
        Req::json(
            path,
            format!(
                r#"{{"inputs":[{{"name":"INPUT0","datatype":"INT32","shape":[{batch},16],"data":[{}]}},{{"name":"INPUT1","datatype":"INT32","shape":[{batch},16],"data":[{}]}}]{extra}}}"#,
                rows(&INPUT0),
                rows(&INPUT1)
            ),
        )
    }
}

const SELECTIONS: [(&str, &str); 13] = [
    ("no outputs", ""),
    (
        "binary_data_output",
        r#","parameters":{"binary_data_output":true}"#,
    ),
    ("[OUTPUT1]", r#","outputs":[{"name":"OUTPUT1"}]"#),
    (
        "bdo + [OUTPUT1]",
        r#","parameters":{"binary_data_output":true},"outputs":[{"name":"OUTPUT1"}]"#,
    ),
    (
        "bdo + OUTPUT0 binary_data=false",
        r#","parameters":{"binary_data_output":true},"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":false}}]"#,
    ),
    (
        "bdo=false + OUTPUT1 binary_data=true",
        r#","parameters":{"binary_data_output":false},"outputs":[{"name":"OUTPUT1","parameters":{"binary_data":true}}]"#,
    ),
    (
        "OUTPUT0 json + OUTPUT1 binary",
        r#","outputs":[{"name":"OUTPUT0"},{"name":"OUTPUT1","parameters":{"binary_data":true}}]"#,
    ),
    (
        "[OUTPUT1, OUTPUT0]",
        r#","outputs":[{"name":"OUTPUT1"},{"name":"OUTPUT0"}]"#,
    ),
    (
        "OUTPUT0 twice",
        r#","outputs":[{"name":"OUTPUT0"},{"name":"OUTPUT0"}]"#,
    ),
    ("unknown output", r#","outputs":[{"name":"NOPE"}]"#),
    (
        "classification 2",
        r#","outputs":[{"name":"OUTPUT0","parameters":{"classification":2}}]"#,
    ),
    (
        "id + request parameters",
        r#","id":"req-42","parameters":{"foo":"bar","n":3}"#,
    ),
    (
        "unknown output parameter",
        r#","outputs":[{"name":"OUTPUT1","parameters":{"whatever":1}}]"#,
    ),
];

#[tokio::test]
async fn simple_output_selection() {
    let triton = triton!();
    let _stats = super::STATS.read().await;
    let running = plain_gateway(triton).await;
    let gw = running.data_addr;
    let mut m = Matrix::new(super::SUITE, "output selection (simple)");
    for (name, extra) in SELECTIONS {
        for (input, binary) in [("JSON input", false), ("binary input", true)] {
            let req = simple(extra, binary, 1);
            m.record(
                name,
                input,
                conforms(triton, gw, &req, EXACT).await.map(drop),
            );
        }
    }
    for (input, binary) in [("JSON input", false), ("binary input", true)] {
        let req = simple(r#","parameters":{"binary_data_output":true}"#, binary, 3);
        m.record(
            "batch of 3, binary",
            input,
            conforms(triton, gw, &req, EXACT).await.map(drop),
        );
        let req = simple("", binary, 3);
        m.record(
            "batch of 3, JSON",
            input,
            conforms(triton, gw, &req, EXACT).await.map(drop),
        );
    }
    m.finish();
}

const MIXED: [(&str, &str); 6] = [
    ("all JSON", ""),
    ("all binary", r#","parameters":{"binary_data_output":true}"#),
    (
        "FP32 binary, INT64 JSON",
        r#","outputs":[{"name":"OUT_FP32","parameters":{"binary_data":true}},{"name":"OUT_INT64"}]"#,
    ),
    (
        "FP32 JSON, INT64 binary",
        r#","outputs":[{"name":"OUT_FP32","parameters":{"binary_data":false}},{"name":"OUT_INT64","parameters":{"binary_data":true}}]"#,
    ),
    (
        "listed in reverse, mixed",
        r#","outputs":[{"name":"OUT_INT64","parameters":{"binary_data":true}},{"name":"OUT_FP32"}]"#,
    ),
    (
        "bdo + INT64 only",
        r#","parameters":{"binary_data_output":true},"outputs":[{"name":"OUT_INT64"}]"#,
    ),
];

#[tokio::test]
async fn two_outputs_mixed() {
    let triton = triton!();
    let _stats = super::STATS.read().await;
    let running = plain_gateway(triton).await;
    let gw = running.data_addr;
    let mut m = Matrix::new(super::SUITE, "mixed outputs (two_outputs)");
    let lits = [
        "1.5", "-2.5", "0.1", "NaN", "Infinity", "2.5", "3.4e9", "-0.0",
    ];
    let data = encode("FP32", &lits);
    for (name, extra) in MIXED {
        let json = Req::json(
            infer_path("two_outputs"),
            format!(
                r#"{{"id":"m","inputs":[{{"name":"INPUT0","datatype":"FP32","shape":[8],"data":[{}]}}]{extra}}}"#,
                lits.join(",")
            ),
        );
        m.record(
            name,
            "JSON input",
            conforms(triton, gw, &json, EXACT).await.map(drop),
        );
        let header = format!(
            r#"{{"id":"m","inputs":[{{"name":"INPUT0","datatype":"FP32","shape":[8],"parameters":{{"binary_data_size":32}}}}]{extra}}}"#
        );
        let bin = Req::binary(infer_path("two_outputs"), &header, &[&data]);
        m.record(
            name,
            "binary input",
            conforms(triton, gw, &bin, EXACT).await.map(drop),
        );
    }
    m.finish();
}

/// Request bodies compressed; replies compressed as `Accept-Encoding` asks.
#[tokio::test]
async fn compression() {
    let triton = triton!();
    let _stats = super::STATS.read().await;
    let running = plain_gateway(triton).await;
    let gw = running.data_addr;
    let mut m = Matrix::new(super::SUITE, "compression");
    let bdo = r#","parameters":{"binary_data_output":true}"#;
    for (input, binary) in [("JSON input", false), ("binary input", true)] {
        for coding in ["gzip", "deflate"] {
            for (out, extra) in [("JSON out", ""), ("binary out", bdo)] {
                let mut req = simple(extra, binary, 1);
                req.body = compress(coding, &req.body).into();
                let req = req.header("content-encoding", coding);
                let col = format!("{coding} request, {out}");
                m.record(
                    input,
                    &col,
                    conforms(triton, gw, &req, EXACT).await.map(drop),
                );
            }
        }
        for accept in ["gzip", "deflate", "gzip;q=0, deflate", "br", "identity"] {
            for (out, extra) in [("JSON out", ""), ("binary out", bdo)] {
                let req = simple(extra, binary, 1).header("accept-encoding", accept);
                let col = format!("Accept-Encoding: {accept}, {out}");
                let r = conforms(triton, gw, &req, EXACT).await.and_then(|(d, v)| {
                    // IHCL is the uncompressed header length: decoding
                    // split the decompressed body with it.
                    ensure_eq!(d.header_len, v.header_len, "IHCL");
                    Ok(())
                });
                m.record(input, &col, r);
            }
        }
        let bad =
            simple(r#","outputs":[{"name":"NOPE"}]"#, binary, 1).header("accept-encoding", "gzip");
        let r = conforms(triton, gw, &bad, EXACT).await.and_then(|(_, v)| {
            ensure!(v.content_encoding.is_none(), "error reply compressed");
            Ok(())
        });
        m.record(input, "error reply, Accept-Encoding: gzip", r);
    }
    m.finish();
}

/// `Inference-Header-Content-Length: 0`: the body is the model's single input.
#[tokio::test]
async fn raw_binary_requests() {
    let triton = triton!();
    let _stats = super::STATS.read().await;
    let running = plain_gateway(triton).await;
    let gw = running.data_addr;
    let mut m = Matrix::new(super::SUITE, "raw binary (IHCL 0)");
    let fp32 = encode("FP32", &["1.5", "-0.0", "NaN"]);
    type Case = (
        &'static str,
        &'static str,
        Vec<u8>,
        &'static [(&'static str, &'static str)],
    );
    let cases: [Case; 6] = [
        ("identity_fp32", "12 bytes", fp32.clone(), &[]),
        (
            "identity_fp32",
            "12 bytes, Accept-Encoding: gzip",
            fp32,
            &[("accept-encoding", "gzip")],
        ),
        ("identity_fp32", "10 bytes", vec![7; 10], &[]),
        (
            "identity_int8",
            "5 bytes",
            vec![0x80, 0xff, 0, 1, 0x7f],
            &[],
        ),
        (
            "identity_bytes",
            "BYTES",
            b"\x02\x00\x00\x00hi".to_vec(),
            &[],
        ),
        ("simple", "two inputs", vec![0; 64], &[]),
    ];
    for (model, what, body, headers) in cases {
        let mut req =
            Req::post(infer_path(model), body).header("inference-header-content-length", "0");
        for (k, v) in headers {
            req = req.header(k, v);
        }
        let r = async {
            let direct = req.send(triton).await;
            let via = req.send(gw).await;
            let (d, v) = decode_pair(&direct, &via)?;
            same(&d, &v, EXACT)?;
            if d.content_encoding.is_none() {
                ensure!(direct.body == via.body, "bodies differ");
            }
            Ok(())
        }
        .await;
        m.record(model, what, r);
    }
    m.finish();
}

/// `application/vnd.sagemaker-triton.binary+json;json-header-size=N` through
/// tensorgate, against the same body with IHCL sent to Triton (whose normal
/// HTTP port ignores the SageMaker type).
#[tokio::test]
async fn sagemaker_content_type() {
    let triton = triton!();
    let _stats = super::STATS.read().await;
    let running = plain_gateway(triton).await;
    let gw = running.data_addr;
    let mut m = Matrix::new(super::SUITE, "SageMaker content type");
    let bdo = r#","parameters":{"binary_data_output":true}"#;
    let mixed =
        r#","outputs":[{"name":"OUTPUT0"},{"name":"OUTPUT1","parameters":{"binary_data":true}}]"#;
    for (out, extra) in [
        ("JSON outputs", ""),
        ("binary outputs", bdo),
        ("mixed outputs", mixed),
    ] {
        let plain = simple(extra, true, 1);
        let n = plain.headers[0].1.clone();
        let mut sm = plain.clone();
        sm.headers = vec![(
            "content-type".into(),
            format!("application/vnd.sagemaker-triton.binary+json;json-header-size={n}"),
        )];
        let r = async {
            let d = Reply::decode(&plain.send(triton).await)?;
            let via = sm.send(gw).await;
            let v = Reply::decode(&via)?;
            same(
                &d,
                &v,
                Strict {
                    headers: false,
                    members: true,
                },
            )?;
            ensure!(!v.has_ihcl, "IHCL header on a SageMaker reply");
            if d.has_ihcl {
                let ct = v.content_type.clone().unwrap_or_default();
                ensure!(
                    ct.starts_with(
                        "application/vnd.sagemaker-triton.binary+json;json-header-size="
                    ),
                    "gateway content-type {ct:?}"
                );
            } else {
                ensure_eq!(v.content_type, d.content_type, "content-type");
            }
            Ok(())
        }
        .await;
        m.record("binary input", out, r);
    }
    m.finish();
}

/// Triton 2.51's reply to an identity_fp32 request for an empty tensor with
/// binary outputs asked (as the gateway asks): `application/json`, no IHCL,
/// and `binary_data_size` 0 in place of `data`. Recorded, so this runs
/// without Triton.
const EMPTY_BINARY_REPLY: &str = r#"{"model_name":"identity_fp32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"FP32","shape":[0],"parameters":{"binary_data_size":0}}]}"#;

/// A client asking for JSON must get `"data":[]`, as from Triton directly,
/// not the `binary_data_size` the gateway's binary request produced.
#[tokio::test]
async fn recorded_empty_tensor_reply_becomes_json_data() {
    let backend = TestBackend::start(|_| async {
        reply(
            200,
            &[("content-type", "application/json")],
            EMPTY_BINARY_REPLY,
        )
    })
    .await;
    let gw = plain_gateway(backend.addr).await;
    let req = Req::json(
        infer_path("identity_fp32"),
        r#"{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[0],"data":[]}]}"#,
    );
    let got = req.send(gw.data_addr).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.header("content-type"), Some("application/json"));
    assert_eq!(
        got.json()["outputs"][0],
        serde_json::json!({"name":"OUTPUT0","datatype":"FP32","shape":[0],"data":[]}),
        "{:?}",
        String::from_utf8_lossy(&got.body)
    );
    // The same reply to a client that asked for binary is a binary reply.
    let bin = Req::json(
        infer_path("identity_fp32"),
        r#"{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[0],"data":[]}],"parameters":{"binary_data_output":true}}"#,
    );
    let got = bin.send(gw.data_addr).await;
    assert_eq!(got.status, 200);
    let v = Reply::decode(&got).unwrap();
    assert!(v.outputs()[0].binary && v.outputs()[0].values.len() == 0);
    gw.shutdown().await;
}

/// Triton's reply to a raw request for identity_fp32 (12 bytes): binary,
/// IHCL 148. Recorded, so this runs without Triton.
fn raw_reply() -> (String, Vec<u8>) {
    let header = r#"{"model_name":"identity_fp32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"FP32","shape":[3],"parameters":{"binary_data_size":12}}]}"#;
    let mut body = header.as_bytes().to_vec();
    body.extend_from_slice(&encode("FP32", &["1", "2", "3"]));
    (header.len().to_string(), body)
}

/// A raw request's reply is compressed when the client accepts it, as
/// Triton does, with IHCL still the uncompressed header length.
#[tokio::test]
async fn recorded_raw_reply_is_compressed_when_accepted() {
    let backend = TestBackend::start(|_| async {
        let (ihcl, body) = raw_reply();
        reply(
            200,
            &[
                ("content-type", "application/octet-stream"),
                ("inference-header-content-length", &ihcl),
            ],
            body,
        )
    })
    .await;
    let gw = plain_gateway(backend.addr).await;
    let req = Req::post(
        infer_path("identity_fp32"),
        encode("FP32", &["1", "2", "3"]),
    )
    .header("inference-header-content-length", "0")
    .header("accept-encoding", "gzip");
    let got = req.send(gw.data_addr).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.header("content-encoding"), Some("gzip"));
    let (ihcl, body) = raw_reply();
    assert_eq!(
        got.header("inference-header-content-length"),
        Some(ihcl.as_str())
    );
    assert_eq!(crate::harness::decompress("gzip", &got.body).unwrap(), body);
    gw.shutdown().await;
}
