//! The conformance harness of `conformance_triton`, `conformance_kserve`
//! and `decthings_client`: finding the real backend, sending one request
//! to it directly and through a gateway, decoding both replies into typed
//! tensors, and recording every case of a matrix (pass/fail) for
//! `scripts/conformance_report.py`. Only `tests/it` needs it, so it is not
//! in `common`, which the other test binaries include too.
//!
//! It never starts a backend: `scripts/conformance.sh` (or
//! `scripts/triton-backend.sh` / `scripts/kserve-backend.sh`) does, and
//! exports its URL.
#![allow(dead_code)]

pub mod lenient;
pub mod reply;
pub mod values;

use std::io::Write;
use std::net::SocketAddr;

use bytes::Bytes;
use http::{Response, StatusCode};
use tensorgate::http::body::{Body, full};

use crate::common::{Got, Seen, TestBackend, send};

/// The URL in `var`, or `None` (after a loud SKIPPED line) when it is unset
/// outside CI. In CI (`CI` set) a missing backend is a failure, unless
/// `TENSORGATE_CONFORMANCE_SKIP=1` says this run deliberately has none.
pub fn backend_url(var: &str, script: &str) -> Option<String> {
    if let Some(url) = std::env::var(var).ok().filter(|v| !v.is_empty()) {
        return Some(url.trim_end_matches('/').to_owned());
    }
    let opted_out = std::env::var("TENSORGATE_CONFORMANCE_SKIP").is_ok_and(|v| v == "1");
    if std::env::var_os("CI").is_some() && !opted_out {
        panic!(
            "{var} is not set and CI is: the conformance tests need a real backend. \
             Run `bash scripts/conformance.sh` (or `eval \"$({script} start)\"` first), \
             or set TENSORGATE_CONFORMANCE_SKIP=1 to skip them on purpose."
        );
    }
    crate::common::skipped(&format!(
        "{var} is not set; no real backend to compare against. \
         Run `eval \"$({script} start)\"` (or `bash scripts/conformance.sh`) first."
    ));
    None
}

/// `http://127.0.0.1:PORT` -> its socket address.
pub fn addr_of(url: &str) -> SocketAddr {
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("not an http://IP:PORT URL: {url}"))
}

