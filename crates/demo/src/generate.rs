//! `POST /v2/models/repeat/generate[_stream]`: Triton's generate extension
//! for the decoupled demo model `repeat` (docs/TRITON-FACTS.md §8).
//!
//! The body is one JSON object whose members are the model's inputs:
//! `text_input` (string), `count` (default 3, at most 1000) and `delay_ms`
//! (default 200). `generate_stream` sends `count` server-sent events, the
//! first at once and then one every `delay_ms`, each written to the socket
//! as it is produced: `data: {"index":0,"model_name":"repeat",
//! "model_version":"1","text_output":"hi0"}` (keys sorted, as Triton writes
//! them; `id` is echoed when given). `generate` answers one JSON object and,
//! like Triton, refuses (with a 200) a `count` other than 1.

use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::{Map, Value};

use super::catalog::{Kind, Model, VERSION};
use super::error::DemoError;
use super::respond::{self, Body};

/// Most responses one request produces (the Triton test model's cap).
pub(super) const MAX_COUNT: i64 = 1000;
/// Longest pause between two events; without it a request could hold a
/// connection open for days.
pub(super) const MAX_DELAY_MS: i64 = 60_000;
pub(super) const DEFAULT_COUNT: i64 = 3;
pub(super) const DEFAULT_DELAY_MS: i64 = 200;

const ONE_RESPONSE_ONLY: &str = "generate expects model to produce exactly 1 response, use generate stream for model that generates various number of responses";

const SSE_CONTENT_TYPE: &str = "text/event-stream; charset=utf-8";

#[derive(Debug, PartialEq)]
struct Repeat {
    id: Option<String>,
    text: Option<String>,
    count: i64,
    delay: Duration,
}

/// Serves `generate` (`stream == false`) or `generate_stream`.
pub fn generate(model: &Model, body: &[u8], stream: bool) -> Result<Response<Body>, DemoError> {
    if model.kind != Kind::Repeat {
        return Err(DemoError::Invalid(format!(
            "the demo server implements generate only for model 'repeat', not '{}'",
            model.name
        )));
    }
    let request = parse(body)?;
    let Some(text) = request.text.clone() else {
        // The model itself fails: Triton sends the error as the only event.
        let error = DemoError::Invalid("input 'text_input' is required by model 'repeat'".into());
        if !stream {
            return Err(error);
        }
        let event = sse_event(&serde_json::json!({"error": error.to_string()}));
        let builder = Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .header(http::header::CONTENT_TYPE, SSE_CONTENT_TYPE);
        return Ok(respond::finish(builder, respond::full(event)));
    };
    if !stream {
        let value = if request.count == 1 {
            response(&request, &text, 0)
        } else {
            serde_json::json!({"error": ONE_RESPONSE_ONLY})
        };
        let body = serde_json::to_vec(&value).unwrap_or_default();
        return Ok(send_chunked(
            "application/json",
            vec![Bytes::from(body)],
            Duration::ZERO,
        ));
    }
    let events = (0..request.count)
        .map(|i| sse_event(&response(&request, &text, i)))
        .collect();
    Ok(send_chunked(SSE_CONTENT_TYPE, events, request.delay))
}

/// A 200 whose body sends `chunks` one by one, `delay` apart, each flushed
/// as its own chunk.
fn send_chunked(content_type: &'static str, chunks: Vec<Bytes>, delay: Duration) -> Response<Body> {
    let (tx, body) = respond::channel();
    tokio::spawn(async move {
        for (i, chunk) in chunks.into_iter().enumerate() {
            if i > 0 && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if tx.send(chunk).await.is_err() {
                break; // the client went away
            }
        }
    });
    respond::streamed(StatusCode::OK, content_type, body)
}

fn sse_event(value: &Value) -> Bytes {
    let mut out = b"data: ".to_vec();
    let _ = serde_json::to_writer(&mut out, value);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// One response of the model; members inserted in sorted order.
fn response(request: &Repeat, text: &str, index: i64) -> Value {
    let mut m = Map::new();
    if let Some(id) = &request.id {
        m.insert("id".into(), Value::from(id.as_str()));
    }
    m.insert("index".into(), Value::from(index));
    m.insert("model_name".into(), Value::from("repeat"));
    m.insert("model_version".into(), Value::from(VERSION));
    m.insert("text_output".into(), Value::from(format!("{text}{index}")));
    Value::Object(m)
}

fn parse(body: &[u8]) -> Result<Repeat, DemoError> {
    let bad = |what: String| DemoError::Invalid(what);
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| bad(format!("failed to parse the request JSON: {e}")))?;
    let Value::Object(members) = value else {
        return Err(bad("the generate request must be a JSON object".into()));
    };
    let mut request = Repeat {
        id: None,
        text: None,
        count: DEFAULT_COUNT,
        delay: Duration::from_millis(DEFAULT_DELAY_MS as u64),
    };
    for (key, value) in &members {
        // A one-element array is the same input as its element.
        let scalar = match value {
            Value::Array(items) if items.len() == 1 => &items[0],
            v => v,
        };
        let int = || {
            scalar
                .as_i64()
                .filter(|v| i32::try_from(*v).is_ok())
                .ok_or_else(|| {
                    bad(format!(
                        "input '{key}' must be an INT32 integer, got {value}"
                    ))
                })
        };
        match key.as_str() {
            "id" => {
                let id = value.as_str().ok_or_else(|| {
                    bad("Unable to parse 'id': attempt to access JSON non-string as string".into())
                })?;
                request.id = Some(id.to_owned());
            }
            "parameters" => {}
            "text_input" => {
                let text = scalar.as_str().ok_or_else(|| {
                    bad(format!("input 'text_input' must be a string, got {value}"))
                })?;
                request.text = Some(text.to_owned());
            }
            "count" => request.count = int()?.min(MAX_COUNT),
            "delay_ms" => {
                request.delay = Duration::from_millis(int()?.clamp(0, MAX_DELAY_MS) as u64);
            }
            _ => {
                return Err(bad(format!(
                    "unexpected inference input '{key}' for model 'repeat'"
                )));
            }
        }
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_inputs_with_defaults_and_caps() {
        let r = parse(br#"{"text_input":"hi"}"#).unwrap();
        assert_eq!((r.count, r.delay), (3, Duration::from_millis(200)));
        let r = parse(br#"{"id":"x","text_input":["hi"],"count":[5000],"delay_ms":-4}"#).unwrap();
        assert_eq!(r.id.as_deref(), Some("x"));
        assert_eq!(r.text.as_deref(), Some("hi"));
        assert_eq!((r.count, r.delay), (1000, Duration::ZERO));
        assert!(parse(br#"{"count":"zz"}"#).is_err());
        assert!(parse(br#"{"count":4294967296}"#).is_err());
        assert!(parse(br#"{"nope":1}"#).is_err());
        assert!(parse(b"[]").is_err());
    }

    #[test]
    fn events_have_sorted_keys() {
        let r = parse(br#"{"id":"a","text_input":"hi"}"#).unwrap();
        assert_eq!(
            &sse_event(&response(&r, "hi", 2))[..],
            &b"data: {\"id\":\"a\",\"index\":2,\"model_name\":\"repeat\",\"model_version\":\"1\",\"text_output\":\"hi2\"}\n\n"[..]
        );
    }
}
