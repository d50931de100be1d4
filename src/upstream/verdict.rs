//! What a reply says about the replica that sent it, decided once its body
//! is over rather than from its head alone: a 200 whose body never ends,
//! runs past what the gateway holds, breaks off or is nonsense is a
//! failure of that replica, as a 5xx is (outlier detection, as Envoy
//! counts locally seen errors): it was counted as an upstream error of
//! the request, never against the replica, which stayed healthy while it
//! failed every reply it sent.
//!
//! A reply counts for its replica when its body was read to the end and no
//! reader found fault with it (decided when the body is dropped, so that a
//! reader parsing a whole body can still find fault); against it when the
//! body failed on the backend's side (a stall, a reset) or a reader
//! reported a fault ([`UpstreamBody::fault`](super::UpstreamBody::fault));
//! neither when the client went away first.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Replica, Upstream, now_ms};
use crate::error::UpstreamKind;

/// One reply's verdict on its replica, pending until its body is over.
#[derive(Debug)]
pub(super) struct ReplyVerdict {
    upstream: Upstream,
    replica: Arc<Replica>,
    /// The body was read to its end.
    ended: AtomicBool,
    /// A fault was counted.
    faulted: AtomicBool,
}

impl ReplyVerdict {
    pub(super) fn new(upstream: Upstream, replica: Arc<Replica>) -> ReplyVerdict {
        ReplyVerdict {
            upstream,
            replica,
            ended: AtomicBool::new(false),
            faulted: AtomicBool::new(false),
        }
    }

    /// The body was read to its end.
    pub(super) fn ended(&self) {
        self.ended.store(true, Ordering::Relaxed);
    }

    /// Counts a fault of `kind` against the replica (once per reply).
    pub(super) fn fault(&self, kind: UpstreamKind) {
        if self.faulted.swap(true, Ordering::Relaxed) {
            return;
        }
        let replicas = self.upstream.replicas();
        self.upstream.failed(&self.replica, kind, &replicas);
    }
}

impl Drop for ReplyVerdict {
    fn drop(&mut self) {
        if *self.ended.get_mut() && !*self.faulted.get_mut() {
            let cfg = &self.upstream.backend.ejection;
            self.replica.health.succeeded(now_ms, cfg);
        }
    }
}
