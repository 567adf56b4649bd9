//! Reading one page of a list out of a snapshot with the paging rules of the
//! apiserver's etcd3 store: key order, `limit`, the continue key, and
//! `remainingItemCount` only for unfiltered lists.

pub use super::counts::RemainingCounts;
use super::counts::Version;
use super::{Entry, Items};
use crate::selector::{FieldSelector, LabelSelector};
use std::ops::Bound;
use std::sync::Arc;

pub struct PageRequest<'a> {
    /// `ns/` for a namespaced list, "" for all.
    pub prefix: &'a str,
    /// The continue key, relative to `prefix` (already past the last key).
    pub start: Option<&'a str>,
    /// 0 for no paging.
    pub limit: usize,
    pub labels: &'a LabelSelector,
    pub fields: &'a FieldSelector,
}

pub struct Page<M = ()> {
    pub items: Vec<Arc<Entry<M>>>,
    /// Set when more keys follow: the key to continue after, relative to the prefix.
    pub continue_after: Option<String>,
    pub remaining: Option<i64>,
}

impl PageRequest<'_> {
    pub fn matches<M>(&self, e: &Entry<M>) -> bool {
        self.labels.matches(|k| e.label(k)) && self.fields.matches(|f| e.field(f))
    }
}

/// A whole list's items walked from a snapshot as they are written (no
/// limit, so no continue key or count): those under `prefix` that match the
/// selectors, in key order, read [`WALK_BATCH`] keys at a time, each batch
/// a fresh descent of the snapshot's tree past the last key seen — the walk
/// holds the snapshot, not an iterator into it. What a streamed list of a
/// million objects reads before its first byte is its first batch.
pub struct Walk<M> {
    items: Items<M>,
    prefix: String,
    labels: LabelSelector,
    fields: FieldSelector,
    /// The last key examined.
    after: Option<Box<str>>,
    batch: std::collections::VecDeque<Arc<Entry<M>>>,
    done: bool,
}

/// Keys a walk examines at a time.
pub const WALK_BATCH: usize = 256;

impl<M> Walk<M> {
    pub fn new(
        items: Items<M>,
        prefix: &str,
        labels: &LabelSelector,
        fields: &FieldSelector,
    ) -> Self {
        Walk {
            items,
            prefix: prefix.to_string(),
            labels: labels.clone(),
            fields: fields.clone(),
            after: None,
            batch: Default::default(),
            done: false,
        }
    }

    fn refill(&mut self) {
        let start = match &self.after {
            Some(k) => Bound::Excluded(&**k),
            None => Bound::Included(self.prefix.as_str()),
        };
        let mut examined = 0;
        let mut last = None;
        let mut range = self
            .items
            .range((start, Bound::Unbounded))
            .take_while(|e| e.key.starts_with(self.prefix.as_str()));
        for e in range.by_ref() {
            examined += 1;
            if self.labels.matches(|k| e.label(k)) && self.fields.matches(|f| e.field(f)) {
                self.batch.push_back(e.clone());
            }
            if examined == WALK_BATCH {
                last = Some(e.key.clone());
                break;
            }
        }
        match last {
            Some(k) => self.after = Some(k),
            // The keys under the prefix ran out.
            None => self.done = true,
        }
    }
}

impl<M> Iterator for Walk<M> {
    type Item = Arc<Entry<M>>;

    fn next(&mut self) -> Option<Arc<Entry<M>>> {
        while self.batch.is_empty() && !self.done {
            self.refill();
        }
        self.batch.pop_front()
    }
}

pub fn read_page<M>(items: &Items<M>, req: &PageRequest<'_>) -> Page<M> {
    read_page_counted(items, req, None)
}

