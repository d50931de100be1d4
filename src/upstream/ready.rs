//! The backend's own readiness (`GET /v2/health/ready`), asked at most once
//! per `ttl` however many callers ask: SageMaker's `/ping` needs no key and
//! is never shed, so without this every ping was a backend call (400,000
//! pings made 400,000 of them in 16 s). Callers that find the answer stale
//! while another caller is asking wait for that answer instead of asking
//! again.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::{Outgoing, Upstream};

/// The last answer and when it came.
#[derive(Debug, Default)]
pub(super) struct ReadyCache {
    last: Mutex<Option<(Instant, bool)>>,
    /// Held by the one caller asking the backend.
    asking: tokio::sync::Mutex<()>,
}

impl ReadyCache {
    fn fresh(&self, ttl: Duration) -> Option<bool> {
        let last = *self.last.lock().unwrap_or_else(|p| p.into_inner());
        last.filter(|(at, _)| at.elapsed() < ttl)
            .map(|(_, ready)| ready)
    }

    fn store(&self, ready: bool) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), ready));
    }
}

impl Upstream {
    /// Whether the backend says it is ready (a 2xx to
    /// `GET /v2/health/ready` within `limit`), as of at most `ttl` ago.
    pub async fn ready_cached(&self, ttl: Duration, limit: Duration) -> bool {
        let cache = &self.inner.ready;
        if let Some(ready) = cache.fresh(ttl) {
            return ready;
        }
        let _asking = cache.asking.lock().await;
        if let Some(ready) = cache.fresh(ttl) {
            return ready;
        }
        let asked = tokio::time::timeout(limit, self.send(Outgoing::get("/v2/health/ready"), None));
        let ready = matches!(asked.await, Ok(Ok(resp)) if resp.status().is_success());
        cache.store(ready);
        ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn answers_are_kept_for_the_ttl() {
        let c = ReadyCache::default();
        let ttl = Duration::from_secs(1);
        assert_eq!(c.fresh(ttl), None);
        c.store(true);
        assert_eq!(c.fresh(ttl), Some(true));
        tokio::time::advance(Duration::from_millis(999)).await;
        assert_eq!(c.fresh(ttl), Some(true));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(c.fresh(ttl), None);
        c.store(false);
        assert_eq!(c.fresh(ttl), Some(false));
    }
}
