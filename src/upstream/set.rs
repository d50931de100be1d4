//! A backend's current replicas: a list swapped whole when DNS changes it
//! (requests read a snapshot under a short read lock), replicas that stay
//! keeping their pools, health and series, and a signal for requests that
//! arrive before the first DNS answer.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::watch;

use super::replica::Replica;

/// The replicas of one backend.
#[derive(Debug)]
pub(super) struct ReplicaSet {
    list: RwLock<Arc<[Arc<Replica>]>>,
    /// Whether the list has been filled once (always, for URLs).
    filled: watch::Sender<bool>,
}

impl ReplicaSet {
    pub(super) fn new(replicas: Vec<Arc<Replica>>) -> ReplicaSet {
        let filled = !replicas.is_empty();
        ReplicaSet {
            list: RwLock::new(replicas.into()),
            filled: watch::Sender::new(filled),
        }
    }

    pub(super) fn snapshot(&self) -> Arc<[Arc<Replica>]> {
        self.list.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The replicas, once the list has been filled (else the caller waits
    /// with [`ReplicaSet::ready_snapshot`]).
    pub(super) fn filled_snapshot(&self) -> Option<Arc<[Arc<Replica>]>> {
        let list = self.snapshot();
        (!list.is_empty() || *self.filled.borrow()).then_some(list)
    }

    /// The replicas, waiting up to `wait` for a first list.
    pub(super) async fn ready_snapshot(&self, wait: Duration) -> Arc<[Arc<Replica>]> {
        let list = self.snapshot();
        if !list.is_empty() || *self.filled.borrow() {
            return list;
        }
        let mut rx = self.filled.subscribe();
        let _ = tokio::time::timeout(wait, rx.wait_for(|f| *f)).await;
        self.snapshot()
    }

    /// Replaces the list by one replica per label in `labels`, keeping the
    /// replicas already there and making the others with `make`. Returns
    /// the labels added and removed.
    pub(super) fn update(
        &self,
        labels: &[String],
        make: impl Fn(&str) -> Replica,
    ) -> (Vec<String>, Vec<String>) {
        let old = self.snapshot();
        let mut added = Vec::new();
        let next: Vec<Arc<Replica>> = labels
            .iter()
            .map(|l| match old.iter().find(|r| &r.label == l) {
                Some(r) => r.clone(),
                None => {
                    added.push(l.clone());
                    Arc::new(make(l))
                }
            })
            .collect();
        let removed = old
            .iter()
            .filter(|r| !labels.contains(&r.label))
            .map(|r| r.label.clone())
            .collect();
        *self.list.write().unwrap_or_else(|p| p.into_inner()) = next.into();
        self.filled.send_replace(true);
        (added, removed)
    }
}
