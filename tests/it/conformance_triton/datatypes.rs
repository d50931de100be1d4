//! Every V2 datatype through its `identity_<dtype>` model, in every
//! combination of JSON/binary input and output, plus empty tensors and
//! BYTES that are not UTF-8.

use std::net::SocketAddr;

use super::{exchange, plain_gateway};
use crate::harness::reply::{EXACT, Reply, same, same_values};
use crate::harness::values::{DTYPES, encode, encode_bytes, identity_model, literals};
use crate::harness::{Matrix, Req, infer_path};
use crate::{ensure, ensure_eq, triton};

const MODES: [&str; 6] = [
    "json→json",
    "bin→bin",
    "json→bin",
    "bin→json",
    "empty json→json",
    "empty bin→bin",
];

fn half(dtype: &str) -> bool {
    matches!(dtype, "FP16" | "BF16")
}

/// The request for `dtype` in `mode`: JSON or binary input, JSON or binary
/// output, the literal values or an empty tensor.
fn request(dtype: &str, mode: &str, id: &str) -> Req {
    let path = infer_path(&identity_model(dtype));
    let empty = mode.starts_with("empty");
    let lits: &[&str] = if empty { &[] } else { literals(dtype) };
    let (json_in, bin_out) = match mode.trim_start_matches("empty ") {
        "json→json" => (true, false),
        "bin→bin" => (false, true),
        "json→bin" => (true, true),
        _ => (false, false),
    };
    let params = if bin_out {
        r#","parameters":{"binary_data_output":true}"#
    } else {
        ""
    };
    let n = lits.len();
    if json_in {
        let body = format!(
            r#"{{"id":"{id}","inputs":[{{"name":"INPUT0","datatype":"{dtype}","shape":[{n}],"data":[{}]}}]{params}}}"#,
            lits.join(",")
        );
        Req::json(path, body)
    } else {
        let data = encode(dtype, lits);
        let header = format!(
            r#"{{"id":"{id}","inputs":[{{"name":"INPUT0","datatype":"{dtype}","shape":[{n}],"parameters":{{"binary_data_size":{}}}}}]{params}}}"#,
            data.len()
        );
        Req::binary(path, &header, &[&data])
    }
}

/// Triton refuses FP16/BF16 in JSON (input: 400 JSON, output: 400
/// text/plain); tensorgate converts. The reference is then Triton's reply to
/// the same values sent and returned binary.
async fn half_case(
    triton: SocketAddr,
    gw: SocketAddr,
    dtype: &str,
    mode: &str,
) -> Result<(), String> {
    let id = format!("{dtype}-{mode}");
    let req = request(dtype, mode, &id);
    let (direct, via) = exchange(triton, gw, &req).await?;
    ensure_eq!(direct.status, 400, "Triton direct status");
    // Triton checks JSON input data first, but an empty tensor has none.
    let json_in = mode.contains("json→") && !mode.starts_with("empty");
    let expected = if json_in {
        format!("receiving {dtype} data via JSON is not supported")
    } else {
        format!("sending {dtype} data via JSON is not supported")
    };
    ensure!(
        direct.error().is_some_and(|e| e.contains(&expected)),
        "Triton direct: expected {expected:?}, got {}",
        direct.text()
    );
    let reference_mode = if mode.starts_with("empty") {
        "empty bin→bin"
    } else {
        "bin→bin"
    };
    // Same id as the JSON request, so binary replies are identical.
    let reference = request(dtype, reference_mode, &id);
    let r = Reply::decode(&reference.send(triton).await)?;
    ensure_eq!(
        r.status,
        200,
        "Triton reference (binary) status: {}",
        r.text()
    );
    if mode.ends_with("→bin") && !mode.starts_with("empty") {
        same(&r, &via, EXACT)?;
        return Ok(());
    }
    same_values(&r, &via)?;
    ensure_eq!(
        via.content_type.as_deref(),
        Some("application/json"),
        "gateway content-type"
    );
    ensure!(
        via.outputs().iter().all(|o| !o.binary),
        "gateway output not JSON"
    );
    Ok(())
}

