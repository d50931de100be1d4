//! A V2 replica for balancing tests: the demo server's models behind knobs
//! a test turns — a delay before every infer, infers failing with 500,
//! Triton's repository API to unload and load a model (as Triton 2.51 does:
//! the unloaded model's `/ready` is 400, its infers 404, and the server's
//! own `/v2/health/ready` is 400 for a moment), and a hard stop that
//! drops every open connection, as a killed process would. It counts the
//! infers it got per model and the most it had in flight at once.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tensorgate::http::body::{Body, full};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

/// What a test turns, and what the replica counts.
#[derive(Debug, Default)]
pub struct Knobs {
    /// Milliseconds to wait before answering an infer.
    pub delay_ms: AtomicU64,
    /// Infers answer 500.
    pub fail: AtomicBool,
    unloaded: Mutex<HashSet<String>>,
    /// Until when the server check answers 400 after an unload (Triton
    /// 2.51 does, for up to a second or so; here 300 ms, shorter than the
    /// tests' `health_interval` × `unhealthy_threshold`).
    unloading_until: Mutex<Option<std::time::Instant>>,
    infers: Mutex<HashMap<String, usize>>,
    in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
    /// Health and model readiness checks received.
    pub checks: AtomicUsize,
}

impl Knobs {
    pub fn infers(&self, model: &str) -> usize {
        self.infers.lock().unwrap().get(model).copied().unwrap_or(0)
    }