/// `counts` with the snapshot's version: what a walk's pages learn of the
/// rest.
pub fn read_page_counted<M>(
    items: &Items<M>,
    req: &PageRequest<'_>,
    counts: Option<(&RemainingCounts, Version)>,
) -> Page<M> {
    let start_key = format!("{}{}", req.prefix, req.start.unwrap_or(""));
    let mut range = items
        .range((Bound::Included(start_key.as_str()), Bound::Unbounded))
        .take_while(|e| e.key.starts_with(req.prefix));
    let mut out = Vec::new();
    let mut has_more = false;
    for e in range.by_ref() {
        if req.limit > 0 && out.len() >= req.limit {
            // etcd reports more keys past a full page whether or not they match.
            has_more = true;
            break;
        }
        if req.matches(e) {
            out.push(e.clone());
        }
    }
    if !has_more {
        return Page {
            items: out,
            continue_after: None,
            remaining: None,
        };
    }
    // Unfiltered, every examined key was returned, so etcd's `count - limit`
    // is the keys after this page: the one that ended the walk and the rest.
    let unfiltered = req.labels.is_empty() && req.fields.is_empty();
    let last = out.last().map(|e| e.key[req.prefix.len()..].to_string());
    let remaining = unfiltered.then(|| {
        let known = counts.and_then(|(c, rv)| c.get(rv, &start_key));
        let left = match known {
            Some(from_start) => from_start - out.len() as i64,
            None => range.count() as i64 + 1,
        };
        if let (Some((c, rv)), Some(last)) = (counts, &last) {
            c.put(rv, format!("{}{last}\u{0}", req.prefix), left);
        }
        left
    });
    Page {
        items: out,
        continue_after: last,
        remaining,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Attrs;

    fn items(keys: &[&str]) -> Items {
        keys.iter()
            .map(|k| {
                let mut e = Entry::for_test(k, 1);
                if k.ends_with('x') {
                    e.attrs = Attrs::new([("sel".into(), "yes".into())], Vec::new());
                }
                Arc::new(e)
            })
            .collect()
    }

    fn walk(
        it: &Items,
        prefix: &str,
        limit: usize,
        labels: &LabelSelector,
    ) -> Vec<(Vec<String>, Option<i64>)> {
        walk_with(it, prefix, limit, labels, None)
    }

    fn walk_counted(
        it: &Items,
        prefix: &str,
        limit: usize,
        counts: Option<(&RemainingCounts, Version)>,
    ) -> Vec<(Vec<String>, Option<i64>)> {
        walk_with(it, prefix, limit, &LabelSelector::default(), counts)
    }

    fn walk_with(
        it: &Items,
        prefix: &str,
        limit: usize,
        labels: &LabelSelector,
        counts: Option<(&RemainingCounts, Version)>,
    ) -> Vec<(Vec<String>, Option<i64>)> {
        let fields = FieldSelector::default();
        let mut pages = Vec::new();
        let mut start: Option<String> = None;
        loop {
            let p = read_page_counted(
                it,
                &PageRequest {
                    prefix,
                    start: start.as_deref(),
                    limit,
                    labels,
                    fields: &fields,
                },
                counts,
            );
            pages.push((
                p.items.iter().map(|e| e.key.to_string()).collect(),
                p.remaining,
            ));
            match p.continue_after {
                Some(k) => start = Some(format!("{k}\u{0}")),
                None => return pages,
            }
        }
    }

    #[test]
    fn pages_walk_in_key_order_with_remaining_counts() {
        let it = items(&["a/1", "a/2", "b/1", "b/2", "c/1"]);
        let pages = walk(&it, "", 2, &LabelSelector::default());
        assert_eq!(
            pages,
            vec![
                (vec!["a/1".into(), "a/2".into()], Some(3)),
                (vec!["b/1".into(), "b/2".into()], Some(1)),
                (vec!["c/1".into()], None),
            ]
        );
    }

    #[test]
    fn a_walk_that_remembers_its_counts_reports_what_a_counting_walk_does() {
        let keys: Vec<String> = (0..57).map(|i| format!("n{}/{i:03}", i % 3)).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let it = items(&keys);
        let counts = RemainingCounts::default();
        for prefix in ["", "n1/"] {
            let counting = walk(&it, prefix, 5, &LabelSelector::default());
            let remembering = walk_counted(&it, prefix, 5, Some((&counts, (0, 7))));
            assert_eq!(remembering, counting, "prefix {prefix:?}");
            // And again, with every count already known.
            let again = walk_counted(&it, prefix, 5, Some((&counts, (0, 7))));
            assert_eq!(again, counting, "prefix {prefix:?}, counts known");
        }
    }

    #[test]
    fn remembered_counts_belong_to_their_snapshot_and_are_bounded() {
        let it = items(&["a/1", "a/2", "a/3"]);
        let counts = RemainingCounts::default();
        walk_counted(&it, "", 1, Some((&counts, (0, 7))));
        // The same keys at another rv: a different state, counted afresh.
        let other = items(&["a/1", "a/2", "a/25", "a/3"]);
        let pages = walk_counted(&other, "", 1, Some((&counts, (0, 8))));
        let rems: Vec<_> = pages.iter().map(|p| p.1).collect();
        assert_eq!(rems, vec![Some(3), Some(2), Some(1), None]);
        for rv in 0..(crate::store::counts::REMEMBERED_WALKS as u64 + 10) {
            counts.put((0, rv), "k".into(), 1);
        }
        assert_eq!(counts.len(), crate::store::counts::REMEMBERED_WALKS);
    }

    #[test]
    fn an_exactly_full_last_page_has_no_continue() {
        let it = items(&["a/1", "a/2"]);
        let pages = walk(&it, "", 2, &LabelSelector::default());
        assert_eq!(pages, vec![(vec!["a/1".into(), "a/2".into()], None)]);
    }

    #[test]
    fn a_namespace_prefix_bounds_the_walk() {
        let it = items(&["a/1", "b/1", "b/2", "b/3", "c/1"]);
        let pages = walk(&it, "b/", 2, &LabelSelector::default());
        assert_eq!(pages[0], (vec!["b/1".into(), "b/2".into()], Some(1)));
        assert_eq!(pages[1], (vec!["b/3".into()], None));
    }

    #[test]
    fn filtered_pages_have_no_remaining_count_and_may_end_empty() {
        let it = items(&["a/1x", "a/2", "a/3x", "a/4"]);
        let sel = LabelSelector::parse("sel=yes").unwrap();
        let pages = walk(&it, "", 2, &sel);
        // Like etcd: the page fills at a/3x and a/4 is still unexamined.
        assert_eq!(
            pages,
            vec![(vec!["a/1x".into(), "a/3x".into()], None), (vec![], None)]
        );
    }

    #[test]
    fn no_limit_returns_everything() {
        let it = items(&["a/1", "a/2", "b/1"]);
        let pages = walk(&it, "", 0, &LabelSelector::default());
        assert_eq!(pages.len(), 1);
        assert_eq!(pages[0].0.len(), 3);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn a_walk_is_the_whole_list_read_as_one_page(
            keys in proptest::collection::btree_set("(a|b|c)/[a-z]{1,3}x?", 0..700),
            prefix in "(|a/|b/|c/)",
            selected in proptest::bool::ANY,
        ) {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            let it = items(&keys);
            let labels = if selected {
                LabelSelector::parse("sel=yes").unwrap()
            } else {
                LabelSelector::default()
            };
            let fields = FieldSelector::default();
            let page = read_page(&it, &PageRequest { prefix: &prefix, start: None, limit: 0, labels: &labels, fields: &fields });
            let walked: Vec<Box<str>> = Walk::new(it.clone(), &prefix, &labels, &fields).map(|e| e.key.clone()).collect();
            let read: Vec<Box<str>> = page.items.iter().map(|e| e.key.clone()).collect();
            proptest::prop_assert_eq!(walked, read);
        }
    }
}
