//! The tests' one helper library: gateways started in this process on
//! 127.0.0.1:0 (`gateway`), scriptable backends that record what they
//! received (`backend`), a small HTTP client (`client`), the admin port's
//! metrics read back (`metrics`), temporary files (`files`), and, as
//! modules of their own, raw sockets, gateway and Redis processes, TLS,
//! replicas for balancing, fault-injecting peers, the access-log capture
//! and the official Decthings client. Each helper is written here once;
//! test modules never copy one.
//!
//! It never installs anything process-wide except `access_log`'s
//! subscriber, which its users ask for.
#![allow(dead_code)]

pub mod access_log;
mod backend;
pub mod certs;
mod client;
pub mod decthings;
pub mod faults;
mod files;
mod gateway;
mod metrics;
pub mod procs;
pub mod raw;
pub mod replica;

// The helpers at the root, as `common::send`; a binary that includes this
// library for a few of them leaves the rest unused.
#[allow(unused_imports)]
pub use {backend::*, client::*, files::*, gateway::*, metrics::*};

/// A loopback port free now (another process may take it before it is
/// used; the tests bind right away).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Says loudly that the running test skips for `reason`, and, when
/// `TENSORGATE_SKIP_LOG` names a file, appends `TEST: reason` to it, so
/// that `scripts/test.sh` lists every skipped test by name in its summary
/// (libtest reports a test that returned early as passed, and captures what
/// a passing test prints).
pub fn skipped(reason: &str) {
    use std::io::Write;
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    let binary = std::env::args()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        })
        .map(|stem| {
            stem.rsplit_once('-')
                .map_or(stem.clone(), |(name, _)| name.to_owned())
        })
        .unwrap_or_default();
    // Straight to the stream: libtest captures eprintln! of passing tests.
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED {binary}::{test}: {reason} ***\n"
    );
    if let Some(path) = std::env::var_os("TENSORGATE_SKIP_LOG") {
        let line = format!(
            "{binary}::{test}: {}\n",
            reason.lines().next().unwrap_or("")
        );
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
    }
}