/// One request, sent the same way to the backend and to the gateway.
#[derive(Clone, Debug)]
pub struct Req {
    pub method: &'static str,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl Req {
    pub fn get(path: impl Into<String>) -> Req {
        Req {
            method: "GET",
            path: path.into(),
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }

    /// A JSON request (with `Content-Type: application/json`).
    pub fn json(path: impl Into<String>, body: impl Into<Bytes>) -> Req {
        Req::post(path, body).header("content-type", "application/json")
    }

    pub fn post(path: impl Into<String>, body: impl Into<Bytes>) -> Req {
        Req {
            method: "POST",
            path: path.into(),
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A binary-extension request: JSON header then the chunks, with IHCL.
    pub fn binary(path: impl Into<String>, header: &str, chunks: &[&[u8]]) -> Req {
        let mut body = header.as_bytes().to_vec();
        for c in chunks {
            body.extend_from_slice(c);
        }
        Req::post(path, body).header("inference-header-content-length", &header.len().to_string())
    }

    pub fn header(mut self, name: &str, value: &str) -> Req {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub async fn send(&self, to: SocketAddr) -> Got {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        send(to, self.method, &self.path, &headers, self.body.clone()).await
    }
}

/// The model's inference path.
pub fn infer_path(model: &str) -> String {
    format!("/v2/models/{model}/infer")
}

/// A backend in front of `target` that forwards every request and counts
/// them: the proof that the gateway answered a request itself.
pub async fn tap(target: SocketAddr) -> TestBackend {
    TestBackend::start(move |seen: Seen| async move {
        let headers: Vec<(String, String)> = seen
            .headers
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "host" | "content-length" | "transfer-encoding"))
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let req = Req {
            method: match seen.method.as_str() {
                "GET" => "GET",
                "PUT" => "PUT",
                "DELETE" => "DELETE",
                _ => "POST",
            },
            path: seen.path.clone(),
            headers,
            body: seen.body.clone(),
        };
        relay(req.send(target).await)
    })
    .await
}

fn relay(got: Got) -> Response<Body> {
    let mut resp = Response::new(full(got.body));
    *resp.status_mut() = got.status;
    for (k, v) in &got.headers {
        if k != "transfer-encoding" && k != "content-length" {
            resp.headers_mut().append(k.clone(), v.clone());
        }
    }
    resp
}

/// `GET /v2/models/{model}/stats`: the model's `inference_count` plus its
/// failed-request count, i.e. everything Triton executed or tried to.
pub async fn triton_model_count(triton: SocketAddr, model: &str) -> u64 {
    let got = Req::get(format!("/v2/models/{model}/stats"))
        .send(triton)
        .await;
    assert_eq!(got.status, StatusCode::OK, "stats for {model}");
    let v = got.json();
    let s = &v["model_stats"][0];
    s["inference_count"].as_u64().unwrap_or(0)
        + s["inference_stats"]["success"]["count"]
            .as_u64()
            .unwrap_or(0)
        + s["inference_stats"]["fail"]["count"].as_u64().unwrap_or(0)
}

/// Cases of one test, each recorded as it completes; the test fails at the
/// end if any case did, listing them all.
#[derive(Debug)]
pub struct Matrix {
    suite: &'static str,
    area: &'static str,
    cases: usize,
    failures: Vec<String>,
}

impl Matrix {
    pub fn new(suite: &'static str, area: &'static str) -> Matrix {
        Matrix {
            suite,
            area,
            cases: 0,
            failures: Vec::new(),
        }
    }

    /// Records one case: `row` x `col` of this area's table.
    pub fn record(&mut self, row: &str, col: &str, result: Result<(), String>) {
        self.cases += 1;
        let ok = result.is_ok();
        let detail = result.err().unwrap_or_default();
        eprintln!(
            "[{}] {}/{row}/{col}: {}{}",
            self.suite,
            self.area,
            if ok { "pass" } else { "FAIL" },
            if ok {
                String::new()
            } else {
                format!("\n    {detail}")
            }
        );
        if !ok {
            self.failures.push(format!("{row}/{col}: {detail}"));
        }
        if let Some(path) = std::env::var_os("TENSORGATE_CONFORMANCE_RESULTS") {
            let line = serde_json::json!({
                "suite": self.suite, "area": self.area, "row": row, "col": col,
                "ok": ok, "detail": detail,
            });
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .expect("results file");
            f.write_all(format!("{line}\n").as_bytes())
                .expect("write results");
        }
    }

    pub fn finish(self) {
        assert!(self.cases > 0, "{}: no case ran", self.area);
        assert!(
            self.failures.is_empty(),
            "{}/{}: {} of {} cases failed:\n  {}",
            self.suite,
            self.area,
            self.failures.len(),
            self.cases,
            self.failures.join("\n  ")
        );
    }
}

/// Returns `Err(message)` from the enclosing function when `cond` is false.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// `ensure!(a == b)` that shows both sides.
#[macro_export]
macro_rules! ensure_eq {
    ($a:expr, $b:expr, $($fmt:tt)+) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            return Err(format!("{}: {:?} != {:?}", format!($($fmt)+), a, b));
        }
    }};
}

/// gzip or zlib ("deflate") compression of a request body.
pub fn compress(coding: &str, data: &[u8]) -> Vec<u8> {
    use flate2::Compression;
    let mut out = Vec::new();
    match coding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(&mut out, Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap();
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(&mut out, Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap();
        }
        other => panic!("no such coding {other}"),
    }
    out
}

/// The inverse of [`compress`], for replies.
pub fn decompress(coding: &str, data: &[u8]) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut out = Vec::new();
    let r = match coding {
        "gzip" => flate2::read::GzDecoder::new(data).read_to_end(&mut out),
        "deflate" => flate2::read::ZlibDecoder::new(data).read_to_end(&mut out),
        other => return Err(format!("unexpected Content-Encoding {other}")),
    };
    r.map_err(|e| format!("{coding} body does not decompress: {e}"))?;
    Ok(out)
}
