//! Reading a client's request body: decompressed, bounded by the route's
//! limit (a declared `Content-Length` over it is refused before a byte is
//! read), with a limit on how long the client may pause
//! (`body_read_timeout`, else 408) and on how long the whole body may take
//! (`body_total_timeout`, else 408), so a client trickling a byte at a
//! time cannot hold a request slot for long. The body comes off the
//! connection as a [`Wire`], whose clock the request's driver watches too:
//! the total deadline holds even while nothing reads the body.

use std::time::Duration;

use tokio::time::Instant;

use bytes::Bytes;
use http_body_util::BodyExt;

use http::HeaderMap;
use sha2::{Digest as _, Sha256};

use crate::codec::pieces::concat;
use crate::error::{Class, Classified, Classify, TensorLabel};
use crate::http::body::Body;
use crate::http::encoding::Inflated;
use crate::http::encoding::{Coding, Decoder, InflateError, UnsupportedCoding, request_coding};
use crate::http::idle::{Idle, Stalled};
use crate::http::wire::{Limit, Wire, next_wait};
use http_body_util::Limited;
use std::sync::Arc;

pub use crate::http::wire::BodyTimeouts;

/// Why a request body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("route \"{route}\": request body is larger than the limit of {limit} bytes")]
    TooLarge { route: String, limit: u64 },
    #[error(transparent)]
    UnsupportedEncoding(#[from] UnsupportedCoding),
    #[error("request body is not valid {encoding} data: {detail}")]
    BadEncoding {
        encoding: &'static str,
        detail: String,
    },
    #[error("reading the request body failed: {detail}")]
    Broken { detail: String },
    #[error("timed out waiting for the rest of the request body")]
    Idle,
    #[error("the request body did not arrive within {}s", limit.as_secs_f64())]
    Deadline { limit: Duration },
}

impl Classify for BodyError {
    fn classify(&self) -> Classified {
        match self {
            BodyError::TooLarge { .. } => Class::TooLarge.violating(TensorLabel::Request, "limit"),
            BodyError::UnsupportedEncoding(_) => Class::UnsupportedEncoding.into(),
            BodyError::BadEncoding { .. } => Class::Malformed.into(),
            BodyError::Broken { .. } => Class::BodyBroken.into(),
            BodyError::Idle | BodyError::Deadline { .. } => Class::BodyTimeout.into(),
        }
    }
}

/// The body length a request declares, refused with 413 when it is over
/// `limit`. Every path that reads or forwards a body checks here first.
pub fn check_declared_length(
    headers: &HeaderMap,
    route: &str,
    limit: u64,
) -> Result<Option<u64>, BodyError> {
    within_limit(super::headers::declared_length(headers), route, limit)
}

/// `declared` (a body's declared length, when it has one) refused as too
/// large when past `limit`.
fn within_limit(declared: Option<u64>, route: &str, limit: u64) -> Result<Option<u64>, BodyError> {
    if declared.is_some_and(|n| n > limit) {
        return Err(BodyError::TooLarge {
            route: route.to_owned(),
            limit,
        });
    }
    Ok(declared)
}

/// Told, once, how many bytes a request body took off the wire: when a
/// body read to its end is dropped (the request is observed by a floor
/// above).
pub trait WireMeter: Send + Sync + std::fmt::Debug {
    fn client_in(&self, bytes: u64);
}

/// The request body as decompressed pieces.
#[derive(Debug)]
pub struct ClientBody {
    /// The body off the wire; read on in the background when dropped
    /// before its end (see [`Wire`]).
    inner: Wire,
    /// Boxed: only compressed bodies have one, and it is most of the
    /// body's size, which is moved with the request.
    decoder: Option<Box<Decoder>>,
    route: String,
    limit: u64,
    timeouts: BodyTimeouts,
    /// When the whole body must have arrived.
    deadline: Instant,
    /// Decompressed bytes handed out so far.
    received: u64,
    /// Bytes as they came off the wire.
    wire: u64,
    /// The uncompressed length the client declared, if it did.
    declared: Option<u64>,
    /// The body ended, or will not be read further (out of time, broken).
    finished: bool,
    /// SHA-256 of the bytes as received, when asked for (SigV4).
    digest: Option<Box<Sha256>>,
    /// Told the wire bytes when the body is dropped, if it was read to its
    /// end (a request refused part way is not counted as received).
    meter: Option<Arc<dyn WireMeter>>,
    /// The body was read to its end.
    ended: bool,
    /// Bytes read already (a body read whole, then handed out again).
    replay: Bytes,
}

