//! The per-connection service: tells the connection's [`ConnState`] when
//! a request starts and when it is over — when its reply body has ended
//! or been dropped, not when the headers went out — so an HTTP/2
//! connection streaming a long reply is not idle; and puts the client's
//! address on each request ([`ClientAddr`]) for the gateway's
//! per-client bound.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Frame;
use hyper::body::Incoming;
use pin_project_lite::pin_project;
use tower::ServiceExt;
use tower::util::Oneshot;

use super::conn::ConnState;
use crate::guard::clients::ClientAddr;

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

/// A tower service made a hyper service for one connection.
#[derive(Clone, Debug)]
pub struct Tracked<S> {
    inner: S,
    conn: Arc<ConnState>,
}

impl<S> Tracked<S> {
    pub fn new(inner: S, conn: Arc<ConnState>) -> Self {
        Tracked { inner, conn }
    }
}

impl<S, B> hyper::service::Service<Request<Incoming>> for Tracked<S>
where
    S: tower::Service<Request<Incoming>, Response = Response<B>, Error = Infallible> + Clone,
{
    type Response = Response<Counted<B>>;
    type Error = Infallible;
    type Future = Respond<Oneshot<S, Request<Incoming>>>;

    fn call(&self, mut req: Request<Incoming>) -> Self::Future {
        if let Some(ip) = self.conn.peer() {
            req.extensions_mut().insert(ClientAddr(ip));
        }
        Respond {
            active: Some(Active::start(&self.conn)),
            inner: self.inner.clone().oneshot(req),
        }
    }
}

pin_project! {
    /// The service's future; the request stays active in its reply body.
    #[derive(Debug)]
    pub struct Respond<F> {
        #[pin]
        inner: F,
        active: Option<Active>,
    }
}

impl<F, B> Future for Respond<F>
where
    F: Future<Output = Result<Response<B>, Infallible>>,
{
    type Output = Result<Response<Counted<B>>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let resp = match ready!(this.inner.poll(cx)) {
            Ok(resp) => resp,
            Err(never) => match never {},
        };
        let active = this.active.take();
        Poll::Ready(Ok(resp.map(|inner| Counted { inner, active })))
    }
}

pin_project! {
    /// A reply body that ends its request's activity when it ends.
    #[derive(Debug)]
    pub struct Counted<B> {
        #[pin]
        inner: B,
        active: Option<Active>,
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
        let polled = this.inner.poll_frame(cx);
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            this.active.take();
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
