//! Per-route API keys, end to end, for every frontend: V2 (infer and
//! passthrough), the SageMaker container paths, the SageMaker Runtime API
//! path (keys and SigV4, in AWS's error shape), and Decthings with the
//! official client (`tests/auth/decthings.rs`). Every outcome: missing,
//! wrong, right, unreadable; the key's name in metrics and the access log;
//! credentials never reaching the backend. The demo backend serves
//! `simple` (route `secure`, keys alice and bob), `rowsum` (route `rows`,
//! key carol) and everything else (the default route, no keys).
//! boto3's own requests are checked by tests/sagemaker/auth.py.

mod common;
#[path = "common/decthings.rs"]
mod dc;
#[path = "auth/decthings.rs"]
mod decthings;
#[path = "auth/sigv4.rs"]
mod sigv4;

use std::path::PathBuf;

use common::access_log as access;
use common::*;
use serde_json::json;
use tensorgate::server::Running;
use tensorgate_demo::{self as demo, DemoServer};

pub const ALICE: &str = "alice-key-0123456789";
pub const BOB: &str = "bob-key-0123456789ab";
pub const CAROL: &str = "carol-key-0123456789";

/// The gateway described above, with `extra` TOML appended to route
/// `secure`.
pub async fn keyed_gateway(extra: &str) -> (DemoServer, Running, PathBuf) {
    let backend = demo::spawn().await.unwrap();
    let ab = keys_file(&format!("# test keys\nalice:{ALICE}\nbob:{BOB}\n"));
    let c = keys_file(&format!("carol:{CAROL}\n"));
    let gw = gateway(&format!(
        r#"
[server]
shutdown_grace = "2s"
[backends.demo]
url = "{url}"
[[routes]]
name = "secure"
models = ["simple"]
backend = "demo"
[routes.decthings]
prefix = "/secure/v0"
[routes.auth]
keys_file = "{ab}"
{extra}
[[routes]]
name = "rows"
models = ["rowsum"]
backend = "demo"
[routes.decthings]
prefix = "/secure/v0"
[routes.sagemaker]
default_model = "rowsum"
[routes.sagemaker.endpoints]
rows-ep = "rowsum"
[routes.auth]
keys_file = "{c}"
[[routes]]
name = "default"
default = true
backend = "demo"
"#,
        url = backend.url(),
        ab = ab.display(),
        c = c.display(),
    ))
    .await;
    (backend, gw, ab)
}

pub fn simple_request() -> String {
    let row: Vec<i32> = (1..=16).collect();
    json!({"inputs": [
        {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": row},
        {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": row},
    ]})
    .to_string()
}

async fn infer(gw: &Running, headers: &[(&str, &str)]) -> Got {
    let mut h = vec![("content-type", "application/json")];
    h.extend_from_slice(headers);
    send(
        gw.data_addr,
        "POST",
        "/v2/models/simple/infer",
        &h,
        simple_request(),
    )
    .await
}

/// A 401 in the V2 shape, with its challenge; returns the message.
fn unauthorized(got: &Got) -> String {
    assert_eq!(got.status, 401, "{:?}", got.body);
    assert_eq!(
        got.header("www-authenticate"),
        Some("Bearer realm=\"tensorgate\"")
    );
    got.error()
}

#[tokio::test]
async fn v2_infer_every_outcome() {
    let (_backend, gw, _) = keyed_gateway("").await;
    let bearer = format!("Bearer {ALICE}");
    assert_eq!(
        unauthorized(&infer(&gw, &[]).await),
        "route \"secure\": no API key: send Authorization: Bearer KEY or x-api-key: KEY"
    );
    let wrong = format!("Bearer {ALICE}x");
    assert_eq!(
        unauthorized(&infer(&gw, &[("authorization", &wrong)]).await),
        "route \"secure\": the API key is not one of the route's keys"
    );
    // A key of another route is not a key of this one.
    let carol = format!("Bearer {CAROL}");
    assert_eq!(
        unauthorized(&infer(&gw, &[("authorization", &carol)]).await),
        "route \"secure\": the API key is not one of the route's keys"
    );
    assert_eq!(
        unauthorized(&infer(&gw, &[("authorization", "Basic YTpi")]).await),
        "route \"secure\": the credentials cannot be read: an Authorization scheme other than Bearer (or AWS4-HMAC-SHA256)"
    );
    assert_eq!(
        unauthorized(&infer(&gw, &[("authorization", &bearer), ("x-api-key", BOB)]).await),
        "route \"secure\": the credentials cannot be read: Authorization and x-api-key hold different keys"
    );
    let ok = infer(&gw, &[("authorization", &bearer)]).await;
    assert_eq!(ok.status, 200, "{:?}", ok.body);
    assert_eq!(ok.json()["outputs"][0]["data"][1], 4, "sum of 2 and 2");
    let ok = infer(&gw, &[("x-api-key", BOB)]).await;
    assert_eq!(ok.status, 200);
    let lower = format!("bearer {BOB}");
    assert_eq!(infer(&gw, &[("authorization", &lower)]).await.status, 200);
    // A route without keys ignores credentials.
    let open = send(
        gw.data_addr,
        "GET",
        "/v2/models/identity",
        &[("authorization", &wrong)],
        "",
    )
    .await;
    assert_eq!(open.status, 200, "{:?}", open.body);

    let text = scrape_text(&gw).await;
    assert_series(
        &text,
        &[
            (
                r#"tensorgate_authenticated_requests_total{key="alice",route="secure"}"#,
                1.0,
            ),
            (
                r#"tensorgate_authenticated_requests_total{key="bob",route="secure"}"#,
                2.0,
            ),
            (
                r#"tensorgate_authenticated_requests_total{key="carol",route="rows"}"#,
                0.0,
            ),
            (
                r#"tensorgate_auth_failures_total{reason="missing",route="secure"}"#,
                1.0,
            ),
            (
                r#"tensorgate_auth_failures_total{reason="invalid",route="secure"}"#,
                4.0,
            ),
            (
                r#"tensorgate_auth_failures_total{reason="signature",route="secure"}"#,
                0.0,
            ),
            (
                r#"tensorgate_requests_total{code="401",kind="v2",route="secure"}"#,
                5.0,
            ),
        ],
    );
    assert!(
        !text.contains(ALICE) && !text.contains(BOB),
        "no key in the metrics"
    );
    gw.shutdown().await;
}

#[tokio::test]
async fn passthrough_needs_keys_and_credentials_never_reach_the_backend() {
    let backend = TestBackend::start(|_| async { reply(200, &[], "{}") }).await;
    let keys = keys_file(&format!("alice:{ALICE}\n"));
    let gw = gateway(&simple_config(
        &backend.url(),
        &format!("[routes.auth]\nkeys_file = \"{}\"\n", keys.display()),
    ))
    .await;
    let path = "/v2/models/m/config";
    let got = send(gw.data_addr, "GET", path, &[], "").await;
    unauthorized(&got);
    let got = send(
        gw.data_addr,
        "GET",
        "/v2/health/ready",
        &[("x-api-key", "nope-nope-nope-nope")],
        "",
    )
    .await;
    unauthorized(&got);
    assert!(backend.requests().is_empty(), "refused before the backend");
    let bearer = format!("Bearer {ALICE}");
    let got = send(
        gw.data_addr,
        "GET",
        path,
        &[
            ("authorization", &bearer),
            ("x-api-key", ALICE),
            ("x-trace", "t"),
        ],
        "",
    )
    .await;
    assert_eq!(got.status, 200);
    let seen = backend.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].headers.get("x-trace").unwrap(), "t");
    assert!(seen[0].headers.get("authorization").is_none());
    assert!(seen[0].headers.get("x-api-key").is_none());
    gw.shutdown().await;
}

