//! Finding 11: fields of the access line that come from the request are
//! capped (a 1 MB Decthings `modelId` wrote a 1 MB line).

use tensorgate::codec::decthings::rpc;

use super::{config, recorder};
use crate::common::{access_log, gateway, send};

#[tokio::test]
async fn access_log_fields_from_the_request_are_capped() {
    access_log::start();
    let backend = recorder().await;
    let gw = gateway(&config(&backend, "")).await;
    let model = "m".repeat(1 << 20);
    let json = serde_json::to_vec(&serde_json::json!({"modelId": model, "params": []})).unwrap();
    let body = rpc::encode_request(&json, &[]).unwrap();
    let id = "capped-decthings";
    let got = send(
        gw.data_addr,
        "POST",
        "/v0/Model/evaluate",
        &[("x-request-id", id)],
        body,
    )
    .await;
    assert_eq!(got.status, 200);
    let long_path = format!("/v2/models/{}", "p".repeat(8000));
    let path_id = "capped-path";
    send(
        gw.data_addr,
        "GET",
        &long_path,
        &[("x-request-id", path_id)],
        "",
    )
    .await;
    // Lines are written when the request's reply has ended.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while access_log::lines(path_id).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let line = access_log::line(id);
    let logged = line["model"].as_str().unwrap();
    assert_eq!(
        logged,
        format!("{}...(+{} bytes)", "m".repeat(512), (1 << 20) - 512)
    );
    let line = access_log::line(path_id);
    let logged = line["path"].as_str().unwrap();
    assert!(logged.starts_with("/v2/models/ppp"), "{logged}");
    assert!(
        logged.ends_with(&format!("...(+{} bytes)", long_path.len() - 512)),
        "{logged}"
    );
    let longest = access_log::raw().lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 4096, "an access line of {longest} bytes");
}
