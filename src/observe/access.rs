//! The access log: one line per request, formatted on the request's thread
//! and appended to the lines waiting for a dedicated writer thread, so a
//! slow stderr (or a full disk) never stalls a request. Formatting
//! `tracing` fields one by one cost more than anything else the gateway
//! did for a proxied GET (measurable with scripts/bench/instructions.sh),
//! so the line is written directly, in the process's log format (`text`
//! or `json`, the same fields and names as the `tensorgate::access`
//! events).
//!
//! A line is formatted under a lock straight onto the end of the waiting
//! lines (a short hold, no system call: the lock is held by a request's
//! thread for its line alone, and by the writer for a swap); the writer
//! takes them all at once every [`WRITE_INTERVAL`]. A line costs no
//! allocation, no copy and no channel message (a line of its own through
//! a channel cost more per request, the writer's share included; see
//! docs/PERFORMANCE.md, "What each decision bought").
//!
//! The writer is installed once per process ([`install`], by `main`);
//! until then, and in tests that capture `tracing` output, lines go out as
//! `tracing` events as before. A line that finds [`QUEUE_BYTES`] waiting is
//! dropped and counted, never waited for. `RUST_LOG` still decides whether
//! the access log is on (`tensorgate::access=info`): read once when the
//! writer is installed (see [`enabled`]).

use std::borrow::Cow;
use std::io::Write;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::calendar::civil_from_days;

/// Bytes of lines waiting for the writer before new ones are dropped:
/// about 16K lines of the usual size.
const QUEUE_BYTES: usize = 8 << 20;

/// Longest value of a field that comes from the request (path, model,
/// request id) as logged: a 1 MB Decthings `modelId` wrote a 1 MB line
/// (and queued it: up to 16 GB for a full queue of them).
pub const MAX_FIELD_BYTES: usize = 512;

/// `v` as logged: whole up to [`MAX_FIELD_BYTES`], else its first bytes (cut
/// at a character boundary) followed by `...(+N bytes)`.
pub fn capped(v: &str) -> Cow<'_, str> {
    if v.len() <= MAX_FIELD_BYTES {
        return Cow::Borrowed(v);
    }
    let mut end = MAX_FIELD_BYTES;
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}...(+{} bytes)", &v[..end], v.len() - end))
}

/// How lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `TIMESTAMP  INFO tensorgate::access: request key=value ...`
    Text,
    /// One JSON object per line, fields flattened.
    Json,
}

/// One request, as logged.
#[derive(Debug)]
pub struct Record<'a> {
    pub request_id: &'a str,
    /// The request id is known to be written as it is (non-empty, only
    /// characters neither format quotes or escapes): one the gateway made.
    pub request_id_plain: bool,
    pub kind: &'a str,
    pub method: &'a str,
    pub path: &'a str,
    pub route: &'a str,
    pub model: &'a str,
    /// The name of the caller's key (empty without one); never the key.
    pub key: &'a str,
    pub status: u16,
    pub completed: bool,
    pub client_bytes_in: u64,
    pub backend_bytes_out: u64,
    pub backend_bytes_in: u64,
    pub client_bytes_out: u64,
    pub upstream_first_byte_us: u64,
    pub upstream_total_us: u64,
    pub duration_us: u64,
}

struct Sink {
    format: Format,
    /// Whether the subscriber in place when the writer was installed
    /// wanted access lines (see [`enabled`]).
    on: bool,
    /// Lines formatted and not yet taken by the writer.
    waiting: Mutex<Vec<u8>>,
    /// Flush requests: the writer writes what waits and answers.
    flushes: Sender<Sender<()>>,
}

static SINK: OnceLock<Sink> = OnceLock::new();

