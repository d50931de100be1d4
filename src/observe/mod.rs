//! Per-request observation: metrics recorded as the exchange progresses, and
//! one access-log event when the client has received the last byte (or gone
//! away).

pub mod access;
mod metered;
mod record;
mod request_id;
mod status;

pub use crate::metrics::Direction;
use metered::Leg;
pub use metered::Metered;
pub use request_id::{ensure_request_id, ensure_request_id_made, traced_request_id};
pub use status::{CLIENT_CLOSED, status_label};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use http::{HeaderValue, Method, Response};

use crate::config::Route;
use crate::guard::admission::Slot;
use crate::guard::clients::ClientSlot;
use crate::http::body::Body;

use crate::error::{Error, UpstreamKind};
use crate::guard::{Caller, Refusal, Unit};
use crate::http::client_body::WireMeter;
use crate::http::headers::REQUEST_ID;
use crate::metrics::{Kind, Metrics, RouteMetrics};
use crate::trace::{self, Trace};
use crate::upstream::Watch;

#[derive(Debug, Default)]
struct Totals {
    client_in: AtomicU64,
    backend_out: AtomicU64,
    backend_in: AtomicU64,
    client_out: AtomicU64,
    first_byte_us: AtomicU64,
    upstream_total_us: AtomicU64,
    elements_in: AtomicU64,
    elements_out: AtomicU64,
}

#[derive(Debug)]
struct Inner {
    /// The status a frontend says the request ended with, where its
    /// protocol's HTTP status says nothing (gRPC: always 200); 0 for none.
    status: std::sync::atomic::AtomicU16,
    metrics: Metrics,
    /// The series of requests no route serves (until bound).
    unbound: Arc<RouteMetrics>,
    /// The frontend.
    kind: Kind,
    started: Instant,
    request_id: HeaderValue,
    /// The request id is one the gateway made ([`Observation::id_made`]).
    id_made: AtomicBool,
    method: Method,
    path: String,
    /// Set once the frontend knows which route serves the request.
    bound: OnceLock<Bound>,
    totals: Totals,
    /// The request was counted and logged.
    completed: AtomicBool,
    /// The request's admission slot and its place in its client's count,
    /// freed when the request completes.
    slot: Mutex<Held>,
    /// The index in its route's split of the backend chosen (`usize::MAX`
    /// until one is).
    backend: AtomicUsize,
    /// `x-tensorgate-backend`, when the client sent it.
    backend_hint: Option<String>,
    /// Set once the caller is checked (`gateway::guard`).
    caller: OnceLock<Caller>,
    /// The request's server span, when tracing is on.
    trace: Option<Trace>,
    /// What failed, for a sampled trace's span.
    failure: OnceLock<String>,
    /// The client's own deadline, when its protocol carries one (gRPC's
    /// `grpc-timeout`).
    deadline: OnceLock<Instant>,
    /// When the backend request whose body is relayed as the reply was
    /// sent ([`Observation::relay`]), until taken.
    relayed: OnceLock<Instant>,
    relay_taken: AtomicBool,
    /// Not counted in flight ([`Observation::not_in_flight`]).
    uncounted: AtomicBool,
}

/// What a request holds until it completes.
#[derive(Debug, Default)]
struct Held {
    slot: Option<Slot>,
    client: Option<ClientSlot>,
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
    /// The request's server span, when tracing is on.
    pub trace: Option<Trace>,
}

/// The route label of requests no route serves.
pub const NO_ROUTE: &str = crate::metrics::NO_ROUTE;

