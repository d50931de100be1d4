//! Raw binary requests (`Inference-Header-Content-Length: 0`) on routes
//! with input rules: the single input's name, datatype and shape come from
//! the model's metadata (cached) and are checked like any input; a request
//! that cannot be checked is refused, saying what to send instead, and the
//! backend never sees its infer.

use crate::common::*;

const RULES: &str = r#"
[[routes]]
name = "raw"
models = ["one", "two", "gone", "int"]
backend = "b"
[routes.inputs.INPUT0]
shape = [-1, 4]
allowed_types = ["FP32", "FP16"]
"#;

fn metadata(model: &str) -> Option<&'static str> {
    match model {
        "/v2/models/one" => Some(
            r#"{"name":"one","inputs":[{"name":"INPUT0","datatype":"FP32","shape":[-1,4]}],"outputs":[]}"#,
        ),
        "/v2/models/int" => Some(
            r#"{"name":"int","inputs":[{"name":"INPUT0","datatype":"INT32","shape":[-1,4]}],"outputs":[]}"#,
        ),
        "/v2/models/two" => Some(
            r#"{"name":"two","inputs":[{"name":"A","datatype":"FP32","shape":[4]},{"name":"B","datatype":"FP32","shape":[4]}],"outputs":[]}"#,
        ),
        _ => None,
    }
}

async fn setup() -> (TestBackend, tensorgate::server::Running) {
    let backend = TestBackend::start(|seen| async move {
        if seen.method == "GET" {
            return match metadata(&seen.path) {
                Some(m) => reply(200, &[("content-type", "application/json")], m),
                None => reply(404, &[], r#"{"error":"Request for unknown model"}"#),
            };
        }
        reply(200, &[("content-type", "application/octet-stream")], "ok")
    })
    .await;
    let gw = gateway(&simple_config(&backend.url(), RULES)).await;
    (backend, gw)
}

async fn raw(gw: &tensorgate::server::Running, model: &str, size: usize) -> Got {
    send(
        gw.data_addr,
        "POST",
        &format!("/v2/models/{model}/infer"),
        &[("inference-header-content-length", "0")],
        vec![1u8; size],
    )
    .await
}

fn infers(backend: &TestBackend) -> usize {
    backend
        .requests()
        .iter()
        .filter(|s| s.method == "POST")
        .count()
}

#[tokio::test]
async fn the_single_input_is_checked_from_metadata() {
    let (backend, gw) = setup().await;
    // [-1,4] FP32: 48 bytes are [3,4].
    let got = raw(&gw, "one", 48).await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    // 40 bytes are not whole rows of four FP32 values.
    let got = raw(&gw, "one", 40).await;
    assert_eq!(got.status, 400);
    assert_eq!(
        got.error(),
        r#"route "raw": raw binary body of 40 bytes cannot be input "INPUT0" of model "one" (FP32 with shape [-1,4]): the body is not a whole number of the input's rows"#
    );
    // The model's datatype is not one the route allows.
    let got = raw(&gw, "int", 16).await;
    assert_eq!(got.status, 400);
    assert_eq!(
        got.error(),
        r#"route "raw": input "INPUT0": datatype INT32 is not allowed (allowed: FP32, FP16)"#
    );
    assert_eq!(
        infers(&backend),
        1,
        "only the good request reached the backend"
    );
    // Metadata is fetched once per model and cached.
    let gets: Vec<String> = backend
        .requests()
        .iter()
        .filter(|s| s.method == "GET")
        .map(|s| s.path.clone())
        .collect();
    assert_eq!(gets, ["/v2/models/one", "/v2/models/int"]);
}

#[tokio::test]
async fn unverifiable_raw_requests_are_refused() {
    let (backend, gw) = setup().await;
    let got = raw(&gw, "two", 16).await;
    assert_eq!(got.status, 400);
    assert_eq!(
        got.error(),
        r#"route "raw": a raw binary request (Inference-Header-Content-Length: 0) is the model's single input, but the metadata of model "two" lists 2 inputs; send a JSON or binary-extension request that names each input"#
    );
    let got = raw(&gw, "gone", 16).await;
    assert_eq!(got.status, 400);
    assert_eq!(
        got.error(),
        r#"route "raw": a raw binary request (Inference-Header-Content-Length: 0) cannot be checked against this route's input rules: the metadata of model "gone" is unavailable (backend "b" has no model "gone" (status 404 Not Found)); send a JSON or binary-extension request that names the input"#
    );
    assert_eq!(infers(&backend), 0);
}

#[tokio::test]
async fn routes_without_input_rules_ask_for_no_metadata() {
    let backend = TestBackend::start(|_| async { reply(200, &[], "ok") }).await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    let got = raw(&gw, "anything", 7).await;
    assert_eq!(got.status, 200);
    let seen = backend.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "POST");
}

#[tokio::test]
async fn an_unreachable_backend_is_502_not_a_metadata_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gw = gateway(&simple_config(&format!("http://127.0.0.1:{port}"), RULES)).await;
    let got = raw(&gw, "one", 16).await;
    assert_eq!(got.status, 502);
    assert_eq!(got.error(), r#"backend "b" refused the connection"#);
}
