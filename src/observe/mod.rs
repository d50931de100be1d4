//! Per-request observation: metrics recorded as the exchange progresses, and
//! one access-log event when the client has received the last byte (or gone
//! away).

pub mod access;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response};
use http_body::Frame;
use http_body_util::BodyExt;

use crate::config::Route;
use crate::guard::admission::Slot;
use crate::http::body::{Body, BoxError};

use crate::error::{Class, Classify, Error, TensorLabel, UpstreamKind, Violated};
use crate::guard::{Caller, Refusal, Unit};
use crate::http::client_body::WireMeter;
use crate::http::headers::REQUEST_ID;
use crate::metrics::{Kind, Metrics, RouteMetrics};
use crate::upstream::{UpstreamError, Watch};

/// Returns the client's request id, or sets a new one.
pub fn ensure_request_id(headers: &mut HeaderMap) -> HeaderValue {
    if let Some(v) = headers.get(&REQUEST_ID)
        && !v.is_empty()
        && v.len() <= 200
    {
        return v.clone();
    }
    let id = new_request_id();
    headers.insert(REQUEST_ID, id.clone());
    id
}

/// 32 hex digits, unique per process run and not guessable across runs: a
/// counter mixed (a bijection, so no two ids of a run collide) with two
/// per-process random keys.
fn new_request_id() -> HeaderValue {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static KEYS: std::sync::OnceLock<(u64, u64)> = std::sync::OnceLock::new();
    let (k1, k2) = *KEYS.get_or_init(|| {
        let random = std::collections::hash_map::RandomState::new();
        let mut h = random.build_hasher();
        h.write_u32(std::process::id());
        let a = h.finish();
        h.write_u64(a);
        (a, h.finish())
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut text = [0u8; 32];
    hex(&mut text[..16], mix(n ^ k1));
    hex(&mut text[16..], mix(n.wrapping_add(k2)));
    HeaderValue::from_bytes(&text).unwrap_or(HeaderValue::from_static("0"))
}

/// splitmix64's finaliser: a bijection on u64 that scrambles every bit.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn hex(out: &mut [u8], v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (i, b) in out.iter_mut().enumerate() {
        *b = DIGITS[(v >> (60 - 4 * i) & 15) as usize];
    }
}

#[derive(Debug, Default)]
struct Totals {
    client_in: AtomicU64,
    backend_out: AtomicU64,
    backend_in: AtomicU64,
    client_out: AtomicU64,
    first_byte_us: AtomicU64,
    upstream_total_us: AtomicU64,
}

#[derive(Debug)]
struct Inner {
    metrics: Metrics,
    /// The series of requests no route serves (until bound).
    unbound: Arc<RouteMetrics>,
    /// The frontend.
    kind: Kind,
    started: Instant,
    request_id: HeaderValue,
    method: Method,
    path: String,
    /// Set once the frontend knows which route serves the request.
    bound: OnceLock<Bound>,
    totals: Totals,
    /// The request was counted and logged.
    completed: AtomicBool,
    /// The request's admission slot, freed when the request completes.
    slot: Mutex<Option<Slot>>,
    /// The index in its route's split of the backend chosen (`usize::MAX`
    /// until one is).
    backend: AtomicUsize,
    /// `x-tensorgate-backend`, when the client sent it.
    backend_hint: Option<String>,
    /// Set once the caller is checked (`gateway::guard`).
    caller: OnceLock<Caller>,
}

#[derive(Debug)]
struct Bound {
    route: Arc<Route>,
    model: String,
    metrics: Arc<RouteMetrics>,
}

/// Records one exchange. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Observation {
    inner: Arc<Inner>,
}

/// What [`Observation::start`] needs to know.
#[derive(Debug)]
pub struct Start<'a> {
    pub metrics: &'a Metrics,
    pub kind: Kind,
    pub request_id: HeaderValue,
    pub method: Method,
    pub path: &'a str,
    /// `x-tensorgate-backend`, when the client sent it.
    pub backend_hint: Option<String>,
}

/// Which way a payload was translated: the `direction` label of the
/// translation metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Request,
    Response,
}

impl Direction {
    pub const fn label(self) -> &'static str {
        match self {
            Direction::Request => "request",
            Direction::Response => "response",
        }
    }
}

/// The route label of requests no route serves.
pub const NO_ROUTE: &str = "_none";

