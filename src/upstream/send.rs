//! Sending one request: the replica is chosen (two random choices among
//! the eligible ones with the model ready), a connection slot taken, the
//! request sent; a failure counts against the replica (and may eject it),
//! and the request goes again — to a replica not tried yet when there is
//! one — when that is safe, retries are left and the budget allows.

use std::sync::Arc;
use std::time::Instant;

use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};

use super::failure::{Failure, classify};
use super::http1::{ReplyBody, SendError};
use super::models::Followed;
use super::pick::two_choices;
use super::retry;
use super::verdict::ReplyVerdict;
use super::{
    Lease, OutBody, Outgoing, Replica, Stalled, Upstream, UpstreamBody, UpstreamError, Watch,
    location, ms_at, now_ms,
};
use crate::codec::grpc::timeout;
use crate::config::Protocol;
use crate::error::UpstreamKind;
use crate::http::body::Body;
use crate::http::headers::REQUEST_ID;
use crate::metrics::RETRY_OUTCOMES;
use crate::trace::{self, Attribute, Trace};

/// The time a gRPC backend is given for a call.
const GRPC_TIMEOUT: http::HeaderName = http::HeaderName::from_static("grpc-timeout");

/// What one attempt on one replica came to.
enum Attempt {
    /// The replica answered (with any status). `early`: before the
    /// request's body ended (see [`answer_after`]).
    Answer {
        resp: Response<ReplyBody>,
        early: bool,
    },
    /// No answer within the request's time.
    TimedOut,
    /// The exchange failed; `early` as for an answer. `unsent`: the
    /// request, when none of it was sent and it came back (boxed as the
    /// client handed it back: an attempt is moved whole).
    Failed {
        failure: Failure,
        early: bool,
        unsent: Option<Box<Request<Body>>>,
    },
}

/// One request's sending, across its attempts: its clock, its deadlines,
/// the replicas it may go to and those it went to.
struct Plan {
    /// When the current attempt started, on both clocks.
    started: Instant,
    now: u64,
    /// The exchange ends by then: the backend's request timeout, or the
    /// client's deadline when that comes first (`client_first`).
    deadline: Instant,
    client_first: bool,
    /// A gRPC backend is told the time the client left it.
    grpc: bool,
    replayable: bool,
    /// For a request sent while its body is still read: fires at its end.
    end: Option<tokio::sync::oneshot::Receiver<()>>,
    tracked: Option<Arc<Followed>>,
    replicas: Arc<[Arc<Replica>]>,
    /// Attempts after the first that may be made.
    retries: u32,
    tried: Tried,
    /// The failure of the last attempt, when another follows it.
    last: Option<UpstreamError>,
}

/// What an attempt's outcome leaves to do.
enum Next {
    Done(Result<Response<UpstreamBody>, UpstreamError>),
    /// Another attempt, after this failure (none after an answer).
    Retry(Option<UpstreamError>),
}

