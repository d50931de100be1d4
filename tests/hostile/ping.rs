//! Finding 11: SageMaker's `/ping` needs no key and is never shed; each one
//! used to be a backend health call (400,000 pings, 400,000 calls). The
//! backend's answer now serves every ping for a second.

use std::time::{Duration, Instant};

use super::recorder;
use crate::common::{gateway, send};

#[tokio::test]
async fn pings_share_one_backend_answer_a_second() {
    let backend = recorder().await;
    let gw = gateway(&format!(
        r#"
[server]
shutdown_grace = "2s"
[backends.b]
url = "{}"
[[routes]]
name = "r"
default = true
backend = "b"
"#,
        backend.url()
    ))
    .await;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let addr = gw.data_addr;
        tasks.push(tokio::spawn(async move {
            for _ in 0..250 {
                assert_eq!(send(addr, "GET", "/ping", &[], "").await.status, 200);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let elapsed = started.elapsed();
    let calls = backend
        .requests()
        .iter()
        .filter(|s| s.path == "/v2/health/ready")
        .count();
    // One call per second of pinging, and the first.
    let most = elapsed.as_secs() as usize + 2;
    assert!(
        (1..=most).contains(&calls),
        "2000 pings in {elapsed:?} made {calls} backend calls"
    );
    // The answer is asked again once a second has passed.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        send(gw.data_addr, "GET", "/ping", &[], "").await.status,
        200
    );
    let again = backend
        .requests()
        .iter()
        .filter(|s| s.path == "/v2/health/ready")
        .count();
    assert_eq!(again, calls + 1);
}
