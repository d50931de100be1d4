//! Admission: at most `max_concurrent_requests` requests are served at
//! once. A request that finds no free slot waits at most `queue_timeout`
//! for one, then is refused with [`AdmissionError::Overloaded`] (503 with
//! `Retry-After`) instead of queueing beyond any client's patience. A slot
//! is held until the request's reply body has ended or been dropped (the
//! [`crate::observe::Observation`] holds it). Never reads or renders a
//! request: the frontend shows the refusal in its own shape.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::error::{Class, Classified, Classify};

/// Why a request got no slot.
#[derive(Debug, thiserror::Error)]
pub enum AdmissionError {
    #[error("all {limit} request slots stayed busy for {:.3}s; retry later", waited.as_secs_f64())]
    Overloaded { limit: usize, waited: Duration },
    #[error("the gateway is shutting down")]
    ShuttingDown,
    /// `server.max_requests_per_client`.
    #[error("this client has {limit} requests in flight, the most one client may; retry later")]
    ClientBusy { limit: usize },
    /// Health watches of one client (gRPC `grpc.health.v1.Health/Watch`).
    #[error("this client has {limit} health watches open, the most one client may; retry later")]
    WatchesFull { limit: usize },
    /// `server.max_unverified_body_bytes`.
    #[error(
        "{limit} bytes of signed request bodies are being verified, the most at once; retry later"
    )]
    UnverifiedFull { limit: u64 },
}

impl Classify for AdmissionError {
    fn classify(&self) -> Classified {
        let class = match self {
            AdmissionError::Overloaded { waited, .. } => Class::Overloaded {
                retry_after: waited.as_secs_f64().ceil() as u64,
            },
            AdmissionError::ShuttingDown => Class::ShuttingDown,
            AdmissionError::ClientBusy { .. }
            | AdmissionError::WatchesFull { .. }
            | AdmissionError::UnverifiedFull { .. } => Class::Overloaded { retry_after: 1 },
        };
        class.into()
    }
}

/// The request slots.
#[derive(Debug)]
pub struct Admission {
    slots: Arc<Semaphore>,
    limit: usize,
    queue_timeout: Duration,
}

/// One request's slot; freed when dropped.
#[derive(Debug)]
pub struct Slot(#[allow(dead_code)] OwnedSemaphorePermit);

impl Admission {
    pub fn new(limit: usize, queue_timeout: Duration) -> Admission {
        let limit = limit.min(Semaphore::MAX_PERMITS);
        Admission {
            slots: Arc::new(Semaphore::new(limit)),
            limit,
            queue_timeout,
        }
    }

    /// A slot, at once if one is free, else within the queue timeout.
    pub async fn admit(&self) -> Result<Slot, AdmissionError> {
        if let Ok(permit) = self.slots.clone().try_acquire_owned() {
            return Ok(Slot(permit));
        }
        let started = Instant::now();
        match tokio::time::timeout(self.queue_timeout, self.slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Slot(permit)),
            // The semaphore is never closed; treat it as shutting down.
            Ok(Err(_closed)) => Err(AdmissionError::ShuttingDown),
            Err(_elapsed) => Err(AdmissionError::Overloaded {
                limit: self.limit,
                waited: started.elapsed(),
            }),
        }
    }

    /// Slots free now.
    pub fn available(&self) -> usize {
        self.slots.available_permits()
    }

    /// Whether fewer than an eighth of the slots are free: the gateway is
    /// close to shedding, and optional work (shadow traffic) stops first.
    pub fn busy(&self) -> bool {
        self.available() < self.limit.div_ceil(8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_full_house_refuses_after_the_queue_timeout() {
        let a = Admission::new(2, Duration::from_secs(5));
        let one = a.admit().await.unwrap();
        let _two = a.admit().await.unwrap();
        assert_eq!(a.available(), 0);
        let started = Instant::now();
        let e = a.admit().await.unwrap_err();
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        assert!(
            matches!(e, AdmissionError::Overloaded { limit: 2, waited } if waited == Duration::from_secs(5)),
            "{e:?}"
        );
        assert_eq!(e.class().status(), http::StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(e.class().retry_after(), Some(5));
        // A slot freed while waiting is taken.
        let waiting = a.admit();
        drop(one);
        let _three = waiting.await.unwrap();
        assert_eq!(a.available(), 0);
    }

    #[tokio::test]
    async fn busy_under_an_eighth_free() {
        let a = Admission::new(16, Duration::from_secs(1));
        let mut held = Vec::new();
        for _ in 0..14 {
            held.push(a.admit().await.unwrap());
        }
        assert!(!a.busy(), "2 of 16 free");
        held.push(a.admit().await.unwrap());
        assert!(a.busy(), "1 of 16 free");
    }
}