impl Upstream {
    /// Sends a request; returns once the response head has arrived, within
    /// the backend's request timeout (retries included). Waits up to
    /// `connect_timeout` for a free slot on the chosen replica. `obs` (when
    /// there is a client request) is told about stalls and gives the
    /// request id for logs. Each attempt goes to a replica not tried yet
    /// when there is one; whether another follows is [`retry`]'s to say,
    /// within the budget.
    pub async fn send(
        &self,
        mut out: Outgoing,
        obs: Option<Arc<dyn Watch>>,
    ) -> Result<Response<UpstreamBody>, UpstreamError> {
        let obs = obs.as_ref();
        let mut plan = self.plan(&mut out);
        if plan.replicas.is_empty() {
            // None known yet (DNS): wait for the first list, then start the
            // clock of the first attempt again.
            let timeout = self.backend.connect_timeout;
            plan.replicas = self.inner.set.ready_snapshot(timeout).await;
            plan.retries = self.retries(plan.replicas.len());
            (plan.started, plan.now) = reading();
        }
        loop {
            if plan.tried.len() > 0 {
                (plan.started, plan.now) = reading();
            }
            let choice = self.choose(
                &plan.replicas,
                plan.tracked.as_deref(),
                plan.tried.as_slice(),
                &out,
                plan.now,
            );
            let i = match choice {
                Ok(i) => i,
                Err(e) => return Err(plan.last.take().unwrap_or(e)),
            };
            plan.tried.push(i);
            let replica = &plan.replicas[i];
            let mut lease = Lease::start(replica.clone(), plan.started.into());
            lease.hold(
                replica
                    .slot(&self.backend, self.backend.connect_timeout)
                    .await?,
            );
            let again = plan.replayable && plan.tried.len() <= plan.retries as usize;
            let (req, kept, span) = self.request_for(&plan, replica, &mut out, obs, again);
            let end = plan.end.take();
            let replica = &plan.replicas[i];
            let mut attempt = self.attempt(replica, req, plan.deadline, end).await;
            // Without its headers and body (sent, not handed back), the
            // request cannot go again.
            let back = take_back(&mut attempt, &mut out, kept);
            let again = again && (kept || back);
            span.end(&attempt);
            match self.judge(&plan, i, attempt, lease, again, &out, obs) {
                Next::Done(result) => return result,
                Next::Retry(last) => plan.last = last,
            }
        }
    }

    /// The plan of a request: one reading of the clock serves the first
    /// attempt (its deadline, its lease's start, the budget and the choice
    /// of its replica), the replicas it may go to (none until a list is
    /// known), how many attempts.
    #[inline(always)]
    fn plan(&self, out: &mut Outgoing) -> Plan {
        let backend = &*self.backend;
        let (started, now) = reading();
        let own = started + backend.request_timeout;
        // The client's deadline, when it comes first, ends the exchange
        // without counting against the replica.
        let client_first = out.deadline.filter(|at| *at < own);
        let grpc = match backend.protocol() {
            Protocol::Grpc => true,
            Protocol::Http => false,
        };
        let tracked = out.model.as_deref().and_then(|m| self.inner.models.get(m));
        self.inner.budget.request(now);
        let replicas = self.inner.set.filled_snapshot().unwrap_or_default();
        let retries = self.retries(replicas.len());
        Plan {
            started,
            now,
            deadline: client_first.unwrap_or(own),
            client_first: client_first.is_some(),
            grpc,
            replayable: out.body.replayable(),
            end: out.body.take_end(),
            tracked,
            replicas,
            retries,
            tried: Tried::default(),
            last: None,
        }
    }

    /// Attempts after the first a request may make over `replicas`.
    fn retries(&self, replicas: usize) -> u32 {
        self.backend
            .retries
            .max
            .min((replicas as u32).saturating_sub(1).max(1))
    }

    /// The request of one attempt on `replica`, whether its headers and
    /// body were kept for another, and its span. They are copied only for
    /// another attempt that could not get them back (`again`): one after
    /// an answer or a failed exchange (for a request safe to repeat), or
    /// after a connect failure of a client that keeps the request. The
    /// log without a client request reads its id from them.
    #[inline(always)]
    fn request_for(
        &self,
        plan: &Plan,
        replica: &Replica,
        out: &mut Outgoing,
        obs: Option<&Arc<dyn Watch>>,
        again: bool,
    ) -> (Request<Body>, bool, AttemptSpan) {
        if let (true, Some(at)) = (plan.grpc, out.deadline) {
            let left = at.saturating_duration_since(Instant::now());
            if let Ok(v) = HeaderValue::try_from(timeout::encode(left)) {
                out.headers.insert(GRPC_TIMEOUT, v);
            }
        }
        let span = AttemptSpan::start(obs, self.name(), replica, plan.tried.len() - 1, out);
        let copy =
            again && (retry::repeatable(out) || !replica.hands_back_unsent() || obs.is_none());
        // A stream's body is never kept: without it handed back, the
        // request cannot go again.
        let kept = copy && out.body.replayable();
        let mut req = request(replica, out, copy);
        span.inject(obs, req.headers_mut());
        (req, kept, span)
    }

