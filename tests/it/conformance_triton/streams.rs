//! `generate_stream` server-sent events (one by one, as Triton sends them),
//! `generate`, and every non-inference endpoint passed through byte for byte.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::plain_gateway;
use crate::common::{next_data, open};
use crate::harness::{Matrix, Req};
use crate::{ensure, ensure_eq, triton};

/// The events of a stream with the time each arrived, split on blank lines.
async fn read_events(
    to: SocketAddr,
    path: &str,
    body: &str,
) -> Result<(u16, String, Vec<(Duration, Bytes)>, Duration), String> {
    let started = Instant::now();
    let resp = open(
        to,
        "POST",
        path,
        &[("content-type", "application/json")],
        body.to_owned(),
    )
    .await;
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut body = resp.into_body();
    let mut events = Vec::new();
    let mut pending: Vec<u8> = Vec::new();
    while let Some(chunk) = next_data(&mut body).await {
        let at = started.elapsed();
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = pending.drain(..end + 2).collect();
            events.push((at, Bytes::from(event)));
        }
    }
    if !pending.is_empty() {
        events.push((started.elapsed(), Bytes::from(pending)));
    }
    Ok((status, ct, events, started.elapsed()))
}

async fn stream_case(
    triton: SocketAddr,
    gw: SocketAddr,
    body: &str,
    timed: bool,
) -> Result<(), String> {
    let path = "/v2/models/decoupled_repeat/generate_stream";
    let (ds, dct, direct, _) = read_events(triton, path, body).await?;
    let (vs, vct, via, end) = read_events(gw, path, body).await?;
    ensure_eq!(ds, vs, "status");
    ensure_eq!(dct, vct, "content-type");
    let texts = |e: &[(Duration, Bytes)]| e.iter().map(|(_, b)| b.clone()).collect::<Vec<_>>();
    ensure_eq!(texts(&direct), texts(&via), "events");
    if timed {
        ensure!(via.len() >= 3, "only {} events", via.len());
        let first = via[0].0;
        ensure!(
            first + Duration::from_millis(300) < end,
            "first event at {first:?} but the stream ended at {end:?}: not streamed"
        );
        for pair in via.windows(2) {
            let gap = pair[1].0.saturating_sub(pair[0].0);
            ensure!(
                gap >= Duration::from_millis(120),
                "events {gap:?} apart (model sends them 250 ms apart)"
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn generate_and_generate_stream() {
    let triton = triton!();
    let _stats = super::STATS.read().await;
    let running = plain_gateway(triton).await;
    let gw = running.data_addr;
    let mut m = Matrix::new(
        super::SUITE,
        "generate / generate_stream (decoupled_repeat)",
    );
    m.record(
        "generate_stream",
        "4 events 250 ms apart, one by one",
        stream_case(
            triton,
            gw,
            r#"{"id":"s1","text_input":"h\u00e9","count":4,"delay_ms":250}"#,
            true,
        )
        .await,
    );
    m.record(
        "generate_stream",
        "count 0 (empty body)",
        stream_case(triton, gw, r#"{"text_input":"x","count":0}"#, false).await,
    );
    m.record(
        "generate_stream",
        "model error before any event",
        stream_case(triton, gw, r#"{"count":2}"#, false).await,
    );
    for (what, model, body) in [
        (
            "one response",
            "decoupled_repeat",
            r#"{"text_input":"hi","count":1}"#,
        ),
        (
            "two responses (Triton's error)",
            "decoupled_repeat",
            r#"{"text_input":"hi","count":2,"delay_ms":0}"#,
        ),
        (
            "non-decoupled model",
            "identity_fp32",
            r#"{"INPUT0":[1.5,2.0]}"#,
        ),
        (
            "value that does not convert",
            "decoupled_repeat",
            r#"{"text_input":"hi","count":"zz"}"#,
        ),
    ] {
        let req = Req::json(format!("/v2/models/{model}/generate"), body);
        let r = async {
            let d = req.send(triton).await;
            let v = req.send(gw).await;
            ensure_eq!(d.status, v.status, "status");
            ensure_eq!(
                d.header("content-type"),
                v.header("content-type"),
                "content-type"
            );
            ensure!(
                d.body == v.body,
                "bodies differ: {:?} vs {:?}",
                d.body,
                v.body
            );
            Ok(())
        }
        .await;
        m.record("generate", what, r);
    }
    m.finish();
}

#[tokio::test]
async fn other_endpoints_pass_through() {
    let triton = triton!();
    let _stats = super::STATS.read().await;
    let running = plain_gateway(triton).await;
    let gw = running.data_addr;
    let mut m = Matrix::new(super::SUITE, "metadata, config, health (passed through)");
    let cases = [
        Req::get("/v2"),
        Req::get("/v2/health/live"),
        Req::get("/v2/health/ready"),
        Req::get("/v2/models/simple"),
        Req::get("/v2/models/simple/versions/1"),
        Req::get("/v2/models/simple/config"),
        Req::get("/v2/models/identity_bf16/config"),
        Req::get("/v2/models/decoupled_repeat/config"),
        Req::get("/v2/models/simple/ready"),
        Req::get("/v2/models/simple/versions/1/ready"),
        Req::get("/v2/models/nope/ready"),
        Req::get("/v2/models/nope"),
        Req::get("/v2/nope"),
        Req::json("/v2/repository/index", "{}"),
        Req::json("/v2/models/simple/versions/1/infer/nope", "{}"),
    ];
    for req in cases {
        let r = async {
            let d = req.send(triton).await;
            let v = req.send(gw).await;
            ensure_eq!(d.status, v.status, "status");
            ensure_eq!(
                d.header("content-type"),
                v.header("content-type"),
                "content-type"
            );
            ensure!(
                d.body == v.body,
                "bodies differ: {:?} vs {:?}",
                d.body,
                v.body
            );
            // What tensorgate adds: a request id and a date.
            ensure!(v.header("x-request-id").is_some(), "no x-request-id");
            ensure!(
                v.header("date").is_some() && d.header("date").is_none(),
                "date headers"
            );
            Ok(())
        }
        .await;
        m.record(&format!("{} {}", req.method, req.path), "byte-equal", r);
    }
    m.finish();
}
