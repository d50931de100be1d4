//! No configuration error shows a secret: the store's password, a URL's
//! user part, a header sent to the collector. These errors reach the log,
//! `check-config` and the status page.

use super::*;

const STORE: &str = "redis://user:hunter2@127.0.0.1:6379";

/// The errors of `text`, each checked for `secret`.
fn shown(text: &str, secret: &str) -> Vec<String> {
    let errors = errors(text);
    for e in &errors {
        assert!(!e.contains(secret), "{e:?} shows {secret:?}");
    }
    errors
}

#[test]
fn a_syntax_error_on_the_store_line_does_not_quote_it() {
    // The closing quote missing; then a key given twice.
    let text = format!("[rate_limit_store]\nurl = \"{STORE}\n{}", route(""));
    assert_eq!(
        shown(&text, "hunter2"),
        ["invalid TOML at line 2, column 43: invalid basic string, expected `\"`"]
    );
    let text = format!(
        "{}\n[rate_limit_store]\nurl = \"{STORE}\"\nurl = \"{STORE}\"\n",
        route("")
    );
    let e = shown(&text, "hunter2");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].starts_with("invalid TOML at line 10, column 1: duplicate key"),
        "{e:?}"
    );
}

#[test]
fn a_semantic_error_on_the_store_url_does_not_show_it() {
    for url in [
        "redis://user:hunter2@",
        "redis://:hunter2",
        "http://user:hunter2@127.0.0.1:6379",
        "redis://user:hunter2@127.0.0.1:6379/notadb",
    ] {
        let text = format!("[rate_limit_store]\nurl = \"{url}\"\n{}", route(""));
        assert_eq!(
            shown(&text, "hunter2"),
            [
                "rate_limit_store.url: not a redis://HOST:PORT or rediss://HOST:PORT URL (not shown: it may hold a password)"
            ],
            "{url}"
        );
    }
    let text = format!("[rate_limit_store]\nurl = [\"{STORE}\"]\n{}", route(""));
    let e = shown(&text, "hunter2");
    assert!(
        e[0].starts_with("rate_limit_store.url: invalid type: sequence"),
        "{e:?}"
    );
}

#[test]
fn collector_headers_are_never_shown() {
    let tracing = "[tracing]\nendpoint = \"http://127.0.0.1:4318\"\n";
    let text = format!("{tracing}headers = \"Bearer s3cr3t\"\n{}", route(""));
    assert_eq!(
        shown(&text, "s3cr3t"),
        ["tracing.headers: invalid type: string \"***\", expected a map"]
    );
    let text = format!(
        "{tracing}[tracing.headers]\nx-token = [\"s3cr3t\"]\n{}",
        route("")
    );
    shown(&text, "s3cr3t");
    let text = format!(
        "{tracing}[tracing.headers]\nx-token = \"s3cr3t\n{}",
        route("")
    );
    assert_eq!(
        shown(&text, "s3cr3t"),
        ["invalid TOML at line 4, column 18: invalid basic string, expected `\"`"]
    );
}

#[test]
fn urls_with_a_user_part_are_refused_without_showing_it() {
    let refused = crate::config::backend::CREDENTIALS;
    let text = route("").replace("http://127.0.0.1:1", "http://u:hunter2@127.0.0.1:1");
    assert_eq!(
        shown(&text, "hunter2"),
        [format!("backends.b.url: {refused}")]
    );
    let text = format!(
        "[tracing]\nendpoint = \"https://u:hunter2@otel:4318\"\n{}",
        route("")
    );
    assert_eq!(
        shown(&text, "hunter2"),
        [format!("tracing.endpoint: {refused}")]
    );
    // A URL a message quotes has its user part masked.
    let text = route("").replace("http://127.0.0.1:1", "http://u:hunter2@127.0.0.1:1/?q");
    shown(&text, "hunter2");
}