    /// What an attempt's outcome means for the replica and the request:
    /// its answer, its failure, or another attempt.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn judge(
        &self,
        plan: &Plan,
        i: usize,
        attempt: Attempt,
        mut lease: Lease,
        again: bool,
        out: &Outgoing,
        obs: Option<&Arc<dyn Watch>>,
    ) -> Next {
        match &attempt {
            Attempt::Answer { resp, .. } if !resp.status().is_server_error() => {}
            // The client's own deadline is not the replica's error.
            Attempt::TimedOut if plan.client_first => {}
            _ => lease.fail(),
        }
        let replicas = &plan.replicas;
        let replica = &replicas[i];
        let (failure, early) = match attempt {
            Attempt::TimedOut if plan.client_first => {
                return Next::Done(Err(UpstreamError::Deadline {
                    backend: self.name().to_owned(),
                }));
            }
            Attempt::TimedOut => {
                self.failed(replica, UpstreamKind::Timeout, replicas);
                return Next::Done(Err(self.timeout(self.backend.request_timeout)));
            }
            // An answer before the body's end: a request sent while the
            // client's was read (`infer::call::early`), which the caller
            // drops and sends again. That one counts.
            Attempt::Answer { resp, early: true } => {
                return Next::Done(Ok(self.reply(resp, lease, obs, false)));
            }
            Attempt::Answer { resp, .. } => {
                let status = resp.status();
                self.answered(replica, status, plan.tracked.as_deref(), out, replicas);
                if again
                    && retry::on_status(status)
                    && retry::repeatable(out)
                    && self.retry(obs, out)
                {
                    return Next::Retry(None);
                }
                // A 5xx was counted; any other answer is judged by how its
                // body ends.
                let judge = !status.is_server_error();
                return Next::Done(Ok(self.reply(resp, lease, obs, judge)));
            }
            Attempt::Failed { failure, early, .. } => (failure, early),
        };
        let kind = match failure {
            Failure::Body(e) => return Next::Done(Err(e.into())),
            _ => failure.kind().unwrap_or(UpstreamKind::Reset),
        };
        let id = request_id(obs, &out.headers);
        if early {
            tracing::debug!(
                backend = self.name(),
                replica = replica.label,
                request_id = id,
                detail = failure.detail(),
                "exchange failed before its body ended: the request goes again"
            );
            return Next::Done(Err(self.error(failure)));
        }
        self.failed(replica, kind, replicas);
        let others = replicas.len() > plan.tried.len();
        if again && retry::after_failure(&failure, others, out) && self.retry(obs, out) {
            tracing::debug!(
                backend = self.name(),
                replica = replica.label,
                request_id = id,
                detail = failure.detail(),
                "sending again a request the replica did not take"
            );
            return Next::Retry(Some(self.error(failure)));
        }
        tracing::warn!(
            backend = self.name(),
            replica = replica.label,
            request_id = id,
            detail = failure.detail(),
            attempts = plan.tried.len(),
            "backend exchange failed"
        );
        Next::Done(Err(self.error(failure)))
    }

    /// One attempt: `req` on `replica`, answered by `deadline` — or, for a
    /// request sent while its body is still read (`end`), within the
    /// request timeout from that body's end.
    async fn attempt(
        &self,
        replica: &Replica,
        req: Request<Body>,
        deadline: Instant,
        end: Option<tokio::sync::oneshot::Receiver<()>>,
    ) -> Attempt {
        // Boxed (by the replica): the exchange's future is large, and this
        // one is moved with the request's future. The deadline is the
        // replica's to keep (an HTTP/1 connection keeps its requests' with
        // a timer of its own).
        let Some(end) = end else {
            return outcome(replica.request(req, Some(deadline.into())).await, false);
        };
        let exchange = replica.request(req, None);
        match answer_after(end, self.backend.request_timeout, exchange).await {
            (Ok(sent), early) => outcome(sent, early),
            (Err(_), _) => Attempt::TimedOut,
        }
    }

    /// What an answer's head says about the replica: a 5xx counts against
    /// it (anything else is judged when its body is over, see
    /// [`super::verdict`]); a success starts checks of a model no check
    /// follows yet; a 404 for a followed model has the checks look now.
    fn answered(
        &self,
        replica: &Arc<Replica>,
        status: StatusCode,
        tracked: Option<&Followed>,
        out: &Outgoing,
        replicas: &[Arc<Replica>],
    ) {
        if status.is_server_error() {
            self.failed(replica, UpstreamKind::ServerError, replicas);
        }
        if status.is_success() && tracked.is_none() {
            self.follow(out.model.as_deref(), replicas);
        }
        // A followed model this replica says it does not know (Triton:
        // 404 once it is unloaded): check now rather than at the next
        // round. Stops by itself once the check marks it, as the replica
        // then gets none.
        if status == StatusCode::NOT_FOUND && tracked.is_some() {
            self.inner.wake.notify_one();
        }
    }

    /// The replica for the next attempt: an eligible one with the model
    /// ready, not tried yet if there is one; health as of `now` (ms).
    fn choose(
        &self,
        replicas: &[Arc<Replica>],
        tracked: Option<&Followed>,
        tried: &[usize],
        out: &Outgoing,
        now: u64,
    ) -> Result<usize, UpstreamError> {
        let n = replicas.len();
        // Outstanding requests here, plus (with `metrics_url`) those the
        // replica says wait in its queue, in thousandths of a request.
        let stale_ms = self.backend.queue.as_ref().map_or(0, |q| {
            u64::try_from(q.stale_after.as_millis()).unwrap_or(u64::MAX)
        });
        let slot = tracked.map(|t| t.slot);
        let load = |i: usize| {
            let r = &replicas[i];
            let own = (r.in_flight() as u64).saturating_mul(1000);
            match stale_ms {
                0 => own,
                _ => own.saturating_add(r.queue.waiting(slot, now, stale_ms)),
            }
        };
        let healthy = |i: usize| {
            let r = &replicas[i];
            r.health.show(now, r.series.as_ref());
            r.health.eligible(now)
        };
        let serves =
            |i: usize| tracked.is_none_or(|t| replicas[i].model_state(t.slot) != Some(false));
        let fresh = two_choices(n, |i| !tried.contains(&i) && healthy(i) && serves(i), load);
        if let Some(i) = fresh.or_else(|| two_choices(n, |i| healthy(i) && serves(i), load)) {
            return Ok(i);
        }
        let retry_after = self.backend.health.interval.as_secs_f64().ceil().max(1.0) as u64;
        let backend = self.backend.name.clone();
        match (tracked, (0..n).any(healthy)) {
            (Some(_), true) => Err(UpstreamError::ModelNotReady {
                backend,
                model: out.model.clone().unwrap_or_default(),
                retry_after,
            }),
            _ => Err(UpstreamError::NoHealthyReplica {
                backend,
                retry_after,
            }),
        }
    }

    /// Takes a retry from the budget; counts the outcome.
    fn retry(&self, obs: Option<&Arc<dyn Watch>>, out: &Outgoing) -> bool {
        let granted = self.inner.budget.try_retry(now_ms());
        if let Some(f) = &self.inner.families {
            let outcome = RETRY_OUTCOMES[usize::from(!granted)];
            f.retries.with_label_values(&[self.name(), outcome]).inc();
        }
        if !granted {
            tracing::warn!(
                backend = self.name(),
                request_id = request_id(obs, &out.headers),
                "retry budget spent: not sending again"
            );
        }
        granted
    }

    /// Counts a failed exchange against `replica`, ejecting it when its
    /// failures in a row reach the threshold — unless no other replica
    /// would be left to take traffic.
    pub(super) fn failed(
        &self,
        replica: &Arc<Replica>,
        kind: UpstreamKind,
        replicas: &[Arc<Replica>],
    ) {
        replica.count_error(kind);
        let cfg = &self.backend.ejection;
        if !replica.health.failed(cfg) {
            return;
        }
        let now = now_ms();
        let others = replicas
            .iter()
            .any(|r| !Arc::ptr_eq(r, replica) && r.health.eligible(now));
        if !others {
            return;
        }
        let Some(time) = replica.health.eject(now, cfg) else {
            return;
        };
        if let Some(s) = &replica.series {
            s.ejections.inc();
        }
        replica.health.show(now, replica.series.as_ref());
        tracing::warn!(
            backend = self.name(),
            replica = replica.label,
            failures = cfg.after,
            seconds = time.as_secs_f64(),
            "replica ejected after failing requests in a row"
        );
    }

    /// Starts checking `model` (a default route's) after a first success.
    fn follow(&self, model: Option<&str>, replicas: &[Arc<Replica>]) {
        let Some(model) = model.filter(|_| self.backend.health.enabled) else {
            return;
        };
        let Some((t, reused)) = self.inner.models.follow(model) else {
            return;
        };
        if reused {
            for r in replicas {
                r.set_model(t.slot, None);
            }
        }
        self.inner.wake.notify_one();
    }

    /// The reply handed to the caller; with `judge`, its body decides what
    /// it says about the replica.
    fn reply(
        &self,
        resp: Response<ReplyBody>,
        lease: Lease,
        obs: Option<&Arc<dyn Watch>>,
        judge: bool,
    ) -> Response<UpstreamBody> {
        let (mut parts, body) = resp.into_parts();
        location::localize(&lease.replica.base, &mut parts.headers);
        let idle = self.backend.stream_idle_timeout;
        // Only a reply moved by a task can stall unseen; this runs there,
        // and is made only for such a reply.
        let on_stall = || {
            let backend = self.backend.clone();
            let obs = obs.cloned();
            move |side| {
                let id = obs.as_ref().map_or("", |o| o.request_id());
                tracing::warn!(
                    backend = backend.name,
                    request_id = id,
                    ?side,
                    seconds = idle.as_secs_f64(),
                    "stream stalled; cut"
                );
                if let (Stalled::Backend, Some(o)) = (side, &obs) {
                    o.stalled(&UpstreamError::timeout(&backend.name, idle));
                }
            }
        };
        let verdict = judge.then(|| ReplyVerdict::new(self.clone(), lease.replica.clone()));
        let body = UpstreamBody::new(body, idle, Some(lease), verdict, on_stall);
        Response::from_parts(parts, body)
    }

    fn error(&self, f: Failure) -> UpstreamError {
        let backend = self.backend.name.clone();
        match f {
            Failure::Connect { detail } => UpstreamError::Refused { backend, detail },
            Failure::ConnectTimeout => {
                UpstreamError::timeout(&backend, self.backend.connect_timeout)
            }
            Failure::Closed { detail } => UpstreamError::Reset { backend, detail },
            Failure::Parse { detail } => UpstreamError::Invalid { backend, detail },
            Failure::Body(e) => e.into(),
        }
    }
}