/// Installs the process's access-log writer (the first call wins). Returns
/// whether this call installed it. The process's subscriber must be in
/// place: whether it wants access lines is asked here, once.
pub fn install(format: Format, writer: Box<dyn Write + Send>) -> bool {
    let (tx, rx) = channel();
    let sink = Sink {
        format,
        on: tracing::enabled!(target: "tensorgate::access", tracing::Level::INFO),
        waiting: Mutex::new(Vec::with_capacity(64 << 10)),
        flushes: tx,
    };
    if SINK.set(sink).is_err() {
        return false;
    }
    let spawned = std::thread::Builder::new()
        .name("access-log".into())
        .spawn(move || write_lines(rx, writer));
    spawned.is_ok()
}

/// Whether a request's access line is wanted. With the writer installed,
/// as its subscriber said when it was (the binary's filter is fixed at
/// start), where asking the subscriber for every request cost more (see
/// docs/PERFORMANCE.md, "What each decision bought"). Without it, the
/// current subscriber is asked.
pub fn enabled() -> bool {
    match SINK.get() {
        Some(sink) => sink.on,
        None => tracing::enabled!(target: "tensorgate::access", tracing::Level::INFO),
    }
}

/// Waits (at most `timeout`) until every line queued so far is written.
pub fn flush(timeout: Duration) {
    if let Some(sink) = SINK.get() {
        let (ack, done) = channel();
        if sink.flushes.send(ack).is_ok() {
            let _ = done.recv_timeout(timeout);
        }
    }
}

/// How often the writer wakes to write what waits. Requests never wake
/// it: a request that did would pay a futex call and a context switch
/// (see docs/PERFORMANCE.md, "What each decision bought"), while this
/// costs one wake-up per interval whatever the load.
const WRITE_INTERVAL: Duration = Duration::from_millis(20);

/// The capacity a buffer of waiting lines keeps once written out; a burst
/// that grew it past this gives the rest back.
const KEPT_CAPACITY: usize = 1 << 20;

