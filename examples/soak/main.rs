//! The load client of `scripts/soak.sh`: sends a mix of request kinds
//! (see [`kinds`]) at a fixed concurrency to a gateway, checks every reply
//! (status *and* body), and prints per-kind counts, errors and latency and
//! one JSON summary line. It stops after `--requests` or `--duration`,
//! whichever comes first, and refuses a target that is not a loopback
//! address.
//!
//!   cargo run --release --example soak -- --target 127.0.0.1:8000 \
//!       [--requests 100000] [--concurrency 64] [--duration 15m] [--kinds a,b]

mod kinds;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::time::Instant;

use kinds::Kind;

#[derive(Debug, Parser)]
struct Args {
    /// Gateway address; loopback only (127.0.0.0/8 or ::1).
    #[arg(long)]
    target: SocketAddr,
    /// Requests to send in all.
    #[arg(long, default_value_t = 100_000)]
    requests: u64,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Stop after this long even if requests remain ("90s", "10m").
    #[arg(long, default_value = "15m", value_parser = parse_duration)]
    duration: Duration,
    /// Time limit of one request; over it counts as an error.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    timeout: Duration,
    /// Kinds to send, comma-separated; default: every kind.
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<String>,
    /// Also write the JSON summary to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let n: u64 = text[..split]
        .parse()
        .map_err(|e| format!("{text:?}: {e}"))?;
    let seconds = match &text[split..] {
        "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        unit => return Err(format!("{text:?}: unit {unit:?} is not s, m or h")),
    };
    Ok(Duration::from_secs(seconds))
}

/// What one kind's requests came to.
#[derive(Debug, Default)]
struct Tally {
    ok: u64,
    errors: u64,
    latencies_us: Vec<u32>,
    /// The first few errors, to show.
    samples: Vec<String>,
}

impl Tally {
    fn record(&mut self, took: Duration, outcome: Result<(), String>) {
        self.latencies_us
            .push(u32::try_from(took.as_micros()).unwrap_or(u32::MAX));
        match outcome {
            Ok(()) => self.ok += 1,
            Err(e) => {
                self.errors += 1;
                if self.samples.len() < 3 {
                    self.samples.push(e);
                }
            }
        }
    }

    fn merge(&mut self, other: Tally) {
        self.ok += other.ok;
        self.errors += other.errors;
        self.latencies_us.extend(other.latencies_us);
        self.samples.extend(
            other
                .samples
                .into_iter()
                .take(3 - self.samples.len().min(3)),
        );
    }

    /// The latency at quantile `q`, in milliseconds.
    fn quantile_ms(&self, q: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return 0.0;
        }
        let i = ((self.latencies_us.len() - 1) as f64 * q).round() as usize;
        f64::from(self.latencies_us[i]) / 1000.0
    }
}

type Http = Client<HttpConnector, Full<Bytes>>;

/// Sends one request of `kind` and checks its reply.
async fn one(client: &Http, target: SocketAddr, kind: &Kind) -> Result<(), String> {
    let mut req = http::Request::builder()
        .method(kind.method.clone())
        .uri(format!("http://{target}{}", kind.path));
    for (name, value) in &kind.headers {
        req = req.header(*name, value);
    }
    let req = req
        .body(Full::new(kind.body.clone()))
        .map_err(|e| e.to_string())?;
    let resp = client
        .request(req)
        .await
        .map_err(|e| format!("request: {e}"))?;
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.map_err(|e| format!("body: {e}"))?;
    let body = body.to_bytes();
    if parts.status != 200 {
        let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
        return Err(format!("status {}: {text}", parts.status));
    }
    (kind.check)(&parts.headers, &body)
}

/// Shared between the workers.
#[derive(Debug)]
struct Plan {
    client: Http,
    target: SocketAddr,
    mix: Vec<Kind>,
    next: AtomicU64,
    done: AtomicU64,
    failed: AtomicU64,
    total: u64,
    deadline: Instant,
    timeout: Duration,
}

async fn worker(plan: Arc<Plan>) -> Vec<Tally> {
    let mut tallies: Vec<Tally> = plan.mix.iter().map(|_| Tally::default()).collect();
    loop {
        let n = plan.next.fetch_add(1, Ordering::Relaxed);
        if n >= plan.total || Instant::now() >= plan.deadline {
            return tallies;
        }
        let i = (n % plan.mix.len() as u64) as usize;
        let started = Instant::now();
        let outcome =
            tokio::time::timeout(plan.timeout, one(&plan.client, plan.target, &plan.mix[i]))
                .await
                .unwrap_or_else(|_| Err(format!("no reply within {:?}", plan.timeout)));
        if outcome.is_err() {
            plan.failed.fetch_add(1, Ordering::Relaxed);
        }
        plan.done.fetch_add(1, Ordering::Relaxed);
        tallies[i].record(started.elapsed(), outcome);
    }
}

