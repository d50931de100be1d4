//! Finding 11: `readyz = "all_routes"` with a single `url` (health checks
//! off by default there) stayed `200 ready` with every backend down.
//! Readiness is read from the health checks, so they are on wherever it
//! depends on them.

use std::time::{Duration, Instant};

use crate::common::{gateway, send};

#[tokio::test]
async fn readyz_all_routes_turns_503_when_the_only_backend_is_down() {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let gw = gateway(&format!(
        r#"
[server]
shutdown_grace = "2s"
readyz = "all_routes"
[backends.b]
url = "{url}"
health_interval = "200ms"
health_timeout = "100ms"
[[routes]]
name = "r"
default = true
backend = "b"
"#
    ))
    .await;
    let started = Instant::now();
    let status = loop {
        let got = send(gw.admin_addr, "GET", "/readyz", &[], "").await;
        if got.status != 200 || started.elapsed() > Duration::from_secs(10) {
            break got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        status.status,
        503,
        "still ready after {:?} with the only backend down: {:?}",
        started.elapsed(),
        String::from_utf8_lossy(&status.body)
    );
    assert!(
        String::from_utf8_lossy(&status.body).contains("\"r\""),
        "{:?}",
        status.body
    );
}