impl Observation {
    /// Starts observing a request; it counts as in flight under
    /// [`NO_ROUTE`] until [`Observation::bind`] names its route.
    pub fn start(s: Start<'_>) -> Observation {
        let obs = Observation {
            inner: Arc::new(Inner {
                metrics: s.metrics.clone(),
                unbound: s.metrics.route(NO_ROUTE, &[]),
                kind: s.kind,
                started: Instant::now(),
                request_id: s.request_id,
                method: s.method,
                path: s.path.to_owned(),
                bound: OnceLock::new(),
                totals: Totals::default(),
                completed: AtomicBool::new(false),
                slot: Mutex::new(None),
                backend: AtomicUsize::new(usize::MAX),
                backend_hint: s.backend_hint,
                caller: OnceLock::new(),
            }),
        };
        obs.inner.unbound.in_flight.inc();
        obs
    }

    /// Names the route (and model) serving this request. Only the first
    /// call counts.
    pub fn bind(&self, route: &Arc<Route>, model: &str) {
        let bound = Bound {
            route: route.clone(),
            model: model.to_owned(),
            metrics: {
                let backends: Vec<&str> = route
                    .split
                    .iter()
                    .map(|w| w.backend.name.as_str())
                    .collect();
                self.inner.metrics.route(&route.name, &backends)
            },
        };
        if self.inner.bound.set(bound).is_ok() {
            self.inner.unbound.in_flight.dec();
            self.rm().in_flight.inc();
        }
    }

    /// Keeps the request's admission slot until the request completes:
    /// its reply body ended or was dropped, or the request was abandoned.
    pub fn hold(&self, slot: Slot) {
        if let Ok(mut held) = self.inner.slot.lock() {
            *held = Some(slot);
        }
    }

    /// Records who called (after the route is bound): the key's name goes
    /// to the access log and `tensorgate_authenticated_requests_total`,
    /// the limiter charges tensor elements later. Only the first call
    /// counts.
    pub fn set_caller(&self, caller: Caller) {
        let key = caller.key.clone();
        if self.inner.caller.set(caller).is_ok()
            && let Some(key) = key
        {
            self.inner
                .metrics
                .authenticated
                .with_label_values(&[self.route(), &key])
                .inc();
        }
    }

    /// Charges `n` tensor elements to the caller's element limits (route
    /// and key), if any: the request is refused when they would overdraw.
    pub fn charge_elements(&self, n: u64) -> Result<(), Refusal> {
        let Some(caller) = self.inner.caller.get() else {
            return Ok(());
        };
        let Some(limiter) = &caller.limiter else {
            return Ok(());
        };
        if !limiter.limits_elements(caller.key.as_ref()) {
            return Ok(());
        }
        limiter.admit(caller.key.as_ref(), Unit::Elements, n, Instant::now())
    }

    fn route(&self) -> &str {
        self.inner.route()
    }

    /// The series of the route bound so far.
    fn rm(&self) -> &RouteMetrics {
        self.inner.rm()
    }

    /// The latency series of the backend the request went to.
    fn upstream_series(&self) -> Option<&crate::metrics::UpstreamSeries> {
        let upstream = &self.rm().upstream;
        let chosen = self.inner.backend.load(Ordering::Relaxed);
        upstream.get(chosen).or_else(|| {
            let primary = &self.inner.bound.get()?.route.backend.name;
            upstream.iter().find(|u| &u.backend == primary)
        })
    }

    /// Records that the request goes to backend `i` of its route's split.
    pub fn use_backend(&self, i: usize) {
        self.inner.backend.store(i, Ordering::Relaxed);
    }

    /// The backend the client asked for with `x-tensorgate-backend`.
    pub fn backend_hint(&self) -> Option<&str> {
        self.inner.backend_hint.as_deref()
    }

    /// The model the request is for, as bound (empty when none).
    pub fn model(&self) -> &str {
        self.inner.bound.get().map_or("", |b| b.model.as_str())
    }

    /// Time since the request started.
    pub fn elapsed(&self) -> Duration {
        self.inner.started.elapsed()
    }

    pub fn kind(&self) -> Kind {
        self.inner.kind
    }

    /// What the upstream client may tell this request (see
    /// [`Watch`]): shares the observation, allocates nothing.
    pub fn watch(&self) -> Arc<dyn Watch> {
        self.inner.clone()
    }

