//! Decthings calls with the official client (`api_key` set: it sends
//! `Authorization: Bearer KEY`) on routes with keys. A refusal is the RPC
//! error `bad_credentials` with HTTP 200 (the client cannot read 4xx
//! bodies). Under `/secure/v0` every route needs keys, so a call without a
//! key of any of them is refused before its body is read; a key of another
//! route under the prefix passes that first check and is refused once the
//! body names the model's route.

use decthings_api::client::rpc::model::EvaluateError;
use decthings_api::client::{DecthingsClient, DecthingsClientOptions, DecthingsRpcError};
use decthings_api::tensor::DecthingsTensor;

use super::dc::*;
use super::*;

fn client(gw: &Running, prefix: &str, key: Option<&str>) -> DecthingsClient {
    assert_no_proxy();
    DecthingsClient::new(DecthingsClientOptions {
        http_server_address: format!("http://{}{prefix}", gw.data_addr),
        api_key: key.map(str::to_owned),
        ..Default::default()
    })
}

async fn call_simple(c: &DecthingsClient) -> EvalOutcome {
    let row: Vec<i32> = (1..=16).collect();
    let t = || DecthingsTensor::I32(arr(&[1, 16], row.clone()));
    evaluate(
        c,
        "simple",
        vec![param("INPUT0", vec![t()]), param("INPUT1", vec![t()])],
    )
    .await
}

fn bad_credentials(outcome: EvalOutcome) {
    assert!(
        matches!(
            outcome,
            Err(DecthingsRpcError::Rpc(EvaluateError::BadCredentials))
        ),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn decthings_every_outcome() {
    let (_backend, gw, _) = keyed_gateway("").await;
    bad_credentials(call_simple(&client(&gw, "/secure/v0", None)).await);
    bad_credentials(call_simple(&client(&gw, "/secure/v0", Some("no-such-key-0123456"))).await);
    // Carol's key is a key of a route under the prefix, not of simple's.
    bad_credentials(call_simple(&client(&gw, "/secure/v0", Some(CAROL))).await);
    let out = success(call_simple(&client(&gw, "/secure/v0", Some(ALICE))).await);
    let sum = single(&out, "OUTPUT0");
    assert_eq!(sum.shape, [1, 16]);
    assert_eq!(sum.elems, Elems::I32((1..=16).map(|v| 2 * v).collect()));
    success(call_simple(&client(&gw, "/secure/v0", Some(BOB))).await);
    // The open default route under /v0 needs nothing; a key is ignored.
    let identity = |c: DecthingsClient| async move {
        let t = DecthingsTensor::F32(arr(&[2], vec![1.5f32, -2.0]));
        evaluate(&c, "identity", vec![param("INPUT0", vec![t])]).await
    };
    success(identity(client(&gw, "/v0", None)).await);
    success(identity(client(&gw, "/v0", Some("anything-at-all-0000"))).await);

    let text = scrape_text(&gw).await;
    assert_series(
        &text,
        &[
            // Refused before the body: no route yet.
            (
                r#"tensorgate_auth_failures_total{reason="missing",route="_none"}"#,
                1.0,
            ),
            (
                r#"tensorgate_auth_failures_total{reason="invalid",route="_none"}"#,
                1.0,
            ),
            // Refused once the body named simple's route.
            (
                r#"tensorgate_auth_failures_total{reason="invalid",route="secure"}"#,
                1.0,
            ),
            (
                r#"tensorgate_authenticated_requests_total{key="alice",route="secure"}"#,
                1.0,
            ),
            (
                r#"tensorgate_requests_total{code="200",kind="decthings",route="_none"}"#,
                2.0,
            ),
        ],
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn a_call_without_a_key_is_refused_before_its_body_is_read() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (_backend, gw, _) = keyed_gateway("").await;
    // Announce a large body and send none of it: the refusal comes anyway.
    let mut s = tokio::net::TcpStream::connect(gw.data_addr).await.unwrap();
    let head = "POST /secure/v0/Model/evaluate HTTP/1.1\r\nhost: x\r\ncontent-type: application/octet-stream\r\ncontent-length: 1000000\r\n\r\n";
    s.write_all(head.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(std::time::Duration::from_secs(5), s.read(&mut buf))
        .await
        .expect("no reply before the body")
        .unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("bad_credentials"), "{text}");
    gw.shutdown().await;
}