/// Takes back the request a failed attempt handed back unsent (its
/// headers; its body when it was not kept): whether it did.
fn take_back(attempt: &mut Attempt, out: &mut Outgoing, kept: bool) -> bool {
    let Attempt::Failed { unsent, .. } = attempt else {
        return false;
    };
    let Some(back) = unsent.take() else {
        return false;
    };
    let (parts, body) = back.into_parts();
    out.headers = parts.headers;
    if !kept {
        out.body = OutBody::Unsent(body);
    }
    true
}

/// What an exchange came to, as an attempt; `early` as for
/// [`Attempt::Answer`].
fn outcome(sent: Result<Response<ReplyBody>, SendError>, early: bool) -> Attempt {
    match sent {
        Ok(resp) => Attempt::Answer { resp, early },
        Err(SendError::Deadline) => Attempt::TimedOut,
        Err(mut e) => Attempt::Failed {
            failure: classify(&e),
            early,
            unsent: e.take_unsent(),
        },
    }
}

/// `exchange`, given `limit` from when `end` fires (or its sender goes) to
/// answer; and whether it answered before that. The end is looked at
/// first: an answer that was there when the body ended is the request's.
async fn answer_after<F: std::future::Future>(
    end: tokio::sync::oneshot::Receiver<()>,
    limit: std::time::Duration,
    exchange: F,
) -> (Result<F::Output, tokio::time::error::Elapsed>, bool) {
    tokio::pin!(exchange);
    tokio::select! {
        biased;
        _ = end => {}
        answer = &mut exchange => return (Ok(answer), true),
    }
    (tokio::time::timeout(limit, exchange).await, false)
}

