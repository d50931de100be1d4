//! `[server]` and `[backends.NAME]` keys: defaults, valid values, and each
//! invalid form at its key.

use std::time::Duration;

use super::*;

const SECOND: Duration = Duration::from_secs(1);

#[test]
fn server_defaults() {
    let c = load(&route(""));
    assert_eq!(c.server, ServerConfig::default());
    let s = &c.server;
    assert_eq!(s.listen, DEFAULT_LISTEN);
    assert_eq!(s.listen.to_string(), "127.0.0.1:8000");
    assert_eq!(s.admin_listen.to_string(), "127.0.0.1:9000");
    assert_eq!(s.max_connections, 10_000);
    assert_eq!(s.handshake_timeout, 10 * SECOND);
    assert_eq!(s.queue_timeout, 5 * SECOND);
    assert_eq!(s.body_total_timeout, 300 * SECOND);
    assert_eq!(s.body_read_timeout, 60 * SECOND);
    assert_eq!(s.shutdown_grace, 30 * SECOND);
    assert_eq!(s.drain_delay, 5 * SECOND);
    assert_eq!(s.send_timeout, 60 * SECOND);
    assert_eq!(s.reply_memory_bytes, 1 << 20);
    assert_eq!(s.reply_disk_bytes, 1 << 30);
    assert_eq!(s.reply_disk_total_bytes, 8 << 30);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    assert_eq!(s.workers, cores.min(ServerConfig::MAX_WORKERS));
}

#[test]
fn server_workers() {
    let workers = |n: &str| format!("[server]\nworkers = {n}\n{}", route(""));
    assert_eq!(load(&workers("3")).server.workers, 3);
    assert_eq!(load(&workers("0")).server.workers, 0, "0: the main runtime");
    check(&workers("65"), &["server.workers: at most 64, got 65"]);
    check(
        &workers("-1"),
        &["server.workers: must not be negative, got -1"],
    );
}

#[test]
fn server_values() {
    let c = load(&format!(
        "[server]\nmax_connections = 7\nhandshake_timeout = \"1s\"\nqueue_timeout = \"250ms\"\n\
         body_total_timeout = \"2m\"\ndrain_delay = \"0s\"\nshutdown_grace = \"3s\"\n{}",
        route("")
    ));
    let s = &c.server;
    assert_eq!(s.max_connections, 7);
    assert_eq!(s.handshake_timeout, SECOND);
    assert_eq!(s.queue_timeout, Duration::from_millis(250));
    assert_eq!(s.body_total_timeout, 120 * SECOND);
    assert_eq!(s.drain_delay, Duration::ZERO);
}

/// The bounds of issue 26 (findings 3 and 8): defaults, values, errors.
#[test]
fn client_and_unverified_body_bounds() {
    let c = load(&route(""));
    assert_eq!(c.server.max_streams_per_connection, 128);
    assert_eq!(c.server.max_requests_per_client, None, "off unless set");
    assert_eq!(c.server.max_unverified_body_bytes, 64 << 20);
    assert_eq!(c.routes[0].limits.max_signed_body_bytes, 6 << 20);
    let c = load(&format!(
        "[server]\nmax_streams_per_connection = 16\nmax_requests_per_client = 8\n\
         max_unverified_body_bytes = 1048576\n[limits]\nmax_signed_body_bytes = 4096\n{}",
        route("[routes.limits]\nmax_signed_body_bytes = 2048")
    ));
    assert_eq!(c.server.max_streams_per_connection, 16);
    assert_eq!(c.server.max_requests_per_client, Some(8));
    assert_eq!(c.server.max_unverified_body_bytes, 1 << 20);
    assert_eq!(c.routes[0].limits.max_signed_body_bytes, 2048);
    check(
        &format!(
            "[server]\nmax_streams_per_connection = 0\nmax_requests_per_client = 0\n\
             max_unverified_body_bytes = 0\n{}",
            route("")
        ),
        &[
            "server.max_streams_per_connection: must be positive, got 0",
            "server.max_requests_per_client: must be positive, got 0",
            "server.max_unverified_body_bytes: must be positive, got 0",
        ],
    );
}

#[test]
fn reply_buffers() {
    let server = |keys: &str| format!("[server]\n{keys}\n{}", route(""));
    let s = load(&server(
        "send_timeout = \"5s\"\nreply_memory_bytes = 4096\nreply_disk_bytes = 0\nreply_disk_total_bytes = 0",
    ))
    .server;
    assert_eq!(s.send_timeout, 5 * SECOND);
    assert_eq!(
        (
            s.reply_memory_bytes,
            s.reply_disk_bytes,
            s.reply_disk_total_bytes
        ),
        (4096, 0, 0),
        "no disk at all"
    );
    check(
        &server("reply_memory_bytes = 0\nreply_disk_bytes = -1"),
        &[
            "server.reply_memory_bytes: must be positive, got 0",
            "server.reply_disk_bytes: must not be negative, got -1",
        ],
    );
    check(
        &server("reply_disk_bytes = 2000\nreply_disk_total_bytes = 1000"),
        &[
            "server.reply_disk_bytes: 2000 is above reply_disk_total_bytes (1000), which every reply shares",
        ],
    );
}

