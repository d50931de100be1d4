//! The request kinds of the mix: what each sends and how its reply is
//! checked. A reply is an error unless its status is 200 *and* its body is
//! what the demo backend computes, so a gateway that answered 200 with
//! the wrong tensor would not pass. To add a kind (a Decthings or SageMaker
//! request), add a [`Kind`] to [`all`] with its request and its check.

use bytes::Bytes;
use http::{HeaderMap, Method};
use serde_json::Value;

/// One kind of request.
#[derive(Clone, Debug)]
pub struct Kind {
    pub name: &'static str,
    pub method: Method,
    pub path: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Bytes,
    /// Checks a 200 reply's headers and body; `Err` says what was wrong.
    pub check: fn(&HeaderMap, &[u8]) -> Result<(), String>,
}

/// Every kind, in mix order.
pub fn all() -> Vec<Kind> {
    vec![v2_json(), v2_binary(), metadata(), decthings(), sagemaker()]
}

const INPUT0: [i32; 16] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];

/// `simple` with JSON tensors: OUTPUT0 = INPUT0 + 1, OUTPUT1 = INPUT0 - 1.
fn v2_json() -> Kind {
    let ones = [1_i32; 16];
    let body = serde_json::json!({"inputs": [
        {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": INPUT0},
        {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": ones},
    ]});
    Kind {
        name: "v2-json",
        method: Method::POST,
        path: "/v2/models/simple/infer",
        headers: vec![("content-type", "application/json".to_owned())],
        body: Bytes::from(body.to_string()),
        check: |_, body| {
            let v: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
            let output = |name: &str| -> Option<Vec<i64>> {
                v["outputs"]
                    .as_array()?
                    .iter()
                    .find(|o| o["name"] == name)?["data"]
                    .as_array()?
                    .iter()
                    .map(Value::as_i64)
                    .collect()
            };
            let plus: Vec<i64> = INPUT0.iter().map(|&x| i64::from(x) + 1).collect();
            let minus: Vec<i64> = INPUT0.iter().map(|&x| i64::from(x) - 1).collect();
            if output("OUTPUT0") == Some(plus) && output("OUTPUT1") == Some(minus) {
                Ok(())
            } else {
                Err(format!("wrong outputs: {v}"))
            }
        },
    }
}

/// The binary data of the `identity` request: 64 FP32 values.
fn identity_data() -> Vec<u8> {
    (0..64u16)
        .flat_map(|i| (f32::from(i) * 0.5).to_le_bytes())
        .collect()
}

/// `identity` with the binary tensor extension both ways.
fn v2_binary() -> Kind {
    let header = serde_json::json!({
        "inputs": [{"name": "INPUT0", "shape": [4, 16], "datatype": "FP32",
                    "parameters": {"binary_data_size": 256}}],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": true}}],
    })
    .to_string();
    let mut body = header.clone().into_bytes();
    body.extend_from_slice(&identity_data());
    Kind {
        name: "v2-binary",
        method: Method::POST,
        path: "/v2/models/identity/infer",
        headers: vec![
            ("content-type", "application/octet-stream".to_owned()),
            ("inference-header-content-length", header.len().to_string()),
        ],
        body: Bytes::from(body),
        check: |headers, body| {
            let n: usize = headers
                .get("inference-header-content-length")
                .and_then(|v| v.to_str().ok()?.parse().ok())
                .ok_or("no Inference-Header-Content-Length")?;
            let data = body.get(n..).ok_or("body shorter than its header")?;
            if data == identity_data() {
                Ok(())
            } else {
                Err(format!(
                    "{} bytes of tensor data, not the 256 sent",
                    data.len()
                ))
            }
        },
    }
}

/// Model metadata, passed through.
fn metadata() -> Kind {
    Kind {
        name: "metadata",
        method: Method::GET,
        path: "/v2/models/simple",
        headers: vec![],
        body: Bytes::new(),
        check: |_, body| {
            let v: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
            if v["name"] == "simple" && v["inputs"].as_array().is_some_and(|i| i.len() == 2) {
                Ok(())
            } else {
                Err(format!("unexpected metadata: {v}"))
            }
        },
    }
}

/// The f32 tensor the Decthings kind sends to `identity`.
fn decthings_values() -> Vec<f32> {
    (0..32u16).map(|i| f32::from(i) - 7.5).collect()
}

/// A Decthings `Model.evaluate` call of `identity` with one f32 parameter;
/// the reply must carry the same tensor back as `OUTPUT0`.
fn decthings() -> Kind {
    use tensorgate::codec::decthings::{self, rpc};
    use tensorgate::tensor::{DataType, Shape, Tensor};
    let data: Vec<u8> = decthings_values()
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let t = Tensor::new(DataType::F32, Shape::new(vec![32]), Bytes::from(data)).unwrap();
    let mut blob = bytes::BytesMut::new();
    decthings::encode(&t, decthings::Layout::Current, &mut blob).unwrap();
    let body = rpc::encode_request(
        br#"{"modelId":"identity","params":[{"name":"INPUT0"}]}"#,
        &[blob.freeze()],
    )
    .unwrap();
    Kind {
        name: "decthings",
        method: Method::POST,
        path: "/v0/Model/evaluate",
        headers: vec![("content-type", "application/octet-stream".to_owned())],
        body,
        check: |_, body| {
            let frame =
                rpc::decode_response(&Bytes::copy_from_slice(body)).map_err(|e| e.to_string())?;
            let v: Value = serde_json::from_slice(&frame.json).map_err(|e| e.to_string())?;
            if v["result"]["success"]["output"][0]["name"] != "OUTPUT0" {
                return Err(format!("not a success: {v}"));
            }
            let blob = frame.blobs.first().ok_or("no blob")?;
            let t = decthings::decode_all(blob, decthings::Layout::Current, &Default::default())
                .map_err(|e| e.to_string())?;
            let want: Vec<u8> = decthings_values()
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            match t.first() {
                Some(t) if t.data[..] == want[..] => Ok(()),
                _ => Err("the tensor came back different".to_owned()),
            }
        },
    }
}

/// A SageMaker CSV invocation of `rowsum`, answered in CSV.
fn sagemaker() -> Kind {
    Kind {
        name: "sagemaker",
        method: Method::POST,
        path: "/models/rowsum/invoke",
        headers: vec![
            ("content-type", "text/csv".to_owned()),
            ("accept", "text/csv".to_owned()),
        ],
        body: Bytes::from_static(b"1,2,3\n4,5,6.5\n"),
        check: |_, body| {
            if body == b"6.0,1.0,2.0,3.0\n15.5,4.0,5.0,6.5\n" {
                Ok(())
            } else {
                Err(format!(
                    "unexpected reply {:?}",
                    String::from_utf8_lossy(body)
                ))
            }
        },
    }
}
