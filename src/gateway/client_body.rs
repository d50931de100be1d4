//! Reading a client's request body: decompressed, bounded by the route's
//! limit (a declared `Content-Length` over it is refused before a byte is
//! read), with a limit on how long the client may pause
//! (`body_read_timeout`, else 408) and on how long the whole body may take
//! (`body_total_timeout`, else 408), so a client trickling a byte at a
//! time cannot hold a request slot for long.

use std::time::Duration;

use tokio::time::Instant;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use http::{HeaderMap, header};
use sha2::{Digest as _, Sha256};

use super::encoding::{Coding, DecodeError, Decoder, request_coding};
use super::error::GatewayError;
use crate::config::ServerConfig;

/// How long a client may take over its request body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyTimeouts {
    /// Longest pause between two pieces.
    pub idle: Duration,
    /// The whole body, from when the gateway starts reading it.
    pub total: Duration,
}

impl From<&ServerConfig> for BodyTimeouts {
    fn from(s: &ServerConfig) -> Self {
        BodyTimeouts {
            idle: s.body_read_timeout,
            total: s.body_total_timeout,
        }
    }
}

/// What runs out first when waiting for the next piece at `now`: the
/// pause allowed, or the time left to the whole body's `deadline`.
fn next_wait(now: Instant, idle: Duration, deadline: Instant) -> (Duration, Limit) {
    let left = deadline.saturating_duration_since(now);
    if left <= idle {
        (left, Limit::Total)
    } else {
        (idle, Limit::Idle)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Limit {
    Idle,
    Total,
}

/// The body length a request declares, refused with 413 when it is over
/// `limit`. Every path that reads or forwards a body checks here first.
pub fn check_declared_length(
    headers: &HeaderMap,
    route: &str,
    limit: u64,
) -> Result<Option<u64>, GatewayError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(GatewayError::BodyTooLarge {
            route: route.to_owned(),
            limit,
        });
    }
    Ok(declared)
}

/// The request body as decompressed pieces.
#[derive(Debug)]
pub struct ClientBody {
    /// Always `Some` until dropped (see `Drop`).
    inner: Option<Incoming>,
    decoder: Option<Decoder>,
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
    digest: Option<Sha256>,
}

impl ClientBody {
    /// Opens a request body: an unsupported `Content-Encoding` is a 415 and
    /// a declared length over `limit` a 413, before anything is read. The
    /// total deadline runs from here.
    pub fn open(
        headers: &HeaderMap,
        inner: Incoming,
        route: &str,
        limit: u64,
        timeouts: BodyTimeouts,
    ) -> Result<ClientBody, GatewayError> {
        let coding = request_coding(headers)?;
        let declared = match coding {
            Coding::Identity => check_declared_length(headers, route, limit)?,
            _ => None,
        };
        Ok(ClientBody {
            inner: Some(inner),
            decoder: Decoder::new(coding, limit),
            route: route.to_owned(),
            limit,
            timeouts,
            deadline: Instant::now() + timeouts.total,
            received: 0,
            wire: 0,
            declared,
            finished: false,
            digest: None,
        })
    }

    /// Also hashes the body as it comes off the wire (before any
    /// decompression): what a SigV4 signature covers.
    pub fn with_wire_digest(mut self) -> ClientBody {
        self.digest = Some(Sha256::new());
        self
    }

    /// SHA-256 of the bytes received so far, if asked for.
    pub fn wire_digest(&self) -> Option<crate::auth::keys::Digest> {
        self.digest.as_ref().map(|d| d.clone().finalize().into())
    }

    /// The uncompressed body length the client declared, if it did.
    pub fn declared_length(&self) -> Option<u64> {
        self.declared
    }

    /// Bytes received from the client (compressed, if it compressed).
    pub fn wire_bytes(&self) -> u64 {
        self.wire
    }

    fn too_large(&self) -> GatewayError {
        GatewayError::BodyTooLarge {
            route: self.route.clone(),
            limit: self.limit,
        }
    }

    fn decode_error(&self, e: DecodeError) -> GatewayError {
        match e {
            DecodeError::TooLarge => self.too_large(),
            DecodeError::Corrupt(detail) => GatewayError::BadEncoding {
                encoding: self
                    .decoder
                    .as_ref()
                    .map_or("identity", |d| d.coding().name()),
                detail,
            },
        }
    }

