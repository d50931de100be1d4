//! Configuration errors never show a secret: a syntax error on the line of
//! the rate-limit store's URL (whose password TOML's own message quotes),
//! a wrong store URL, a URL with a user part. Checked where the errors go:
//! `tensorgate check-config`, and a refused reload of the real binary, in
//! its log and on the admin port's `/status` (which needs no credentials).

mod common;
#[path = "common/procs.rs"]
mod procs;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{TestBackend, reply};
use procs::{GatewayProc, temp_dir};

const SECRET: &str = "hunter2";

/// The store's URL with a password, and the closing quote missing.
const UNCLOSED: &str = "[rate_limit_store]\nurl = \"redis://user:hunter2@127.0.0.1:6379\n";
/// A store URL that does not parse (no host), password and all.
const NO_HOST: &str = "[rate_limit_store]\nurl = \"redis://user:hunter2@\"\n";

fn routes(backend: &str) -> String {
    format!(
        "[backends.b]\nurl = \"{backend}\"\n\n[[routes]]\nname = \"r\"\ndefault = true\nbackend = \"b\"\n"
    )
}

/// `check-config` on `text`: its exit code and what it wrote.
fn check_config(dir: &Path, text: &str) -> (Option<i32>, String) {
    let file = dir.join("check.toml");
    std::fs::write(&file, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tensorgate"))
        .arg("check-config")
        .arg(&file)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

#[test]
fn check_config_names_the_problem_without_the_password() {
    let dir = temp_dir("config-secrets-check");
    let routes = routes("http://127.0.0.1:1");
    for (text, says) in [
        (
            format!("{UNCLOSED}{routes}"),
            "invalid TOML at line 2, column 43: invalid basic string",
        ),
        (
            format!("{NO_HOST}{routes}"),
            "rate_limit_store.url: not a redis://HOST:PORT or rediss://HOST:PORT URL",
        ),
        (
            routes.replace("http://", "http://user:hunter2@"),
            "backends.b.url: user:password@ in a URL is never sent",
        ),
    ] {
        let (code, out) = check_config(&dir, &text);
        assert!(!out.contains(SECRET), "{out}");
        assert_eq!(code, Some(2), "{out}");
        assert!(out.contains(says), "{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_refused_reload_shows_no_password_in_the_log_or_on_the_status_page() {
    let dir = temp_dir("config-secrets-reload");
    let backend = TestBackend::start(|_| async { reply(200, &[], "{}") }).await;
    let gw = GatewayProc::start(&dir, "gw", &routes(&backend.url()));
    let file = dir.join("gw.toml");
    let good = std::fs::read_to_string(&file).unwrap();
    for (n, (bad, says)) in [
        (UNCLOSED, "invalid TOML at line"),
        (NO_HOST, "rate_limit_store.url: not a redis://HOST:PORT"),
    ]
    .into_iter()
    .enumerate()
    {
        std::fs::write(&file, format!("{good}\n{bad}")).unwrap();
        gw.proc.signal("-HUP");
        // The watcher may see the file first: either way one refusal.
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            let got = common::send(gw.admin, "GET", "/status", &[], "").await;
            let s = got.json();
            if s["config"]["reload"]["refused_total"].as_u64() > Some(n as u64) {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "no refused reload:\n{}",
                gw.proc.tail()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let problems = status["config"]["reload"]["last"]["problems"].to_string();
        assert!(!status.to_string().contains(SECRET), "{problems}");
        assert!(problems.contains(says), "{problems}");
    }
    let log = gw.proc.text();
    assert!(log.contains("invalid TOML at line"), "{log}");
    assert!(!log.contains(SECRET), "{log}");
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}