impl Observation {
    /// Starts observing a request; it counts as in flight under
    /// [`NO_ROUTE`] until [`Observation::bind`] names its route.
    pub fn start(s: Start<'_>) -> Observation {
        let obs = Observation {
            inner: Arc::new(Inner {
                status: std::sync::atomic::AtomicU16::new(0),
                metrics: s.metrics.clone(),
                unbound: s.metrics.unbound().clone(),
                kind: s.kind,
                started: Instant::now(),
                request_id: s.request_id,
                id_made: AtomicBool::new(false),
                method: s.method,
                path: s.path.to_owned(),
                bound: OnceLock::new(),
                totals: Totals::default(),
                completed: AtomicBool::new(false),
                slot: Mutex::new(Held::default()),
                backend: AtomicUsize::new(usize::MAX),
                backend_hint: s.backend_hint,
                caller: OnceLock::new(),
                trace: s.trace,
                failure: OnceLock::new(),
                deadline: OnceLock::new(),
                relayed: OnceLock::new(),
                relay_taken: AtomicBool::new(false),
                uncounted: AtomicBool::new(false),
            }),
        };
        obs.inner.unbound.in_flight.inc();
        obs
    }

    /// One message of this request's stream (a gRPC `ModelStreamInfer`
    /// message), observed as a request of its own: counted, bound to the
    /// route its model names, its caller and errors recorded, and its own
    /// access-log line (request id `{id}.{n}`) once [`Observation::end`]
    /// says how it ended. Not traced apart from the stream.
    pub fn message(&self, n: u64) -> Observation {
        let id = self.inner.request_id.as_bytes();
        let mut made = Vec::with_capacity(id.len() + 8);
        made.extend_from_slice(id);
        made.push(b'.');
        made.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
        let request_id =
            HeaderValue::from_bytes(&made).unwrap_or_else(|_| self.inner.request_id.clone());
        let obs = Observation::start(Start {
            metrics: &self.inner.metrics,
            kind: self.inner.kind,
            request_id,
            method: self.inner.method.clone(),
            path: &self.inner.path,
            backend_hint: self.inner.backend_hint.clone(),
            trace: None,
        });
        if self.inner.id_made.load(Ordering::Relaxed) {
            obs.id_made();
        }
        obs
    }

    /// Ends an exchange that has no reply body of its own (a message of a
    /// stream) with `status` (the HTTP status its outcome stands for):
    /// counted and logged now.
    pub fn end(&self, status: u16) {
        self.complete(status, true, Instant::now());
    }

    /// Names the route (and model) serving this request, and the route's
    /// series (resolved when the configuration was built: see
    /// [`Metrics::route`]). Only the first call counts.
    pub fn bind(&self, route: &Arc<Route>, model: &str, series: &Arc<RouteMetrics>) {
        let bound = Bound {
            route: route.clone(),
            model: model.to_owned(),
            metrics: series.clone(),
        };
        if self.inner.bound.set(bound).is_ok() && !self.inner.uncounted.load(Ordering::Relaxed) {
            self.inner.unbound.in_flight.dec();
            self.rm().in_flight.inc();
        }
    }

    /// Takes a request that lasts as long as its client likes (a gRPC
    /// health watch) out of `tensorgate_in_flight_requests`, which
    /// autoscaling reads as load.
    pub fn not_in_flight(&self) {
        if !self.inner.uncounted.swap(true, Ordering::Relaxed) {
            self.rm().in_flight.dec();
        }
    }

    /// Keeps the request's admission slot until the request completes:
    /// its reply body ended or was dropped, or the request was abandoned.
    pub fn hold(&self, slot: Slot) {
        if let Ok(mut held) = self.inner.slot.lock() {
            held.slot = Some(slot);
        }
    }

