//! The per-connection service: hands each request to the current gateway
//! with the client's address (for its per-client bound), and tells the
//! connection's [`ConnState`] when a request starts and when it is over —
//! when its reply body has ended or been dropped, not when the headers
//! went out — so an HTTP/2 connection streaming a long reply is not idle.
//!
//! hyper calls the gateway directly: through tower's `Oneshot` (a clone
//! of the service, `poll_ready`, then `call`, each request) it cost more,
//! most of it the request's extension map, allocated to carry the
//! client's address (see docs/PERFORMANCE.md, "What each decision
//! bought").

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use super::conn::ConnState;
use super::stall::Stalled;
use crate::gateway::Handling;
use crate::gateway::live::Live;
use crate::http::body::Body;
use crate::observe::Metered;
use bytes::Bytes;
use http::{Request, Response};
use http_body::Frame;
use hyper::body::Incoming;
use pin_project_lite::pin_project;

/// Counts one request as in progress on its connection while it lives.
#[derive(Debug)]
struct Active(Arc<ConnState>);

impl Active {
    fn start(conn: &Arc<ConnState>) -> Active {
        conn.request_started();
        Active(conn.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.request_ended();
    }
}

/// The gateway as the hyper service of one connection.
#[derive(Clone, Debug)]
pub(super) struct Tracked {
    gateway: Live,
    conn: Arc<ConnState>,
}

impl Tracked {
    pub(super) fn new(gateway: Live, conn: Arc<ConnState>) -> Self {
        Tracked { gateway, conn }
    }
}

impl hyper::service::Service<Request<Incoming>> for Tracked {
    type Response = Response<Counted<Metered<Body>>>;
    type Error = Infallible;
    type Future = Respond;

    fn call(&self, req: Request<Incoming>) -> Respond {
        let active = Some(Active::start(&self.conn));
        let handling = self.gateway.current().handle(req, self.conn.peer());
        let http2 = self.conn.http2();
        Respond {
            handling,
            active,
            http2,
        }
    }
}

/// The service's future; the request stays active in its reply body.
pub(super) struct Respond {
    handling: Handling,
    active: Option<Active>,
    /// The reply goes out on an HTTP/2 stream ([`super::stall`]).
    http2: bool,
}

impl std::fmt::Debug for Respond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Respond")
            .field("active", &self.active)
            .finish_non_exhaustive()
    }
}

impl Future for Respond {
    type Output = Result<Response<Counted<Metered<Body>>>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let resp = ready!(this.handling.as_mut().poll(cx));
        let active = this.active.take();
        let stalled = this.http2.then(Stalled::default);
        Poll::Ready(Ok(resp.map(|inner| Counted {
            inner,
            active,
            stalled,
        })))
    }
}

pin_project! {
    /// A reply body that ends its request's activity when it ends; on an
    /// HTTP/2 stream, also handed out in bounded pieces and watched for
    /// a client giving no window ([`super::stall`]).
    #[derive(Debug)]
    pub struct Counted<B> {
        #[pin]
        inner: B,
        active: Option<Active>,
        stalled: Option<Stalled>,
    }
}

impl<B> http_body::Body for Counted<B>
where
    B: http_body::Body<Data = Bytes>,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.project();
        let inner = this.inner;
        let polled = match this.stalled {
            Some(s) => s.poll(|| inner.poll_frame(cx)),
            None => inner.poll_frame(cx),
        };
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            this.active.take();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream() && !self.stalled.as_ref().is_some_and(Stalled::holds)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let hint = self.inner.size_hint();
        match self.stalled.as_ref().map_or(0, Stalled::held) {
            0 => hint,
            held => {
                let mut more = http_body::SizeHint::new();
                more.set_lower(hint.lower() + held);
                if let Some(upper) = hint.upper() {
                    more.set_upper(upper + held);
                }
                more
            }
        }
    }
}