/// The request for one attempt on `replica`, with the replica's `Host`
/// (in place of any the headers have: a client's `Host` names the gateway).
/// The headers and body are copied with `copy`, else moved (a stream's
/// body always is).
fn request(replica: &Replica, out: &mut Outgoing, copy: bool) -> Request<Body> {
    let mut req = Request::new(out.body.take(copy));
    *req.method_mut() = out.method.clone();
    *req.uri_mut() = replica.target(&out.path);
    // Set here, not by the client, which would format the replica's `Host`
    // for every request; replaced in place, so a caller need not remove
    // the client's first (a removal hashes the name and probes). Set
    // before the copy: a copy has no room to spare, and an insert into it
    // moved all of it to a larger table (measurable with
    // scripts/bench/instructions.sh).
    out.headers.insert(header::HOST, replica.host().clone());
    *req.headers_mut() = if copy {
        out.headers.clone()
    } else {
        std::mem::take(&mut out.headers)
    };
    req
}

/// The time now, as an instant and in milliseconds on the health clock
/// ([`now_ms`]): one reading for both.
fn reading() -> (Instant, u64) {
    let at = tokio::time::Instant::now();
    (at.into_std(), ms_at(at))
}

/// The replicas a request went to, by index, in order: inline for the
/// first few attempts (a vector cost an allocation per request).
#[derive(Debug, Default)]
struct Tried {
    inline: [usize; Tried::INLINE],
    len: usize,
    more: Vec<usize>,
}

