//! The models a backend's health checks follow, each with a slot that
//! indexes every replica's ready / not-ready flags: the models its routes
//! list (always), and up to `max_checked_models` more that a default route
//! served (followed from their first successful request, dropped when
//! no one has asked for them for [`IDLE`] and room is needed). A model
//! that is not followed is sent to any healthy replica.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::health::now_ms;

/// A model nobody asked for this long may make room for another.
pub(super) const IDLE: Duration = Duration::from_secs(300);

/// A followed model.
#[derive(Debug)]
pub(super) struct Followed {
    pub name: String,
    /// Its index in every replica's flags.
    pub slot: usize,
    /// Listed by a route (never dropped).
    pub configured: bool,
    /// When it was last asked for (ms).
    asked: AtomicU64,
}

impl Followed {
    fn idle(&self, now: u64) -> bool {
        let idle = u64::try_from(IDLE.as_millis()).unwrap_or(u64::MAX);
        !self.configured && now.saturating_sub(self.asked.load(Ordering::Relaxed)) >= idle
    }
}

#[derive(Debug, Default)]
struct Table {
    by_name: HashMap<String, Arc<Followed>>,
    /// Slots of models that are not followed.
    free: Vec<usize>,
}

/// A backend's followed models.
#[derive(Debug)]
pub(super) struct Models {
    table: RwLock<Table>,
    slots: usize,
}

impl Models {
    /// Follows `configured` (duplicates once) and has room for `on_demand`
    /// more.
    pub(super) fn new(configured: &[String], on_demand: usize) -> Models {
        let mut table = Table::default();
        for name in configured {
            let slot = table.by_name.len();
            table.by_name.entry(name.clone()).or_insert_with(|| {
                Arc::new(Followed {
                    name: name.clone(),
                    slot,
                    configured: true,
                    asked: AtomicU64::new(0),
                })
            });
        }
        let fixed = table.by_name.len();
        let slots = fixed + on_demand;
        table.free = (fixed..slots).rev().collect();
        Models {
            table: RwLock::new(table),
            slots,
        }
    }

    /// How many flags each replica needs.
    pub(super) fn slots(&self) -> usize {
        self.slots
    }

    /// The followed model `name`, marked as asked for now.
    pub(super) fn get(&self, name: &str) -> Option<Arc<Followed>> {
        let table = self.table.read().unwrap_or_else(|p| p.into_inner());
        let t = table.by_name.get(name)?;
        let now = now_ms();
        // A store per second at most: the line stays shared between cores.
        if now.saturating_sub(t.asked.load(Ordering::Relaxed)) > 1000 {
            t.asked.store(now, Ordering::Relaxed);
        }
        Some(t.clone())
    }

    /// The followed model `name`, not counted as asked for.
    pub(super) fn peek(&self, name: &str) -> Option<Arc<Followed>> {
        let table = self.table.read().unwrap_or_else(|p| p.into_inner());
        table.by_name.get(name).cloned()
    }

    /// Starts following `name`, making room by dropping the model idle the
    /// longest if needed. Returns it and the slot it took over (whose
    /// flags the caller clears), or `None` when there is no room.
    pub(super) fn follow(&self, name: &str) -> Option<(Arc<Followed>, bool)> {
        let mut table = self.table.write().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = table.by_name.get(name) {
            return Some((t.clone(), false));
        }
        let now = now_ms();
        let (slot, reused) = match table.free.pop() {
            Some(slot) => (slot, false),
            None => {
                let oldest = table
                    .by_name
                    .values()
                    .filter(|t| t.idle(now))
                    .min_by_key(|t| t.asked.load(Ordering::Relaxed))?
                    .name
                    .clone();
                let gone = table.by_name.remove(&oldest)?;
                (gone.slot, true)
            }
        };
        let t = Arc::new(Followed {
            name: name.to_owned(),
            slot,
            configured: false,
            asked: AtomicU64::new(now),
        });
        table.by_name.insert(name.to_owned(), t.clone());
        Some((t, reused))
    }

    /// The models to check now: every configured one, and those asked for
    /// within [`IDLE`].
    pub(super) fn to_check(&self) -> Vec<Arc<Followed>> {
        let now = now_ms();
        let table = self.table.read().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<_> = table
            .by_name
            .values()
            .filter(|t| !t.idle(now))
            .cloned()
            .collect();
        out.sort_by_key(|t| t.slot);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_models_take_the_first_slots() {
        let m = Models::new(&["a".into(), "b".into(), "a".into()], 2);
        assert_eq!(m.slots(), 4);
        assert_eq!(m.get("a").unwrap().slot, 0);
        assert_eq!(m.get("b").unwrap().slot, 1);
        assert!(m.get("a").unwrap().configured);
        assert!(m.get("c").is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn on_demand_models_are_bounded_and_idle_ones_make_room() {
        let m = Models::new(&["a".into()], 2);
        let (c, reused) = m.follow("c").unwrap();
        assert_eq!((c.slot, reused, c.configured), (1, false, false));
        assert_eq!(m.follow("c").unwrap().0.slot, 1, "already followed");
        assert_eq!(m.follow("d").unwrap().0.slot, 2);
        assert!(m.follow("e").is_none(), "full, nothing idle");
        tokio::time::advance(IDLE / 2).await;
        m.get("d");
        tokio::time::advance(IDLE / 2 + Duration::from_secs(1)).await;
        let names = |m: &Models| {
            m.to_check()
                .iter()
                .map(|t| t.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&m), ["a", "d"], "c is idle: not checked");
        let (e, reused) = m.follow("e").unwrap();
        assert_eq!((e.slot, reused), (1, true), "c's slot, taken over");
        assert!(m.get("c").is_none());
        assert_eq!(names(&m), ["a", "e", "d"]);
    }
}