    /// Keeps the request's place in its client's count
    /// (`server.max_requests_per_client`) until the request completes.
    pub fn hold_client(&self, slot: ClientSlot) {
        if let Ok(mut held) = self.inner.slot.lock() {
            held.client = Some(slot);
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
    pub async fn charge_elements(&self, n: u64) -> Result<(), Refusal> {
        let Some(caller) = self.inner.caller.get() else {
            return Ok(());
        };
        let Some(limiter) = &caller.limiter else {
            return Ok(());
        };
        if !limiter.limits_elements(caller.key.as_ref()) {
            return Ok(());
        }
        limiter
            .admit(caller.key.as_ref(), Unit::Elements, n, Instant::now())
            .await
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

    /// Says that the request id is one the gateway made
    /// ([`ensure_request_id_made`]): its access-log value needs no scan.
    pub fn id_made(&self) {
        self.inner.id_made.store(true, Ordering::Relaxed);
    }

    /// The request's server span, when tracing is on (sampled or not).
    pub fn trace(&self) -> Option<&Trace> {
        self.inner.trace.as_ref()
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
        let t = &self.inner.totals;
        let total = match direction {
            Direction::Request => &t.elements_in,
            Direction::Response => &t.elements_out,
        };
        total.fetch_add(n, Ordering::Relaxed);
        if n > 0 {
            self.rm().elements(direction).inc_by(n);
        }
    }

    /// Time spent converting a payload: a span of its own in a sampled
    /// trace, ending now.
    pub fn translation(&self, direction: Direction, d: Duration) {
        if let Some(t) = self.inner.trace.as_ref().filter(|t| t.sampled()) {
            let end = std::time::SystemTime::now();
            let name = match direction {
                Direction::Request => trace::SPAN_CONVERT_REQUEST,
                Direction::Response => trace::SPAN_CONVERT_RESPONSE,
            };
            let t_ = &self.inner.totals;
            let elements = match direction {
                Direction::Request => &t_.elements_in,
                Direction::Response => &t_.elements_out,
            };
            let attributes = vec![
                trace::Attribute::new(trace::ROUTE, self.route().to_owned()),
                trace::Attribute::new(trace::DIRECTION, direction.label()),
                trace::Attribute::new(
                    trace::ELEMENTS,
                    i64::try_from(elements.load(Ordering::Relaxed)).unwrap_or(i64::MAX),
                ),
            ];
            t.interval(name, end.checked_sub(d).unwrap_or(end), end, attributes);
        }
        self.rm().translation(direction).observe(d.as_secs_f64());
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
        if self.inner.trace.as_ref().is_some_and(Trace::sampled) {
            let _ = self.inner.failure.set(e.to_string());
        }
        let c = e.classify();
        self.inner.error(&c.class, c.violated);
    }

    /// Wraps the backend's response body so its bytes and end are counted.
    pub fn backend_body<B>(&self, body: B, sent: Instant) -> Metered<B> {
        Metered::new(body, self.clone(), Leg::Backend { sent })
    }

    /// Says that the reply's body will be the backend's (sent at `sent`)
    /// as it is, so that [`Observation::finish`] meters it once as both:
    /// its bytes counted as the backend's and the client's, the backend's
    /// leg ended with it. Whatever would come between the two bodies
    /// takes it back first ([`Observation::unrelay`]).
    /// Only the first call counts.
    pub fn relay(&self, sent: Instant) {
        let _ = self.inner.relayed.set(sent);
    }

    /// The reply with its body metered as the backend's again, if it was
    /// to be relayed ([`Observation::relay`]): for a reply that something
    /// else will read or wrap before the client gets it.
    pub fn unrelay(&self, resp: Response<Body>) -> Response<Body> {
        match self.relayed() {
            Some(sent) => {
                resp.map(|b| http_body_util::BodyExt::boxed_unsync(self.backend_body(b, sent)))
            }
            None => resp,
        }
    }

    /// When the relayed body's request was sent, taken: it is metered once.
    fn relayed(&self) -> Option<Instant> {
        let sent = *self.inner.relayed.get()?;
        (!self.inner.relay_taken.swap(true, Ordering::Relaxed)).then_some(sent)
    }

    /// Wraps a client request body that is forwarded as is (passthrough).
    pub fn forwarded_request<B>(&self, body: B) -> Metered<B> {
        Metered::new(body, self.clone(), Leg::Forwarded)
    }

    /// Wraps the reply: counts what the client receives and, when the body
    /// ends or is dropped, records the request and writes the access log.
    pub fn finish(self, resp: Response<Body>) -> Response<Metered<Body>> {
        let (mut parts, body) = resp.into_parts();
        parts
            .headers
            .insert(REQUEST_ID, self.inner.request_id.clone());
        let status = match self.inner.status.load(Ordering::Relaxed) {
            0 => parts.status.as_u16(),
            said => said,
        };
        let leg = match self.relayed() {
            Some(sent) => Leg::Relay { status, sent },
            None => Leg::Client { status },
        };
        // Not boxed again: the server takes this type as it is.
        Response::from_parts(parts, Metered::new(body, self, leg))
    }

    fn complete(&self, status: u16, completed: bool, now: Instant) {
        self.inner.complete(status, completed, now);
    }

    /// The status to count and log the request under, where its response's
    /// HTTP status says nothing (a gRPC status stands for one).
    pub fn set_status(&self, status: u16) {
        self.inner.status.store(status, Ordering::Relaxed);
    }

    /// The client's deadline: every backend exchange for the request ends
    /// by then, and a gRPC backend is told the time left. Only the first
    /// call counts.
    pub fn set_deadline(&self, at: Instant) {
        let _ = self.inner.deadline.set(at);
    }

    /// The client's deadline, if it gave one.
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.deadline.get().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn observation(metrics: &Metrics) -> Observation {
        Observation::start(Start {
            metrics,
            kind: Kind::V2,
            request_id: HeaderValue::from_static("t"),
            method: Method::GET,
            path: "/v2/models/m",
            backend_hint: None,
            trace: None,
        })
    }

    fn totals(obs: &Observation) -> [u64; 3] {
        let t = &obs.inner.totals;
        [
            t.backend_in.load(Ordering::Relaxed),
            t.client_out.load(Ordering::Relaxed),
            t.upstream_total_us.load(Ordering::Relaxed),
        ]
    }

    /// A relayed reply counts its bytes as the backend's and the
    /// client's, and the backend's leg ends before the request completes,
    /// also when the server drops a body of exact length without polling
    /// it to its end (with a body inside the client's, the backend's
    /// leg ended after the request was logged: `upstream_total_ms=0.000`).
    #[tokio::test]
    async fn a_relayed_reply_is_metered_once_as_both_bodies() {
        let metrics = Metrics::new().unwrap();
        let obs = observation(&metrics);
        let sent = Instant::now();
        obs.relay(sent);
        std::thread::sleep(Duration::from_millis(2));
        let watch = obs.clone();
        let mut body = obs
            .finish(Response::new(crate::http::body::full("hello")))
            .into_body();
        assert!(matches!(body.leg, Leg::Relay { status: 200, .. }));
        let frame = body.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), "hello");
        assert_eq!(totals(&watch)[..2], [5, 5]);
        assert_eq!(totals(&watch)[2], 0, "not ended yet");
        drop(body);
        let [_, _, total_us] = totals(&watch);
        assert!(total_us >= 2_000, "{total_us} µs");
        assert!(watch.inner.completed.load(Ordering::Relaxed));
        // Taken once: the marker does not outlive its reply.
        assert!(watch.relayed().is_none());
    }

    /// A relayed reply that something reads or wraps first is metered as
    /// the backend's body again, and the client's reply is a plain one.
    #[tokio::test]
    async fn an_unrelayed_reply_is_metered_as_the_backends_body() {
        let metrics = Metrics::new().unwrap();
        let obs = observation(&metrics);
        obs.relay(Instant::now());
        let resp = obs.unrelay(Response::new(crate::http::body::full("hello")));
        let watch = obs.clone();
        let mut body = obs.finish(resp).into_body();
        assert!(matches!(body.leg, Leg::Client { status: 200 }));
        body.frame().await.unwrap().unwrap();
        assert!(body.frame().await.is_none());
        assert_eq!(totals(&watch)[..2], [5, 5]);
        // Without a relay, the reply is the client's alone.
        let plain = observation(&metrics);
        let watch = plain.clone();
        let mut body = plain
            .finish(Response::new(crate::http::body::full("hi")))
            .into_body();
        assert!(matches!(body.leg, Leg::Client { status: 200 }));
        body.frame().await.unwrap().unwrap();
        assert_eq!(totals(&watch), [0, 2, 0]);
    }
}