impl Tried {
    const INLINE: usize = 4;

    fn push(&mut self, i: usize) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = i,
            None => {
                if self.more.is_empty() {
                    self.more.extend_from_slice(&self.inline);
                }
                self.more.push(i);
            }
        }
        self.len += 1;
    }

    fn len(&self) -> usize {
        self.len
    }

    fn as_slice(&self) -> &[usize] {
        if self.len <= Tried::INLINE {
            &self.inline[..self.len]
        } else {
            &self.more
        }
    }
}

/// The client span of one attempt, in a sampled trace: from the pick of
/// the replica to its answer's head (or failure). Its context is what the
/// replica is sent in `traceparent`, so the backend's spans are its
/// children.
struct AttemptSpan(Option<Trace>);

impl AttemptSpan {
    fn start(
        obs: Option<&Arc<dyn Watch>>,
        backend: &str,
        replica: &Replica,
        retry: usize,
        out: &Outgoing,
    ) -> AttemptSpan {
        let Some(parent) = obs.and_then(|o| o.trace()).filter(|t| t.sampled()) else {
            return AttemptSpan(None);
        };
        let retry = i64::try_from(retry).unwrap_or(i64::MAX);
        let mut attributes = vec![
            Attribute::new(trace::HTTP_METHOD, out.method.as_str().to_owned()),
            Attribute::new(trace::BACKEND, backend.to_owned()),
            Attribute::new(trace::REPLICA, replica.label.clone()),
            Attribute::new(trace::ATTEMPT, retry),
            Attribute::new(trace::URL_FULL, replica.uri_for(&out.path).to_string()),
        ];
        if retry > 0 {
            attributes.push(Attribute::new(trace::RETRY_COUNT, retry));
        }
        if let Some(host) = replica.base.host() {
            attributes.push(Attribute::new(trace::SERVER_ADDRESS, host.to_owned()));
        }
        let name = format!("{} {backend}", trace::SPAN_ATTEMPT);
        AttemptSpan(parent.child(name, trace::Kind::Client, attributes))
    }

