//! Tests of the new keys, of error collection, and of the built-in
//! configurations. The original loader tests are in `load/tests.rs`.

mod access;
mod build;
mod errors;
mod frontends;
mod keys;
mod replicas;
mod scale;
mod secrets;
mod tls;
mod tracing;

use super::*;

/// One backend `b` and one route `r` serving `m1` and `m2`, with `body`
/// appended inside the route (keys, then sub-tables).
fn route(body: &str) -> String {
    format!(
        "[backends.b]\nurl = \"http://127.0.0.1:1\"\n\
         [[routes]]\nname = \"r\"\nmodels = [\"m1\", \"m2\"]\nbackend = \"b\"\n{body}"
    )
}

/// Loads text that must be valid.
fn load(text: &str) -> Config {
    from_str(text).unwrap_or_else(|e| panic!("unexpected errors:\n{e}\nin:\n{text}"))
}

/// The errors of text that must be invalid, one string per error.
fn errors(text: &str) -> Vec<String> {
    match from_str(text) {
        Ok(_) => panic!("loaded, but should not have:\n{text}"),
        Err(e) => e.0.iter().map(ToString::to_string).collect(),
    }
}

/// Checks that text fails with exactly these errors, in this order.
fn check(text: &str, expected: &[&str]) {
    assert_eq!(errors(text), expected, "in:\n{text}");
}
