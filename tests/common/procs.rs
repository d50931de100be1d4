//! Processes the multi-gateway tests start on loopback: gateway processes
//! of the binary under test, each with its own configuration file, and
//! whatever server a test needs (Redis). Includers also declare
//! `mod common`. Every process is killed when its
//! handle is dropped, so a failing test leaves nothing running.
#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A process killed (and reaped) on drop.
#[derive(Debug)]
pub struct Proc {
    pub child: Child,
    pub log: PathBuf,
}

impl Proc {
    /// Starts `cmd` with stdout and stderr to `log`.
    pub fn spawn(mut cmd: Command, log: PathBuf) -> Proc {
        let out = std::fs::File::create(&log).unwrap();
        let err = out.try_clone().unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        Proc { child, log }
    }

    /// The last lines of its log, for a failure message.
    pub fn tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Its whole log so far.
    pub fn text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (at most 10 s) until its log says `needle`.
    pub fn wait_log(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.text().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "the log never said {needle:?}:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends it the signal `name` (`-HUP`, `-TERM`) with kill(1).
    pub fn signal(&self, name: &str) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args([name, &pid]).status().unwrap();
        assert!(sent.success(), "kill {name} {pid}");
    }

    /// Kills it now.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A loopback port free now (another process may take it before it is
/// used; the tests bind right away).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Waits up to `limit` until something accepts connections at `addr`.
pub fn wait_listening(addr: SocketAddr, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A gateway process serving `toml` (written to `dir/NAME.toml`), with
/// its data and admin addresses.
#[derive(Debug)]
pub struct GatewayProc {
    pub proc: Proc,
    pub data: SocketAddr,
    pub admin: SocketAddr,
}

impl GatewayProc {
    /// Starts `tensorgate serve` on two free loopback ports; `toml` has
    /// its `[server]` table added. Waits until it listens.
    pub fn start(dir: &Path, name: &str, toml: &str) -> GatewayProc {
        let data: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let file = dir.join(format!("{name}.toml"));
        let text = format!(
            "[server]\nlisten = \"{data}\"\nadmin_listen = \"{admin}\"\nworkers = 1\n\n{toml}"
        );
        std::fs::write(&file, text).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tensorgate"));
        cmd.arg("serve").arg("--config").arg(&file);
        cmd.env("RUST_LOG", "info");
        let proc = Proc::spawn(cmd, dir.join(format!("{name}.log")));
        let g = GatewayProc { proc, data, admin };
        assert!(
            wait_listening(admin, Duration::from_secs(20))
                && wait_listening(data, Duration::from_secs(5)),
            "gateway {name} did not start:\n{}",
            g.proc.tail()
        );
        g
    }
}

/// `redis-server` (or `TENSORGATE_REDIS_SERVER`), or `None` (SKIPPED)
/// when there is none; under `CI` a missing one fails.
pub fn redis_server() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TENSORGATE_REDIS_SERVER") {
        return Some(PathBuf::from(p));
    }
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("redis-server"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        if std::env::var_os("CI").is_some() {
            panic!("no redis-server and CI is set: scripts/setup.sh installs it");
        }
        crate::common::skipped("no redis-server on PATH (scripts/setup.sh installs it)");
    }
    found
}

/// A Redis on 127.0.0.1:`port`, nothing saved to disk.
pub fn start_redis(bin: &Path, dir: &Path, port: u16) -> Proc {
    let mut cmd = Command::new(bin);
    cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir);
    let p = Proc::spawn(
        cmd,
        dir.join(format!("redis-{}.log", Instant::now().elapsed().as_nanos())),
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    assert!(
        wait_listening(addr, Duration::from_secs(10)),
        "redis did not start:\n{}",
        p.tail()
    );
    p
}

/// A fresh directory under the target's temporary folder.
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "tensorgate-{tag}-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
