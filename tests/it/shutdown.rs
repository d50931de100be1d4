//! Shutdown order on SIGTERM (or `Running::shutdown`): `/readyz` answers
//! 503 at once; for `server.drain_delay` the gateway still accepts and
//! serves; then it stops accepting and lets in-flight requests finish
//! until `server.shutdown_grace` after the signal; whatever still runs
//! then is cut off, and the process exits 0. Runs the real binary, except
//! for the HTTP/2 case.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::common::*;

/// A gateway process, killed if the test ends before it exits.
struct Gateway {
    child: Option<Child>,
    data: SocketAddr,
    admin: SocketAddr,
    log: Option<std::thread::JoinHandle<Vec<String>>>,
    dir: std::path::PathBuf,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Gateway {
    /// Starts the binary in front of `backend` with these `[server]` keys.
    fn start(backend: &str, keys: &str) -> Gateway {
        let (data, admin) = (free_port(), free_port());
        let dir = std::env::temp_dir().join(format!("tg-shutdown-{}-{data}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("gateway.toml");
        let keys =
            format!("listen = \"127.0.0.1:{data}\"\nadmin_listen = \"127.0.0.1:{admin}\"\n{keys}");
        std::fs::write(&config, server_config(backend, &keys)).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_tensorgate"))
            .arg("--config")
            .arg(&config)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = std::thread::spawn(move || {
            BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<_>>()
        });
        let gw = Gateway {
            child: Some(child),
            data: format!("127.0.0.1:{data}").parse().unwrap(),
            admin: format!("127.0.0.1:{admin}").parse().unwrap(),
            log: Some(log),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(gw.admin).is_err() {
            assert!(Instant::now() < deadline, "gateway did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        gw
    }

    fn sigterm(&self) -> Instant {
        let pid = self.child.as_ref().unwrap().id().to_string();
        let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(killed.success());
        Instant::now()
    }

    /// Waits for the process to exit; its exit status and log.
    fn wait(mut self, limit: Duration) -> (std::process::ExitStatus, String) {
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the gateway did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let log = self.log.take().unwrap().join().unwrap().join("\n");
        (status, log)
    }
}

/// A backend answering `/v2/models/slow*` after `slow`, the rest at once.
async fn backend(slow: Duration) -> TestBackend {
    TestBackend::start(move |seen| async move {
        if seen.path.starts_with("/v2/models/slow") {
            tokio::time::sleep(slow).await;
        }
        reply(
            200,
            &[("content-type", "application/json")],
            r#"{"ok":true}"#,
        )
    })
    .await
}

#[tokio::test]
async fn sigterm_turns_readyz_off_serves_through_the_drain_delay_then_drains_and_exits_zero() {
    let backend = backend(Duration::from_millis(2500)).await;
    let gw = Gateway::start(
        &backend.url(),
        "drain_delay = \"1s\"\nshutdown_grace = \"5s\"",
    );
    let (data, admin) = (gw.data, gw.admin);
    assert_eq!(send(admin, "GET", "/readyz", &[], "").await.status, 200);

    // A request in flight when the signal arrives.
    let in_flight =
        tokio::spawn(async move { send(data, "GET", "/v2/models/slow", &[], "").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let signalled = gw.sigterm();

    // Readiness is off at once...
    tokio::time::sleep(Duration::from_millis(100)).await;
    let ready = send(admin, "GET", "/readyz", &[], "").await;
    assert_eq!(ready.status, 503);
    assert_eq!(&ready.body[..], br#"{"status":"draining"}"#);
    // ...while new connections are still accepted and served.
    let fresh = send(data, "GET", "/v2/models/fast", &[], "").await;
    assert_eq!(fresh.status, 200);
    assert!(
        signalled.elapsed() < Duration::from_secs(1),
        "too slow to test the delay"
    );

    // After the drain delay, new connections are refused.
    tokio::time::sleep(
        Duration::from_secs(1).saturating_sub(signalled.elapsed()) + Duration::from_millis(300),
    )
    .await;
    assert!(
        tokio::net::TcpStream::connect(data).await.is_err(),
        "the data port still accepts connections after the drain delay"
    );
    // The admin port still answers while requests drain.
    assert_eq!(send(admin, "GET", "/readyz", &[], "").await.status, 503);
    // The in-flight request completes normally.
    let got = in_flight.await.unwrap();
    assert_eq!(got.status, 200);
    assert_eq!(&got.body[..], br#"{"ok":true}"#);

    let (status, log) = gw.wait(Duration::from_secs(5));
    assert!(status.success(), "exit status {status:?}");
    assert!(log.contains("shutdown signal received"), "{log}");
    assert!(log.contains("all connections closed"), "{log}");
    assert!(signalled.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_request_still_running_at_the_end_of_the_grace_period_is_cut_off() {
    let backend = backend(Duration::from_secs(60)).await;
    let gw = Gateway::start(
        &backend.url(),
        "drain_delay = \"200ms\"\nshutdown_grace = \"1s\"",
    );
    let data = gw.data;
    let stuck = tokio::spawn(async move {
        let resp = client()
            .request(
                http::Request::get(format!("http://{data}/v2/models/slow"))
                    .body(Full::new(Bytes::new()))
                    .unwrap(),
            )
            .await;
        (resp.map(|r| r.status()), Instant::now())
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while backend.requests().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the request never reached the backend"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let signalled = gw.sigterm();
    let (outcome, at) = tokio::time::timeout(Duration::from_secs(5), stuck)
        .await
        .expect("the stuck request was not cut off")
        .unwrap();
    assert!(outcome.is_err(), "{outcome:?}");
    let cut = at - signalled;
    assert!(cut >= Duration::from_millis(950), "cut off after {cut:?}");
    let (status, log) = gw.wait(Duration::from_secs(3));
    assert!(status.success(), "exit status {status:?}");
    assert!(log.contains("grace period over"), "{log}");
    assert!(signalled.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn an_http2_stream_still_running_at_the_end_of_the_grace_period_is_dropped() {
    let backend = backend(Duration::from_secs(60)).await;
    let config = server_config(
        &backend.url(),
        "drain_delay = \"100ms\"\nshutdown_grace = \"600ms\"",
    );
    let config = tensorgate::config::from_str(&config).unwrap();
    let metrics = tensorgate::metrics::Metrics::new().unwrap();
    let data = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gw = tensorgate::server::start_with_metrics(config, data, admin, metrics.clone()).unwrap();

    let stream = tokio::net::TcpStream::connect(gw.data_addr).await.unwrap();
    let (mut send_req, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    // An inference: the gateway builds its own backend request (HTTP/2
    // passthrough requests are refused by the backend client today).
    let body = r#"{"inputs":[{"name":"X","shape":[1],"datatype":"INT32","data":[1]}]}"#;
    let req = http::Request::post("http://localhost/v2/models/slow/infer")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap();
    let pending = tokio::spawn(async move {
        match send_req.send_request(req).await {
            Ok(resp) => resp
                .into_body()
                .collect()
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while backend.requests().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the request never reached the backend"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let in_flight = |text: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix("tensorgate_in_flight_requests{route=\"r\"} "))
            .map(str::to_owned)
    };
    assert_eq!(
        in_flight(&String::from_utf8(metrics.encode()).unwrap()).as_deref(),
        Some("1")
    );

    let started = Instant::now();
    gw.shutdown().await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "shutdown took {took:?}");
    let outcome = tokio::time::timeout(Duration::from_secs(2), pending)
        .await
        .expect("the client still waits")
        .unwrap();
    assert!(outcome.is_err(), "{outcome:?}");
    // The request's handler, which lives in its own task under HTTP/2, is
    // gone too: the request left the gauge.
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let text = String::from_utf8(metrics.encode()).unwrap();
        if in_flight(&text).as_deref() == Some("0") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the HTTP/2 handler still runs:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
