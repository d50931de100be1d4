//! Finding 6: a watched file replaced by a FIFO blocked the reload thread
//! in `open()`: later SIGHUPs did nothing (a key revocation never applied,
//! nothing logged or counted), and SIGTERM left the process running past
//! `shutdown_grace`. On the real binary: the FIFO is refused (counted,
//! logged), SIGHUP still reloads, a key file put back is applied, and
//! SIGTERM with a FIFO in place exits within the grace period.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::send;
use crate::procs::{Proc, free_port, wait_listening};

const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789ab";

/// Puts a FIFO at `path` (renamed over what is there, as a deploy would).
fn fifo_over(path: &Path) {
    let tmp = path.with_extension("fifo");
    let made = Command::new("mkfifo").arg(&tmp).status().unwrap();
    assert!(made.success(), "mkfifo failed");
    std::fs::rename(&tmp, path).unwrap();
}

/// Writes `text` to `path` through a rename.
fn replace(path: &Path, text: &str) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

async fn reloads(admin: std::net::SocketAddr, result: &str) -> f64 {
    let body = send(admin, "GET", "/metrics", &[], "").await.body;
    let series = format!("tensorgate_config_reloads_total{{result=\"{result}\"}} ");
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|l| l.strip_prefix(&series)?.parse().ok())
        .unwrap_or(-1.0)
}

async fn wait_reloads(admin: std::net::SocketAddr, result: &str, want: f64, p: &Proc) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while reloads(admin, result).await < want {
        assert!(
            Instant::now() < deadline,
            "{result} reloads never reached {want}; log:\n{}",
            p.text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_file_replaced_by_a_fifo_neither_stops_reloads_nor_shutdown() {
    let dir = std::env::temp_dir().join(format!("tg-fifo-reload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let demo = tensorgate_demo::spawn().await.unwrap();
    let (data, admin) = (free_port(), free_port());
    let keys = dir.join("keys");
    std::fs::write(&keys, format!("alice:{ALICE}\n")).unwrap();
    let file = dir.join("tensorgate.toml");
    std::fs::write(
        &file,
        format!(
            r#"
[server]
listen = "127.0.0.1:{data}"
admin_listen = "127.0.0.1:{admin}"
shutdown_grace = "2s"
drain_delay = "0s"
[backends.demo]
url = "{}"
[[routes]]
name = "default"
default = true
backend = "demo"
[routes.auth]
keys_file = "keys"
"#,
            demo.url()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tensorgate"));
    cmd.arg("--config").arg(&file).env("RUST_LOG", "info");
    let mut p = Proc::spawn(cmd, dir.join("gateway.log"));
    let data: std::net::SocketAddr = format!("127.0.0.1:{data}").parse().unwrap();
    let admin: std::net::SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    assert!(
        wait_listening(admin, Duration::from_secs(10)),
        "did not start:\n{}",
        p.text()
    );
    let get = |key: &'static str| async move {
        let got = send(data, "GET", "/v2/models/simple", &[("x-api-key", key)], "").await;
        got.status.as_u16()
    };
    assert_eq!(get(ALICE).await, 200);

    // The key file becomes a FIFO: the watcher's reload is refused.
    fifo_over(&keys);
    wait_reloads(admin, "failure", 1.0, &p).await;
    p.wait_log("a FIFO, not a regular file");
    // SIGHUP still reloads (and is refused again).
    p.signal("-HUP");
    wait_reloads(admin, "failure", 2.0, &p).await;
    assert_eq!(get(ALICE).await, 200, "the running keys stay");

    // A revocation written after it is applied.
    replace(&keys, &format!("bob:{BOB}\n"));
    wait_reloads(admin, "success", 1.0, &p).await;
    assert_eq!(get(ALICE).await, 401);
    assert_eq!(get(BOB).await, 200);

    // SIGTERM with a FIFO in place: gone within the grace period.
    fifo_over(&keys);
    p.signal("-HUP");
    let signalled = Instant::now();
    p.signal("-TERM");
    let status = loop {
        if let Some(status) = p.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(6),
            "still running {:?} after SIGTERM:\n{}",
            signalled.elapsed(),
            p.text()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}\n{}", p.text());
    let _ = std::fs::remove_dir_all(&dir);
}
