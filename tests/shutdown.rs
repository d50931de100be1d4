//! SIGTERM: the gateway stops accepting, lets in-flight requests finish
//! within the grace period, and exits 0. Runs the real binary.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn sigterm_drains_in_flight_requests_then_exits_zero() {
    // A backend that takes 800 ms to answer.
    let backend = TestBackend::start(|_| async {
        tokio::time::sleep(Duration::from_millis(800)).await;
        reply(
            200,
            &[("content-type", "application/json")],
            r#"{"ok":true}"#,
        )
    })
    .await;
    let (data, admin) = (free_port(), free_port());
    let mut child = Command::new(env!("CARGO_BIN_EXE_tensorgate"))
        .args(["--backend", &backend.url()])
        .args(["--listen", &format!("127.0.0.1:{data}")])
        .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let lines = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    let data_addr = format!("127.0.0.1:{data}").parse().unwrap();
    let admin_addr = format!("127.0.0.1:{admin}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(admin_addr).is_err() {
        assert!(Instant::now() < deadline, "gateway did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let ready = send(admin_addr, "GET", "/readyz", &[], "").await;
    assert_eq!(ready.status, 200);

    // A request in flight when the signal arrives.
    let in_flight =
        tokio::spawn(async move { send(data_addr, "GET", "/v2/health/ready", &[], "").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());

    // New connections are refused once the listener is closed.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        tokio::net::TcpStream::connect(data_addr).await.is_err(),
        "the data port still accepts connections while draining"
    );
    // The in-flight request completes normally.
    let got = in_flight.await.unwrap();
    assert_eq!(got.status, 200);
    assert_eq!(&got.body[..], br#"{"ok":true}"#);

    let status = child.wait().unwrap();
    assert!(status.success(), "exit status {status:?}");
    let log = lines.join().unwrap().join("\n");
    assert!(log.contains("shutdown signal received"), "{log}");
    assert!(log.contains("all connections closed"), "{log}");
}
