//! Bodies whose bytes and end are recorded for their request: the reply the
//! client receives (its end completes the request), the backend's reply,
//! a backend's reply relayed to the client as it is (both in one), and a
//! client body forwarded as it is.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::Frame;

use super::Observation;
use crate::http::body::BoxError;

/// Which body of the exchange it is.
#[derive(Debug)]
pub(super) enum Leg {
    Client {
        status: u16,
    },
    Backend {
        sent: Instant,
    },
    /// The client's reply is the backend's body as it is (a passthrough
    /// with nothing between them): its bytes count for both, and the
    /// backend's leg ends with it, just before the request completes.
    /// One metered body where there were two, one inside the other:
    /// less work per proxied GET, the relay's mark included (see
    /// docs/PERFORMANCE.md, "What each decision bought").
    Relay {
        status: u16,
        sent: Instant,
    },
    Forwarded,
}

/// A body whose bytes and end are recorded.
#[derive(Debug)]
pub struct Metered<B> {
    inner: B,
    obs: Observation,
    pub(super) leg: Leg,
    done: bool,
    /// The inner body said it had ended (exact-length bodies).
    exact_done: bool,
}

impl<B> Metered<B> {
    pub(super) fn new(inner: B, obs: Observation, leg: Leg) -> Self {
        Metered {
            inner,
            obs,
            leg,
            done: false,
            exact_done: false,
        }
    }

    /// The body it meters.
    pub fn get_ref(&self) -> &B {
        &self.inner
    }

    fn end(&mut self, completed: bool) {
        if self.done {
            return;
        }
        self.done = true;
        match self.leg {
            Leg::Client { status } => self.obs.complete(status, completed, Instant::now()),
            Leg::Backend { sent } => self.obs.upstream_total(sent.elapsed()),
            Leg::Relay { status, sent } => {
                let now = Instant::now();
                self.obs.upstream_total(now.saturating_duration_since(sent));
                self.obs.complete(status, completed, now);
            }
            Leg::Forwarded => {}
        }
    }
}

impl<B> Drop for Metered<B> {
    fn drop(&mut self) {
        // hyper stops polling a body whose length is exact once it has it all.
        let client = matches!(self.leg, Leg::Client { .. } | Leg::Relay { .. });
        let completed = client && self.exact_done;
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
                    match self.leg {
                        Leg::Client { .. } => self.obs.client_out(n),
                        Leg::Backend { .. } => self.obs.backend_in(n),
                        Leg::Relay { .. } => {
                            self.obs.backend_in(n);
                            self.obs.client_out(n);
                        }
                        Leg::Forwarded => {
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