impl ClientBody {
    /// Opens a request body: an unsupported `Content-Encoding` is a 415 and
    /// a declared length over `limit` a 413, before anything is read. The
    /// total deadline is the wire's clock's, which runs from the request's
    /// arrival.
    pub fn open(
        headers: &HeaderMap,
        mut inner: Wire,
        route: &str,
        limit: u64,
    ) -> Result<ClientBody, BodyError> {
        let coding = request_coding(headers)?;
        let declared = match coding {
            // Read from the head once, when the body's clock started.
            Coding::Identity => within_limit(inner.clock().declared(), route, limit)?,
            _ => None,
        };
        let (timeouts, deadline) = (inner.clock().timeouts(), inner.clock().deadline());
        inner.read_up_to(limit);
        Ok(ClientBody {
            inner,
            decoder: Decoder::new(coding, limit).map(Box::new),
            route: route.to_owned(),
            limit,
            timeouts,
            deadline,
            received: 0,
            wire: 0,
            declared,
            finished: false,
            digest: None,
            meter: None,
            ended: false,
            replay: Bytes::new(),
        })
    }

    /// Reads the whole body (within its limit and deadlines) and keeps it:
    /// what follows hands it out again, in pieces, as if it were arriving.
    /// For a body that must be whole before it is used (a SigV4 signature
    /// covers its hash) but is read by code that streams.
    pub async fn read_whole(&mut self) -> Result<(), BodyError> {
        let all = self.collect(None).await?;
        self.replay = all;
        Ok(())
    }

    /// The body read whole, if [`ClientBody::read_whole`] read it.
    pub fn whole(&self) -> &Bytes {
        &self.replay
    }

    /// Reports the bytes taken off the wire to `meter` when dropped.
    pub fn metered(mut self, meter: Arc<dyn WireMeter>) -> ClientBody {
        self.meter = Some(meter);
        self
    }

    /// Also hashes the body as it comes off the wire (before any
    /// decompression): what a SigV4 signature covers.
    pub fn with_wire_digest(mut self) -> ClientBody {
        self.digest = Some(Box::new(Sha256::new()));
        self
    }

    /// SHA-256 of the bytes received so far, if asked for.
    pub fn wire_digest(&self) -> Option<crate::auth::keys::Digest> {
        self.digest
            .as_ref()
            .map(|d| (**d).clone().finalize().into())
    }

    /// The uncompressed body length the client declared, if it did.
    pub fn declared_length(&self) -> Option<u64> {
        self.declared
    }

    /// The most bytes the body may hold (decompressed).
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes received from the client (compressed, if it compressed).
    pub fn wire_bytes(&self) -> u64 {
        self.wire
    }

    fn too_large(&self) -> BodyError {
        BodyError::TooLarge {
            route: self.route.clone(),
            limit: self.limit,
        }
    }

    fn decode_error(&self, e: InflateError) -> BodyError {
        match e {
            InflateError::TooLarge => self.too_large(),
            InflateError::Corrupt(detail) => BodyError::BadEncoding {
                encoding: self
                    .decoder
                    .as_ref()
                    .map_or("identity", |d| d.coding().name()),
                detail,
            },
        }
    }

    /// The next piece of the body, or `None` at its end.
    pub async fn next(&mut self) -> Result<Option<Bytes>, BodyError> {
        if !self.replay.is_empty() {
            let n = self.replay.len().min(REPLAY_PIECE);
            return Ok(Some(self.replay.split_to(n)));
        }
        loop {
            if self.finished {
                return Ok(None);
            }
            // A frame that inflates to more than one decoder step is handed
            // out a step at a time, letting other tasks run in between.
            let data = if self.decoder.as_deref().is_some_and(Decoder::has_pending) {
                tokio::task::yield_now().await;
                let step = self
                    .decoder
                    .as_deref_mut()
                    .map_or(Ok(Bytes::new()), Decoder::step);
                Some(step.map_err(|e| self.decode_error(e))?)
            } else {
                self.read_frame().await?
            };
            let Some(data) = data else { continue };
            self.received += data.len() as u64;
            if self.received > self.limit {
                return Err(self.too_large());
            }
            if !data.is_empty() {
                return Ok(Some(data));
            }
        }
    }

