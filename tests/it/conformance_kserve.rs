//! Conformance against a real KServe 0.21 V2 server (`tests/kserve/server.py`:
//! `kserve_simple`, `kserve_identity`), through a gateway route in `binary`
//! format. KServe is a lenient V2 server; where it differs from Triton the
//! case says so, and says what tensorgate does about it:
//!
//! - binary replies carry no Content-Type (and a lowercase IHCL, which HTTP
//!   does not distinguish): tensorgate labels them `application/octet-stream`;
//! - a JSON body without `Content-Type: application/json` is taken for a
//!   binary one (400): tensorgate always sends a Content-Type, so such
//!   requests (tritonclient's JSON requests) work through it;
//! - binary sizes are not checked (trailing bytes get 200, a short body a
//!   500 from inside its decoding): tensorgate checks them and answers 400
//!   before KServe is asked;
//! - malformed JSON is 422 `{"detail": ...}`: tensorgate answers 400
//!   `{"error": ...}`;
//! - JSON replies put `model_version: null`, `parameters: null` and `id`
//!   third: through tensorgate (which asks for binary outputs) the members
//!   are those of KServe's binary reply (`id` first, no `parameters`).
//!
//! Needs `TENSORGATE_KSERVE_URL` (`eval "$(scripts/kserve-backend.sh start)"`);
//! skipped without it, failing under `CI`.

use std::net::SocketAddr;

use harness::reply::{Reply, same_values};
use harness::values::{encode, literals};
use harness::{Matrix, Req, compress, infer_path};

use crate::common;
use crate::harness;
use crate::{ensure, ensure_eq};

const SUITE: &str = "rust-kserve";

macro_rules! kserve {
    () => {
        match harness::backend_url("TENSORGATE_KSERVE_URL", "scripts/kserve-backend.sh") {
            Some(url) => harness::addr_of(&url),
            None => return,
        }
    };
}

async fn kserve_gateway(kserve: SocketAddr) -> tensorgate::server::Running {
    common::gateway(&format!(
        r#"
[server]
shutdown_grace = "1s"
[backends.kserve]
url = "http://{kserve}"
request_timeout = "30s"
[[routes]]
name = "kserve"
models = ["kserve_simple", "kserve_identity"]
backend = "kserve"
backend_format = "binary"
[[routes]]
name = "default"
default = true
backend = "kserve"
"#
    ))
    .await
}

const A: [i32; 4] = [1, 2, -3, i32::MAX];
const B: [i32; 4] = [1, 1, 1, 1];

fn le(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn simple_json(extra: &str) -> String {
    format!(
        r#"{{"id":"k1","inputs":[{{"name":"INPUT0","datatype":"INT32","shape":[1,4],"data":[1,2,-3,2147483647]}},{{"name":"INPUT1","datatype":"INT32","shape":[1,4],"data":[1,1,1,1]}}]{extra}}}"#
    )
}

fn simple_bin(extra: &str, tail: &[u8]) -> Req {
    let header = format!(
        r#"{{"id":"k1","inputs":[{{"name":"INPUT0","datatype":"INT32","shape":[1,4],"parameters":{{"binary_data_size":16}}}},{{"name":"INPUT1","datatype":"INT32","shape":[1,4],"parameters":{{"binary_data_size":16}}}}]{extra}}}"#
    );
    let mut data = le(&A);
    data.extend_from_slice(&le(&B));
    data.extend_from_slice(tail);
    Req::binary(infer_path("kserve_simple"), &header, &[&data])
}

async fn pair(
    kserve: SocketAddr,
    gw: SocketAddr,
    direct: &Req,
    via: &Req,
) -> Result<(Reply, Reply), String> {
    let d = Reply::decode(&direct.send(kserve).await).map_err(|e| format!("direct: {e}"))?;
    let v = Reply::decode(&via.send(gw).await).map_err(|e| format!("gateway: {e}"))?;
    Ok((d, v))
}

fn member<'a>(r: &'a Reply, key: &str) -> Option<&'a serde_json::Value> {
    match &r.kind {
        harness::reply::Kind::Infer { top, .. } => {
            top.iter().find(|(k, _)| k == key).map(|(_, v)| v)
        }
        _ => None,
    }
}