#[tokio::test]
async fn the_access_log_names_the_key_never_the_key_itself() {
    access::start();
    let (_backend, gw, _) = keyed_gateway("").await;
    let bearer = format!("Bearer {ALICE}");
    let ok = infer(
        &gw,
        &[("authorization", &bearer), ("x-request-id", "auth-ok")],
    )
    .await;
    assert_eq!(ok.status, 200);
    let refused = infer(
        &gw,
        &[
            ("x-api-key", "not-a-key-0123456789"),
            ("x-request-id", "auth-no"),
        ],
    )
    .await;
    assert_eq!(refused.status, 401);
    gw.shutdown().await;
    let line = access::line("auth-ok");
    assert_eq!(
        (line["key"].as_str(), line["status"].as_u64()),
        (Some("alice"), Some(200))
    );
    let line = access::line("auth-no");
    assert_eq!(
        (line["key"].as_str(), line["status"].as_u64()),
        (Some(""), Some(401))
    );
    let all = access::raw();
    assert!(
        !all.contains(ALICE) && !all.contains("not-a-key-0123456789"),
        "{all}"
    );
}

#[tokio::test]
async fn sagemaker_container_paths() {
    let (_backend, gw, _) = keyed_gateway("").await;
    let csv = [("content-type", "text/csv"), ("accept", "application/json")];
    for path in ["/invocations", "/models/rowsum/invoke"] {
        let got = send(gw.data_addr, "POST", path, &csv, "1,2\n").await;
        assert_eq!(
            unauthorized(&got),
            "route \"rows\": no API key: send Authorization: Bearer KEY or x-api-key: KEY",
            "{path}"
        );
        let mut h = csv.to_vec();
        h.push(("x-api-key", ALICE));
        let got = send(gw.data_addr, "POST", path, &h, "1,2\n").await;
        assert_eq!(
            unauthorized(&got),
            "route \"rows\": the API key is not one of the route's keys"
        );
        let mut h = csv.to_vec();
        h.push(("x-api-key", CAROL));
        let got = send(gw.data_addr, "POST", path, &h, "1,2\n").await;
        assert_eq!(got.status, 200, "{path}: {:?}", got.body);
        assert_eq!(got.json()["predictions"][0]["score"], 3.0);
    }
    // The health check needs no key.
    let ping = send(gw.data_addr, "GET", "/ping", &[], "").await;
    assert_eq!(ping.status, 200);
    gw.shutdown().await;
}
