//! Finished list bodies — laid out and compressed as asked — kept per type
//! for the resourceVersion they were made at, so that the many clients
//! listing the same thing between two events share one assembly, one
//! indentation and one compression. An event (a newer snapshot) drops them.
//!
//! Only lists of the type's newest snapshot without selectors are kept:
//! whole lists (RV=0) and the pages of a walk (stale-served consistent
//! lists and their continuations: every client walking the list at one
//! version gets the same pages). Those are the big, repeated reads.
//! Concurrent misses for one body wait for the first to make it. All types
//! share one byte budget; a body that does not fit is served and not kept.
//! A list likely bigger than [`KEEP_MAX`] is not kept: it is written as each
//! client reads it (`stream`), its first byte at once, rather than built
//! whole before the first client gets any of it.

use super::budget::Budget;
use super::finish::{Finished, Output};
use crate::encode::table::Include;
use crate::encode::Repr;
use crate::metrics;
use crate::request::accept::MetaVersion;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::OnceCell;

/// The biggest list body kept, by its estimate (`keeps`). Bigger ones wait
/// too long to be made whole before their first byte (a 100,000-pod list,
/// 485 MB, ~0.4 s) and take too much of the budget to keep.
pub const KEEP_MAX: usize = 64 << 20;

/// Whether a list of a type holding `objects` objects in `bytes` of JSON is
/// small enough to keep: a page of `limit` (0: all) is estimated at that
/// many objects of the type's mean size, a whole list at the whole type's,
/// and a stitched gzip body (`stitched`) at an eighth of its JSON (pods
/// compress to about a tenth). A namespace's list of a type too big for
/// this is measured by its own items (`keeps_run`).
pub fn keeps(objects: usize, bytes: usize, limit: usize, stitched: bool) -> bool {
    let json = match limit {
        0 => bytes,
        l => bytes.min(l.saturating_mul(bytes / objects.max(1) + 1)),
    };
    let kept = if stitched { json / 8 } else { json };
    kept <= KEEP_MAX
}

/// Whether a run of items of these JSON `sizes` (a namespace's, whose
/// share of its type `keeps` cannot tell) is small enough to keep, read
/// only as far as the answer needs: at most [`KEEP_MAX`] bytes of items
/// (eight times that for a stitched gzip body). A dashboard's namespace of
/// a 100,000-pod type is kept like any small list, not remade per request.
pub fn keeps_run(sizes: impl Iterator<Item = usize>, stitched: bool) -> bool {
    let max = if stitched { KEEP_MAX * 8 } else { KEEP_MAX };
    let mut total = 0usize;
    for s in sizes {
        // The comma between items.
        total += s + 1;
        if total > max {
            return false;
        }
    }
    true
}

/// A list body's identity within one snapshot of one type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BodyKey {
    /// `ns/` or "" (all namespaces).
    pub prefix: String,
    /// A page's start key (after a continue token) and limit; 0 is the
    /// whole list.
    pub start: Option<String>,
    pub limit: usize,
    pub repr: ReprKey,
    pub out: Output,
}

impl BodyKey {
    /// What keeping a body under this key costs besides the body: a walk
    /// with a tiny limit keeps many small pages, and their keys must count
    /// against the budget too.
    fn footprint(&self) -> usize {
        std::mem::size_of::<BodyKey>()
            + std::mem::size_of::<Kept>()
            + self.prefix.len()
            + self.start.as_ref().map_or(0, String::len)
    }
}

/// The parts of a representation a body depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReprKey {
    Json,
    Metadata(MetaVersion),
    Protobuf(Option<MetaVersion>),
    /// A Table also depends on the printer and, through its ages, on the
    /// second it is made in (its generation, see [`BodyCache::get_or_make`]).
    Table {
        version: MetaVersion,
        include: Include,
        printer: u64,
    },
}

impl ReprKey {
    pub fn of(repr: &Repr) -> ReprKey {
        match repr {
            Repr::Json => ReprKey::Json,
            Repr::Metadata(v) => ReprKey::Metadata(*v),
            Repr::Protobuf(v) => ReprKey::Protobuf(*v),
            Repr::Table(t) => ReprKey::Table {
                version: t.version,
                include: t.include,
                printer: t.printer_id(),
            },
        }
    }
}

struct Kept {
    /// Made for this generation of its key (see [`BodyCache::get_or_make`]).
    generation: i64,
    body: Arc<OnceCell<Finished>>,
    /// What it holds of the budget once made.
    charged: usize,
}

struct Inner {
    /// The snapshot version (epoch, rv) the bodies were made of.
    rv: (u64, u64),
    bodies: HashMap<BodyKey, Kept>,
}

/// One type's kept bodies.
pub struct BodyCache {
    budget: Arc<Budget>,
    inner: Mutex<Inner>,
}

