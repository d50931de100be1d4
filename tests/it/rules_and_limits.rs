//! Every rule violation and limit: the status, the `{"error"}` body naming
//! route, tensor and rule, and that the backend never saw the request.

use serde_json::json;

use crate::common::*;

const ROUTE: &str = r#"
[[routes]]
name = "simple"
models = ["simple"]
backend = "b"
[routes.limits]
max_body_bytes = 4096
max_json_header_bytes = 512
max_elements_per_tensor = 100
max_dims = 3
[routes.inputs.INPUT0]
shape = [-1, 4]
allowed_types = ["FP32", "fp16"]
[routes.inputs.INPUT1]
allowed_types = ["INT32"]
"#;

async fn setup() -> (TestBackend, tensorgate::server::Running) {
    let backend =
        TestBackend::start(|_| async { reply(500, &[], "backend must not be reached") }).await;
    let gw = gateway(&simple_config(&backend.url(), ROUTE)).await;
    (backend, gw)
}

fn request(input0_shape: &str, input0_type: &str, input0_data: &str) -> String {
    format!(
        r#"{{"inputs":[{{"name":"INPUT0","shape":{input0_shape},"datatype":"{input0_type}","data":{input0_data}}},{{"name":"INPUT1","shape":[1],"datatype":"INT32","data":[7]}}]}}"#
    )
}

const INFER: &str = "/v2/models/simple/infer";

#[tokio::test]
async fn json_rule_violations_are_400_before_the_backend() {
    let (backend, gw) = setup().await;
    let cases = [
        (
            request("[2,3]", "FP32", "[1,2,3,4,5,6]"),
            r#"route "simple": input "INPUT0": shape [2,3] does not match rule [-1,4]"#,
        ),
        (
            request("[1,4]", "INT64", "[1,2,3,4]"),
            r#"route "simple": input "INPUT0": datatype INT64 is not allowed (allowed: FP32, FP16)"#,
        ),
        (
            r#"{"inputs":[{"name":"INPUT0","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}"#.to_owned(),
            r#"route "simple": input "INPUT1" is required but missing"#,
        ),
        (
            r#"{"inputs":[{"name":"INPUT0","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]},{"name":"INPUT1","shape":[1],"datatype":"INT32","data":[1]},{"name":"EXTRA","shape":[1],"datatype":"INT32","data":[1]}]}"#.to_owned(),
            r#"route "simple": input "EXTRA" is not one of this route's inputs (INPUT0, INPUT1)"#,
        ),
        (
            r#"{"inputs":[{"name":"INPUT1","shape":[1],"datatype":"INT32","data":[1]},{"name":"INPUT1","shape":[1],"datatype":"INT32","data":[1]},{"name":"INPUT0","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}"#.to_owned(),
            r#"route "simple": input "INPUT1" appears more than once"#,
        ),
        (
            request("[26,4]", "FP32", "[]"),
            r#"route "simple": input "INPUT0": shape [26,4] has 104 elements, over the limit of 100"#,
        ),
        (
            request("[1,1,1,4]", "FP32", "[1,2,3,4]"),
            r#"route "simple": input "INPUT0": shape [1,1,1,4] has 4 dimensions, over the limit of 3"#,
        ),
        (
            request("[1,4]", "FP32", "[1,2,3]"),
            r#"route "simple": input "INPUT0": shape [1,4] holds 4 elements but "data" has 3"#,
        ),
        (
            request("[1,4]", "FP32", "[1,2,3,4,5]"),
            r#"route "simple": input "INPUT0": data has more elements than the 4 its shape holds"#,
        ),
        (
            request("[1,4]", "FP32", "[1,2,\"x\",4]"),
            r#"route "simple": input "INPUT0": element 2: expected a FP32 value, found a string"#,
        ),
        (
            r#"{"inputs":[{"name":"INPUT0","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]},{"name":"INPUT1","shape":[1],"datatype":"INT32","data":[2147483648]}]}"#.to_owned(),
            r#"route "simple": input "INPUT1": element 0: 2147483648 is out of range for INT32"#,
        ),
        (
            r#"{"inputs":[{"name":"INPUT0","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}"#.to_owned(),
            r#"route "simple": malformed JSON at byte 77: unexpected end of input"#,
        ),
    ];
    for (body, message) in cases {
        let got = post_json(gw.data_addr, INFER, &body).await;
        assert_eq!(got.status, 400, "{body}\n{:?}", got.body);
        assert_eq!(got.header("content-type"), Some("application/json"));
        assert_eq!(got.error(), message, "{body}");
    }
    assert_eq!(backend.requests().len(), 0, "the backend saw a request");
}

