//! The store's background task: every `probe_interval` it announces this
//! gateway in the store and counts the gateways sharing it. While the
//! store is taken as down it is a probe, the first a whole interval after
//! the failure: the store is up again when the announcement answers, on a
//! connection made for it (taking the store as down dropped every
//! connection, so each worker makes a new one on its next decision), and
//! the decision that failed, asked again taking nothing, answers too. A
//! store whose script fails while `PING` would answer (a bucket key of
//! another type, a Cluster's slots, ACLs) so stays down, logged once,
//! instead of going up and down with every request. Holds the store
//! weakly: it ends with the store.

use std::sync::{Arc, Weak};

use tokio::sync::Notify;

use super::Store;

/// Runs until the store is dropped; `wake` (the store's, when it was just
/// found down) starts the interval to the next round again.
pub(super) async fn run(store: Weak<Store>, wake: Arc<Notify>) {
    loop {
        let interval = {
            let Some(store) = store.upgrade() else {
                return;
            };
            round(&store).await;
            store.settings.probe_interval
        };
        while tokio::time::timeout(interval, wake.notified())
            .await
            .is_ok()
        {}
    }
}

/// One announcement; while down, it is the probe.
async fn round(store: &Store) {
    let window = store.settings.probe_interval.saturating_mul(3);
    let window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
    let key = format!("{}:gateways", store.settings.key_prefix);
    let mut invocation = store.announce.prepare_invoke();
    invocation.key(&key).arg(&store.id).arg(window_ms);
    let counted = store
        .call(async |mut conn| invocation.invoke_async::<u32>(&mut conn).await)
        .await;
    match counted {
        Ok(peers) => {
            store.set_peers(peers);
            if store.is_up() || store.ask_again().await.is_ok() {
                store.recovered();
            }
        }
        Err(e) => {
            if store.is_up() {
                store.failed(&e);
            }
        }
    }
}