async fn dtype_case(
    triton: SocketAddr,
    gw: SocketAddr,
    dtype: &str,
    mode: &str,
) -> Result<(), String> {
    let touches_json = mode.contains("json");
    if half(dtype) && touches_json {
        return half_case(triton, gw, dtype, mode).await;
    }
    let req = request(dtype, mode, &format!("{dtype}-{mode}"));
    let direct = req.send(triton).await;
    let via = req.send(gw).await;
    let d = Reply::decode(&direct).map_err(|e| format!("direct: {e}"))?;
    let v = Reply::decode(&via).map_err(|e| format!("gateway: {e}"))?;
    ensure_eq!(d.status, 200, "Triton direct status ({})", d.text());
    if mode == "empty bin→bin" {
        // Triton answers an all-empty binary reply as application/json with
        // no IHCL (nothing follows the header); tensorgate sends a proper
        // binary reply. Same members and values.
        ensure_eq!(
            d.content_type.as_deref(),
            Some("application/json"),
            "Triton content-type"
        );
        ensure_eq!(
            v.content_type.as_deref(),
            Some("application/octet-stream"),
            "gateway content-type"
        );
        ensure!(v.has_ihcl, "gateway reply without IHCL");
        let strict = crate::harness::reply::Strict {
            headers: false,
            members: true,
        };
        return same(&d, &v, strict);
    }
    same(&d, &v, EXACT)?;
    // All-binary replies pass through the gateway byte for byte.
    if mode.ends_with("→bin") {
        ensure!(direct.body == via.body, "binary bodies differ");
        ensure_eq!(
            direct.header("inference-header-content-length"),
            via.header("inference-header-content-length"),
            "IHCL"
        );
    }
    Ok(())
}

#[tokio::test]
async fn identity_every_datatype() {
    let triton = triton!();
    let _stats = super::STATS.read().await;
    let gw = plain_gateway(triton).await;
    let mut m = Matrix::new(super::SUITE, "datatypes");
    for dtype in DTYPES {
        for mode in MODES {
            m.record(
                dtype,
                mode,
                dtype_case(triton, gw.data_addr, dtype, mode).await,
            );
        }
    }
    gw.shutdown().await;
    m.finish();
}

/// BYTES elements that are not UTF-8 only travel as binary data.
#[tokio::test]
async fn bytes_not_utf8() {
    let triton = triton!();
    let _stats = super::STATS.read().await;
    let running = plain_gateway(triton).await;
    let gw = running.data_addr;
    let mut m = Matrix::new(super::SUITE, "BYTES not UTF-8");
    let data = encode_bytes(&[&b"\xff\xfe\x00bin"[..], b"\xc3\x28", b"ok", b""]);
    let req = |params: &str| {
        let header = format!(
            r#"{{"inputs":[{{"name":"INPUT0","datatype":"BYTES","shape":[4],"parameters":{{"binary_data_size":{}}}}}]{params}}}"#,
            data.len()
        );
        Req::binary(infer_path("identity_bytes"), &header, &[&data])
    };
    let bin = req(r#","parameters":{"binary_data_output":true}"#);
    m.record(
        "binary input",
        "bin→bin",
        async {
            let direct = bin.send(triton).await;
            let via = bin.send(gw).await;
            let (d, v) = crate::harness::reply::decode_pair(&direct, &via)?;
            same(&d, &v, EXACT)?;
            ensure!(direct.body == via.body, "bodies differ");
            Ok(())
        }
        .await,
    );
    let json_out = req("");
    m.record(
        "binary input",
        "bin→json",
        async {
            // Triton copies the raw bytes into a JSON string: 200, not JSON.
            let direct = json_out.send(triton).await;
            ensure_eq!(direct.status.as_u16(), 200, "Triton status");
            ensure!(
                direct.body.windows(2).any(|w| w == b"\xc3\x28"),
                "Triton's body no longer holds the raw bytes"
            );
            ensure!(
                std::str::from_utf8(&direct.body).is_err(),
                "Triton's body became UTF-8"
            );
            // tensorgate refuses to write invalid JSON and names the output.
            let via = Reply::decode(&json_out.send(gw).await)?;
            ensure_eq!(via.status, 400, "gateway status");
            let e = via
                .error()
                .ok_or_else(|| format!("not an error body: {}", via.text()))?;
            ensure!(e.contains("OUTPUT0") && e.contains("UTF-8"), "error {e:?}");
            Ok(())
        }
        .await,
    );
    let listed = req(r#","outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]"#);
    m.record(
        "binary input",
        "bin→listed bin",
        async {
            let direct = listed.send(triton).await;
            let via = listed.send(gw).await;
            let (d, v) = crate::harness::reply::decode_pair(&direct, &via)?;
            same(&d, &v, EXACT)?;
            ensure!(direct.body == via.body, "bodies differ");
            Ok(())
        }
        .await,
    );
    m.finish();
}
