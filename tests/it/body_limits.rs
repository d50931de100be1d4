//! `max_body_bytes` at its edge: a body of exactly the limit passes and
//! one byte more is 413, for JSON, binary-extension, passthrough and
//! compressed bodies (declared length and chunked). Compressed passthrough
//! bodies are limited by their decompressed size (a gzip bomb stops at the
//! limit and the backend never gets a whole request); multi-member gzip is
//! read as one stream.

use faults::*;
use serde_json::json;
use tensorgate::http::encoding::{Coding, compress};

use crate::common::faults;
use crate::common::*;

const LIMIT: usize = 4096;
const INFER: &str = "/v2/models/m/infer";

fn route() -> String {
    format!("[routes.limits]\nmax_body_bytes = {LIMIT}")
}

async fn setup() -> (RawBackend, tensorgate::server::Running) {
    let backend = RawBackend::closing(
        |_| {
            response(
                200,
                &[("content-type", "application/json")],
                br#"{"outputs":[]}"#,
            )
        },
        |_| false,
    )
    .await;
    let gw = gateway(&simple_config(&backend.url(), &route())).await;
    (backend, gw)
}

/// A JSON request of exactly `len` bytes (the `id` pads it).
fn json_of(len: usize) -> String {
    let empty = r#"{"id":"","inputs":[{"name":"X","shape":[1],"datatype":"INT32","data":[1]}]}"#;
    let body = empty.replacen(
        r#""id":"""#,
        &format!(r#""id":"{}""#, "x".repeat(len - empty.len())),
        1,
    );
    assert_eq!(body.len(), len);
    body
}

fn assert_413(got: &Got, what: &str) {
    assert_eq!(got.status, 413, "{what}: {:?}", got.body);
    assert_eq!(
        got.error(),
        format!(r#"route "r": request body is larger than the limit of {LIMIT} bytes"#),
        "{what}"
    );
}

#[tokio::test]
async fn json_bodies_at_the_limit() {
    let (backend, gw) = setup().await;
    let ct = [("content-type", "application/json")];
    let got = send(gw.data_addr, "POST", INFER, &ct, json_of(LIMIT)).await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    let got = send_chunked(gw.data_addr, INFER, &ct, json_of(LIMIT).as_bytes()).await;
    assert_eq!(got.status, 200);
    assert_413(
        &send(gw.data_addr, "POST", INFER, &ct, json_of(LIMIT + 1)).await,
        "declared",
    );
    assert_413(
        &send_chunked(gw.data_addr, INFER, &ct, json_of(LIMIT + 1).as_bytes()).await,
        "chunked",
    );
    assert_eq!(backend.counts.get().1, 2);
}

#[tokio::test]
async fn binary_bodies_at_the_limit() {
    let (backend, gw) = setup().await;
    let data = le_i32(&[1, 2, 3, 4]);
    let body_of = |len: usize| {
        let header = |pad: usize| json!({"id": "x".repeat(pad), "inputs": [{"name":"X","shape":[4],"datatype":"INT32","parameters":{"binary_data_size":16}}]});
        let base = binary_body(&header(0), &[&data]).0.len();
        binary_body(&header(len - base), &[&data])
    };
    for (len, status) in [(LIMIT, 200), (LIMIT + 1, 413)] {
        let (body, n) = body_of(len);
        assert_eq!(body.len(), len);
        let ihcl = [("inference-header-content-length", n.to_string())];
        let headers: Vec<(&str, &str)> = ihcl.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let got = send(gw.data_addr, "POST", INFER, &headers, body.clone()).await;
        assert_eq!(got.status, status, "{len}: {:?}", got.body);
        let got = send_chunked(gw.data_addr, INFER, &headers, &body).await;
        assert_eq!(got.status, status, "{len} chunked: {:?}", got.body);
    }
    assert_eq!(backend.counts.get().1, 2);
}

#[tokio::test]
async fn passthrough_bodies_at_the_limit() {
    let (backend, gw) = setup().await;
    let path = "/v2/models/m/generate";
    let got = send(gw.data_addr, "POST", path, &[], vec![b'a'; LIMIT]).await;
    assert_eq!(got.status, 200);
    let got = send_chunked(gw.data_addr, path, &[], &[b'a'; LIMIT]).await;
    assert_eq!(got.status, 200);
    assert_413(
        &send(gw.data_addr, "POST", path, &[], vec![b'a'; LIMIT + 1]).await,
        "declared",
    );
    assert_413(
        &send_chunked(gw.data_addr, path, &[], &[b'a'; LIMIT + 1]).await,
        "chunked",
    );
    // Two whole requests; the chunked one over the limit was cut off.
    let (_, whole, _) = backend.counts.get();
    assert_eq!(whole, 2);
}

#[tokio::test]
async fn compressed_bodies_count_decompressed_bytes() {
    let (backend, gw) = setup().await;
    let gz = [
        ("content-encoding", "gzip"),
        ("content-type", "application/json"),
    ];
    let got = send(
        gw.data_addr,
        "POST",
        INFER,
        &gz,
        compress(json_of(LIMIT).as_bytes(), Coding::Gzip),
    )
    .await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    assert_413(
        &send(
            gw.data_addr,
            "POST",
            INFER,
            &gz,
            compress(json_of(LIMIT + 1).as_bytes(), Coding::Gzip),
        )
        .await,
        "infer",
    );
    // Passthrough: the compressed bytes go on as they are, counted.
    let path = "/v2/models/m/generate";
    let packed = compress(&[b'a'; LIMIT], Coding::Gzip);
    let got = send(gw.data_addr, "POST", path, &gz, packed).await;
    assert_eq!(got.status, 200);
    let packed = compress(&[b'a'; LIMIT + 1], Coding::Gzip);
    assert_413(
        &send(gw.data_addr, "POST", path, &gz, packed).await,
        "passthrough",
    );
    assert_eq!(backend.counts.get().1, 2);
}

#[tokio::test]
async fn a_passthrough_gzip_bomb_never_reaches_the_backend_whole() {
    let (backend, gw) = setup().await;
    let bomb = compress(&vec![0u8; 10 << 20], Coding::Gzip);
    assert!(bomb.len() < 64 << 10);
    let got = send(
        gw.data_addr,
        "POST",
        "/v2/models/m/generate",
        &[("content-encoding", "gzip")],
        bomb,
    )
    .await;
    assert_413(&got, "bomb");
    let got = send(
        gw.data_addr,
        "POST",
        "/v2/models/m/generate",
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
    let (_, whole, _) = backend.counts.get();
    assert_eq!(whole, 0, "the backend got a whole request");
}

#[tokio::test]
async fn multi_member_gzip_is_one_body() {
    let (backend, gw) = setup().await;
    let text = r#"{"inputs":[{"name":"X","shape":[2],"datatype":"INT32","data":[7,8]}]}"#;
    let (a, b) = text.split_at(20);
    let mut body = compress(a.as_bytes(), Coding::Gzip).to_vec();
    body.extend_from_slice(&compress(b.as_bytes(), Coding::Gzip));
    let gz = [
        ("content-encoding", "gzip"),
        ("content-type", "application/json"),
    ];
    let got = send(gw.data_addr, "POST", INFER, &gz, body.clone()).await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    let got = send(gw.data_addr, "POST", "/v2/models/m/generate", &gz, body).await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    assert_eq!(backend.counts.get().1, 2);
}

/// The request the gateway holds after converting a body of
/// `max_body_bytes`: at most 4x as binary (INT64/UINT64/FP64 zeros: `0,`
/// is 2 bytes of text, 8 of data), at most 6x as JSON for a JSON backend
/// (BOOL false sent in binary: 1 byte of data, `false,` 6 of text). The
/// example configuration states these factors next to `max_body_bytes`.
#[tokio::test]
async fn converted_requests_grow_by_at_most_the_documented_factor() {
    let binary_backend = TestBackend::start(|_| async {
        reply(
            200,
            &[("content-type", "application/json")],
            r#"{"outputs":[]}"#,
        )
    })
    .await;
    let gw = gateway(&simple_config(&binary_backend.url(), &route())).await;
    let text_of = |n: usize| {
        let zeros = vec!["0"; n].join(",");
        format!(
            r#"{{"inputs":[{{"name":"X","shape":[{n}],"datatype":"INT64","data":[{zeros}]}}]}}"#
        )
    };
    let n = (1..LIMIT)
        .take_while(|&n| text_of(n).len() <= LIMIT)
        .last()
        .unwrap();
    let ct = [("content-type", "application/json")];
    let got = send(gw.data_addr, "POST", INFER, &ct, text_of(n)).await;
    assert_eq!(got.status, 200);
    let seen = &binary_backend.requests()[0];
    let header: usize = seen.headers["inference-header-content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let data = seen.body.len() - header;
    assert_eq!(data, 8 * n);
    assert!(data > 3 * LIMIT && data <= 4 * LIMIT, "{data}");

    // A JSON backend, a binary client sending BOOL false.
    let json_backend = TestBackend::start(|_| async {
        reply(
            200,
            &[("content-type", "application/json")],
            r#"{"outputs":[]}"#,
        )
    })
    .await;
    let toml = format!("backend_format = \"json\"\n{}", route());
    let gw = gateway(&simple_config(&json_backend.url(), &toml)).await;
    let header = |n: usize| json!({"inputs": [{"name":"X","shape":[n],"datatype":"BOOL","parameters":{"binary_data_size":n}}]});
    let fixed = binary_body(&header(1000), &[]).0.len();
    let n = LIMIT - fixed;
    let data = vec![0u8; n];
    let got = post_binary(gw.data_addr, INFER, &header(n), &[&data]).await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    let sent = json_backend.requests()[0].body.len();
    assert!(sent > 5 * LIMIT && sent <= 6 * LIMIT + 200, "{sent}");
}
