//! Backend failures: refused (502), hung (504), reset (502); backend errors
//! pass through with their status and body; the gateway's own errors use the
//! same `{"error"}` shape.

use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use crate::common::*;

fn config(url: &str) -> String {
    format!(
        r#"
[backends.b]
url = "{url}"
request_timeout = "300ms"
connect_timeout = "300ms"
[[routes]]
name = "r"
default = true
backend = "b"
"#
    )
}

const INFER_BODY: &str = r#"{"inputs":[{"name":"X","shape":[1],"datatype":"INT32","data":[1]}]}"#;

#[tokio::test]
async fn refused_is_502() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let gw = gateway(&config(&format!("http://127.0.0.1:{port}"))).await;
    for path in ["/v2/models/m/infer", "/v2/health/ready"] {
        let got = post_json(gw.data_addr, path, INFER_BODY).await;
        assert_eq!(got.status, 502, "{path}");
        assert_eq!(got.header("content-type"), Some("application/json"));
        assert!(
            got.error()
                .starts_with(r#"backend "b" refused the connection"#),
            "{}",
            got.error()
        );
    }
}

#[tokio::test]
async fn hung_backend_is_504() {
    // Accepts connections, reads, never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await;
            held.push(s);
        }
    });
    let gw = gateway(&config(&format!("http://{addr}"))).await;
    for path in ["/v2/models/m/infer", "/v2/models/m/ready"] {
        let started = Instant::now();
        let got = post_json(gw.data_addr, path, INFER_BODY).await;
        assert_eq!(got.status, 504, "{path}");
        assert_eq!(got.error(), r#"backend "b" did not answer within 0.300s"#);
        assert!(started.elapsed() < Duration::from_secs(5));
    }
    hold.abort();
}

#[tokio::test]
async fn reset_is_502() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await;
            drop(s);
        }
    });
    let gw = gateway(&config(&format!("http://{addr}"))).await;
    let got = post_json(gw.data_addr, "/v2/models/m/infer", INFER_BODY).await;
    assert_eq!(got.status, 502);
    assert!(
        got.error()
            .starts_with(r#"backend "b" closed the connection"#),
        "{}",
        got.error()
    );
    task.abort();
}

#[tokio::test]
async fn backend_errors_pass_through_unchanged() {
    let backend = TestBackend::start(|seen| async move {
        if seen.path.ends_with("/infer") {
            reply(
                400,
                &[("content-type", "application/json")],
                r#"{"error":"[request id: <id_unknown>] unexpected shape for input 'X' for model 'm'"}"#,
            )
        } else {
            reply(404, &[("content-type", "text/plain")], r#"{"error":"Request for unknown model: 'm' is not found"}"#)
        }
    })
    .await;
    let gw = gateway(&config(&backend.url())).await;
    let got = post_json(gw.data_addr, "/v2/models/m/infer", INFER_BODY).await;
    assert_eq!(got.status, 400);
    assert_eq!(got.header("content-type"), Some("application/json"));
    assert_eq!(
        got.error(),
        "[request id: <id_unknown>] unexpected shape for input 'X' for model 'm'"
    );
    let got = send(gw.data_addr, "GET", "/v2/models/m", &[], "").await;
    assert_eq!(got.status, 404);
    assert_eq!(got.header("content-type"), Some("text/plain"));
    assert_eq!(
        &got.body[..],
        br#"{"error":"Request for unknown model: 'm' is not found"}"#
    );
}

#[tokio::test]
async fn passthrough_strips_hop_by_hop_headers() {
    let backend = TestBackend::start(|_| async {
        reply(
            200,
            &[
                ("x-backend", "1"),
                ("connection", "x-private"),
                ("x-private", "secret"),
            ],
            "",
        )
    })
    .await;
    let gw = gateway(&config(&backend.url())).await;
    let got = send(
        gw.data_addr,
        "GET",
        "/v2/health/ready?verbose=1",
        &[
            ("connection", "x-hop"),
            ("x-hop", "1"),
            ("x-request-id", "abc"),
            ("te", "trailers"),
        ],
        "",
    )
    .await;
    assert_eq!(got.status, 200);
    assert_eq!(got.header("x-backend"), Some("1"));
    assert_eq!(got.header("x-private"), None);
    let seen = backend.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v2/health/ready?verbose=1");
    assert_eq!(seen[0].headers.get("x-hop"), None);
    assert_eq!(seen[0].headers.get("te"), None);
    assert_eq!(seen[0].headers["x-request-id"], "abc");
}
