//! The admin port's status: `GET /status`, what the gateway is doing now
//! as JSON (build, configuration hash and last reload, listeners and the
//! data port's certificate expiry, tracing, and per route and per replica
//! the state, requests in flight, and the last minute's rate, error ratio
//! and p50 / p99 latency, rate-limit refusals, shadow drops), and `GET /`,
//! a page that shows it and refreshes itself from `/status` (one embedded
//! file, no external assets: it works air-gapped). Reads only what the
//! request path already keeps; never touches the data path.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::gateway::Gateway;
use crate::metrics::REPLICA_STATES;
use crate::metrics::window::Summary;

/// The status page, embedded in the binary.
pub const PAGE: &str = include_str!("status.html");

/// What the status reports besides the gateway itself: when the process
/// started, its listeners, and its reloads.
#[derive(Debug)]
pub struct Board {
    pub started: SystemTime,
    pub data: SocketAddr,
    pub admin: SocketAddr,
    pub reloads: Arc<ReloadLog>,
}

/// The outcome of the configuration reloads so far.
#[derive(Debug, Default)]
pub struct ReloadLog {
    last: Mutex<Option<LastReload>>,
    applied: AtomicU64,
    refused: AtomicU64,
}

/// The last reload: when, why, and whether it was applied (else every
/// problem that refused it).
#[derive(Clone, Debug)]
pub struct LastReload {
    pub at: SystemTime,
    pub cause: &'static str,
    pub applied: bool,
    pub problems: Vec<String>,
}

impl ReloadLog {
    pub fn record(&self, reload: LastReload) {
        let n = if reload.applied {
            &self.applied
        } else {
            &self.refused
        };
        n.fetch_add(1, Ordering::Relaxed);
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(reload);
    }

    fn json(&self) -> Value {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner()).clone();
        json!({
            "applied_total": self.applied.load(Ordering::Relaxed),
            "refused_total": self.refused.load(Ordering::Relaxed),
            "last": last.map(|r| json!({
                "at": unix(r.at),
                "cause": r.cause,
                "result": if r.applied { "ok" } else { "refused" },
                "problems": r.problems,
            })),
        })
    }
}

/// The status of `gateway` as JSON.
pub fn status(gateway: &Gateway, board: &Board, hash: u64) -> Value {
    let config = gateway.config();
    let now = SystemTime::now();
    json!({
        "build": {"name": "tensorgate", "version": env!("CARGO_PKG_VERSION")},
        "now": unix(now),
        "uptime_seconds": now.duration_since(board.started).unwrap_or_default().as_secs(),
        "config": {"hash": format!("{hash:014x}"), "reload": board.reloads.json()},
        "listeners": listeners(gateway, board, now),
        "tracing": config.tracing.as_ref().map(|t| json!({
            "endpoint": t.traces_url(),
            "sample_ratio": t.sample_ratio,
            "parent_based": t.parent_based,
        })),
        "routes": config.routes.iter().map(|r| route(gateway, r)).collect::<Vec<_>>(),
        "backends": config.backends.keys().map(|b| backend(gateway, b)).collect::<Vec<_>>(),
    })
}

fn listeners(gateway: &Gateway, board: &Board, now: SystemTime) -> Value {
    let tls = gateway.config().server.tls.as_ref().map(|t| {
        let not_after = crate::tls::certs(&t.cert, crate::tls::Part::Cert)
            .ok()
            .and_then(|chain| chain.first().and_then(|c| crate::tls::not_after(c)));
        json!({
            "cert_file": t.cert.path.display().to_string(),
            "not_after": not_after,
            "expires_in_seconds": not_after.map(|at| at - unix(now) as i64),
        })
    });
    json!([
        {"name": "data", "address": board.data.to_string(),
         "scheme": if tls.is_some() { "https" } else { "http" }, "tls": tls},
        {"name": "admin", "address": board.admin.to_string(), "scheme": "http", "tls": null},
    ])
}

fn route(gateway: &Gateway, r: &crate::config::Route) -> Value {
    let backends: Vec<&str> = r.split.iter().map(|w| w.backend.name.as_str()).collect();
    let rm = gateway.metrics().route(&r.name, &backends);
    let shadow = gateway
        .shadow(&r.name)
        .map(|m| json!({"backend": m.backend(), "dropped_total": m.dropped()}));
    let mut out = json!({
        "name": r.name,
        "models": r.models,
        "default": r.default,
        "backends": r.split.iter().map(|w| json!({"name": w.backend.name, "weight": w.weight})).collect::<Vec<_>>(),
        "in_flight": rm.in_flight.get(),
        "rate_limited_total": rm.tally.rate_limited.load(Ordering::Relaxed),
        "shadow": shadow,
    });
    merge(&mut out, last_minute(&rm.tally.window.summary()));
    out
}

fn backend(gateway: &Gateway, name: &str) -> Value {
    let replicas = gateway.upstream(name).map(|u| u.replicas());
    let replicas: Vec<Value> = replicas
        .iter()
        .flat_map(|r| r.iter())
        .map(|r| {
            let (condition, health) = r.condition();
            let mut out = json!({
                "url": r.label,
                "state": condition.label(),
                "health": REPLICA_STATES[health as usize],
                "in_flight": r.in_flight(),
            });
            merge(&mut out, last_minute(&r.window.summary()));
            out
        })
        .collect();
    json!({"name": name, "replicas": replicas})
}

/// A window's last minute as the status's fields.
fn last_minute(s: &Summary) -> Value {
    let ms = |d: Option<Duration>| d.map(|d| (d.as_secs_f64() * 1e6).round() / 1e3);
    json!({
        "requests_last_minute": s.requests,
        "requests_per_second": (s.rate * 1000.0).round() / 1000.0,
        "error_ratio": (s.error_ratio * 10_000.0).round() / 10_000.0,
        "p50_ms": ms(s.p50),
        "p99_ms": ms(s.p99),
    })
}

fn merge(into: &mut Value, from: Value) {
    if let (Value::Object(a), Value::Object(b)) = (into, from) {
        a.extend(b);
    }
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs()
}