/// Prints progress every minute until the run ends.
async fn progress(plan: Arc<Plan>, started: Instant) {
    let mut tick = tokio::time::interval(Duration::from_secs(60));
    tick.tick().await;
    loop {
        tick.tick().await;
        eprintln!(
            "soak: {}s: {} requests, {} errors",
            started.elapsed().as_secs(),
            plan.done.load(Ordering::Relaxed),
            plan.failed.load(Ordering::Relaxed)
        );
    }
}

fn choose(all: Vec<Kind>, wanted: &[String]) -> Result<Vec<Kind>, String> {
    if wanted.is_empty() {
        return Ok(all);
    }
    let names: Vec<&str> = all.iter().map(|k| k.name).collect();
    wanted
        .iter()
        .map(|w| {
            all.iter()
                .find(|k| k.name == w)
                .cloned()
                .ok_or_else(|| format!("unknown kind {w:?} (kinds: {})", names.join(", ")))
        })
        .collect()
}

async fn run(args: Args) -> Result<bool, String> {
    let mix = choose(kinds::all(), &args.kinds)?;
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(args.concurrency)
        .build(connector);
    let started = Instant::now();
    let plan = Arc::new(Plan {
        client,
        target: args.target,
        mix,
        next: AtomicU64::new(0),
        done: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        total: args.requests,
        deadline: started + args.duration,
        timeout: args.timeout,
    });
    let ticker = tokio::spawn(progress(plan.clone(), started));
    let workers: Vec<_> = (0..args.concurrency.max(1))
        .map(|_| tokio::spawn(worker(plan.clone())))
        .collect();
    let mut tallies: Vec<Tally> = plan.mix.iter().map(|_| Tally::default()).collect();
    for w in workers {
        for (t, part) in tallies.iter_mut().zip(w.await.map_err(|e| e.to_string())?) {
            t.merge(part);
        }
    }
    ticker.abort();
    let seconds = started.elapsed().as_secs_f64();
    Ok(report(
        &plan.mix,
        &mut tallies,
        seconds,
        args.json.as_deref(),
    ))
}

/// Prints the table and the JSON line; true when there was no error.
fn report(
    mix: &[Kind],
    tallies: &mut [Tally],
    seconds: f64,
    json: Option<&std::path::Path>,
) -> bool {
    let (mut sent, mut errors) = (0, 0);
    let mut per_kind = serde_json::Map::new();
    println!(
        "{:<12} {:>9} {:>7} {:>9} {:>9} {:>9}",
        "kind", "sent", "errors", "p50 ms", "p99 ms", "max ms"
    );
    for (kind, t) in mix.iter().zip(tallies.iter_mut()) {
        t.latencies_us.sort_unstable();
        let n = t.ok + t.errors;
        sent += n;
        errors += t.errors;
        let (p50, p99, max) = (t.quantile_ms(0.5), t.quantile_ms(0.99), t.quantile_ms(1.0));
        println!(
            "{:<12} {n:>9} {:>7} {p50:>9.2} {p99:>9.2} {max:>9.2}",
            kind.name, t.errors
        );
        for s in &t.samples {
            println!("  error: {s}");
        }
        per_kind.insert(
            kind.name.to_owned(),
            serde_json::json!({"sent": n, "errors": t.errors, "p50_ms": p50, "p99_ms": p99, "max_ms": max}),
        );
    }
    let summary = serde_json::json!({
        "requests": sent, "errors": errors, "seconds": (seconds * 10.0).round() / 10.0,
        "rps": (sent as f64 / seconds).round(), "kinds": per_kind,
    });
    println!("{summary}");
    if let Some(path) = json
        && let Err(e) = std::fs::write(path, format!("{summary}\n"))
    {
        eprintln!("soak: cannot write {}: {e}", path.display());
        return false;
    }
    errors == 0
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !args.target.ip().is_loopback() {
        eprintln!("soak: {} is not a loopback address; refusing", args.target);
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("soak: {e}");
            ExitCode::FAILURE
        }
    }
}
