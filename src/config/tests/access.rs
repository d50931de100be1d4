//! `[routes.auth]` and `[routes.rate_limit]`: key files (relative to the
//! configuration's directory, read once, every problem at `keys_file`),
//! rates and their default bursts, and reloading key files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;

const ALICE: &str = "alice:aaaaaaaaaaaaaaaa\n";

/// A fresh directory for one test's key files.
fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tg-config-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn load_in(text: &str, base: &Path) -> Config {
    from_str_in(text, Some(base)).unwrap_or_else(|e| panic!("unexpected errors:\n{e}\nin:\n{text}"))
}

fn errors_in(text: &str, base: &Path) -> Vec<String> {
    match from_str_in(text, Some(base)) {
        Ok(_) => panic!("loaded, but should not have:\n{text}"),
        Err(e) => e.0.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn keys_files_are_read_relative_to_the_configuration() {
    let d = dir("relative");
    std::fs::write(d.join("keys"), format!("{ALICE}bob:bbbbbbbbbbbbbbbb\n")).unwrap();
    let c = load_in(&route("[routes.auth]\nkeys_file = \"keys\"\n"), &d);
    let auth = c.routes[0].auth.as_ref().unwrap();
    assert_eq!(auth.keys_file, d.join("keys"));
    let names: Vec<&str> = auth.keys.names().iter().map(|n| &**n).collect();
    assert_eq!(names, ["alice", "bob"]);
    // SigV4 follows the SageMaker frontend unless set; only then are the
    // keys themselves held.
    assert!(auth.sigv4 && auth.keys.holds_secrets());
    let c = load_in(
        &route("[routes.auth]\nkeys_file = \"keys\"\nsigv4 = false\n"),
        &d,
    );
    let auth = c.routes[0].auth.as_ref().unwrap();
    assert!(!auth.sigv4 && !auth.keys.holds_secrets());
    let c = load_in(
        &route("[routes.sagemaker]\nenabled = false\n[routes.auth]\nkeys_file = \"keys\"\n"),
        &d,
    );
    assert!(!c.routes[0].auth.as_ref().unwrap().sigv4);
    assert!(load(&route("")).routes[0].auth.is_none());
    let absolute = d.join("keys");
    let text = route(&format!(
        "[routes.auth]\nkeys_file = {:?}\n",
        absolute.to_str().unwrap()
    ));
    assert_eq!(
        load(&text).routes[0].auth.as_ref().unwrap().keys_file,
        absolute
    );
}

#[test]
fn a_file_shared_by_routes_is_read_once() {
    let d = dir("shared");
    std::fs::write(d.join("keys"), ALICE).unwrap();
    let text = format!(
        "{}[routes.auth]\nkeys_file = \"keys\"\n\
         [[routes]]\nname = \"r2\"\nmodels = [\"m3\"]\nbackend = \"b\"\n[routes.auth]\nkeys_file = \"keys\"\n",
        route("")
    );
    let c = load_in(&text, &d);
    let keys = |i: usize| c.routes[i].auth.as_ref().unwrap().keys.clone();
    assert!(Arc::ptr_eq(&keys(0), &keys(1)));
}

#[test]
fn key_file_problems_are_reported_at_keys_file() {
    let d = dir("problems");
    std::fs::write(d.join("short"), "alice:tooshort\n").unwrap();
    let file = |name: &str| d.join(name).display().to_string();
    assert_eq!(
        errors_in(&route("[routes.auth]\nkeys_file = \"short\"\n"), &d),
        [format!(
            "routes[0].auth.keys_file: {} line 1: the key is 8 characters; at least 16 are required",
            file("short")
        )]
    );
    let e = errors_in(&route("[routes.auth]\nkeys_file = \"missing\"\n"), &d);
    assert!(
        e.len() == 1
            && e[0].starts_with(&format!(
                "routes[0].auth.keys_file: {}: cannot read",
                file("missing")
            )),
        "{e:?}"
    );
    check(
        &route("[routes.auth]\nsigv4 = true\n"),
        &["routes[0].auth.keys_file: required"],
    );
    check(
        &route("[routes.auth]\nkeys_file = \"\"\n"),
        &["routes[0].auth.keys_file: must not be empty"],
    );
    check(
        &route("[routes.auth]\nkeys = 1\n"),
        &[
            "routes[0].auth.keys: unknown key `keys`, expected `keys_file` or `sigv4`",
            "routes[0].auth.keys_file: required",
        ],
    );
}

#[test]
fn rates_and_their_bursts() {
    let d = dir("rates");
    std::fs::write(d.join("keys"), ALICE).unwrap();
    let c = load_in(
        &route(
            "[routes.auth]\nkeys_file = \"keys\"\n\
             [routes.rate_limit]\nrequests_per_second = 50\nelements_per_second = 2.5\n\
             [routes.rate_limit.per_key]\nrequests_per_second = 0.5\nburst = 4\n\
             elements_per_second = 1000\nelements_burst = 10000\n",
        ),
        &d,
    );
    let l = c.routes[0].rate_limit;
    let rate = |per_second, burst| Some(Rate { per_second, burst });
    assert_eq!(l.route.requests, rate(50.0, 50));
    assert_eq!(l.route.elements, rate(2.5, 3));
    assert_eq!(l.per_key.requests, rate(0.5, 4));
    assert_eq!(l.per_key.elements, rate(1000.0, 10_000));
    let c = load(&route("[routes.rate_limit]\nrequests_per_second = 0.25\n"));
    assert_eq!(c.routes[0].rate_limit.route.requests, rate(0.25, 1));
    assert!(c.routes[0].rate_limit.per_key.is_empty());
    assert!(load(&route("")).routes[0].rate_limit.is_empty());
}

#[test]
fn rate_problems() {
    check(
        &route("[routes.rate_limit]\n"),
        &[
            "routes[0].rate_limit: sets no limit: give requests_per_second and/or elements_per_second",
        ],
    );
    check(
        &route("[routes.rate_limit]\nburst = 5\nelements_burst = 6\nelements_per_second = 1\n"),
        &["routes[0].rate_limit.burst: needs requests_per_second"],
    );
    check(
        &route("[routes.rate_limit.per_key]\nrequests_per_second = 1\n"),
        &[
            "routes[0].rate_limit.per_key: per-key limits need [routes.auth]: requests without keys cannot be told apart",
        ],
    );
    check(
        &route("[routes.rate_limit]\nrequests_per_second = 0\n"),
        &["routes[0].rate_limit.requests_per_second: must be above 0 and at most 1e12, got 0"],
    );
    check(
        &route("[routes.rate_limit]\nrequests_per_second = -1.5\nburst = 0\n"),
        &[
            "routes[0].rate_limit.requests_per_second: must be above 0 and at most 1e12, got -1.5",
            "routes[0].rate_limit.burst: must be positive, got 0",
        ],
    );
    check(
        &route("[routes.rate_limit]\nrequests_per_second = \"5\"\n"),
        &[
            "routes[0].rate_limit.requests_per_second: invalid type: string \"5\", expected a number per second",
        ],
    );
}

#[test]
fn key_files_reload_on_demand() {
    let d = dir("reload");
    let path = d.join("keys");
    std::fs::write(&path, ALICE).unwrap();
    let c = load_in(&route("[routes.auth]\nkeys_file = \"keys\"\n"), &d);
    std::fs::write(&path, "carol:cccccccccccccccc\n").unwrap();
    let reloaded = c.reload_keys().unwrap();
    let names = |c: &Config| -> Vec<String> {
        c.routes[0]
            .auth
            .as_ref()
            .unwrap()
            .keys
            .names()
            .iter()
            .map(|n| n.to_string())
            .collect()
    };
    assert_eq!(names(&reloaded), ["carol"]);
    assert_eq!(
        names(&c),
        ["alice"],
        "the running configuration is untouched"
    );
    assert!(
        reloaded.routes[0]
            .auth
            .as_ref()
            .unwrap()
            .keys
            .find(b"cccccccccccccccc")
            .is_some()
    );
    std::fs::write(&path, "carol\n").unwrap();
    let e = c.reload_keys().unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "routes[0].auth.keys_file: {} line 1: expected NAME:KEY",
            path.display()
        )
    );
}
