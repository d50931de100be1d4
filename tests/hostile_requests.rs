//! What a hostile client (or an unlucky operator) tried, refused before the
//! backend sees a byte: JSON outside tensor `data` bounded by bytes (no
//! 2 GiB blow-up), rules not skipped by a percent-encoded path, paths that
//! read differently before and after decoding refused, Triton's control
//! endpoints denied unless the route allows them, and an early answer
//! delivered to a client still sending its body. The modules under
//! `hostile/` are the second round (issue 26): forged signatures and slot
//! attacks measured against a second client, amplification by sparse
//! records, Decthings limits, replicas sending endless replies, a FIFO
//! where a watched file was, `/ping` floods, capped access-log fields,
//! readiness without health checks.
//!
//! A test binary of its own, not a module of `tests/it`:
//! `json_outside_tensor_data_is_bounded` asserts on the growth of this
//! process's resident memory (`VmRSS`) while it sends 32 MB bodies, so the
//! allocations of tests running beside it would count as the gateway's
//! (and its bodies against their own memory bounds).

#[path = "hostile/access_log.rs"]
mod access_log;
#[path = "hostile/amplification.rs"]
mod amplification;
#[path = "hostile/attack.rs"]
mod attack;
#[path = "it/common/mod.rs"]
mod common;
#[path = "hostile/decthings_limits.rs"]
mod decthings_limits;
#[path = "hostile/decthings_shared_prefix.rs"]
mod decthings_shared_prefix;
#[path = "hostile/fifo_reload.rs"]
mod fifo_reload;
#[path = "hostile/ping.rs"]
mod ping;
#[path = "hostile/readiness.rs"]
mod readiness;
#[path = "hostile/replica_faults.rs"]
mod replica_faults;
#[path = "hostile/signed_flood.rs"]
mod signed_flood;
#[path = "hostile/slots.rs"]
mod slots;

use common::procs;
use common::replica;
use common::{TestBackend, gateway, reply, send};

/// A backend that records every request and answers 200.
async fn recorder() -> TestBackend {
    TestBackend::start(|_| async {
        reply(
            200,
            &[("content-type", "application/json")],
            r#"{"outputs":[]}"#,
        )
    })
    .await
}

fn config(backend: &TestBackend, extra: &str) -> String {
    format!(
        r#"
[server]
shutdown_grace = "2s"
[backends.b]
url = "{}"
[[routes]]
name = "r"
models = ["simple"]
backend = "b"
[routes.inputs.INPUT0]
shape = [-1, 16]
allowed_types = ["INT32"]
[[routes]]
name = "default"
default = true
backend = "b"
{extra}
"#,
        backend.url()
    )
}

fn rss_kib() -> u64 {
    procs::status_kib(None, "VmRSS").unwrap_or(0)
}

