//! The store's background task: every `probe_interval` it announces this
//! gateway in the store and counts the gateways sharing it. While the
//! store is taken as down it is a probe: the store is up again only when
//! the announcement and a `PING` on every connection a worker made all
//! answer, so no worker's first decision after a restart fails on a
//! connection that broke while it was down. Holds the store weakly: it
//! ends with the store.

use std::sync::{Arc, Weak};

use tokio::sync::Notify;

use super::Store;

/// Runs until the store is dropped; `wake` (the store's) starts a round
/// at once.
pub(super) async fn run(store: Weak<Store>, wake: Arc<Notify>) {
    loop {
        let interval = {
            let Some(store) = store.upgrade() else {
                return;
            };
            round(&store).await;
            store.settings.probe_interval
        };
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = wake.notified() => {}
        }
    }
}

/// One announcement; while down, a probe of every connection too.
async fn round(store: &Store) {
    let window = store.settings.probe_interval.saturating_mul(3);
    let window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
    let key = format!("{}:gateways", store.settings.key_prefix);
    let counted = match store.conn() {
        Ok(mut conn) => {
            let mut invocation = store.announce.prepare_invoke();
            invocation.key(&key).arg(&store.id).arg(window_ms);
            store
                .within(invocation.invoke_async::<u32>(&mut conn))
                .await
        }
        Err(e) => Err(e),
    };
    let peers = match counted {
        Ok(n) => n,
        Err(e) => {
            if store.is_up() {
                store.failed(&e);
            }
            return;
        }
    };
    store.set_peers(peers);
    if store.is_up() {
        return;
    }
    for slot in store.conns.iter() {
        let Some(conn) = slot.get() else {
            continue;
        };
        let mut conn = conn.clone();
        let ping = redis::cmd("PING");
        if store
            .within(ping.query_async::<String>(&mut conn))
            .await
            .is_err()
        {
            return;
        }
    }
    store.recovered();
}
