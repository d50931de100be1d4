//! The `tensorgate::access` events of a test binary, captured as JSON lines
//! by a subscriber installed once per binary (tests that read it call
//! [`start`] first).

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn log() -> &'static Capture {
    static LOG: OnceLock<Capture> = OnceLock::new();
    LOG.get_or_init(|| {
        let capture = Capture::default();
        let writer = capture.clone();
        tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_env_filter("tensorgate::access=info")
            .with_writer(move || writer.clone())
            .init();
        capture
    })
}

/// Installs the capturing subscriber (once per binary).
pub fn start() {
    log();
}

/// Everything captured so far.
pub fn raw() -> String {
    String::from_utf8(log().0.lock().unwrap().clone()).unwrap()
}

/// Every access line of one request id.
pub fn lines(request_id: &str) -> Vec<serde_json::Value> {
    raw()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["request_id"] == request_id)
        .collect()
}

/// The access line of one request id.
pub fn line(request_id: &str) -> serde_json::Value {
    lines(request_id)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no access line for {request_id}"))
}