#[tokio::test]
async fn kserve_simple_through_tensorgate() {
    let kserve = kserve!();
    let running = kserve_gateway(kserve).await;
    let gw = running.data_addr;
    let mut m = Matrix::new(SUITE, "KServe (kserve_simple)");
    let path = infer_path("kserve_simple");
    let bdo = r#","parameters":{"binary_data_output":true}"#;

    let json = Req::json(&path, simple_json(""));
    m.record(
        "JSON in, JSON out",
        "values, id, model_name",
        async {
            let (d, v) = pair(kserve, gw, &json, &json).await?;
            same_values(&d, &v)?;
            ensure_eq!(member(&d, "id"), member(&v, "id"), "id");
            ensure_eq!(
                member(&d, "model_name"),
                member(&v, "model_name"),
                "model_name"
            );
            ensure_eq!(
                v.content_type.as_deref(),
                Some("application/json"),
                "gateway content-type"
            );
            // KServe's JSON has "parameters": null; its binary header (what
            // tensorgate converts) has none.
            ensure_eq!(
                member(&d, "parameters"),
                Some(&serde_json::Value::Null),
                "KServe parameters"
            );
            Ok(())
        }
        .await,
    );

    let no_ct = Req::post(&path, simple_json(""));
    m.record(
        "JSON without Content-Type",
        "KServe 400, tensorgate 200",
        async {
            let (d, v) = pair(kserve, gw, &no_ct, &no_ct).await?;
            ensure_eq!(d.status, 400, "KServe direct status ({})", d.text());
            let (reference, _) = pair(kserve, gw, &json, &json).await?;
            same_values(&reference, &v)
        }
        .await,
    );

    let bin = simple_bin(bdo, b"");
    m.record(
        "binary in, binary out",
        "same bytes, Content-Type added",
        async {
            let d = bin.send(kserve).await;
            let v = bin.send(gw).await;
            ensure_eq!(d.status, v.status, "status");
            ensure!(
                d.header("content-type").is_none(),
                "KServe now sends a content-type"
            );
            ensure_eq!(
                v.header("content-type"),
                Some("application/octet-stream"),
                "gateway content-type"
            );
            ensure_eq!(
                d.header("inference-header-content-length"),
                v.header("inference-header-content-length"),
                "IHCL"
            );
            ensure!(d.body == v.body, "bodies differ");
            Ok(())
        }
        .await,
    );

    let bin_json = simple_bin("", b"");
    m.record(
        "binary in, JSON out",
        "values",
        async {
            let (d, v) = pair(kserve, gw, &bin_json, &bin_json).await?;
            same_values(&d, &v)?;
            ensure_eq!(
                v.content_type.as_deref(),
                Some("application/json"),
                "content-type"
            );
            Ok(())
        }
        .await,
    );

    let json_bin = Req::json(&path, simple_json(bdo));
    m.record(
        "JSON in, binary out",
        "same bytes as KServe",
        async {
            let d = json_bin.send(kserve).await;
            let v = json_bin.send(gw).await;
            ensure_eq!(d.status, v.status, "status");
            ensure!(d.body == v.body, "bodies differ");
            Ok(())
        }
        .await,
    );

    let mixed = Req::json(
        &path,
        simple_json(
            r#","outputs":[{"name":"OUTPUT0"},{"name":"OUTPUT1","parameters":{"binary_data":true}}]"#,
        ),
    );
    m.record(
        "JSON in, mixed out",
        "values, same forms",
        async {
            let (d, v) = pair(kserve, gw, &mixed, &mixed).await?;
            same_values(&d, &v)?;
            let forms = |r: &Reply| r.outputs().iter().map(|o| o.binary).collect::<Vec<_>>();
            ensure_eq!(forms(&d), forms(&v), "binary outputs");
            Ok(())
        }
        .await,
    );

    for coding in ["gzip", "deflate"] {
        let mut req = Req::json(&path, simple_json("")).header("content-encoding", coding);
        req.body = compress(coding, &req.body).into();
        m.record(
            &format!("{coding} request body"),
            "tensorgate decompresses",
            async {
                let v = Reply::decode(&req.send(gw).await)?;
                let (reference, _) = pair(kserve, gw, &json, &json).await?;
                same_values(&reference, &v)
            }
            .await,
        );
        let req = Req::json(&path, simple_json(bdo)).header("accept-encoding", coding);
        m.record(
            &format!("Accept-Encoding: {coding}"),
            "tensorgate compresses",
            async {
                let v = Reply::decode(&req.send(gw).await)?;
                ensure_eq!(
                    v.content_encoding.as_deref(),
                    Some(coding),
                    "content-encoding"
                );
                let (reference, _) = pair(kserve, gw, &json, &json).await?;
                same_values(&reference, &v)
            }
            .await,
        );
    }

    // KServe does not check binary sizes; tensorgate does.
    let trailing = simple_bin("", b"zz");
    let mut short = simple_bin("", b"");
    short.body = short.body.slice(..short.body.len() - 4);
    // A short body fails inside KServe's decoding: 500.
    for (case, req, kserve_status) in [
        ("trailing bytes", trailing, 200),
        ("short body", short, 500),
    ] {
        m.record(
            case,
            &format!("KServe {kserve_status}, tensorgate 400"),
            async {
                let d = req.send(kserve).await;
                ensure_eq!(d.status.as_u16(), kserve_status, "KServe status");
                let v = Reply::decode(&req.send(gw).await)?;
                ensure_eq!(v.status, 400, "gateway status");
                ensure!(v.error().is_some(), "not an error body: {}", v.text());
                Ok(())
            }
            .await,
        );
    }
    let malformed = Req::json(&path, r#"{"inputs":["#);
    m.record(
        "malformed JSON",
        "KServe 422 detail, tensorgate 400 error",
        async {
            let (d, v) = pair(kserve, gw, &malformed, &malformed).await?;
            ensure_eq!(d.status, 422, "KServe status");
            ensure!(
                String::from_utf8_lossy(&d.body).contains("\"detail\""),
                "KServe body {}",
                d.text()
            );
            ensure_eq!(v.status, 400, "gateway status");
            ensure!(v.error().is_some(), "not an error body");
            Ok(())
        }
        .await,
    );

    // KServe's own errors pass through unchanged.
    for (case, body) in [
        ("wrong datatype", simple_json("").replace(r#""datatype":"INT32","shape":[1,4],"data":[1,1"#, r#""datatype":"INT64","shape":[1,4],"data":[1,1"#)),
        ("missing input", r#"{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[1]}]}"#.to_owned()),
        ("shapes differ", r#"{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[1]},{"name":"INPUT1","datatype":"INT32","shape":[2],"data":[1,2]}]}"#.to_owned()),
    ] {
        let req = Req::json(&path, body);
        m.record(case, "KServe's error unchanged", async {
            let d = req.send(kserve).await;
            let v = req.send(gw).await;
            ensure!(!d.status.is_success(), "KServe accepted it");
            ensure_eq!(d.status, v.status, "status");
            ensure!(d.body == v.body, "bodies differ: {:?} vs {:?}", d.body, v.body);
            Ok(())
        }.await);
    }
    for path in [
        "/v2/models/kserve_simple",
        "/v2/models/kserve_simple/ready",
        "/v2/health/ready",
        "/v2/health/live",
        "/v2/models/nope",
    ] {
        let req = Req::get(path);
        m.record(
            &format!("GET {path}"),
            "byte-equal",
            async {
                let d = req.send(kserve).await;
                let v = req.send(gw).await;
                ensure_eq!(d.status, v.status, "status");
                ensure!(d.body == v.body, "bodies differ");
                Ok(())
            }
            .await,
        );
    }
    m.finish();
}

/// Datatypes through `kserve_identity`: JSON and binary both ways. FP16 and
/// BF16 are not in the matrix: KServe's JSON decoding has no BF16, and
/// numpy float16 JSON is tensorgate's own feature (tested against Triton).
#[tokio::test]
async fn kserve_identity_datatypes() {
    let kserve = kserve!();
    let running = kserve_gateway(kserve).await;
    let gw = running.data_addr;
    let mut m = Matrix::new(SUITE, "KServe datatypes (kserve_identity)");
    let dtypes = [
        "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP32",
        "FP64", "BYTES",
    ];
    for dtype in dtypes {
        // KServe's JSON parser refuses bare NaN/Infinity.
        let lits: Vec<&str> = literals(dtype)
            .iter()
            .copied()
            .filter(|l| !l.contains("NaN") && !l.contains("Infinity"))
            .collect();
        let n = lits.len();
        let path = infer_path("kserve_identity");
        let json = |extra: &str| {
            Req::json(
                &path,
                format!(
                    r#"{{"id":"i","inputs":[{{"name":"INPUT0","datatype":"{dtype}","shape":[{n}],"data":[{}]}}]{extra}}}"#,
                    lits.join(",")
                ),
            )
        };
        let data = encode(dtype, &lits);
        let bin = |extra: &str| {
            Req::binary(
                &path,
                &format!(
                    r#"{{"id":"i","inputs":[{{"name":"INPUT0","datatype":"{dtype}","shape":[{n}],"parameters":{{"binary_data_size":{}}}}}]{extra}}}"#,
                    data.len()
                ),
                &[&data],
            )
        };
        let bdo = r#","parameters":{"binary_data_output":true}"#;
        for (mode, req) in [
            ("json→json", json("")),
            ("bin→bin", bin(bdo)),
            ("json→bin", json(bdo)),
            ("bin→json", bin("")),
        ] {
            m.record(
                dtype,
                mode,
                async {
                    let (d, v) = pair(kserve, gw, &req, &req).await?;
                    ensure_eq!(d.status, 200, "KServe status ({})", d.text());
                    same_values(&d, &v)?;
                    let forms =
                        |r: &Reply| r.outputs().iter().map(|o| o.binary).collect::<Vec<_>>();
                    ensure_eq!(forms(&d), forms(&v), "binary outputs");
                    Ok(())
                }
                .await,
            );
        }
    }
    m.finish();
}
