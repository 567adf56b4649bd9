//! The current objects of a type, ordered by key: a persistent B-tree of
//! the entries themselves, each found by the key it holds.
//!
//! A set of entries rather than a map from key to entry: a map's slot
//! held the key's handle beside the entry's (24 bytes, not 8), and with
//! the B-tree's spare room that was 50 bytes per object of 1,060 for
//! 730-byte configmaps; as a set, 29, and the key needs no counts of its
//! own (benches/memory, 1,000,000 configmaps: RSS 1.53× their JSON
//! before, 1.49× after).

use crate::store::entry::Entry;
use imbl::OrdSet;
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::ops::RangeBounds;
use std::sync::Arc;

/// An entry ordered, compared and found by its key alone.
#[derive(Debug)]
struct ByKey<M>(Arc<Entry<M>>);

impl<M> Clone for ByKey<M> {
    fn clone(&self) -> Self {
        ByKey(self.0.clone())
    }
}

impl<M> PartialEq for ByKey<M> {
    fn eq(&self, other: &Self) -> bool {
        self.0.key == other.0.key
    }
}

impl<M> Eq for ByKey<M> {}

impl<M> PartialOrd for ByKey<M> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<M> Ord for ByKey<M> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.key.cmp(&other.0.key)
    }
}

/// As `Ord` compares: by the key's string.
impl<M> Borrow<str> for ByKey<M> {
    fn borrow(&self) -> &str {
        &self.0.key
    }
}

/// The objects by key; cloned in O(1), shared until one side changes.
#[derive(Debug)]
pub struct Items<M = ()>(OrdSet<ByKey<M>>);

impl<M> Clone for Items<M> {
    fn clone(&self) -> Self {
        Items(self.0.clone())
    }
}

impl<M> Default for Items<M> {
    fn default() -> Self {
        Items(OrdSet::new())
    }
}

impl<M> Items<M> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, key: &str) -> Option<&Arc<Entry<M>>> {
        self.0.get(key).map(|e| &e.0)
    }

    /// Adds or replaces the entry under its key; the one it replaced.
    pub fn insert(&mut self, entry: Arc<Entry<M>>) -> Option<Arc<Entry<M>>> {
        self.0.insert(ByKey(entry)).map(|e| e.0)
    }

    pub fn remove(&mut self, key: &str) -> Option<Arc<Entry<M>>> {
        self.0.remove(key).map(|e| e.0)
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Arc<Entry<M>>> + '_ {
        self.0.iter().map(|e| &e.0)
    }

    /// The entries whose keys are in `range`, in key order.
    pub fn range<'a, R: RangeBounds<&'a str>>(
        &self,
        range: R,
    ) -> impl DoubleEndedIterator<Item = &Arc<Entry<M>>> + '_ {
        let bounds = (range.start_bound().cloned(), range.end_bound().cloned());
        self.0.range::<_, str>(bounds).map(|e| &e.0)
    }
}

impl<M> FromIterator<Arc<Entry<M>>> for Items<M> {
    fn from_iter<I: IntoIterator<Item = Arc<Entry<M>>>>(iter: I) -> Self {
        let mut items = Items::new();
        for e in iter {
            items.insert(e);
        }
        items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_found_by_key_replaced_under_it_and_ranged_in_key_order() {
        let mut items: Items = ["b", "a", "c"]
            .into_iter()
            .map(|k| Arc::new(Entry::for_test(k, 1)))
            .collect();
        assert_eq!(items.get("b").map(|e| e.rv), Some(1));
        let old = items.insert(Arc::new(Entry::for_test("b", 2)));
        assert_eq!(old.map(|e| e.rv), Some(1));
        assert_eq!((items.len(), items.get("b").map(|e| e.rv)), (3, Some(2)));
        let keys = |it: &mut dyn Iterator<Item = &Arc<Entry>>| -> Vec<String> {
            it.map(|e| e.key.to_string()).collect()
        };
        assert_eq!(keys(&mut items.iter()), ["a", "b", "c"]);
        assert_eq!(keys(&mut items.range("b"..)), ["b", "c"]);
        use std::ops::Bound::*;
        assert_eq!(
            keys(&mut items.range((Excluded("a"), Unbounded))),
            ["b", "c"]
        );
        assert_eq!(items.remove("a").map(|e| e.rv), Some(1));
        assert_eq!(items.get("a").map(|e| e.rv), None);
        assert_eq!(keys(&mut items.iter()), ["b", "c"]);
    }

    #[test]
    fn a_set_slot_is_one_word() {
        assert_eq!(std::mem::size_of::<ByKey<()>>(), 8);
    }
}