    /// The attempt's context (else the request's) as `traceparent`.
    fn inject(&self, obs: Option<&Arc<dyn Watch>>, headers: &mut HeaderMap) {
        if let Some(t) = self.0.as_ref().or_else(|| obs.and_then(|o| o.trace())) {
            t.inject(headers);
        }
    }

    fn end(self, attempt: &Attempt) {
        let Some(t) = self.0 else {
            return;
        };
        match attempt {
            Attempt::Answer { resp, .. } => {
                let status = resp.status();
                t.set_attributes([Attribute::new(
                    trace::HTTP_STATUS,
                    i64::from(status.as_u16()),
                )]);
                if status.is_server_error() {
                    t.set_attributes([Attribute::new(
                        trace::ERROR_TYPE,
                        status.as_str().to_owned(),
                    )]);
                    t.fail(format!("the replica answered {status}"));
                }
            }
            Attempt::TimedOut => {
                t.set_attributes([Attribute::new(trace::ERROR_TYPE, "timeout")]);
                t.fail("no answer within the request timeout");
            }
            Attempt::Failed { failure, .. } => {
                let kind = failure.kind().map_or("body", UpstreamKind::label);
                t.set_attributes([Attribute::new(trace::ERROR_TYPE, kind)]);
                t.fail(failure.detail().to_owned());
            }
        }
        t.end();
    }
}

fn request_id<'a>(obs: Option<&'a Arc<dyn Watch>>, headers: &'a HeaderMap) -> &'a str {
    match obs {
        Some(o) => o.request_id(),
        None => headers
            .get(REQUEST_ID)
            .and_then(|v: &HeaderValue| v.to_str().ok())
            .unwrap_or(""),
    }
}

#[cfg(test)]
mod tests {
    use super::{Tried, answer_after};
    use std::time::Duration;
    use tokio::sync::oneshot;

    async fn after(ms: u64) -> u64 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        ms
    }

    #[test]
    fn tried_keeps_every_index_in_order_past_its_inline_room() {
        let mut t = Tried::default();
        assert!(t.as_slice().is_empty());
        for i in 0..9 {
            t.push(10 + i);
            assert_eq!(t.len(), i + 1);
            let want: Vec<usize> = (10..=10 + i).collect();
            assert_eq!(t.as_slice(), want.as_slice());
        }
    }

    /// The limit counts from the end signal: an answer long after the start
    /// but soon after the end is in time, one long after the end is not.
    #[tokio::test(start_paused = true)]
    async fn the_time_to_answer_counts_from_the_end_of_the_body() {
        let limit = Duration::from_millis(100);
        // Answered before the body ended: in time, however long.
        let (_end, ended) = oneshot::channel::<()>();
        assert_eq!(
            answer_after(ended, limit, after(5_000)).await,
            (Ok(5_000), true)
        );

        // The body ends at 1 s, the answer comes at 1.05 s: in time.
        let (end, ended) = oneshot::channel();
        let body = async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let _ = end.send(());
        };
        let (answer, ()) = tokio::join!(answer_after(ended, limit, after(1_050)), body);
        assert_eq!(answer, (Ok(1_050), false));

        // The body ends at 1 s, nothing by 1.1 s: too late.
        let (end, ended) = oneshot::channel();
        let body = async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let _ = end.send(());
        };
        let ((answer, before_end), ()) =
            tokio::join!(answer_after(ended, limit, after(1_200)), body);
        assert!(answer.is_err() && !before_end);

        // The sender gone (the body aborted): the limit runs from then.
        let (end, ended) = oneshot::channel::<()>();
        drop(end);
        let (answer, before_end) = answer_after(ended, limit, after(200)).await;
        assert!(answer.is_err() && !before_end);
    }
}