    pub fn request_id(&self) -> &HeaderValue {
        &self.inner.request_id
    }

    pub fn client_in(&self, n: u64) {
        WireMeter::client_in(&*self.inner, n);
    }

    /// What a request body reports the bytes it took off the wire to.
    pub fn wire_meter(&self) -> Arc<dyn WireMeter> {
        self.inner.clone()
    }

    pub fn backend_out(&self, n: u64) {
        self.inner
            .totals
            .backend_out
            .fetch_add(n, Ordering::Relaxed);
        self.rm().backend_out.inc_by(n);
    }

    fn backend_in(&self, n: u64) {
        self.inner.totals.backend_in.fetch_add(n, Ordering::Relaxed);
        self.rm().backend_in.inc_by(n);
    }

    fn client_out(&self, n: u64) {
        self.inner.totals.client_out.fetch_add(n, Ordering::Relaxed);
        self.rm().client_out.inc_by(n);
    }

    /// Elements of translated tensors.
    pub fn elements(&self, direction: Direction, n: u64) {
        if n > 0 {
            self.inner
                .metrics
                .tensor_elements
                .with_label_values(&[self.route(), direction.label()])
                .inc_by(n);
        }
    }

    /// Time spent converting a payload.
    pub fn translation(&self, direction: Direction, d: Duration) {
        self.inner
            .metrics
            .translation_duration
            .with_label_values(&[self.route(), direction.label()])
            .observe(d.as_secs_f64());
    }

    pub fn upstream_first_byte(&self, d: Duration) {
        self.inner
            .totals
            .first_byte_us
            .store(d.as_micros() as u64, Ordering::Relaxed);
        if let Some(u) = self.upstream_series() {
            u.first_byte.observe(d.as_secs_f64());
        }
    }

    fn upstream_total(&self, d: Duration) {
        self.inner
            .totals
            .upstream_total_us
            .store(d.as_micros() as u64, Ordering::Relaxed);
        if let Some(u) = self.upstream_series() {
            u.total.observe(d.as_secs_f64());
        }
    }

    /// A backend answered with a server error.
    pub fn backend_status(&self, status: http::StatusCode) {
        if status.is_server_error() {
            self.inner.upstream_error(UpstreamKind::ServerError);
        }
    }

    /// Counts what an error says about rules, backends, credentials and
    /// rate limits: once per request, from its class.
    pub fn error(&self, e: &Error) {
        self.inner.error(&e.class(), e.violated());
    }

    /// Wraps the backend's response body so its bytes and end are counted.
    pub fn backend_body<B>(&self, body: B, sent: Instant) -> Metered<B> {
        Metered {
            inner: body,
            obs: self.clone(),
            side: Side::Backend { sent },
            done: false,
            exact_done: false,
        }
    }

    /// Wraps a client request body that is forwarded as is (passthrough).
    pub fn forwarded_request<B>(&self, body: B) -> Metered<B> {
        Metered {
            inner: body,
            obs: self.clone(),
            side: Side::Forwarded,
            done: false,
            exact_done: false,
        }
    }

    /// Wraps the reply: counts what the client receives and, when the body
    /// ends or is dropped, records the request and writes the access log.
    pub fn finish(self, resp: Response<Body>) -> Response<Body> {
        let (mut parts, body) = resp.into_parts();
        parts
            .headers
            .insert(REQUEST_ID, self.inner.request_id.clone());
        let status = parts.status.as_u16();
        let body = Metered {
            inner: body,
            obs: self,
            side: Side::Client { status },
            done: false,
            exact_done: false,
        };
        Response::from_parts(parts, body.boxed_unsync())
    }

    fn complete(&self, status: u16, completed: bool) {
        self.inner.complete(status, completed);
    }
}

impl Inner {
    fn rm(&self) -> &RouteMetrics {
        self.bound.get().map_or(&self.unbound, |b| &b.metrics)
    }

    fn route(&self) -> &str {
        self.bound.get().map_or(NO_ROUTE, |b| &b.route.name)
    }

    /// The backend the request went to: the one of its route's split
    /// chosen for it ([`Observation::use_backend`]), else the route's
    /// primary.
    fn backend(&self) -> Option<&str> {
        let bound = self.bound.get()?;
        let chosen = self.backend.load(Ordering::Relaxed);
        Some(match bound.route.split.get(chosen) {
            Some(w) => &w.backend.name,
            None => &bound.route.backend.name,
        })
    }

