//! Finding 3, Decthings: a call under a prefix shared by a route with keys
//! and one without was read whole (up to the largest limit of them) before
//! it could be refused with `bad_credentials`. Without a key of one of
//! the routes it can only be for the routes that need none, so it is read
//! only as far as their limit: a larger body is refused before it is read.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::{gateway, keys_file};

const KEY: &str = "dave-key-0123456789ab";

#[tokio::test]
async fn an_unauthenticated_call_is_read_only_as_far_as_open_routes_allow() {
    let demo = tensorgate_demo::spawn().await.unwrap();
    let keys = keys_file(&format!("dave:{KEY}\n"));
    let gw = gateway(&format!(
        r#"
[server]
shutdown_grace = "1s"
body_read_timeout = "3s"
[backends.demo]
url = "{}"
[[routes]]
name = "keyed"
models = ["simple"]
backend = "demo"
[routes.decthings]
prefix = "/shared/v0"
[routes.auth]
keys_file = "{}"
[[routes]]
name = "open"
default = true
backend = "demo"
[routes.decthings]
prefix = "/shared/v0"
[routes.limits]
max_body_bytes = 1048576
"#,
        demo.url(),
        keys.display()
    ))
    .await;
    // Announces 10 MB (within the keyed route's 64 MiB, over the open
    // route's 1 MiB), sends a few bytes, and waits.
    let call = |key: Option<&str>| {
        let auth = key
            .map(|k| format!("x-api-key: {k}\r\n"))
            .unwrap_or_default();
        format!(
            "POST /shared/v0/Model/evaluate HTTP/1.1\r\nhost: x\r\n{auth}content-length: 10000000\r\n\r\n\0\0\0\0"
        )
    };
    let started = Instant::now();
    let mut s = tokio::net::TcpStream::connect(gw.data_addr).await.unwrap();
    s.write_all(call(None).as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf))
        .await
        .expect("no answer before the body came: it was waited for")
        .unwrap();
    let reply = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(reply.contains("quota_exceeded"), "{reply}");
    assert!(
        reply.contains("larger than the limit of 1048576 bytes"),
        "{reply}"
    );
    // With a key of the keyed route, the larger body is waited for (and,
    // never coming, times out).
    let mut s = tokio::net::TcpStream::connect(gw.data_addr).await.unwrap();
    s.write_all(call(Some(KEY)).as_bytes()).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(1500), s.read(&mut buf)).await;
    assert!(waited.is_err(), "a keyed call was refused before its body");
}
