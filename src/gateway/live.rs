//! The gateway the data port serves: the current [`Gateway`], replaced
//! whole when the configuration is reloaded. Each request reads the
//! current one once, when it arrives, and keeps it to its end: requests in
//! flight finish on the configuration they started with, new ones see the
//! new one, and no request ever sees half of each. Reading is lock-free
//! (`arc-swap`); it never blocks a reload, nor a reload a request.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arc_swap::ArcSwap;
use http::{Request, Response};
use hyper::body::Incoming;

use crate::gateway::{Gateway, Handling, Shared};
use crate::http::body::Body;

/// The current gateway, shared by the server and the reloader. Cheap to
/// clone.
#[derive(Clone, Debug)]
pub struct Live {
    current: Arc<ArcSwap<Shared>>,
}

impl Live {
    pub fn new(gateway: Gateway) -> Live {
        Live {
            current: Arc::new(ArcSwap::new(gateway.shared)),
        }
    }

    /// The gateway new requests are served by.
    pub fn current(&self) -> Gateway {
        Gateway {
            shared: self.current.load_full(),
        }
    }

    /// Makes `gateway` the one new requests are served by.
    pub fn replace(&self, gateway: &Gateway) {
        self.current.store(gateway.shared.clone());
    }
}

impl tower::Service<Request<Incoming>> for Live {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Served;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Incoming>) -> Self::Future {
        Served(self.current().handle(req))
    }
}

/// The gateway's answer as the service's: never an error.
pub struct Served(Handling);

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Served")
    }
}

impl Future for Served {
    type Output = Result<Response<Body>, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx).map(Ok)
    }
}