/// A 32 MB array in an unknown member or in `parameters` used to grow the
/// gateway by 2.2 GiB and be served; now it is a 413 once the JSON outside
/// tensor data passes `max_json_header_bytes`.
#[tokio::test]
async fn json_outside_tensor_data_is_bounded() {
    let backend = recorder().await;
    let gw = gateway(&config(&backend, "")).await;
    let many: String = std::iter::repeat_n("0,", 16 << 20).collect::<String>() + "0";
    let long = format!("\"{}\"", "x".repeat(32 << 20));
    let input = r#"{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}"#;
    let before = rss_kib();
    for value in [format!("[{many}]"), long] {
        for body in [
            format!(r#"{{"junk":{value},"inputs":[{input}]}}"#),
            format!(r#"{{"parameters":{{"x":{value}}},"inputs":[{input}]}}"#),
            format!(
                r#"{{"inputs":[{{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{{"x":{value}}},"data":[0]}}]}}"#
            ),
        ] {
            let got = send(gw.data_addr, "POST", "/v2/models/simple/infer", &[], body).await;
            // Many small values hit the count budget (400), one long one
            // the byte budget (413).
            let (status, limit) = if value.starts_with('[') {
                (400, "65536 values")
            } else {
                (413, "1048576 bytes")
            };
            assert_eq!(got.status, status, "{}", got.error());
            assert!(got.error().contains(limit), "{}", got.error());
        }
    }
    let grown_mib = rss_kib().saturating_sub(before) / 1024;
    // The test's own bodies are 32 MB each; the gateway must not add a
    // DOM of them (that was gigabytes).
    assert!(grown_mib < 400, "RSS grew by {grown_mib} MiB");
    assert!(backend.requests().is_empty(), "the backend saw a request");
}

/// `/v2/models/simple/%69nfer` is an infer call to a decoding backend: the
/// route's rules hold on it.
#[tokio::test]
async fn rules_hold_on_a_percent_encoded_infer_path() {
    let backend = recorder().await;
    let gw = gateway(&config(&backend, "")).await;
    let body = r#"{"inputs":[{"name":"INPUT0","shape":[1,8],"datatype":"INT32","data":[1,2,3,4,5,6,7,8]}]}"#;
    for path in [
        "/v2/models/simple/%69nfer",
        "/v2/%6Dodels/simple/infer",
        "/v2/models/%73imple/infer",
    ] {
        let got = send(gw.data_addr, "POST", path, &[], body).await;
        assert_eq!(got.status, 400, "{path}");
        assert!(
            got.error().contains("does not match rule [-1,16]"),
            "{path}: {}",
            got.error()
        );
    }
    assert!(backend.requests().is_empty(), "the backend saw a request");
}

#[tokio::test]
async fn ambiguous_paths_are_refused() {
    let backend = recorder().await;
    let gw = gateway(&config(&backend, "")).await;
    for path in [
        "/v2/models/simple%2Finfer",
        "/v2/models/x/../simple/infer",
        "/v2/models/%2e%2e/v2/logging",
        "/v2/models/%ff/infer",
    ] {
        let got = send(gw.data_addr, "POST", path, &[], "{}").await;
        assert_eq!(got.status, 400, "{path}");
        assert!(
            got.error().contains("invalid request path"),
            "{path}: {}",
            got.error()
        );
    }
    assert!(backend.requests().is_empty(), "the backend saw a request");
}

#[tokio::test]
async fn control_endpoints_are_denied_unless_allowed() {
    let backend = recorder().await;
    let gw = gateway(&config(&backend, "")).await;
    let denied = [
        ("POST", "/v2/repository/index"),
        ("GET", "/v2/repository/index"),
        ("POST", "/v2/repository/models/simple/load"),
        ("POST", "/v2/repository/models/simple/unload"),
        ("POST", "/v2/systemsharedmemory/region/r/register"),
        ("GET", "/v2/cudasharedmemory/status"),
        ("POST", "/v2/logging"),
        ("POST", "/v2/trace/setting"),
        ("GET", "/v2/models/simple/trace/setting"),
    ];
    for (method, path) in denied {
        let got = send(gw.data_addr, method, path, &[], "{}").await;
        assert_eq!(got.status, 403, "{method} {path}");
        assert!(got.error().contains("allow_control"), "{}", got.error());
    }
    assert!(backend.requests().is_empty(), "the backend saw a request");
    // Read-only endpoints still pass.
    let got = send(gw.data_addr, "GET", "/v2/models/stats", &[], "").await;
    assert_eq!(got.status, 200);
    // A route that allows repository calls passes them, and only them: the
    // default route here, not the route serving `simple`.
    let backend = recorder().await;
    let allow = config(&backend, "allow_control = [\"repository\"]");
    let gw = gateway(&allow).await;
    let got = send(
        gw.data_addr,
        "POST",
        "/v2/repository/models/other/load",
        &[],
        "{}",
    )
    .await;
    assert_eq!(got.status, 200);
    let got = send(
        gw.data_addr,
        "POST",
        "/v2/repository/models/simple/load",
        &[],
        "{}",
    )
    .await;
    assert_eq!(got.status, 403);
    let got = send(gw.data_addr, "POST", "/v2/logging", &[], "{}").await;
    assert_eq!(got.status, 403);
    // The index is a repository call: allowed with the others.
    let got = send(gw.data_addr, "POST", "/v2/repository/index", &[], "{}").await;
    assert_eq!(got.status, 200);
}

/// Reads one HTTP/1.1 response with a `content-length` from `r`: its status
/// and body.
async fn read_response(r: &mut (impl tokio::io::AsyncBufRead + Unpin)) -> (u16, String) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    let mut status = String::new();
    r.read_line(&mut status).await.unwrap();
    let code = status.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut length = 0;
    loop {
        let mut line = String::new();
        r.read_line(&mut line).await.unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body).await.unwrap();
    (code, String::from_utf8(body).unwrap())
}

/// A shape broken in the first bytes of an 8 MB body is answered at once;
/// the client, still writing the rest, gets all of its body out (the
/// gateway reads on and throws it away rather than resetting the
/// connection under it), reads the 400, and the connection then serves
/// the next request.
#[tokio::test]
async fn an_early_answer_reaches_a_client_still_sending() {
    use tokio::io::{AsyncWriteExt, BufReader};
    let backend = recorder().await;
    let gw = gateway(&config(&backend, "")).await;
    let head = r#"{"inputs":[{"name":"INPUT0","shape":[1,8],"datatype":"INT32","data":["#;
    let body = head.to_owned() + &"1,".repeat(4 << 20) + "1]}]}";
    let stream = tokio::net::TcpStream::connect(gw.data_addr).await.unwrap();
    let (read, mut write) = stream.into_split();
    let request = format!(
        "POST /v2/models/simple/infer HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let writer = tokio::spawn(async move {
        write.write_all(request.as_bytes()).await?;
        write.write_all(body.as_bytes()).await?;
        Ok::<_, std::io::Error>(write)
    });
    let mut read = BufReader::new(read);
    let deadline = std::time::Duration::from_secs(20);
    let (status, error) = tokio::time::timeout(deadline, read_response(&mut read))
        .await
        .expect("no answer");
    assert_eq!(status, 400, "{error}");
    assert!(
        error.contains("data has more elements than the 8 its shape holds"),
        "{error}"
    );
    let mut write = tokio::time::timeout(deadline, writer)
        .await
        .expect("the body was not taken")
        .unwrap()
        .expect("writing the body failed");
    write
        .write_all(b"GET /v2/models/simple HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let (status, _) = tokio::time::timeout(deadline, read_response(&mut read))
        .await
        .expect("no answer on the same connection");
    assert_eq!(status, 200);
    assert_eq!(
        backend.requests().len(),
        1,
        "only the GET reaches the backend"
    );
}