    /// The next frame's data, decompressed (its first step); `None` for a
    /// frame that is not data, or the end of an uncompressed body.
    async fn read_frame(&mut self) -> Result<Option<Bytes>, BodyError> {
        let now = Instant::now();
        let (wait, limit) = next_wait(now, self.timeouts.idle, self.deadline);
        // The clock read once: `now + wait` is at most the deadline (or
        // now, past it).
        let until = now.checked_add(wait).unwrap_or(self.deadline);
        let Ok(frame) = tokio::time::timeout_at(until, self.inner.frame()).await else {
            // Out of time: nothing more is read, not even in the background.
            self.finished = true;
            self.inner.abandon();
            return Err(match limit {
                Limit::Idle => BodyError::Idle,
                Limit::Total => BodyError::Deadline {
                    limit: self.timeouts.total,
                },
            });
        };
        let data = match frame {
            None => {
                self.finished = true;
                self.ended = true;
                match self.decoder.as_deref_mut().map(Decoder::finish) {
                    None => return Ok(None),
                    Some(r) => r.map_err(|e| self.decode_error(e))?,
                }
            }
            Some(Err(e)) => {
                self.finished = true;
                self.inner.abandon();
                return Err(BodyError::Broken {
                    detail: crate::error::chain(&e),
                });
            }
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    return Ok(None);
                };
                self.wire += data.len() as u64;
                if let Some(d) = self.digest.as_mut() {
                    d.update(&data);
                }
                match self.decoder.as_mut() {
                    None => data,
                    Some(d) => {
                        d.feed(data);
                        let step = d.step();
                        step.map_err(|e| self.decode_error(e))?
                    }
                }
            }
        };
        Ok(Some(data))
    }

    /// The rest of the body in one buffer.
    pub async fn collect(&mut self, first: Option<Bytes>) -> Result<Bytes, BodyError> {
        if first.is_none() && self.finished && !self.replay.is_empty() {
            return Ok(std::mem::take(&mut self.replay));
        }
        let mut pieces: Vec<Bytes> = first.into_iter().filter(|b| !b.is_empty()).collect();
        while let Some(piece) = self.next().await? {
            pieces.push(piece);
        }
        Ok(concat(pieces))
    }
}

/// A request body forwarded as it is (passthrough). Its declared length is
/// checked against `limit` first; then its pauses are bounded by the body
/// timeouts, its bytes by `limit`, and — when it is gzip or deflate — its
/// decompressed size by `limit` too, counted while it streams, so a
/// decompression bomb stops at the limit instead of reaching the backend.
/// A coding the gateway cannot read is passed on for the backend to
/// refuse. `None` for a request without a body.
pub fn forward(
    headers: &HeaderMap,
    mut body: Wire,
    route: &str,
    limit: u64,
) -> Result<Option<Body>, BodyError> {
    within_limit(body.clock().declared(), route, limit)?;
    if hyper::body::Body::is_end_stream(&body) {
        return Ok(None);
    }
    body.read_up_to(limit);
    let coding = request_coding(headers).unwrap_or(Coding::Identity);
    let (timeouts, deadline) = (body.clock().timeouts(), body.clock().deadline());
    let idle = Idle::new(body, timeouts.idle, Stalled::Client).until_at(deadline, timeouts.total);
    let limited = Limited::new(idle, usize::try_from(limit).unwrap_or(usize::MAX));
    Ok(Some(match Inflated::new(limited, coding, limit) {
        Ok(inflated) => inflated.boxed_unsync(),
        Err(limited) => limited.boxed_unsync(),
    }))
}

/// The pieces a body read whole is handed out again in.
const REPLAY_PIECE: usize = 64 << 10;

/// A body its handler stopped reading (it answered early: a broken rule, a
/// limit, a malformed request) is read on to its end and thrown away by its
/// [`Wire`], within what is left of the route's byte limit and the body's
/// timeouts: closing a socket with unread data resets the connection, and
/// a client still sending its body would then get a broken pipe or a reset
/// instead of the answer (what nginx's lingering close avoids). Here only
/// the wire bytes of a body read to its end are reported.
impl Drop for ClientBody {
    fn drop(&mut self) {
        if let Some(meter) = self.meter.take()
            && self.ended
        {
            meter.client_in(self.wire);
        }
    }
}