#[tokio::test]
async fn size_limits_are_413() {
    let (backend, gw) = setup().await;
    let big = format!(
        r#"{{"inputs":[{{"name":"INPUT1","shape":[1],"datatype":"INT32","data":[1]}}],"id":"{}"}}"#,
        "x".repeat(5000)
    );
    let got = post_json(gw.data_addr, INFER, &big).await;
    assert_eq!(got.status, 413);
    assert_eq!(
        got.error(),
        r#"route "simple": request body is larger than the limit of 4096 bytes"#
    );

    // Without Content-Length (chunked), the limit still holds.
    let got = send_chunked(gw.data_addr, INFER, &[], big.as_bytes()).await;
    assert_eq!(got.status, 413);

    // A JSON header longer than max_json_header_bytes.
    let header = json!({"id": "y".repeat(600), "inputs": [{"name":"INPUT1","shape":[1],"datatype":"INT32","parameters":{"binary_data_size":4}}]});
    let n = serde_json::to_vec(&header).unwrap().len();
    let got = post_binary(gw.data_addr, INFER, &header, &[&[1, 0, 0, 0]]).await;
    assert_eq!(got.status, 413);
    assert_eq!(
        got.error(),
        format!(r#"route "simple": inference header of {n} bytes is over the limit of 512"#)
    );
    assert_eq!(backend.requests().len(), 0);
}

#[tokio::test]
async fn gzip_bomb_is_413_after_at_most_the_limit() {
    let (backend, gw) = setup().await;
    // 10 MiB of spaces inside a JSON string compress to a few KiB.
    let text = format!(r#"{{"id":"{}","inputs":[]}}"#, " ".repeat(10 << 20));
    let packed = tensorgate::http::encoding::compress(
        text.as_bytes(),
        tensorgate::http::encoding::Coding::Gzip,
    );
    assert!(packed.len() < 64 << 10);
    let got = send(
        gw.data_addr,
        "POST",
        INFER,
        &[("content-encoding", "gzip")],
        packed,
    )
    .await;
    assert_eq!(got.status, 413);
    assert_eq!(
        got.error(),
        r#"route "simple": request body is larger than the limit of 4096 bytes"#
    );
    assert_eq!(backend.requests().len(), 0);
}

#[tokio::test]
async fn unsupported_and_corrupt_encodings() {
    let (backend, gw) = setup().await;
    let got = send(
        gw.data_addr,
        "POST",
        INFER,
        &[("content-encoding", "br")],
        "{}",
    )
    .await;
    assert_eq!(got.status, 415);
    assert_eq!(got.header("accept-encoding"), Some("gzip, deflate"));
    assert_eq!(
        got.error(),
        r#"unsupported Content-Encoding "br": use gzip, deflate or identity"#
    );
    let got = send(
        gw.data_addr,
        "POST",
        INFER,
        &[("content-encoding", "gzip")],
        "not gzip",
    )
    .await;
    assert_eq!(got.status, 400);
    assert!(
        got.error()
            .starts_with("request body is not valid gzip data"),
        "{}",
        got.error()
    );
    assert_eq!(backend.requests().len(), 0);
}

#[tokio::test]
async fn binary_framing_errors() {
    let (backend, gw) = setup().await;
    let header = json!({"inputs": [
        {"name":"INPUT0","shape":[1,4],"datatype":"FP32","parameters":{"binary_data_size":16}},
        {"name":"INPUT1","shape":[1],"datatype":"INT32","parameters":{"binary_data_size":4}}
    ]});
    let data0 = le_f32(&[1.0, 2.0, 3.0, 4.0]);
    let ihcl = |n: usize| n.to_string();

    // Short body.
    let got = post_binary(gw.data_addr, INFER, &header, &[&data0, &[1, 0]]).await;
    assert_eq!(got.status, 400);
    assert_eq!(
        got.error(),
        r#"route "simple": unexpected size for input 'INPUT1', expecting 2 additional bytes"#
    );

    // Trailing bytes.
    let got = post_binary(gw.data_addr, INFER, &header, &[&data0, &[1, 0, 0, 0, 9, 9]]).await;
    assert_eq!(got.status, 400);
    assert_eq!(
        got.error(),
        r#"route "simple": unexpected additional data: 2 bytes after the last binary tensor"#
    );

    // IHCL past the body.
    let (body, _) = binary_body(&header, &[]);
    let len = body.len();
    let got = send(
        gw.data_addr,
        "POST",
        INFER,
        &[("inference-header-content-length", &ihcl(len + 10))],
        body,
    )
    .await;
    assert_eq!(got.status, 400);
    assert_eq!(
        got.error(),
        format!(
            r#"route "simple": inference header size should be in range (0, {len}), got: {}"#,
            len + 10
        )
    );

    // Invalid IHCL value.
    let got = send(
        gw.data_addr,
        "POST",
        INFER,
        &[("inference-header-content-length", "abc")],
        "{}",
    )
    .await;
    assert_eq!(got.status, 400);
    assert_eq!(
        got.error(),
        r#"route "simple": invalid Inference-Header-Content-Length "abc": expected a non-negative integer"#
    );

    // binary_data_size that does not match shape x dtype.
    let bad = json!({"inputs": [
        {"name":"INPUT0","shape":[1,4],"datatype":"FP32","parameters":{"binary_data_size":12}},
        {"name":"INPUT1","shape":[1],"datatype":"INT32","parameters":{"binary_data_size":4}}
    ]});
    let got = post_binary(gw.data_addr, INFER, &bad, &[&data0[..12], &[1, 0, 0, 0]]).await;
    assert_eq!(got.status, 400);
    assert_eq!(
        got.error(),
        r#"route "simple": input "INPUT0": FP32 data of shape [1,4] is 16 bytes, but "binary_data_size" is 12"#
    );

    // A rule violation in a binary header is caught before the data.
    let wrong = json!({"inputs": [
        {"name":"INPUT0","shape":[4],"datatype":"FP32","parameters":{"binary_data_size":16}},
        {"name":"INPUT1","shape":[1],"datatype":"INT32","parameters":{"binary_data_size":4}}
    ]});
    let got = post_binary(gw.data_addr, INFER, &wrong, &[&data0, &[1, 0, 0, 0]]).await;
    assert_eq!(got.status, 400);
    assert_eq!(
        got.error(),
        r#"route "simple": input "INPUT0": shape [4] does not match rule [-1,4]"#
    );

    assert_eq!(backend.requests().len(), 0);
}

#[tokio::test]
async fn bytes_input_framing_is_checked() {
    let backend = TestBackend::start(|_| async { reply(500, &[], "unreachable") }).await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    let header = json!({"inputs": [{"name":"S","shape":[2],"datatype":"BYTES","parameters":{"binary_data_size":9}}]});
    let got = post_binary(
        gw.data_addr,
        "/v2/models/m/infer",
        &header,
        &[b"\x01\x00\x00\x00a\x09\x00\x00\x00"],
    )
    .await;
    assert_eq!(got.status, 400);
    assert_eq!(
        got.error(),
        r#"route "r": input "S": BYTES element 1 declares 9 bytes but only 0 remain at byte 5"#
    );
    assert_eq!(backend.requests().len(), 0);
}

#[tokio::test]
async fn raw_binary_is_checked_against_a_single_declared_input() {
    // The model's metadata (asked for once the route's own check passed).
    let backend = TestBackend::start(|seen| async move {
        if seen.method == "GET" {
            let meta = r#"{"name":"raw","inputs":[{"name":"INPUT0","datatype":"FP32","shape":[-1,4]}],"outputs":[]}"#;
            return reply(200, &[("content-type", "application/json")], meta);
        }
        reply(200, &[("content-type", "application/octet-stream")], "")
    })
    .await;
    let route = r#"
[[routes]]
name = "raw"
models = ["raw"]
backend = "b"
[routes.inputs.INPUT0]
shape = [-1, 4]
allowed_types = ["FP32"]
"#;
    let gw = gateway(&simple_config(&backend.url(), route)).await;
    let got = send(
        gw.data_addr,
        "POST",
        "/v2/models/raw/infer",
        &[("inference-header-content-length", "0")],
        vec![0u8; 20],
    )
    .await;
    assert_eq!(got.status, 400);
    assert_eq!(
        got.error(),
        r#"route "raw": raw binary body of 20 bytes cannot be input "INPUT0" (FP32 with shape rule [-1,4])"#
    );
    assert_eq!(backend.requests().len(), 0);
    let got = send(
        gw.data_addr,
        "POST",
        "/v2/models/raw/infer",
        &[("inference-header-content-length", "0")],
        vec![7u8; 32],
    )
    .await;
    assert_eq!(got.status, 200);
    let seen = backend.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path, "/v2/models/raw");
    assert_eq!(seen[1].headers["inference-header-content-length"], "0");
    assert_eq!(&seen[1].body[..], &[7u8; 32][..]);
}

#[tokio::test]
async fn no_route_is_404() {
    let backend = TestBackend::start(|_| async { reply(200, &[], "") }).await;
    let toml = format!(
        r#"
[backends.b]
url = "{}"
[[routes]]
name = "only"
models = ["only"]
backend = "b"
"#,
        backend.url()
    );
    let gw = gateway(&toml).await;
    let got = post_json(gw.data_addr, "/v2/models/other/infer", "{}").await;
    assert_eq!(got.status, 404);
    assert_eq!(
        got.error(),
        r#"no route for model "other" and no default route"#
    );
    let got = send(gw.data_addr, "GET", "/v2", &[], "").await;
    assert_eq!(got.status, 404);
    assert_eq!(backend.requests().len(), 0);
}

#[tokio::test]
async fn passthrough_bodies_are_bounded_too() {
    let backend = TestBackend::start(|_| async { reply(200, &[], "") }).await;
    let route = r#"
[routes.limits]
max_body_bytes = 1000
"#;
    let gw = gateway(&simple_config(&backend.url(), route)).await;
    let big = vec![b'x'; 5000];
    let got = send(
        gw.data_addr,
        "POST",
        "/v2/models/m/generate",
        &[],
        big.clone(),
    )
    .await;
    assert_eq!(got.status, 413);
    assert_eq!(
        got.error(),
        r#"route "r": request body is larger than the limit of 1000 bytes"#
    );
    let got = send_chunked(gw.data_addr, "/v2/models/m/generate", &[], &big).await;
    assert_eq!(got.status, 413);
    assert_eq!(
        got.error(),
        r#"route "r": request body is larger than the limit of 1000 bytes"#
    );
    // Within the limit it passes.
    let got = send(
        gw.data_addr,
        "POST",
        "/v2/models/m/generate",
        &[],
        vec![b'x'; 900],
    )
    .await;
    assert_eq!(got.status, 200);
}

#[tokio::test]
async fn output_rules_are_checked_on_every_reply_path() {
    let backend = TestBackend::start(|seen| async move {
        if seen.headers.get("inference-header-content-length").is_some() {
            let header = r#"{"outputs":[{"name":"OUT","datatype":"INT32","shape":[3],"parameters":{"binary_data_size":12}}]}"#;
            let mut body = header.as_bytes().to_vec();
            body.extend_from_slice(&le_i32(&[1, 2, 3]));
            reply(200, &[("inference-header-content-length", &header.len().to_string())], body)
        } else {
            reply(200, &[("content-type", "application/json")], r#"{"outputs":[{"name":"OUT","datatype":"INT32","shape":[3],"data":[1,2,3]}]}"#)
        }
    })
    .await;
    for format in ["binary", "json"] {
        let route = format!(
            r#"
backend_format = "{format}"
[routes.outputs.OUT]
shape = [2]
"#
        );
        let gw = gateway(&simple_config(&backend.url(), &route)).await;
        let body = r#"{"inputs":[{"name":"X","shape":[1],"datatype":"INT32","data":[1]}]}"#;
        let got = post_json(gw.data_addr, "/v2/models/m/infer", body).await;
        assert_eq!(got.status, 502, "{format}");
        assert_eq!(
            got.error(),
            r#"backend "b" sent an invalid response: route "r": output "OUT": shape [3] does not match rule [2]"#,
            "{format}"
        );
    }
}