    fn upstream_error(&self, kind: UpstreamKind) {
        if let Some(b) = self.backend() {
            self.metrics
                .upstream_errors
                .with_label_values(&[b, kind.label()])
                .inc();
        }
    }

    /// Counts an error of `class` (that broke `violated`, if a rule
    /// refused it).
    fn error(&self, class: &Class, violated: Option<Violated>) {
        let m = &self.metrics;
        if let Some(kind) = class.upstream_kind() {
            self.upstream_error(kind);
        }
        match class {
            Class::Unauthenticated(c) => {
                let reason = c.failure().label();
                m.auth_failures
                    .with_label_values(&[self.route(), reason])
                    .inc();
            }
            Class::RateLimited { unit, .. } => {
                let key = self
                    .caller
                    .get()
                    .and_then(|c| c.key.as_deref())
                    .unwrap_or(crate::metrics::NO_KEY);
                m.rate_limited
                    .with_label_values(&[self.route(), key, unit.label()])
                    .inc();
            }
            _ => {}
        }
        let (Some(bound), Some(v)) = (self.bound.get(), violated) else {
            return;
        };
        let rules = &bound.route.rules;
        let tensor = match &v.tensor {
            TensorLabel::Request => "_request",
            TensorLabel::Named(n)
                if rules.inputs.contains_key(n) || rules.outputs.contains_key(n) =>
            {
                n.as_str()
            }
            TensorLabel::Named(_) => "_unknown",
        };
        m.rule_violations
            .with_label_values(&[&bound.route.name, tensor, v.rule])
            .inc();
    }

    fn complete(&self, status: u16, completed: bool) {
        if self.completed.swap(true, Ordering::Relaxed) {
            return;
        }
        if let Ok(mut held) = self.slot.lock() {
            held.take();
        }
        let m = &self.metrics;
        let elapsed = self.started.elapsed();
        let (route, model) = self.bound.get().map_or((NO_ROUTE, ""), |b| {
            (b.route.name.as_str(), b.model.as_str())
        });
        let rm = self.rm();
        rm.in_flight.dec();
        m.requests
            .with_label_values(&[route, self.kind.label(), status_label(status)])
            .inc();
        rm.duration(self.kind).observe(elapsed.as_secs_f64());
        let t = &self.totals;
        if !tracing::enabled!(target: "tensorgate::access", tracing::Level::INFO) {
            return;
        }
        let record = crate::observe::access::Record {
            request_id: self.request_id.to_str().unwrap_or(""),
            kind: self.kind.label(),
            method: self.method.as_str(),
            path: &self.path,
            route,
            model,
            key: self
                .caller
                .get()
                .and_then(|c| c.key.as_deref())
                .unwrap_or(""),
            status,
            completed,
            client_bytes_in: t.client_in.load(Ordering::Relaxed),
            backend_bytes_out: t.backend_out.load(Ordering::Relaxed),
            backend_bytes_in: t.backend_in.load(Ordering::Relaxed),
            client_bytes_out: t.client_out.load(Ordering::Relaxed),
            upstream_first_byte_us: t.first_byte_us.load(Ordering::Relaxed),
            upstream_total_us: t.upstream_total_us.load(Ordering::Relaxed),
            duration_us: u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        };
        match crate::observe::access::write(&record) {
            crate::observe::access::Outcome::Queued => {}
            crate::observe::access::Outcome::Dropped => m.access_log_dropped.inc(),
            crate::observe::access::Outcome::NotInstalled => trace_access(&record),
        }
    }
}

impl WireMeter for Inner {
    fn client_in(&self, n: u64) {
        self.totals.client_in.fetch_add(n, Ordering::Relaxed);
        self.rm().client_in.inc_by(n);
    }
}

impl Watch for Inner {
    fn request_id(&self) -> &str {
        self.request_id.to_str().unwrap_or("")
    }

    fn stalled(&self, e: &UpstreamError) {
        self.error(&e.class(), e.violated());
    }
}

