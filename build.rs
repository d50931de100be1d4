//! Link order of the hot code: the release `tensorgate` binary is linked
//! with `link/symbol-order.txt`, the functions that every request runs
//! (written by `scripts/bench/symbol_order.sh` from callgrind runs), placed
//! next to each other by lld's `--symbol-ordering-file`.
//!
//! Why: a request executes thousands of distinct 64-byte lines of code,
//! spread over hundreds of pages of the binary's text (counted by
//! `scripts/bench/instructions.sh --lines`). Warm, that costs little; but
//! a request that comes after the core ran something else (at c=1 behind
//! a Triton, whose threads and Python stub evict the gateway's code)
//! fetches them all again. Ordered, the same code sits on fewer pages,
//! and behind a real Triton the gateway spent less CPU per request (see
//! docs/PERFORMANCE.md, "What each decision bought").
//!
//! Only where the linker is known to be lld: rustc 1.90 or later on
//! `x86_64-unknown-linux-gnu` (its default linker since 1.90), in the
//! release and bench profiles, and unless `RUSTFLAGS` chooses a linker.
//! Elsewhere, or with `TENSORGATE_SYMBOL_ORDER=off`, the binary links as
//! before.
//!
//! A name the binary does not have orders nothing, and the names change
//! with the request path's code, Cargo.lock and the toolchain. lld warns
//! about each one ("symbol ordering file: no such symbol"); rustc shows
//! linker output from 1.97 on, or with `RUSTFLAGS="-W linker-messages"`.
//! That warning is left on. `scripts/test.sh` checks the release binary
//! after it builds it (`scripts/bench/symbol_order.py --check`): it fails
//! when fewer than 90 % of the listed names are symbols of the binary, or
//! when they are not laid out in the listed order; then
//! `scripts/bench/symbol_order.sh` writes the list again.

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=link/symbol-order.txt");
    println!("cargo::rerun-if-env-changed=TENSORGATE_SYMBOL_ORDER");
    if let Some(list) = symbol_order() {
        println!("cargo::rustc-link-arg-bin=tensorgate=-Wl,--symbol-ordering-file={list}");
    }
}

/// The list's path, when it should be used.
fn symbol_order() -> Option<String> {
    if env::var("TENSORGATE_SYMBOL_ORDER").is_ok_and(|v| v == "off") {
        return None;
    }
    if env::var("TARGET").ok()? != "x86_64-unknown-linux-gnu" {
        return None;
    }
    if env::var("PROFILE").ok()? != "release" {
        return None;
    }
    // A linker of the user's own choosing may not be lld (`-C linker=`,
    // `-C linker-flavor=`, `-Z linker-features=`, `-C link-self-contained=`,
    // `-fuse-ld=` in a link argument); a lint such as `-W linker-messages`
    // chooses nothing.
    const CHOOSERS: [&str; 5] = [
        "linker=",
        "linker-flavor=",
        "linker-features=",
        "link-self-contained=",
        "fuse-ld",
    ];
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags
        .split('\x1f')
        .any(|f| CHOOSERS.iter().any(|k| f.contains(k)))
    {
        return None;
    }
    if rustc_minor()? < 90 {
        return None;
    }
    let list = Path::new(&env::var("CARGO_MANIFEST_DIR").ok()?).join("link/symbol-order.txt");
    // The path goes to the linker whole: one with a comma would be split.
    let list = list.to_str()?.to_owned();
    (Path::new(&list).is_file() && !list.contains(',')).then_some(list)
}

/// The minor version of the rustc that builds the crate (`1.95.0` -> 95).
fn rustc_minor() -> Option<u32> {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("--version").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}