fn write_lines(flushes: Receiver<Sender<()>>, mut writer: Box<dyn Write + Send>) {
    let Some(sink) = SINK.get() else {
        return;
    };
    let mut taken = Vec::with_capacity(64 << 10);
    loop {
        let asked = flushes.recv_timeout(WRITE_INTERVAL);
        if let Ok(mut waiting) = sink.waiting.lock() {
            std::mem::swap(&mut *waiting, &mut taken);
        }
        if !taken.is_empty() {
            let _ = writer.write_all(&taken);
            taken.clear();
            taken.shrink_to(KEPT_CAPACITY);
        }
        let _ = writer.flush();
        match asked {
            Ok(ack) => {
                let _ = ack.send(());
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// What became of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Queued,
    /// The queue was full: the line is lost (counted by the caller).
    Dropped,
    /// No writer installed: the caller logs through `tracing`.
    NotInstalled,
}

/// Queues one line.
pub fn write(record: &Record<'_>) -> Outcome {
    let Some(sink) = SINK.get() else {
        return Outcome::NotInstalled;
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    // Nothing the line's formatting calls logs, so the lock is never
    // asked for twice by one thread.
    queue(&sink.waiting, |out| match sink.format {
        Format::Text => text(out, now, record),
        Format::Json => json(out, now, record),
    })
}

/// Appends the line `format` writes to the lines waiting, unless it would
/// pass [`QUEUE_BYTES`]: then it is taken off again, whole.
fn queue(waiting: &Mutex<Vec<u8>>, format: impl FnOnce(&mut Vec<u8>)) -> Outcome {
    let Ok(mut waiting) = waiting.lock() else {
        return Outcome::Dropped;
    };
    let from = waiting.len();
    format(&mut waiting);
    if waiting.len() > QUEUE_BYTES {
        waiting.truncate(from);
        return Outcome::Dropped;
    }
    Outcome::Queued
}

/// Writes the record's fields in order: each key as `$key!` makes it (a
/// literal with its separator, ` kind=` or `,"kind":`, whose length the
/// compiler knows: written as one move, without a `memcpy` call), each
/// string as `$string` writes it.
macro_rules! fields {
    ($out:ident, $r:ident, $key:ident, $string:ident, $plain:ident) => {{
        $out.extend_from_slice($key!("request_id"));
        if $r.request_id_plain {
            $plain($out, $r.request_id);
        } else {
            $string($out, $r.request_id);
        }
        $out.extend_from_slice($key!("kind"));
        $string($out, $r.kind);
        $out.extend_from_slice($key!("method"));
        $string($out, $r.method);
        $out.extend_from_slice($key!("path"));
        $string($out, $r.path);
        $out.extend_from_slice($key!("route"));
        $string($out, $r.route);
        $out.extend_from_slice($key!("model"));
        $string($out, $r.model);
        $out.extend_from_slice($key!("key"));
        $string($out, $r.key);
        $out.extend_from_slice($key!("status"));
        int($out, u64::from($r.status));
        $out.extend_from_slice($key!("completed"));
        let completed: &[u8] = if $r.completed { b"true" } else { b"false" };
        $out.extend_from_slice(completed);
        $out.extend_from_slice($key!("client_bytes_in"));
        int($out, $r.client_bytes_in);
        $out.extend_from_slice($key!("backend_bytes_out"));
        int($out, $r.backend_bytes_out);
        $out.extend_from_slice($key!("backend_bytes_in"));
        int($out, $r.backend_bytes_in);
        $out.extend_from_slice($key!("client_bytes_out"));
        int($out, $r.client_bytes_out);
        $out.extend_from_slice($key!("upstream_first_byte_ms"));
        millis($out, $r.upstream_first_byte_us);
        $out.extend_from_slice($key!("upstream_total_ms"));
        millis($out, $r.upstream_total_us);
        $out.extend_from_slice($key!("duration_ms"));
        millis($out, $r.duration_us);
    }};
}

macro_rules! text_key {
    ($name:literal) => {
        concat!(" ", $name, "=").as_bytes()
    };
}

macro_rules! json_key {
    ($name:literal) => {
        concat!(",\"", $name, "\":").as_bytes()
    };
}

fn text(out: &mut Vec<u8>, now: Duration, r: &Record<'_>) {
    timestamp(out, now);
    out.extend_from_slice(b"  INFO tensorgate::access: request");
    fields!(out, r, text_key, text_str, text_plain);
    out.push(b'\n');
}

fn json(out: &mut Vec<u8>, now: Duration, r: &Record<'_>) {
    out.extend_from_slice(b"{\"timestamp\":\"");
    timestamp(out, now);
    out.extend_from_slice(b"\",\"level\":\"INFO\",\"message\":\"request\"");
    fields!(out, r, json_key, json_str, json_plain);
    out.extend_from_slice(b",\"target\":\"tensorgate::access\"}\n");
}

/// A string as a JSON string.
fn json_str(out: &mut Vec<u8>, v: &str) {
    crate::codec::v2::strings::write_json_string(v.as_bytes(), out);
}

/// A value known to need no quotes nor escapes, as a JSON string.
fn json_plain(out: &mut Vec<u8>, v: &str) {
    out.push(b'"');
    out.extend_from_slice(v.as_bytes());
    out.push(b'"');
}

fn int(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Microseconds as milliseconds with three decimals: `12.034`. Below
/// 10 ms (most of a proxied request's three times) in one fixed-size
/// write, without `itoa` and its variable-length copy.
fn millis(out: &mut Vec<u8>, us: u64) {
    let (whole, frac) = (us / 1000, us % 1000);
    let point = [
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ];
    if whole < 10 {
        let [p, a, b, c] = point;
        out.extend_from_slice(&[b'0' + whole as u8, p, a, b, c]);
    } else {
        int(out, whole);
        out.extend_from_slice(&point);
    }
}

/// The bytes a text value is written as they are with: printable ASCII
/// but for `"`, `=` and `\`.
const PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_graphic() && c != b'"' && c != b'=' && c != b'\\';
        b += 1;
    }
    t
};

/// A value as it is, or quoted (JSON-escaped) when it holds characters a
/// reader of `key=value` lines would split on.
fn text_str(out: &mut Vec<u8>, v: &str) {
    if v.is_empty() {
        out.extend_from_slice(b"\"\"");
        return;
    }
    let plain = v.bytes().all(|b| PLAIN[b as usize]);
    if plain {
        out.extend_from_slice(v.as_bytes());
    } else {
        crate::codec::v2::strings::write_json_string(v.as_bytes(), out);
    }
}

/// A value known to be plain (see [`Record::request_id_plain`]), as it
/// is: no scan of its bytes (a made request id's 32, on every request;
/// measurable with scripts/bench/instructions.sh).
fn text_plain(out: &mut Vec<u8>, v: &str) {
    out.extend_from_slice(v.as_bytes());
}

/// `2026-11-23T19:45:19.` of a second, as the thread last wrote it.
const SECOND_TEXT: usize = 20;

thread_local! {
    /// The second the thread last stamped a line in and its text: it
    /// changes once a second, the microseconds on every line.
    static SECOND: std::cell::Cell<(u64, [u8; SECOND_TEXT])> =
        const { std::cell::Cell::new((u64::MAX, [0; SECOND_TEXT])) };
}

/// `2026-11-23T19:45:19.123456Z` (UTC).
fn timestamp(out: &mut Vec<u8>, since_epoch: Duration) {
    let secs = since_epoch.as_secs();
    let (seen, text) = SECOND.get();
    if seen == secs {
        out.extend_from_slice(&text);
    } else {
        let from = out.len();
        second(out, secs);
        if let Ok(text) = <[u8; SECOND_TEXT]>::try_from(&out[from..]) {
            SECOND.set((secs, text));
        }
    }
    // Six digits and the `Z` in one fixed-size write.
    let us = since_epoch.subsec_micros();
    let digit = |d: u32| b'0' + (us / d % 10) as u8;
    out.extend_from_slice(&[
        digit(100_000),
        digit(10_000),
        digit(1_000),
        digit(100),
        digit(10),
        digit(1),
        b'Z',
    ]);
}

/// `2026-11-23T19:45:19.` of `secs` since the epoch.
fn second(out: &mut Vec<u8>, secs: u64) {
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let (y, m, d) = (y as u64, m as u64, d as u64);
    let t = secs % 86_400;
    let two = |out: &mut Vec<u8>, v: u64| {
        out.extend_from_slice(&[b'0' + (v / 10) as u8, b'0' + (v % 10) as u8])
    };
    int(out, y);
    out.push(b'-');
    two(out, m);
    out.push(b'-');
    two(out, d);
    out.push(b'T');
    two(out, t / 3600);
    out.push(b':');
    two(out, t / 60 % 60);
    out.push(b':');
    two(out, t % 60);
    out.push(b'.');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record<'static> {
        Record {
            request_id: "abc",
            request_id_plain: false,
            kind: "v2",
            method: "POST",
            path: "/v2/models/a b/infer",
            route: "default",
            model: "",
            key: "alice",
            status: 200,
            completed: true,
            client_bytes_in: 10,
            backend_bytes_out: 20,
            backend_bytes_in: 30,
            client_bytes_out: 40,
            upstream_first_byte_us: 1_234,
            upstream_total_us: 56,
            duration_us: 12_000_001,
        }
    }

    #[test]
    fn long_fields_are_capped() {
        assert_eq!(capped("short"), "short");
        let exact = "m".repeat(MAX_FIELD_BYTES);
        assert_eq!(capped(&exact), exact);
        let long = "m".repeat(1 << 20);
        let c = capped(&long);
        assert_eq!(c.len(), MAX_FIELD_BYTES + "...(+1048064 bytes)".len());
        assert!(c.ends_with("m...(+1048064 bytes)"), "{c}");
        // Cut at a character boundary: 'é' is two bytes.
        let accents = format!("a{}", "é".repeat(MAX_FIELD_BYTES));
        let c = capped(&accents);
        assert!(c.starts_with(&accents[..MAX_FIELD_BYTES - 1]), "{c}");
        assert!(c.ends_with("é...(+514 bytes)"), "{c}");
    }

    /// What the writer thread wrote.
    #[derive(Clone, Default)]
    struct Capture(std::sync::Arc<Mutex<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The one test that installs the process's writer (no other test
    /// of this binary logs access lines: none enables the target).
    #[test]
    fn the_writer_writes_the_lines_queued_before_a_flush_in_order() {
        let capture = Capture::default();
        assert!(install(Format::Text, Box::new(capture.clone())));
        assert!(!install(Format::Json, Box::new(std::io::sink())));
        let ids: Vec<String> = (0..50).map(|i| format!("id-{i}")).collect();
        for id in &ids {
            let r = Record {
                request_id: id,
                ..record()
            };
            assert_eq!(write(&r), Outcome::Queued);
        }
        flush(Duration::from_secs(10));
        let text = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), ids.len(), "{text}");
        for (line, id) in lines.iter().zip(&ids) {
            let (stamp, rest) = line.split_once("  INFO ").unwrap();
            assert_eq!(stamp.len(), "2025-11-23T19:45:19.123456Z".len(), "{line}");
            assert_eq!(
                rest,
                format!(
                    "tensorgate::access: request request_id={id} kind=v2 method=POST path=\"/v2/models/a b/infer\" route=default model=\"\" key=alice status=200 completed=true client_bytes_in=10 backend_bytes_out=20 backend_bytes_in=30 client_bytes_out=40 upstream_first_byte_ms=1.234 upstream_total_ms=0.056 duration_ms=12000.001"
                )
            );
        }
    }

    #[test]
    fn lines_past_the_queue_bound_are_dropped_whole() {
        let waiting = Mutex::new(Vec::new());
        let line = vec![b'x'; 1000];
        let fit = QUEUE_BYTES / line.len();
        let put = |bytes: &[u8]| queue(&waiting, |out| out.extend_from_slice(bytes));
        for _ in 0..fit {
            assert_eq!(put(&line), Outcome::Queued);
        }
        assert_eq!(put(&line), Outcome::Dropped);
        let room = QUEUE_BYTES - fit * line.len();
        assert_eq!(put(&line[..room]), Outcome::Queued);
        assert_eq!(put(b"y"), Outcome::Dropped);
        let waiting = waiting.into_inner().unwrap();
        assert_eq!(waiting.len(), QUEUE_BYTES);
        assert!(waiting.iter().all(|&b| b == b'x'));
    }

    #[test]
    fn milliseconds_from_microseconds() {
        for (us, text) in [
            (0, "0.000"),
            (7, "0.007"),
            (56, "0.056"),
            (999, "0.999"),
            (1_000, "1.000"),
            (1_234, "1.234"),
            (9_999, "9.999"),
            (10_000, "10.000"),
            (99_999, "99.999"),
            (12_000_001, "12000.001"),
            (u64::MAX, "18446744073709551.615"),
        ] {
            let mut out = Vec::new();
            millis(&mut out, us);
            assert_eq!(std::str::from_utf8(&out).unwrap(), text, "{us}");
        }
    }

    #[test]
    fn calendar() {
        let mut t = Vec::new();
        timestamp(&mut t, Duration::new(1_763_927_119, 123_456_789));
        assert_eq!(t, b"2025-11-23T19:45:19.123456Z");
    }

    /// The second's text is reused within the second, and written anew
    /// for the next one and for one before it.
    #[test]
    fn stamps_in_and_across_seconds() {
        for (secs, nanos, text) in [
            (1_763_927_119, 5_000, "2025-11-23T19:45:19.000005Z"),
            (1_763_927_119, 999_999_999, "2025-11-23T19:45:19.999999Z"),
            (1_763_927_120, 0, "2025-11-23T19:45:20.000000Z"),
            (1_763_913_599, 1_000, "2025-11-23T15:59:59.000001Z"),
            (0, 0, "1970-01-01T00:00:00.000000Z"),
            (253_402_300_800, 0, "10000-01-01T00:00:00.000000Z"),
            (253_402_300_800, 7_000, "10000-01-01T00:00:00.000007Z"),
        ] {
            let mut t = b"before ".to_vec();
            timestamp(&mut t, Duration::new(secs, nanos));
            assert_eq!(std::str::from_utf8(&t).unwrap(), format!("before {text}"));
        }
    }

    /// A request id known to be plain is written as the scan would write
    /// it, in both formats.
    #[test]
    fn a_plain_request_id_is_written_as_scanned() {
        for format in [text, json] {
            let id = "0123456789abcdef0123456789abcdef";
            let (mut scanned, mut known) = (Vec::new(), Vec::new());
            let r = Record {
                request_id: id,
                ..record()
            };
            format(&mut scanned, Duration::new(0, 0), &r);
            let r = Record {
                request_id_plain: true,
                ..r
            };
            format(&mut known, Duration::new(0, 0), &r);
            assert_eq!(scanned, known);
            assert!(std::str::from_utf8(&known).unwrap().contains(id));
        }
    }

    #[test]
    fn text_values_quoted_where_a_reader_would_split() {
        for (v, written) in [
            ("abc", "abc"),
            ("/v2/models/m/infer", "/v2/models/m/infer"),
            ("", "\"\""),
            ("a b", "\"a b\""),
            ("a=b", "\"a=b\""),
            ("a\"b", "\"a\\\"b\""),
            ("a\\b", "\"a\\\\b\""),
            ("é", "\"é\""),
            ("a\tb", "\"a\\tb\""),
        ] {
            let mut out = Vec::new();
            text_str(&mut out, v);
            assert_eq!(std::str::from_utf8(&out).unwrap(), written, "{v:?}");
        }
    }

    #[test]
    fn text_line() {
        let mut out = Vec::new();
        text(&mut out, Duration::new(0, 0), &record());
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            "1970-01-01T00:00:00.000000Z  INFO tensorgate::access: request request_id=abc kind=v2 method=POST path=\"/v2/models/a b/infer\" route=default model=\"\" key=alice status=200 completed=true client_bytes_in=10 backend_bytes_out=20 backend_bytes_in=30 client_bytes_out=40 upstream_first_byte_ms=1.234 upstream_total_ms=0.056 duration_ms=12000.001\n"
        );
    }

    #[test]
    fn json_line() {
        let mut out = Vec::new();
        json(&mut out, Duration::new(0, 0), &record());
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["request_id"], "abc");
        assert_eq!(v["status"], 200);
        assert_eq!(v["completed"], true);
        assert_eq!(v["duration_ms"], 12000.001);
        assert_eq!(v["upstream_total_ms"], 0.056);
        assert_eq!(v["path"], "/v2/models/a b/infer");
        assert_eq!(v["key"], "alice");
        assert_eq!(v["target"], "tensorgate::access");
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            "{\"timestamp\":\"1970-01-01T00:00:00.000000Z\",\"level\":\"INFO\",\"message\":\"request\",\"request_id\":\"abc\",\"kind\":\"v2\",\"method\":\"POST\",\"path\":\"/v2/models/a b/infer\",\"route\":\"default\",\"model\":\"\",\"key\":\"alice\",\"status\":200,\"completed\":true,\"client_bytes_in\":10,\"backend_bytes_out\":20,\"backend_bytes_in\":30,\"client_bytes_out\":40,\"upstream_first_byte_ms\":1.234,\"upstream_total_ms\":0.056,\"duration_ms\":12000.001,\"target\":\"tensorgate::access\"}\n"
        );
        let mut out = Vec::new();
        text(
            &mut out,
            Duration::new(0, 0),
            &Record {
                completed: false,
                ..record()
            },
        );
        assert!(
            std::str::from_utf8(&out)
                .unwrap()
                .contains(" status=200 completed=false client_bytes_in=10 ")
        );
        let mut out = Vec::new();
        json(
            &mut out,
            Duration::new(0, 0),
            &Record {
                completed: false,
                ..record()
            },
        );
        assert!(
            std::str::from_utf8(&out)
                .unwrap()
                .contains(",\"status\":200,\"completed\":false,\"client_bytes_in\":10,")
        );
    }
}