    /// The next piece of the body, or `None` at its end.
    pub async fn next(&mut self) -> Result<Option<Bytes>, GatewayError> {
        loop {
            if self.finished {
                return Ok(None);
            }
            // A frame that inflates to more than one decoder step is handed
            // out a step at a time, letting other tasks run in between.
            let data = if self.decoder.as_ref().is_some_and(Decoder::has_pending) {
                tokio::task::yield_now().await;
                let step = self
                    .decoder
                    .as_mut()
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
    async fn read_frame(&mut self) -> Result<Option<Bytes>, GatewayError> {
        let (wait, limit) = next_wait(Instant::now(), self.timeouts.idle, self.deadline);
        let Some(inner) = self.inner.as_mut() else {
            return Ok(None);
        };
        let Ok(frame) = tokio::time::timeout(wait, inner.frame()).await else {
            // Out of time: nothing more is read, not even in the background.
            self.finished = true;
            return Err(match limit {
                Limit::Idle => GatewayError::ClientTimeout,
                Limit::Total => GatewayError::BodyDeadline {
                    limit: self.timeouts.total,
                },
            });
        };
        let data = match frame {
            None => {
                self.finished = true;
                match self.decoder.as_mut().map(Decoder::finish) {
                    None => return Ok(None),
                    Some(r) => r.map_err(|e| self.decode_error(e))?,
                }
            }
            Some(Err(e)) => {
                self.finished = true;
                return Err(GatewayError::ClientBody {
                    detail: super::upstream::error_chain(&e),
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
    pub async fn collect(&mut self, first: Option<Bytes>) -> Result<Bytes, GatewayError> {
        let mut pieces: Vec<Bytes> = first.into_iter().filter(|b| !b.is_empty()).collect();
        while let Some(piece) = self.next().await? {
            pieces.push(piece);
        }
        Ok(concat(pieces))
    }
}

/// Joins pieces, without copying when at most one is non-empty.
pub fn concat(mut pieces: Vec<Bytes>) -> Bytes {
    pieces.retain(|p| !p.is_empty());
    match pieces.len() {
        0 => Bytes::new(),
        1 => pieces.pop().unwrap_or_default(),
        _ => {
            let mut out = BytesMut::with_capacity(pieces.iter().map(Bytes::len).sum());
            for p in pieces {
                out.extend_from_slice(&p);
            }
            out.freeze()
        }
    }
}

/// A body its handler stopped reading (it answered early: a broken rule, a
/// limit, a malformed request) is read on to its end and thrown away, in
/// the background, within what was left of the route's byte limit and the
/// body's timeouts. Closing a socket with unread data resets the
/// connection, and a client still sending its body would then get a broken
/// pipe or a reset instead of the answer (what nginx's lingering close
/// avoids). A read body stays on the connection, which hyper can keep.
impl Drop for ClientBody {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        if self.finished || hyper::body::Body::is_end_stream(&inner) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let budget = self.limit.saturating_sub(self.wire);
        rt.spawn(discard(inner, budget, self.timeouts.idle, self.deadline));
    }
}

/// Reads `body` to its end, at most `budget` more bytes, each piece within
/// `idle` and all before `deadline`; gives up (dropping it) otherwise.
async fn discard(mut body: Incoming, mut budget: u64, idle: Duration, deadline: Instant) {
    loop {
        let (wait, _) = next_wait(Instant::now(), idle, deadline);
        let Ok(Some(Ok(frame))) = tokio::time::timeout(wait, body.frame()).await else {
            return;
        };
        let len = frame.data_ref().map_or(0, |d| d.len() as u64);
        let Some(left) = budget.checked_sub(len) else {
            return;
        };
        budget = left;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_nearer_of_the_pause_and_the_deadline_is_waited_for() {
        let idle = Duration::from_secs(60);
        let now = Instant::now();
        let check = |deadline_in: u64, expected: (u64, Limit)| {
            let (wait, limit) = next_wait(now, idle, now + Duration::from_secs(deadline_in));
            assert_eq!(
                (wait.as_secs(), limit),
                expected,
                "deadline in {deadline_in}s"
            );
        };
        check(300, (60, Limit::Idle));
        check(61, (60, Limit::Idle));
        check(60, (60, Limit::Total));
        check(5, (5, Limit::Total));
        // Past the deadline: no wait at all (a frame already there still
        // counts, tokio polls the future once).
        let (wait, limit) = next_wait(now + Duration::from_secs(10), idle, now);
        assert_eq!((wait, limit), (Duration::ZERO, Limit::Total));
    }
}
