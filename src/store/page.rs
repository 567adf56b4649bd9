//! Reading one page of a list out of a snapshot with the paging rules of the
//! apiserver's etcd3 store: key order, `limit`, the continue key, and
//! `remainingItemCount` only for unfiltered lists.

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

pub fn read_page<M>(items: &Items<M>, req: &PageRequest<'_>) -> Page<M> {
    let start_key = format!("{}{}", req.prefix, req.start.unwrap_or(""));
    let mut range = items
        .range::<_, str>((Bound::Included(start_key.as_str()), Bound::Unbounded))
        .take_while(|(k, _)| k.starts_with(req.prefix));
    let mut out = Vec::new();
    let mut has_more = false;
    for (_, e) in range.by_ref() {
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
    let remaining = unfiltered.then(|| range.count() as i64 + 1);
    let last = out.last().map(|e| e.key[req.prefix.len()..].to_string());
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
                (Arc::from(*k), Arc::new(e))
            })
            .collect()
    }

    fn walk(
        it: &Items,
        prefix: &str,
        limit: usize,
        labels: &LabelSelector,
    ) -> Vec<(Vec<String>, Option<i64>)> {
        let fields = FieldSelector::default();
        let mut pages = Vec::new();
        let mut start: Option<String> = None;
        loop {
            let p = read_page(
                it,
                &PageRequest {
                    prefix,
                    start: start.as_deref(),
                    limit,
                    labels,
                    fields: &fields,
                },
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
}
