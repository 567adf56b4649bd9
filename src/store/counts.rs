//! What page walks have learnt of the keys left in their range, for
//! `remainingItemCount` (`page`).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// How many keys are left from where each walk will continue, learnt from
/// the page before it. Counting the rest of the range on every page made a
/// `limit=500` walk of a million objects quadratic (each page walked the
/// remainder: 2,000 pages × ½ million keys); with this, only a walk's first
/// page counts, the others subtract.
///
/// Keyed by snapshot version (epoch, rv) and absolute start key; the store
/// clears it when a relist replaces its state. Bounded: the oldest entries go first, and a
/// walk whose count went counts its next page again.
#[derive(Default)]
pub struct RemainingCounts {
    inner: Mutex<CountsInner>,
}

#[derive(Default)]
struct CountsInner {
    /// (version, start key) → the keys of the range from the start key on.
    from: HashMap<(Version, String), i64>,
    order: VecDeque<(Version, String)>,
}

/// A snapshot's (epoch, rv).
pub(super) type Version = (u64, u64);

/// Walks remembered at once: one per page walk in progress.
pub(super) const REMEMBERED_WALKS: usize = 4096;

impl RemainingCounts {
    pub(super) fn get(&self, rv: Version, start: &str) -> Option<i64> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        // No allocation for the lookup would need a borrowed tuple key; a
        // page's read allocates far more than this key.
        inner.from.get(&(rv, start.to_string())).copied()
    }

    pub(super) fn put(&self, rv: Version, start: String, count: i64) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let key = (rv, start);
        if inner.from.insert(key.clone(), count).is_none() {
            inner.order.push_back(key);
            if inner.order.len() > REMEMBERED_WALKS {
                if let Some(old) = inner.order.pop_front() {
                    inner.from.remove(&old);
                }
            }
        }
    }

    pub fn clear(&self) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.from.clear();
        inner.order.clear();
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.inner.lock().unwrap().from.len()
    }
}