#[test]
fn drain_delay_follows_a_short_grace_and_must_stay_below_it() {
    let grace =
        |g: &str, extra: &str| format!("[server]\nshutdown_grace = \"{g}\"\n{extra}{}", route(""));
    assert_eq!(load(&grace("2s", "")).server.drain_delay, SECOND);
    assert_eq!(load(&grace("1h", "")).server.drain_delay, 5 * SECOND);
    check(
        &grace("2s", "drain_delay = \"2s\"\n"),
        &["server.drain_delay: 2s must be shorter than shutdown_grace (2s)"],
    );
}

#[test]
fn server_invalid_values() {
    check(
        &format!(
            "[server]\nmax_connections = 0\nhandshake_timeout = \"0s\"\nqueue_timeout = 5\n\
             body_total_timeout = \"0ms\"\ndrain_delay = \"soon\"\nlisten = \"127.0.0.1:9000\"\n{}",
            route("")
        ),
        &[
            "server.max_connections: must be positive, got 0",
            "server.handshake_timeout: must be above zero, got \"0s\"",
            "server.queue_timeout: invalid type: integer `5`, expected a duration like \"30s\"",
            "server.body_total_timeout: must be above zero, got \"0ms\"",
            "server.drain_delay: \"soon\" does not start with a whole number",
            "server.admin_listen: must differ from server.listen",
        ],
    );
}

#[test]
fn every_timeout_refuses_zero_and_overflow() {
    let server = [
        "shutdown_grace",
        "body_read_timeout",
        "header_read_timeout",
        "handshake_timeout",
        "queue_timeout",
        "body_total_timeout",
        "send_timeout",
    ];
    for key in server {
        let text = format!("[server]\n{key} = \"0s\"\n{}", route(""));
        let zero = format!("server.{key}: must be above zero, got \"0s\"");
        assert_eq!(errors(&text), [zero]);
        let text = format!("[server]\n{key} = \"9999999999999999h\"\n{}", route(""));
        assert_eq!(
            errors(&text),
            [format!("server.{key}: \"9999999999999999h\" is too long")]
        );
    }
    let backend = [
        "connect_timeout",
        "request_timeout",
        "pool_idle_timeout",
        "stream_idle_timeout",
        "metadata_ttl",
    ];
    for key in backend {
        let text = route("").replace("[[routes]]", &format!("{key} = \"0ms\"\n[[routes]]"));
        let zero = format!("backends.b.{key}: must be above zero, got \"0ms\"");
        assert_eq!(errors(&text), [zero]);
    }
}

#[test]
fn backend_defaults_and_values() {
    let c = load(&route(""));
    let b = &c.backends["b"];
    let mut expected = Backend::new("b", "http://127.0.0.1:1".parse().unwrap());
    expected.models = vec!["m1".to_owned(), "m2".to_owned()];
    assert_eq!(**b, expected);
    assert_eq!(b.connect_timeout, 2 * SECOND);
    assert_eq!(b.request_timeout, 60 * SECOND);
    assert_eq!(b.pool_idle_timeout, 4 * SECOND);
    assert_eq!(b.pool_max_idle_per_host, 64);
    assert_eq!(b.max_connections, 256);
    assert_eq!(b.stream_idle_timeout, 60 * SECOND);
    assert_eq!(b.metadata_ttl, 10 * SECOND);
    let text = route("").replace(
        "[[routes]]",
        "max_connections = 3\nstream_idle_timeout = \"2s\"\nmetadata_ttl = \"1m\"\n\
         pool_idle_timeout = \"1500ms\"\n[[routes]]",
    );
    let b = load(&text).backends["b"].clone();
    assert_eq!(b.max_connections, 3);
    assert_eq!(b.stream_idle_timeout, 2 * SECOND);
    assert_eq!(b.metadata_ttl, 60 * SECOND);
    assert_eq!(b.pool_idle_timeout, Duration::from_millis(1500));
}

#[test]
fn backend_invalid_values() {
    let text = route("").replace(
        "[[routes]]",
        "max_connections = -1\nstream_idle_timeout = true\n[[routes]]",
    );
    check(
        &text,
        &[
            "backends.b.max_connections: must be positive, got -1",
            "backends.b.stream_idle_timeout: invalid type: boolean `true`, expected a duration like \"30s\"",
        ],
    );
}

#[test]
fn limits_range() {
    check(
        &format!(
            "[limits]\nmax_dims = 65\nmax_body_bytes = 1.5\n{}",
            route("")
        ),
        &[
            "limits.max_body_bytes: invalid type: floating point `1.5`, expected a positive integer",
            "limits.max_dims: at most 64, got 65",
        ],
    );
}