impl BodyCache {
    pub fn new(budget: Arc<Budget>) -> Self {
        BodyCache {
            budget,
            inner: Mutex::new(Inner {
                rv: (0, 0),
                bodies: HashMap::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn drop_all(&self, inner: &mut Inner) {
        let freed: usize = inner.bodies.drain().map(|(_, k)| k.charged).sum();
        self.budget.give_back(freed);
    }

    /// The body for `key` at snapshot version `rv` (epoch, rv), made by `make` unless kept for
    /// the same `generation`: what else than the snapshot a body depends on
    /// (a Table's ages: the second it is made in; a gzip list that can be
    /// stitched: how many times its type's pieces were filled, so that a
    /// body compressed whole while they were missing is stitched once they
    /// are there; 0 for the rest).
    pub async fn get_or_make<F, Fut, E>(
        &self,
        rv: (u64, u64),
        key: BodyKey,
        generation: i64,
        make: F,
    ) -> Result<Finished, E>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Finished, E>>,
    {
        let cell = {
            let mut inner = self.lock();
            if rv < inner.rv {
                // An older snapshot than the kept ones: not worth keeping.
                None
            } else {
                Some(self.cell(&mut inner, rv, &key, generation))
            }
        };
        let Some(cell) = cell else {
            return make().await;
        };
        let mut made = false;
        let body = cell
            .get_or_try_init(|| {
                made = true;
                make()
            })
            .await?
            .clone();
        if made {
            self.charge(rv, &key, &cell, body.bytes.len() + key.footprint());
        }
        let outcome = if made {
            metrics::BodyOutcome::Made
        } else {
            metrics::BodyOutcome::Kept
        };
        metrics::list_body(outcome, self.budget.used());
        Ok(body)
    }

    /// The cell for `key` at `rv`, dropping what older versions (or another
    /// generation of the key) kept.
    fn cell(
        &self,
        inner: &mut Inner,
        rv: (u64, u64),
        key: &BodyKey,
        generation: i64,
    ) -> Arc<OnceCell<Finished>> {
        {
            if rv > inner.rv {
                self.drop_all(inner);
                inner.rv = rv;
            }
            let stale = inner
                .bodies
                .get(key)
                .is_some_and(|k| k.generation != generation);
            if stale {
                if let Some(old) = inner.bodies.remove(key) {
                    self.budget.give_back(old.charged);
                }
            }
            inner
                .bodies
                .entry(key.clone())
                .or_insert_with(|| Kept {
                    generation,
                    body: Arc::default(),
                    charged: 0,
                })
                .body
                .clone()
        }
    }

    /// Accounts a body just made, or lets it go when the budget is spent
    /// or the snapshot moved on meanwhile.
    fn charge(&self, rv: (u64, u64), key: &BodyKey, cell: &Arc<OnceCell<Finished>>, n: usize) {
        let mut inner = self.lock();
        let ours = inner.rv == rv
            && inner
                .bodies
                .get(key)
                .is_some_and(|k| Arc::ptr_eq(&k.body, cell));
        if !ours {
            return;
        }
        if self.budget.take(n) {
            if let Some(k) = inner.bodies.get_mut(key) {
                k.charged = n;
            }
        } else {
            inner.bodies.remove(key);
        }
    }
}

impl Drop for BodyCache {
    fn drop(&mut self) {
        let mut inner = std::mem::replace(
            &mut *self.lock(),
            Inner {
                rv: (0, 0),
                bodies: HashMap::new(),
            },
        );
        self.drop_all(&mut inner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn lists_up_to_keep_max_are_kept_and_bigger_ones_streamed() {
        // 10,000 pods of ~4.8 KB: 48 MB whole, kept.
        assert!(keeps(10_000, 48 << 20, 0, false));
        // 100,000: 485 MB whole, streamed; a page of 500, or gzip stitched
        // from pieces (about a tenth), kept.
        assert!(!keeps(100_000, 485 << 20, 0, false));
        assert!(keeps(100_000, 485 << 20, 500, false));
        assert!(keeps(100_000, 485 << 20, 0, true));
        // 1,000,000: even stitched, streamed.
        assert!(!keeps(1_000_000, 4850 << 20, 0, true));
        // An empty type.
        assert!(keeps(0, 0, 500, false));
    }

    #[test]
    fn a_run_of_items_is_kept_when_its_own_bytes_fit_and_read_no_further_than_that() {
        let each = 5_000;
        let fits = KEEP_MAX / (each + 1);
        assert!(keeps_run(std::iter::repeat_n(each, fits), false));
        assert!(!keeps_run(std::iter::repeat_n(each, fits + 1), false));
        assert!(keeps_run(std::iter::repeat_n(each, fits + 1), true));
        // An endless run is answered after the first KEEP_MAX bytes.
        assert!(!keeps_run(std::iter::repeat(each), false));
        assert!(keeps_run(std::iter::empty(), false));
    }

    /// A make that failed, for the tests.
    #[derive(Debug)]
    struct Failed;

    fn key(prefix: &str) -> BodyKey {
        BodyKey {
            prefix: prefix.into(),
            start: None,
            limit: 0,
            repr: ReprKey::Json,
            out: Output::default(),
        }
    }

    fn body(s: &'static str) -> Result<Finished, Failed> {
        Ok(Finished {
            bytes: Bytes::from_static(s.as_bytes()),
            gzipped: false,
        })
    }

    #[tokio::test]
    async fn a_body_is_made_once_per_snapshot_and_dropped_by_a_newer_one() {
        let budget = Arc::new(Budget::default());
        let c = BodyCache::new(budget.clone());
        let made = std::sync::atomic::AtomicUsize::new(0);
        let get = |rv, s: &'static str| {
            let made = &made;
            let c = &c;
            async move {
                c.get_or_make(rv, key(""), 0, || async {
                    made.fetch_add(1, Ordering::SeqCst);
                    body(s)
                })
                .await
                .unwrap()
                .bytes
            }
        };
        assert_eq!(get((0, 5), "a").await, "a");
        assert_eq!(get((0, 5), "b").await, "a", "kept for the same version");
        assert_eq!(made.load(Ordering::SeqCst), 1);
        let one = 1 + key("").footprint();
        assert_eq!(budget.used(), one);
        assert_eq!(get((0, 6), "c").await, "c", "a newer version drops it");
        assert_eq!(
            get((0, 5), "d").await,
            "d",
            "an older version is made, not kept"
        );
        assert_eq!(get((0, 6), "e").await, "c");
        assert_eq!(budget.used(), one);
        // A relist's state at an rv seen before is another state.
        assert_eq!(get((1, 6), "f").await, "f", "a newer epoch drops it");
        assert_eq!(
            get((0, 7), "g").await,
            "g",
            "an older epoch is made, not kept"
        );
        assert_eq!(get((1, 6), "h").await, "f");
        assert_eq!(budget.used(), one);
        drop(c);
        assert_eq!(budget.used(), 0);
    }

    #[tokio::test]
    async fn bodies_are_remade_for_a_new_generation_of_their_key() {
        let c = BodyCache::new(Arc::default());
        let t = |generation, s| {
            c.get_or_make((0, 1), key(""), generation, move || async move { body(s) })
        };
        assert_eq!(t(100, "x").await.unwrap().bytes, "x");
        assert_eq!(t(100, "y").await.unwrap().bytes, "x");
        assert_eq!(t(101, "z").await.unwrap().bytes, "z");
    }

    #[tokio::test]
    async fn bodies_over_the_budget_are_served_and_not_kept() {
        let budget = Arc::new(Budget::default());
        let f = key("a/").footprint();
        budget.set_limit(f + 3);
        let c = BodyCache::new(budget.clone());
        let get =
            |k: &'static str, s| c.get_or_make((0, 1), key(k), 0, move || async move { body(s) });
        assert_eq!(get("a/", "12").await.unwrap().bytes, "12");
        assert_eq!(get("b/", "3456").await.unwrap().bytes, "3456");
        assert_eq!(get("b/", "78").await.unwrap().bytes, "78", "not kept");
        assert_eq!(get("a/", "xx").await.unwrap().bytes, "12", "kept");
        assert_eq!(budget.used(), 2 + f);
    }

    #[tokio::test]
    async fn many_tiny_pages_count_their_keys_against_the_budget() {
        let budget = Arc::new(Budget::default());
        budget.set_limit(100_000);
        let c = BodyCache::new(budget.clone());
        for i in 0..10_000 {
            let mut k = key("");
            k.start = Some(format!("ns/pod-{i:05}"));
            k.limit = 1;
            c.get_or_make((0, 1), k, 0, || async { body("x") })
                .await
                .unwrap();
        }
        let kept = c.lock().bodies.len();
        assert!(kept < 1_000, "{kept} one-byte pages kept in 100 kB");
        assert!(budget.used() <= 100_000);
    }

    #[tokio::test]
    async fn a_failed_make_is_not_kept() {
        let c = BodyCache::new(Arc::default());
        let r = c
            .get_or_make((0, 1), key(""), 0, || async { Err(Failed) })
            .await;
        assert!(r.is_err());
        let r = c
            .get_or_make((0, 1), key(""), 0, || async { body("ok") })
            .await;
        assert_eq!(r.unwrap().bytes, "ok");
    }

    #[tokio::test]
    async fn concurrent_misses_share_one_making() {
        let c = Arc::new(BodyCache::new(Arc::default()));
        let made = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (c, made) = (c.clone(), made.clone());
            tasks.push(tokio::spawn(async move {
                c.get_or_make((0, 1), key(""), 0, || async move {
                    made.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    body("once")
                })
                .await
                .unwrap()
                .bytes
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap(), "once");
        }
        assert_eq!(made.load(Ordering::SeqCst), 1);
    }
}
