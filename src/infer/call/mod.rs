//! The inference call, written once: what every frontend's infer goes
//! through, whichever protocol its client and its backend speak. A
//! frontend reads its client's request into an [`InferRequest`] and hands
//! it to an [`InferCall`]; the call runs its stages in this order:
//!
//! 1. **charge** — the request's elements counted, and charged to the
//!    caller's element limits (less what was charged ahead: a request
//!    sent while it was still read, a SageMaker batch charged in order);
//! 2. **prepare** — the request built in the backend's protocol
//!    ([`backend::build`]), its translation timed from when the frontend
//!    began;
//! 3. **shadow** — a bounded copy for the route's shadow, sent once the
//!    real request has its answer ([`crate::infer::shadow`]);
//! 4. **send** — the upstream chooses a replica (two random choices among
//!    the healthy ones with the model ready) and sends again when that is
//!    safe and the retry budget allows ([`crate::upstream`]);
//! 5. **answer** — read by the backend's protocol into the core's reply,
//!    or the backend's refusal kept with its origin ([`backend::answer`]);
//!    a frontend that does not pass refusals on gets it as an error.
//!
//! Every stage observes the request on the exchange's [`Observation`]
//! (elements, translation time, bytes to the backend, its first byte),
//! so no frontend does. This is an explicit chain, not a `tower` stack:
//! the exchange borrows the request's route, backend and observation for
//! the call's length, where a `tower::Service` future must own them (an
//! `Arc` clone per stage per request, and a boxed future per layer).
//! A route that uses no shadow pays nothing for the stage.
//!
//! [`Observation`]: crate::observe::Observation

use std::time::Instant;

use bytes::Bytes;
use http::HeaderMap;

mod early;

pub(crate) use early::{Attempt, EarlySend};

use super::backend::{self, BackendReply, RequestBody, Sent};
use super::{Exchange, InferError, InferReply, InferRequest, ModelRef};
use crate::observe::{Direction, Observation};
use crate::upstream::OutBody;

/// One inference call through the core.
#[derive(Debug)]
pub(crate) struct InferCall<'a> {
    exchange: Exchange<'a>,
    /// The headers the frontend forwards (request id, trace context, ...).
    headers: HeaderMap,
    /// When the frontend began reading the request: translation time
    /// counts from here.
    started: Instant,
    /// Elements charged ahead of the call.
    charged: u64,
}

/// Charges `n` elements of a request to its caller's element limits: the
/// one place a request's elements are charged, also ahead of its call
/// ([`EarlySend`], a SageMaker batch in order).
pub(crate) async fn charge(obs: &Observation, n: u64) -> Result<(), InferError> {
    Ok(obs.charge_elements(n).await?)
}

impl<'a> InferCall<'a> {
    pub(crate) fn new(
        exchange: Exchange<'a>,
        headers: HeaderMap,
        started: Instant,
    ) -> InferCall<'a> {
        InferCall {
            exchange,
            headers,
            started,
            charged: 0,
        }
    }

    /// The call, `n` of its request's elements charged already.
    pub(crate) fn charged(mut self, n: u64) -> InferCall<'a> {
        self.charged = n;
        self
    }

    /// The call: the backend's answer, a refusal kept as it came (for a
    /// frontend that passes it on). `early` is the same request sent while
    /// it was read: when its guess held, its answer is this one's.
    pub(crate) async fn send(
        self,
        req: InferRequest,
        early: Option<EarlySend<'a>>,
    ) -> Result<Sent, InferError> {
        let charged = early.as_ref().map_or(self.charged, EarlySend::charged);
        let (model, body) = self.prepare(req, charged).await?;
        if let Some(early) = early
            && let Some(sent) = early.finish(&body).await
        {
            return sent;
        }
        self.transmit(&model, body).await
    }

    /// The call, its answer a reply to read; a refusal is an error.
    pub(crate) async fn reply(self, req: InferRequest) -> Result<Box<BackendReply>, InferError> {
        let exchange = self.exchange;
        let (model, body) = self.prepare(req, self.charged).await?;
        match self.transmit(&model, body).await? {
            Sent::Reply(reply) => Ok(reply),
            Sent::Failed(refusal) => Err(refusal.into_error(exchange, &model).await),
        }
    }

    /// The call, its reply read whole (bounded by the route's
    /// `max_response_bytes`) and its elements counted.
    pub(crate) async fn collect(self, req: InferRequest) -> Result<InferReply, InferError> {
        let exchange = self.exchange;
        let (_, reply) = self
            .reply(req)
            .await?
            .head(exchange)
            .await?
            .collect(exchange)
            .await?;
        exchange
            .obs
            .elements(Direction::Response, reply.element_count());
        Ok(reply)
    }

    /// A raw binary request (the body is the model's single input), sent
    /// as the backend's protocol allows; the answer as [`InferCall::send`]'s.
    pub(crate) async fn send_raw(self, model: &ModelRef, raw: Bytes) -> Result<Sent, InferError> {
        let body = backend::build_raw(self.exchange, raw)?;
        self.transmit(model, body).await
    }

    /// Stages 1 and 2: charged and counted, built in the backend's protocol.
    async fn prepare(
        &self,
        req: InferRequest,
        charged: u64,
    ) -> Result<(ModelRef, RequestBody), InferError> {
        let obs = self.exchange.obs;
        let elements = req.element_count();
        obs.elements(Direction::Request, elements);
        charge(obs, elements.saturating_sub(charged)).await?;
        let InferRequest {
            model,
            header,
            data,
        } = req;
        let body = backend::build(self.exchange, &model, header, data).await?;
        obs.translation(Direction::Request, self.started.elapsed());
        Ok((model, body))
    }

    /// Stages 3 to 5: the shadow's copy, the send, the answer.
    async fn transmit(self, model: &ModelRef, body: RequestBody) -> Result<Sent, InferError> {
        let exchange = self.exchange;
        let head = body.head();
        let out = backend::outgoing(
            exchange,
            model,
            head,
            OutBody::Chunks(body.chunks),
            self.headers,
        );
        exchange.obs.backend_out(head.len);
        let sent = Instant::now();
        // The shadow's copy goes once the real request has its answer.
        let copy = exchange
            .shadow
            .and_then(|m| m.copy(&out, exchange.obs.trace()));
        let resp = exchange
            .upstream
            .send(out, Some(exchange.obs.watch()))
            .await;
        if let Some(copy) = copy {
            copy.start();
        }
        backend::answer(exchange, resp, sent).await
    }
}
