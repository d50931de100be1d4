//! What `client.model.evaluate` puts on the wire, byte for byte.

use decthings_api::client::rpc::model::EvaluateParams;
use decthings_api::client::{DecthingsClient, DecthingsClientOptions};
use decthings_api::tensor::DecthingsTensor as T;

use super::dc::*;

/// A reply the client accepts (`{"error":{"code":"unknown"}}`), so every
/// call ends quickly.
fn any_reply(_: &[u8]) -> Vec<u8> {
    let json = br#"{"error":{"code":"unknown"}}"#;
    let mut body = vec![json.len() as u8];
    body.extend_from_slice(json);
    http_reply(200, &body)
}

/// The sample call of the shared RPC vectors: `input` = [f32 [2] (1.5,
/// -2.25), string [1] ("hé")], `flag` = [u8 scalar 7], `ds` from a dataset.
fn sample_params() -> Vec<decthings_api::client::DecthingsParameterProvider<'static>> {
    vec![
        param(
            "input",
            vec![
                T::F32(arr(&[2], vec![1.5, -2.25])),
                T::String(arr_ref(&[1], vec!["hé"])),
            ],
        ),
        param("flag", vec![T::U8(arr(&[], vec![7]))]),
        dataset_param("ds", "d1", "k"),
    ]
}

const SAMPLE_JSON: &str = r#"{"modelId":"model-123","params":[{"name":"input"},{"name":"flag"},{"name":"ds","data":{"type":"dataset","dataset_id":"d1","dataset_key":"k"}}]}"#;

/// Blob of `input`: f32 [2] then string [1], back to back.
const INPUT_BLOB: &[u8] =
    b"\x01\x01\x02\x00\x00\xc0\x3f\x00\x00\x10\xc0\x0b\x01\x01\x04\x03h\xc3\xa9";
/// Blob of `flag`: u8 scalar 7.
const FLAG_BLOB: &[u8] = b"\x07\x00\x07";

fn split_head(raw: &[u8]) -> (String, &[u8]) {
    let at = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    (String::from_utf8(raw[..at].to_vec()).unwrap(), &raw[at..])
}

#[tokio::test]
async fn evaluate_request_is_exact() {
    let server = RawServer::start(any_reply).await;
    let client = client_for(server.addr);
    let _ = evaluate(&client, "model-123", sample_params()).await;
    let raw = &server.requests()[0];
    let (head, body) = split_head(raw);
    let expected_head = format!(
        "POST /v0/Model/evaluate HTTP/1.1\r\n\
         content-type: application/octet-stream\r\n\
         accept: */*\r\n\
         host: {}\r\n\
         content-length: {}\r\n\r\n",
        server.addr,
        body.len()
    );
    assert_eq!(head, expected_head);
    // u8 blob count | varint JSON length | varint blob lengths | JSON | blobs
    let mut expected = vec![2u8, SAMPLE_JSON.len() as u8, 19, 3];
    expected.extend_from_slice(SAMPLE_JSON.as_bytes());
    expected.extend_from_slice(INPUT_BLOB);
    expected.extend_from_slice(FLAG_BLOB);
    assert_eq!(SAMPLE_JSON.len(), 143);
    assert_eq!(body, &expected[..]);
}

/// The blobs are the ones in the shared RPC vectors (made by the Python
/// client); only the JSON differs (compact, and snake_case dataset fields).
#[test]
fn blobs_match_the_shared_rpc_vectors() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/decthings/rpc");
    let input = std::fs::read(dir.join("evaluate_param_blob_input.bin")).unwrap();
    let flag = std::fs::read(dir.join("evaluate_param_blob_flag.bin")).unwrap();
    assert_eq!(input, INPUT_BLOB);
    assert_eq!(flag, FLAG_BLOB);
}

#[tokio::test]
async fn api_key_and_extra_headers() {
    let server = RawServer::start(any_reply).await;
    let mut options = DecthingsClientOptions {
        http_server_address: format!("http://{}/v0", server.addr),
        api_key: Some("k-123".into()),
        ..Default::default()
    };
    // `extra_headers` is an http 0.2 map; its value type is inferred.
    options
        .extra_headers
        .insert("x-trace", "t1".parse().unwrap());
    assert_no_proxy();
    let client = DecthingsClient::new(options);
    let _ = evaluate(&client, "m", vec![]).await;
    let raw = &server.requests()[0];
    let (head, body) = split_head(raw);
    assert_eq!(
        head,
        format!(
            "POST /v0/Model/evaluate HTTP/1.1\r\n\
             content-type: application/octet-stream\r\n\
             authorization: Bearer k-123\r\n\
             x-trace: t1\r\n\
             accept: */*\r\n\
             host: {}\r\n\
             content-length: 29\r\n\r\n",
            server.addr
        )
    );
    // No blobs: count 0, JSON length 27.
    assert_eq!(body, b"\x00\x1b{\"modelId\":\"m\",\"params\":[]}");
}

#[tokio::test]
async fn the_address_is_used_verbatim() {
    let server = RawServer::start(any_reply).await;
    assert_no_proxy();
    let client = DecthingsClient::new(DecthingsClientOptions {
        http_server_address: format!("http://{}/v0/", server.addr),
        ..Default::default()
    });
    let _ = evaluate(&client, "m", vec![]).await;
    let (head, _) = split_head(&server.requests()[0]);
    // A trailing slash is not trimmed: `{address}/Model/evaluate`.
    assert!(
        head.starts_with("POST /v0//Model/evaluate HTTP/1.1\r\n"),
        "{head}"
    );
}

#[test]
fn params_json_field_names() {
    let check = |p: EvaluateParams<'_>, expected: &str| {
        assert_eq!(serde_json::to_string(&p).unwrap(), expected);
    };
    check(
        EvaluateParams {
            model_id: "m",
            params: vec![param("a", vec![])],
            snapshot_id: Some("s1"),
        },
        r#"{"modelId":"m","params":[{"name":"a"}],"snapshotId":"s1"}"#,
    );
    check(
        EvaluateParams {
            model_id: "m",
            params: vec![dataset_param("d", "id", "key")],
            snapshot_id: None,
        },
        r#"{"modelId":"m","params":[{"name":"d","data":{"type":"dataset","dataset_id":"id","dataset_key":"key"}}]}"#,
    );
}

/// A parameter with no tensors still gets a blob, of length 0.
#[tokio::test]
async fn empty_parameter_sends_an_empty_blob() {
    let server = RawServer::start(any_reply).await;
    let client = client_for(server.addr);
    let _ = evaluate(&client, "m", vec![param("a", vec![])]).await;
    let raw = &server.requests()[0];
    let (_, body) = split_head(raw);
    let json = br#"{"modelId":"m","params":[{"name":"a"}]}"#;
    let mut expected = vec![1u8, json.len() as u8, 0];
    expected.extend_from_slice(json);
    assert_eq!(body, &expected[..]);
}