/// The access line as a `tracing` event, when no access-log writer is
/// installed (library users, tests capturing `tracing` output).
fn trace_access(r: &crate::observe::access::Record<'_>) {
    tracing::info!(
        target: "tensorgate::access",
        request_id = r.request_id,
        kind = r.kind,
        method = r.method,
        path = r.path,
        route = r.route,
        model = r.model,
        key = r.key,
        status = r.status,
        completed = r.completed,
        client_bytes_in = r.client_bytes_in,
        backend_bytes_out = r.backend_bytes_out,
        backend_bytes_in = r.backend_bytes_in,
        client_bytes_out = r.client_bytes_out,
        upstream_first_byte_ms = r.upstream_first_byte_us as f64 / 1000.0,
        upstream_total_ms = r.upstream_total_us as f64 / 1000.0,
        duration_ms = r.duration_us as f64 / 1000.0,
        "request"
    );
}

/// A request whose handler was dropped before any response existed (the
/// client went away while its request was read or the backend was waited
/// for) is still counted, logged, and leaves the in-flight gauge, with the
/// status nginx uses for it.
impl Drop for Inner {
    fn drop(&mut self) {
        self.complete(CLIENT_CLOSED, false);
    }
}

/// Status recorded for requests the client abandoned before the response.
pub const CLIENT_CLOSED: u16 = 499;

/// The `code` label: exact for the statuses the gateway and V2 backends
/// produce, the class (`"5xx"`) for anything else a backend may send, so
/// a backend cannot create label values.
pub fn status_label(status: u16) -> &'static str {
    const KNOWN: [(u16, &str); 26] = [
        (200, "200"),
        (201, "201"),
        (204, "204"),
        (206, "206"),
        (304, "304"),
        (400, "400"),
        (401, "401"),
        (403, "403"),
        (404, "404"),
        (405, "405"),
        (406, "406"),
        (408, "408"),
        (409, "409"),
        (413, "413"),
        (415, "415"),
        (422, "422"),
        (424, "424"),
        (429, "429"),
        (499, "499"),
        (500, "500"),
        (501, "501"),
        (502, "502"),
        (503, "503"),
        (504, "504"),
        (507, "507"),
        (511, "511"),
    ];
    if let Ok(i) = KNOWN.binary_search_by_key(&status, |k| k.0) {
        return KNOWN[i].1;
    }
    match status / 100 {
        1 => "1xx",
        2 => "2xx",
        3 => "3xx",
        4 => "4xx",
        _ => "5xx",
    }
}

#[derive(Debug)]
enum Side {
    Client { status: u16 },
    Backend { sent: Instant },
    Forwarded,
}

/// A body whose bytes and end are recorded.
#[derive(Debug)]
pub struct Metered<B> {
    inner: B,
    obs: Observation,
    side: Side,
    done: bool,
    /// The inner body said it had ended (exact-length bodies).
    exact_done: bool,
}

impl<B> Metered<B> {
    fn end(&mut self, completed: bool) {
        if self.done {
            return;
        }
        self.done = true;
        match self.side {
            Side::Client { status } => self.obs.complete(status, completed),
            Side::Backend { sent } => self.obs.upstream_total(sent.elapsed()),
            Side::Forwarded => {}
        }
    }
}

impl<B> Drop for Metered<B> {
    fn drop(&mut self) {
        // hyper stops polling a body whose length is exact once it has it all.
        let completed = matches!(self.side, Side::Client { .. }) && self.exact_done;
        self.end(completed);
    }
}

impl<B> http_body::Body for Metered<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx).map_err(Into::into);
        if matches!(polled, Poll::Ready(Some(Ok(_)))) && self.inner.is_end_stream() {
            self.exact_done = true;
        }
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let n = data.len() as u64;
                    match self.side {
                        Side::Client { .. } => self.obs.client_out(n),
                        Side::Backend { .. } => self.obs.backend_in(n),
                        Side::Forwarded => {
                            self.obs.client_in(n);
                            self.obs.backend_out(n);
                        }
                    }
                }
            }
            Poll::Ready(None) => self.end(true),

            Poll::Ready(Some(Err(_))) => self.end(false),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_distinct_hex() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100_000 {
            let id = new_request_id();
            let text = id.to_str().unwrap().to_owned();
            assert_eq!(text.len(), 32);
            assert!(
                text.bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            );
            assert!(seen.insert(text), "duplicate id");
        }
        let mut h = HeaderMap::new();
        h.insert("x-request-id", HeaderValue::from_static("client-id"));
        assert_eq!(ensure_request_id(&mut h), "client-id");
    }
}
