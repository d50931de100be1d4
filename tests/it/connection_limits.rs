//! Open connections are capped at `server.max_connections`: past the cap
//! the gateway stops accepting (the kernel's backlog holds the rest) until
//! one closes, and never accepts-and-drops. A gateway out of file
//! descriptors backs off instead of spinning, and its admin port serves
//! again once descriptors are free.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::*;

const GET: &[u8] = b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n";

/// Sends a GET and reads its reply (the backend answers "ok").
async fn get_ok(stream: &mut TcpStream, limit: Duration) -> Option<String> {
    stream.write_all(GET).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + limit;
    while !got.ends_with(b"\r\n\r\nok") {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => panic!("closed: {}", String::from_utf8_lossy(&got)),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
    Some(String::from_utf8_lossy(&got).into_owned())
}

#[tokio::test]
async fn past_max_connections_the_next_connection_waits_for_a_free_one() {
    let backend = TestBackend::start(|_| async { reply(200, &[], "ok") }).await;
    let keys = "max_connections = 2\nhandshake_timeout = \"10s\"\nheader_read_timeout = \"10s\"";
    let gw = gateway(&server_config(&backend.url(), keys)).await;
    let mut a = TcpStream::connect(gw.data_addr).await.unwrap();
    let mut b = TcpStream::connect(gw.data_addr).await.unwrap();
    let wait = Duration::from_secs(5);
    assert!(
        get_ok(&mut a, wait)
            .await
            .unwrap()
            .starts_with("HTTP/1.1 200")
    );
    assert!(
        get_ok(&mut b, wait)
            .await
            .unwrap()
            .starts_with("HTTP/1.1 200")
    );

    // The third connects (the kernel completes the handshake) but is not
    // accepted, so its request is not served...
    let mut c = TcpStream::connect(gw.data_addr).await.unwrap();
    assert_eq!(get_ok(&mut c, Duration::from_millis(700)).await, None);
    assert_eq!(backend.requests().len(), 2);
    // ...until one of the first two closes; then it is served, not dropped.
    drop(a);
    let mut late = Vec::new();
    let mut buf = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + wait;
    while !late.ends_with(b"\r\n\r\nok") {
        let n = tokio::time::timeout_at(deadline, c.read(&mut buf))
            .await
            .expect("the waiting connection was not served after a slot freed")
            .unwrap();
        assert!(n > 0, "the waiting connection was closed");
        late.extend_from_slice(&buf[..n]);
    }
    assert!(late.starts_with(b"HTTP/1.1 200"));
    assert_eq!(backend.requests().len(), 3);
    // The other connection is unaffected.
    assert!(get_ok(&mut b, wait).await.is_some());
}

/// Kills the child process when the test ends, however it ends, so a
/// failed assertion never leaves a gateway running (and holding the test's
/// output open).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// User plus system CPU time of a process, in clock ticks.
#[cfg(target_os = "linux")]
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which ends with ')'): utime and
    // stime are the 12th and 13th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[cfg(target_os = "linux")]
fn clock_ticks_per_second() -> u64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// The real binary with a descriptor limit of 64: connections beyond it
/// make accept fail with EMFILE on both ports.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn out_of_file_descriptors_the_gateway_backs_off_and_recovers() {
    let backend = TestBackend::start(|_| async { reply(200, &[], "ok") }).await;
    let (data, admin) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("tg-fd-{}-{data}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("gateway.toml");
    let keys = format!(
        "listen = \"127.0.0.1:{data}\"\nadmin_listen = \"127.0.0.1:{admin}\"\n\
         max_connections = 1000\nhandshake_timeout = \"30s\"\nshutdown_grace = \"2s\""
    );
    std::fs::write(&config, server_config(&backend.url(), &keys)).unwrap();
    let child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_tensorgate"))
        .arg("--config")
        .arg(&config)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr = child.0.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let data_addr: std::net::SocketAddr = format!("127.0.0.1:{data}").parse().unwrap();
    let admin_addr: std::net::SocketAddr = format!("127.0.0.1:{admin}").parse().unwrap();
    // As long as tests/it/common/procs.rs gives a gateway: a first start of
    // the debug binary, with the real backends starting beside it, took
    // more than 10 s once in CI.
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(admin_addr).is_err() {
        if Instant::now() >= deadline {
            let said: Vec<String> = rx.try_iter().collect();
            panic!(
                "gateway did not start in 30 s; it said:\n{}",
                said.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }

    // Silent connections until accepting fails for want of descriptors.
    let mut held = Vec::new();
    for _ in 0..80 {
        held.push(TcpStream::connect(data_addr).await.unwrap());
    }
    let exhausted = Instant::now() + Duration::from_secs(10);
    loop {
        let line = rx
            .recv_timeout(exhausted.saturating_duration_since(Instant::now()))
            .expect("the gateway never ran out of descriptors");
        if line.contains("accept failed") {
            break;
        }
    }
    // An admin request waits in the admin port's backlog meanwhile.
    let mut probe = TcpStream::connect(admin_addr).await.unwrap();
    probe
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();

    // Both accept loops are failing; neither may spin.
    let pid = child.0.id();
    let before = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let used = cpu_ticks(pid) - before;
    let per_second = clock_ticks_per_second();
    assert!(
        used * 4 < per_second,
        "the gateway used {used} of {per_second} ticks in a second while out of descriptors"
    );

    // Descriptors come back: the admin request is served.
    drop(held);
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), probe.read_to_string(&mut answer))
        .await
        .expect("the admin port did not recover")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with(r#"{"status":"ok"}"#), "{answer}");
    // And so is the data port.
    let mut again = TcpStream::connect(data_addr).await.unwrap();
    assert!(get_ok(&mut again, Duration::from_secs(5)).await.is_some());

    let _ = std::fs::remove_dir_all(&dir);
}
