//! Errors. Triton's own errors reach the client unchanged (status,
//! Content-Type and body byte for byte) on a route without rules. What
//! tensorgate checks itself (framing, JSON syntax, value ranges, encodings,
//! route rules and limits) it answers with a 400/413/415 `{"error": ...}`
//! before Triton is asked: a tap in front of Triton sees nothing and
//! Triton's statistics do not move.

use std::net::SocketAddr;

use super::{conforms, plain_gateway};
use crate::common::{self, TestBackend};
use crate::harness::reply::{EXACT, Reply, same};
use crate::harness::values::encode_bytes;
use crate::harness::{Matrix, Req, compress, infer_path, tap};
use crate::{ensure, ensure_eq, triton};

fn simple_json(inputs: &str, extra: &str) -> Req {
    Req::json(
        infer_path("simple"),
        format!(r#"{{"inputs":[{inputs}]{extra}}}"#),
    )
}

fn int32(name: &str, shape: &str, n: usize) -> String {
    let data = (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    format!(r#"{{"name":"{name}","datatype":"INT32","shape":{shape},"data":[{data}]}}"#)
}

fn int32_bin(name: &str, shape: &str, size: usize) -> String {
    format!(
        r#"{{"name":"{name}","datatype":"INT32","shape":{shape},"parameters":{{"binary_data_size":{size}}}}}"#
    )
}

/// The same case as a binary-extension request.
fn simple_bin(inputs: &[(&str, &str, usize)], extra: &str, tail: &[u8]) -> Req {
    let heads: Vec<String> = inputs
        .iter()
        .map(|(n, s, size)| int32_bin(n, s, *size))
        .collect();
    let header = format!(r#"{{"inputs":[{}]{extra}}}"#, heads.join(","));
    let mut data: Vec<u8> = inputs
        .iter()
        .flat_map(|(_, _, size)| vec![1u8; *size])
        .collect();
    data.extend_from_slice(tail);
    Req::binary(infer_path("simple"), &header, &[&data])
}

fn backend_error_cases() -> Vec<(&'static str, &'static str, Req)> {
    let ok0 = int32("INPUT0", "[1,16]", 16);
    let ok1 = int32("INPUT1", "[1,16]", 16);
    let j = |inputs: &[&str], extra: &str| simple_json(&inputs.join(","), extra);
    let b = |inputs: &[(&str, &str, usize)], extra: &str| simple_bin(inputs, extra, b"");
    let both = [("INPUT0", "[1,16]", 64), ("INPUT1", "[1,16]", 64)];
    vec![
        (
            "unknown model",
            "JSON",
            Req::json(infer_path("nope"), r#"{"inputs":[]}"#),
        ),
        ("unknown model", "binary", {
            let mut r = b(&both, "");
            r.path = infer_path("nope");
            r
        }),
        ("unknown version", "JSON", {
            let mut r = j(&[&ok0, &ok1], "");
            r.path = "/v2/models/simple/versions/7/infer".into();
            r
        }),
        (
            "wrong shape [1,8]",
            "JSON",
            j(&[&ok0, &int32("INPUT1", "[1,8]", 8)], ""),
        ),
        (
            "wrong shape [1,8]",
            "binary",
            b(&[both[0], ("INPUT1", "[1,8]", 32)], ""),
        ),
        (
            "no batch dimension",
            "JSON",
            j(
                &[&int32("INPUT0", "[16]", 16), &int32("INPUT1", "[16]", 16)],
                "",
            ),
        ),
        (
            "batch 9 > max 8",
            "binary",
            b(&[("INPUT0", "[9,16]", 576), ("INPUT1", "[9,16]", 576)], ""),
        ),
        (
            "wrong datatype INT64",
            "JSON",
            j(&[&ok0, &ok1.replace("INT32", "INT64")], ""),
        ),
        ("wrong datatype INT64", "binary", {
            let mut r = simple_bin(&[both[0]], "", b"");
            let header = format!(
                r#"{{"inputs":[{},{{"name":"INPUT1","datatype":"INT64","shape":[1,16],"parameters":{{"binary_data_size":128}}}}]}}"#,
                int32_bin("INPUT0", "[1,16]", 64)
            );
            let mut body = header.clone().into_bytes();
            body.extend_from_slice(&[1u8; 192]);
            r.body = body.into();
            r.headers = vec![(
                "inference-header-content-length".into(),
                header.len().to_string(),
            )];
            r
        }),
        ("missing input", "JSON", j(&[&ok0], "")),
        ("missing input", "binary", b(&both[..1], "")),
        (
            "extra input",
            "JSON",
            j(&[&ok0, &ok1, &int32("INPUT9", "[1,16]", 16)], ""),
        ),
        (
            "unknown output",
            "JSON",
            j(&[&ok0, &ok1], r#","outputs":[{"name":"NOPE"}]"#),
        ),
        ("non-string id", "JSON", j(&[&ok0, &ok1], r#","id":5"#)),
        (
            "decoupled model on /infer",
            "JSON",
            Req::json(
                infer_path("decoupled_repeat"),
                r#"{"inputs":[{"name":"text_input","datatype":"BYTES","shape":[1],"data":["hi"]}]}"#,
            ),
        ),
        ("GET /infer", "-", Req::get(infer_path("simple"))),
        (
            "raw request, wrong size",
            "binary",
            Req::post(infer_path("identity_fp32"), vec![0u8; 10])
                .header("inference-header-content-length", "0"),
        ),
    ]
}

#[tokio::test]
async fn triton_errors_pass_through_unchanged() {
    let triton = triton!();
    let _stats = super::STATS.read().await;
    let running = plain_gateway(triton).await;
    let gw = running.data_addr;
    let mut m = Matrix::new(super::SUITE, "errors from Triton (passed through)");
    for (case, input, req) in backend_error_cases() {
        let r = async {
            let direct = req.send(triton).await;
            let via = req.send(gw).await;
            ensure!(
                !direct.status.is_success(),
                "Triton accepted it: {}",
                direct.status
            );
            ensure_eq!(direct.status, via.status, "status");
            ensure_eq!(
                direct.header("content-type"),
                via.header("content-type"),
                "content-type"
            );
            ensure!(
                direct.body == via.body,
                "bodies differ: {:?} vs {:?}",
                String::from_utf8_lossy(&direct.body),
                String::from_utf8_lossy(&via.body)
            );
            let e = Reply::decode(&via)?;
            ensure!(
                e.error().is_some(),
                "not an {{\"error\"}} body: {}",
                e.text()
            );
            Ok(())
        }
        .await;
        m.record(case, input, r);
    }
    m.finish();
}

/// Counts of what reached Triton for `model`: (tap requests, statistics).
/// Triton counts an inference after its answer is sent, so the statistics
/// are read until two reads 20 ms apart agree (at most a second): a direct
/// request answered just before would otherwise land between `before` and
/// `after` (seen once in CI, on the one case Triton answers 200).
async fn reached(tap: &TestBackend, triton: SocketAddr, model: &str) -> (usize, u64) {
    let mut count = crate::harness::triton_model_count(triton, model).await;
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let again = crate::harness::triton_model_count(triton, model).await;
        if again == count {
            break;
        }
        count = again;
    }
    (tap.requests().len(), count)
}

/// One request the gateway must answer itself with `want` while Triton
/// answers it directly with `triton_status`.
struct Own {
    case: &'static str,
    model: &'static str,
    req: Req,
    triton_status: u16,
    want: u16,
}

fn own_cases() -> Vec<Own> {
    let both = [("INPUT0", "[1,16]", 64), ("INPUT1", "[1,16]", 64)];
    let short = {
        let mut r = simple_bin(&both, "", b"");
        let mut body = r.body.to_vec();
        body.truncate(body.len() - 4);
        r.body = body.into();
        r
    };
    let ihcl = |value: &str| {
        let mut r = simple_bin(&both, "", b"");
        r.headers = vec![("inference-header-content-length".into(), value.into())];
        r
    };
    let body_len = simple_bin(&both, "", b"").body.len();
    let id_json = |dtype: &str, data: &str| {
        Req::json(
            infer_path(&format!("identity_{}", dtype.to_ascii_lowercase())),
            format!(
                r#"{{"inputs":[{{"name":"INPUT0","datatype":"{dtype}","shape":[2],"data":{data}}}]}}"#
            ),
        )
    };
    let bytes_short = {
        let data = b"\x64\x00\x00\x00abc".to_vec();
        let header = format!(
            r#"{{"inputs":[{{"name":"INPUT0","datatype":"BYTES","shape":[1],"parameters":{{"binary_data_size":{}}}}}]}}"#,
            data.len()
        );
        Req::binary(infer_path("identity_bytes"), &header, &[&data])
    };
    let mut corrupt_gzip = simple_json(&int32("INPUT0", "[1,16]", 16), "");
    corrupt_gzip.body = compress("gzip", &corrupt_gzip.body)[..20].to_vec().into();
    let o = |case, model, req, triton_status, want| Own {
        case,
        model,
        req,
        triton_status,
        want,
    };
    let ok0 = int32("INPUT0", "[1,16]", 16);
    let ok1 = int32("INPUT1", "[1,16]", 16);
    vec![
        o(
            "duplicate input",
            "simple",
            simple_json(&format!("{ok0},{ok0},{ok1}"), ""),
            400,
            400,
        ),
        o(
            "neither data nor binary_data_size",
            "simple",
            simple_json(
                &format!(r#"{ok0},{{"name":"INPUT1","datatype":"INT32","shape":[1,16]}}"#),
                "",
            ),
            400,
            400,
        ),
        o(
            "unknown model, body without inputs",
            "simple",
            Req::json(infer_path("nope"), "{}"),
            404,
            400,
        ),
        o(
            "trailing bytes",
            "simple",
            simple_bin(&both, "", b"xx"),
            400,
            400,
        ),
        o(
            "body shorter than binary_data_size",
            "simple",
            short,
            400,
            400,
        ),
        o(
            "binary_data_size != shape",
            "simple",
            simple_bin(&[both[0], ("INPUT1", "[1,16]", 60)], "", b""),
            400,
            400,
        ),
        o(
            "IHCL > body length",
            "simple",
            ihcl(&(body_len + 10).to_string()),
            400,
            400,
        ),
        o("IHCL -1", "simple", ihcl("-1"), 400, 400),
        o(
            "IHCL not a number (Triton: raw request)",
            "identity_fp32",
            Req::post(infer_path("identity_fp32"), vec![0u8; 12])
                .header("inference-header-content-length", "abc"),
            200,
            400,
        ),
        o(
            "malformed JSON",
            "simple",
            Req::json(infer_path("simple"), r#"{"inputs":["#),
            500,
            400,
        ),
        o(
            "JSON element count != shape",
            "simple",
            simple_json(
                &format!(
                    "{},{}",
                    int32("INPUT0", "[1,16]", 15),
                    int32("INPUT1", "[1,16]", 16)
                ),
                "",
            ),
            500,
            400,
        ),
        o(
            "UINT8 300 (Triton wraps to 44)",
            "identity_uint8",
            id_json("UINT8", "[300,1]"),
            200,
            400,
        ),
        o(
            "INT32 2147483648 (Triton wraps)",
            "identity_int32",
            id_json("INT32", "[2147483648,1]"),
            200,
            400,
        ),
        o(
            "INT8 -129 (Triton wraps)",
            "identity_int8",
            id_json("INT8", "[-129,1]"),
            200,
            400,
        ),
        o(
            "FP32 1e39 (Triton: Infinity)",
            "identity_fp32",
            id_json("FP32", "[1e39,1]"),
            200,
            400,
        ),
        o(
            "BOOL as 0/1",
            "identity_bool",
            id_json("BOOL", "[0,1]"),
            500,
            400,
        ),
        o(
            "INT32 as 1.5",
            "identity_int32",
            id_json("INT32", "[1.5,1]"),
            500,
            400,
        ),
        o(
            "FP32 as string \"1.5\"",
            "identity_fp32",
            id_json("FP32", r#"["1.5",1]"#),
            500,
            400,
        ),
        o(
            "BYTES element past its data",
            "identity_bytes",
            bytes_short,
            400,
            400,
        ),
        o(
            "Content-Encoding: br",
            "simple",
            simple_json(&int32("INPUT0", "[1,16]", 16), "").header("content-encoding", "br"),
            501,
            415,
        ),
        o(
            "corrupt gzip body (Triton: empty raw request)",
            "simple",
            corrupt_gzip.header("content-encoding", "gzip"),
            400,
            400,
        ),
    ]
}

#[tokio::test]
async fn tensorgate_answers_before_triton() {
    let triton = triton!();
    let _stats = super::STATS.write().await;
    let tap = tap(triton).await;
    let running = plain_gateway(tap.addr).await;
    let gw = running.data_addr;
    let mut m = Matrix::new(super::SUITE, "errors from tensorgate (Triton not asked)");
    for c in own_cases() {
        let r = async {
            let direct = c.req.send(triton).await;
            ensure_eq!(
                direct.status.as_u16(),
                c.triton_status,
                "Triton direct status ({:?})",
                String::from_utf8_lossy(&direct.body)
            );
            let before = reached(&tap, triton, c.model).await;
            let via = c.req.send(gw).await;
            let after = reached(&tap, triton, c.model).await;
            ensure_eq!(
                via.status.as_u16(),
                c.want,
                "gateway status ({:?})",
                String::from_utf8_lossy(&via.body)
            );
            ensure_eq!(
                via.header("content-type"),
                Some("application/json"),
                "content-type"
            );
            let e = Reply::decode(&via)?;
            ensure!(
                e.error().is_some(),
                "not an {{\"error\"}} body: {}",
                e.text()
            );
            ensure_eq!(
                before,
                after,
                "requests seen by the tap / Triton's statistics"
            );
            Ok(())
        }
        .await;
        let row = format!(
            "{} (Triton {}, tensorgate {})",
            c.case, c.triton_status, c.want
        );
        m.record(&row, "-", r);
    }
    m.finish();
}

/// A route with rules for `simple` and small limits, and a tap before Triton.
async fn rules_gateway(tap: SocketAddr) -> tensorgate::server::Running {
    common::gateway(&format!(
        r#"
[server]
shutdown_grace = "1s"
[backends.triton]
url = "http://{tap}"
request_timeout = "30s"
[[routes]]
name = "simple-rules"
models = ["simple"]
backend = "triton"
backend_format = "binary"
[routes.limits]
max_body_bytes = 4096
max_elements_per_tensor = 64
max_dims = 4
[routes.inputs.INPUT0]
shape = [-1, 16]
allowed_types = ["INT32"]
[routes.inputs.INPUT1]
shape = [-1, 16]
allowed_types = ["i32"]
[[routes]]
name = "default"
default = true
backend = "triton"
"#
    ))
    .await
}

#[tokio::test]
async fn route_rules_before_triton() {
    let triton = triton!();
    let _stats = super::STATS.write().await;
    let tap = tap(triton).await;
    let gw = rules_gateway(tap.addr).await;
    let addr = gw.data_addr;
    let mut m = Matrix::new(super::SUITE, "route rules and limits (Triton not asked)");
    let ok0 = int32("INPUT0", "[1,16]", 16);
    let ok1 = int32("INPUT1", "[1,16]", 16);
    let both = [("INPUT0", "[1,16]", 64), ("INPUT1", "[1,16]", 64)];
    let padded = {
        let mut r = simple_json(&format!("{ok0},{ok1}"), "");
        let mut body = r.body.to_vec();
        body.extend(std::iter::repeat_n(b' ', 5000));
        r.body = body.into();
        r
    };
    let cases: Vec<(&str, &str, Req, u16)> = vec![
        (
            "wrong shape [1,8]",
            "JSON",
            simple_json(&format!("{ok0},{}", int32("INPUT1", "[1,8]", 8)), ""),
            400,
        ),
        (
            "wrong shape [1,8]",
            "binary",
            simple_bin(&[both[0], ("INPUT1", "[1,8]", 32)], "", b""),
            400,
        ),
        (
            "wrong datatype INT64",
            "JSON",
            simple_json(&format!("{ok0},{}", ok1.replace("INT32", "INT64")), ""),
            400,
        ),
        ("missing required input", "JSON", simple_json(&ok0, ""), 400),
        (
            "missing required input",
            "binary",
            simple_bin(&both[..1], "", b""),
            400,
        ),
        (
            "unknown input",
            "JSON",
            simple_json(
                &format!("{ok0},{ok1},{}", int32("INPUT9", "[1,16]", 16)),
                "",
            ),
            400,
        ),
        (
            "over max_elements_per_tensor",
            "binary",
            simple_bin(
                &[("INPUT0", "[8,16]", 512), ("INPUT1", "[8,16]", 512)],
                "",
                b"",
            ),
            400,
        ),
        (
            "over max_dims",
            "JSON",
            simple_json(
                &format!("{},{ok1}", int32("INPUT0", "[1,1,1,1,1,16]", 16)),
                "",
            ),
            400,
        ),
        ("over max_body_bytes", "JSON", padded, 413),
    ];
    for (case, input, req, want) in cases {
        let r = async {
            let direct = req.send(triton).await;
            let before = reached(&tap, triton, "simple").await;
            let via = req.send(addr).await;
            let after = reached(&tap, triton, "simple").await;
            ensure_eq!(
                via.status.as_u16(),
                want,
                "gateway status ({:?})",
                String::from_utf8_lossy(&via.body)
            );
            let e = Reply::decode(&via)?;
            let msg = e
                .error()
                .ok_or_else(|| format!("not an error body: {}", e.text()))?;
            ensure!(
                msg.contains("simple-rules"),
                "error does not name the route: {msg}"
            );
            ensure_eq!(
                before,
                after,
                "requests seen by the tap / Triton's statistics"
            );
            // Triton itself would refuse these too, or (limits) accept them.
            ensure!(
                direct.status.is_client_error() || direct.status.is_success(),
                "Triton direct {}",
                direct.status
            );
            Ok(())
        }
        .await;
        m.record(case, input, r);
    }
    // A request that passes the rules reaches Triton exactly once and comes
    // back as Triton's own reply.
    for (input, req) in [
        ("JSON", simple_json(&format!("{ok0},{ok1}"), "")),
        (
            "binary",
            simple_bin(&both, r#","parameters":{"binary_data_output":true}"#, b""),
        ),
    ] {
        let r = async {
            let before = reached(&tap, triton, "simple").await;
            let via = Reply::decode(&req.send(addr).await)?;
            let after = reached(&tap, triton, "simple").await;
            ensure_eq!(after.0, before.0 + 1, "tap requests");
            ensure!(after.1 > before.1, "Triton's statistics did not move");
            let direct = Reply::decode(&req.send(triton).await)?;
            same(&direct, &via, EXACT)
        }
        .await;
        m.record("passes the rules", input, r);
    }
    gw.shutdown().await;
    m.finish();
}

/// A datatype the model does not take, in a body the gateway finds well
/// formed: Triton's error, unchanged.
#[tokio::test]
async fn triton_datatype_errors_pass_through() {
    let triton = triton!();
    let _stats = super::STATS.read().await;
    let running = plain_gateway(triton).await;
    let gw = running.data_addr;
    let mut m = Matrix::new(
        super::SUITE,
        "errors from Triton (datatype mismatch, passed through)",
    );
    let data = encode_bytes(&[b"x"]);
    let header = format!(
        r#"{{"inputs":[{{"name":"INPUT0","datatype":"BYTES","shape":[1],"parameters":{{"binary_data_size":{}}}}}]}}"#,
        data.len()
    );
    let mut req = Req::binary(infer_path("identity_fp32"), &header, &[&data]);
    let r = async {
        let (d, v) = conforms(triton, gw, &req, EXACT).await?;
        ensure_eq!(d.status, 400, "status");
        let _ = v;
        Ok(())
    }
    .await;
    m.record("BYTES to an FP32 model", "binary", r);
    req.path = infer_path("identity_int8");
    m.record(
        "BYTES to an INT8 model",
        "binary",
        conforms(triton, gw, &req, EXACT).await.map(drop),
    );
    m.finish();
}
