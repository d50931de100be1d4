//! The gateway the data port serves: the current [`Gateway`], replaced
//! whole when the configuration is reloaded. Each request reads the
//! current one once, when it arrives, and keeps it to its end: requests in
//! flight finish on the configuration they started with, new ones see the
//! new one, and no request ever sees half of each. Reading is lock-free
//! (`arc-swap`); it never blocks a reload, nor a reload a request.

use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::gateway::{Gateway, Shared};

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