    pub fn total_infers(&self) -> usize {
        self.infers.lock().unwrap().values().sum()
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    pub fn delay(&self, ms: u64) {
        self.delay_ms.store(ms, Ordering::SeqCst);
    }

    pub fn unload(&self, model: &str) {
        self.unloaded.lock().unwrap().insert(model.to_owned());
        *self.unloading_until.lock().unwrap() =
            Some(std::time::Instant::now() + Duration::from_millis(300));
    }

    fn unloading(&self) -> bool {
        self.unloading_until
            .lock()
            .unwrap()
            .is_some_and(|t| std::time::Instant::now() < t)
    }

    pub fn load(&self, model: &str) {
        self.unloaded.lock().unwrap().remove(model);
    }

    fn is_unloaded(&self, model: &str) -> bool {
        self.unloaded.lock().unwrap().contains(model)
    }
}

/// A running replica; stopped (every connection dropped) when dropped.
pub struct Replica {
    pub addr: SocketAddr,
    pub knobs: Arc<Knobs>,
    task: Option<JoinHandle<()>>,
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Replica {
    pub async fn start() -> Replica {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        Replica::serve(listener, Arc::default())
    }

    /// Serves again on the address of a killed replica, keeping its knobs.
    pub async fn restart(addr: SocketAddr, knobs: Arc<Knobs>) -> Replica {
        let listener = TcpListener::bind(addr).await.unwrap();
        Replica::serve(listener, knobs)
    }

    fn serve(listener: TcpListener, knobs: Arc<Knobs>) -> Replica {
        let addr = listener.local_addr().unwrap();
        let k = knobs.clone();
        let task = tokio::spawn(async move {
            // Owned here: aborting this task drops every connection.
            let mut conns = JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let _ = stream.set_nodelay(true);
                let k = k.clone();
                conns.spawn(async move {
                    let svc = service_fn(move |req| {
                        let k = k.clone();
                        async move { Ok::<_, Infallible>(answer(&k, req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
                while conns.try_join_next().is_some() {}
            }
        });
        Replica {
            addr,
            knobs,
            task: Some(task),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops at once: the port refuses connections, open ones are dropped
    /// mid-exchange.
    pub fn kill(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// The model a `/v2/models/{m}/...` path names, and the rest of the path.
fn model_of(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/v2/models/")?;
    Some(rest.split_once('/').unwrap_or((rest, "")))
}

fn text(status: u16, body: &'static str) -> Response<Body> {
    let mut r = Response::new(full(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = StatusCode::from_u16(status).unwrap();
    r
}

async fn answer(k: &Knobs, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    if let Some(rest) = path.strip_prefix("/v2/repository/models/")
        && req.method() == Method::POST
    {
        return match rest.rsplit_once('/') {
            Some((m, "unload")) => {
                k.unload(m);
                text(200, "")
            }
            Some((m, "load")) => {
                k.load(m);
                text(200, "")
            }
            _ => text(404, ""),
        };
    }
    if path == "/v2/health/ready" {
        k.checks.fetch_add(1, Ordering::SeqCst);
        if k.unloading() {
            return text(400, "");
        }
    }
    let Some((model, action)) = model_of(&path) else {
        return into_body(tensorgate_demo::handle(req).await);
    };
    let model = model.to_owned();
    if action == "ready" {
        k.checks.fetch_add(1, Ordering::SeqCst);
        if k.is_unloaded(&model) {
            return text(400, "Model version not ready");
        }
    }
    if action != "infer" {
        return into_body(tensorgate_demo::handle(req).await);
    }
    *k.infers.lock().unwrap().entry(model.clone()).or_default() += 1;
    let now = k.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    k.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let delay = k.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let resp = if k.is_unloaded(&model) {
        text(
            404,
            "{\"error\":\"Request for unknown model: has no available versions\"}",
        )
    } else if k.fail.load(Ordering::SeqCst) {
        text(500, "{\"error\":\"failing on purpose\"}")
    } else {
        into_body(tensorgate_demo::handle(req).await)
    };
    k.in_flight.fetch_sub(1, Ordering::SeqCst);
    resp
}

fn into_body<B>(resp: Response<B>) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<tensorgate::http::body::BoxError>,
{
    let (parts, body) = resp.into_parts();
    Response::from_parts(parts, body.map_err(Into::into).boxed_unsync())
}

/// A JSON infer of the demo's `simple` model (two INT32 [1,16] inputs).
pub fn simple_infer() -> String {
    let v: Vec<i32> = (0..16).collect();
    serde_json::json!({"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": v},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": v},
    ]})
    .to_string()
}

/// A JSON infer of the demo's `identity` model.
pub fn identity_infer() -> String {
    serde_json::json!({"inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [2], "data": [1.5, 2.5]},
    ]})
    .to_string()
}

/// One request's outcome as the client saw it.
#[derive(Debug)]
pub struct Outcome {
    pub status: u16,
    pub body: Bytes,
    pub took: Duration,
}

/// Sends `n` POSTs of `body` to `path` on `addr`, `concurrency` at a time
/// over keep-alive connections, with `headers`; a request that gets no
/// response at all counts as status 0.
pub async fn drive(
    addr: SocketAddr,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
    n: usize,
    concurrency: usize,
) -> Vec<Outcome> {
    use http_body_util::Full;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .build(hyper_util::client::legacy::connect::HttpConnector::new());
    let next = Arc::new(AtomicUsize::new(0));
    let out = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let uri: http::Uri = format!("http://{addr}{path}").parse().unwrap();
    let body = Bytes::from(body.to_owned());
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let mut workers = JoinSet::new();
    for _ in 0..concurrency {
        let (client, next, out, uri, body, headers) = (
            client.clone(),
            next.clone(),
            out.clone(),
            uri.clone(),
            body.clone(),
            headers.clone(),
        );
        workers.spawn(async move {
            while next.fetch_add(1, Ordering::SeqCst) < n {
                let mut req = Request::post(uri.clone()).header("content-type", "application/json");
                for (k, v) in &headers {
                    req = req.header(k, v);
                }
                let started = std::time::Instant::now();
                let got = match client
                    .request(req.body(Full::new(body.clone())).unwrap())
                    .await
                {
                    Ok(resp) => {
                        let status = resp.status().as_u16();
                        match resp.into_body().collect().await {
                            Ok(b) => (status, b.to_bytes()),
                            Err(_) => (0, Bytes::new()),
                        }
                    }
                    Err(_) => (0, Bytes::new()),
                };
                out.lock().unwrap().push(Outcome {
                    status: got.0,
                    body: got.1,
                    took: started.elapsed(),
                });
            }
        });
    }
    while workers.join_next().await.is_some() {}
    std::mem::take(&mut *out.lock().unwrap())
}

/// The value of the series `name{labels...}` in a Prometheus scrape whose
/// labels include every one of `labels` (`key="value"` each); 0 if absent.
pub fn metric(scrape: &str, name: &str, labels: &[&str]) -> f64 {
    scrape
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let rest = series.strip_prefix(name)?;
            (rest.is_empty() || rest.starts_with('{')).then_some(())?;
            labels
                .iter()
                .all(|want| rest.contains(want))
                .then_some(())?;
            value.parse::<f64>().ok()
        })
        .sum()
}
