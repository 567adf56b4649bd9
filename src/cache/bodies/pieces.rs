//! Gzipped compact JSON lists stitched from pieces compressed once per
//! object version. Each item is compressed as the piece that follows its
//! predecessor in key order — the predecessor's bytes are the window its
//! matches reach back into — so after an event the newest list costs
//! compressing the changed objects and their successors and copying the
//! rest, not compressing the whole list again (benches/micro.rs, 10k pods:
//! stitching 4.3 ms, compressing whole 43-61 ms, 9.7% of the JSON against
//! 8.7%).
//!
//! A piece is only valid right after the very entry it was made after; a
//! body's first item follows the list's head instead and is compressed for
//! it each time. Pieces are kept per type across snapshots, charged to the
//! kept bodies' budget, and made in the background for a whole snapshot the
//! first time: until then, and whenever more than one in eight is missing,
//! the body is compressed whole (and a kept one is stitched on the first
//! request after the fill, see [`Pieces::fills`]).

use super::budget::Budget;
use super::compress::{stitch, Piece};
use super::finish::{FinishError, Finished};
use crate::encode::codec::{Entry, Items};
use crate::encode::json;
use crate::encode::recycle::NoMemory;
use crate::metrics::{self, GzipHow};
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// One type's pieces.
pub struct Pieces {
    budget: Arc<Budget>,
    inner: Mutex<Inner>,
    filling: AtomicBool,
    /// Fills finished: a body compressed whole before the last one could
    /// now be stitched.
    fills: AtomicU64,
    /// Bodies stitched, and compressed whole for want of pieces.
    stitched: AtomicU64,
    whole: AtomicU64,
}

#[derive(Default)]
struct Inner {
    /// foldhash, not SipHash: hashing every key of a 10k-item list was a
    /// quarter of a stitch (perf); its seed is still random per process.
    by_key: foldhash::HashMap<Box<str>, Slot>,
    charged: usize,
}

struct Slot {
    /// The entries it was made for and after. Weak, not addresses: the
    /// allocation stays, so no newer entry can take a dead one's address
    /// and be mistaken for it.
    item: Weak<Entry>,
    after: Weak<Entry>,
    piece: Arc<Piece>,
}

impl Slot {
    fn fits(&self, item: &Arc<Entry>, after: &Arc<Entry>) -> bool {
        std::ptr::eq(self.item.as_ptr(), Arc::as_ptr(item))
            && std::ptr::eq(self.after.as_ptr(), Arc::as_ptr(after))
    }

    fn cost(&self, key: &str) -> usize {
        self.piece.len() + key.len() + std::mem::size_of::<(Box<str>, Slot, Piece)>()
    }
}

/// `item` compressed to follow `after` with a comma between.
fn piece_after(after: &Entry, item: &Entry) -> Piece {
    Piece::new(&after.item, &[b",", &item.item])
}

impl Pieces {
    /// A compact JSON list, gzipped: stitched from its items' pieces when
    /// they are at hand, compressed whole otherwise — off the async
    /// workers either way. Compressed whole, the list's JSON is held
    /// beside its compressed copy, which stitching never makes: `whole`
    /// is asked for room for it first, and its refusal is the answer.
    pub async fn gzip_list<R, E>(
        self: Arc<Self>,
        head: Vec<u8>,
        items: Vec<Arc<Entry>>,
        tail: Vec<u8>,
        all: Items,
        whole: impl FnOnce() -> Result<R, E> + Send + 'static,
    ) -> Result<Result<Finished, E>, FinishError>
    where
        R: Send + 'static,
        E: Send + 'static,
    {
        let work = move || -> Result<Result<Finished, E>, NoMemory> {
            let bytes = match self.stitch(&head, &items, &tail, &all)? {
                Some(z) => z,
                None => {
                    let _room = match whole() {
                        Ok(room) => room,
                        Err(e) => return Ok(Err(e)),
                    };
                    super::compress::gzip(&json::join(&head, &items, &tail)?)?
                }
            };
            Ok(Ok(Finished {
                bytes,
                gzipped: true,
            }))
        };
        tokio::task::spawn_blocking(work)
            .await
            .map_err(FinishError::Task)?
            .map_err(FinishError::NoMemory)
    }

    pub fn new(budget: Arc<Budget>) -> Self {
        Pieces {
            budget,
            inner: Mutex::default(),
            filling: AtomicBool::new(false),
            fills: AtomicU64::new(0),
            stitched: AtomicU64::new(0),
            whole: AtomicU64::new(0),
        }
    }

    /// How many fills (making the pieces of a whole snapshot in the
    /// background) have finished.
    pub fn fills(&self) -> u64 {
        self.fills.load(Ordering::Acquire)
    }

    /// (bodies stitched, bodies compressed whole) so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.stitched.load(Ordering::Relaxed),
            self.whole.load(Ordering::Relaxed),
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The gzip body of `head`, the comma-separated `items` and `tail`,
    /// stitched, or None when more than one in eight pieces is missing; in
    /// that case making them for `all` (the snapshot the items are a
    /// key-ordered run of) begins in the background. Blocks: call it off
    /// the async workers.
    pub fn stitch(
        self: &Arc<Self>,
        head: &[u8],
        items: &[Arc<Entry>],
        tail: &[u8],
        all: &Items,
    ) -> Result<Option<Bytes>, NoMemory> {
        let Some((first, rest)) = items.split_first() else {
            return Ok(None);
        };
        let mut found: Vec<Option<Arc<Piece>>> = {
            let inner = self.lock();
            items
                .windows(2)
                .map(|w| {
                    let slot = inner.by_key.get(&*w[1].key)?;
                    slot.fits(&w[1], &w[0]).then(|| slot.piece.clone())
                })
                .collect()
        };
        let missing = found.iter().filter(|p| p.is_none()).count();
        if missing > items.len() / 8 {
            self.fill(all.clone());
            self.whole.fetch_add(1, Ordering::Relaxed);
            metrics::gzip_list(GzipHow::Whole);
            return Ok(None);
        }
        let mut made = Vec::with_capacity(missing);
        for (i, p) in found.iter_mut().enumerate() {
            if p.is_none() {
                let piece = Arc::new(piece_after(&items[i], &rest[i]));
                made.push((items[i].clone(), rest[i].clone(), piece.clone()));
                *p = Some(piece);
            }
        }
        let head_piece = Piece::new(b"", &[head]);
        let first_piece = Piece::new(head, &[&first.item]);
        let last = items.last().map_or(&first.item, |e| &e.item);
        let tail_piece = Piece::new(last, &[tail]);
        let body = stitch(
            [&head_piece, &first_piece]
                .into_iter()
                .chain(found.iter().flatten().map(|p| &**p))
                .chain([&tail_piece]),
        );
        // The pieces just made serve the next list even if this one failed.
        self.keep(made, all.len());
        let body = body?;
        self.stitched.fetch_add(1, Ordering::Relaxed);
        metrics::gzip_list(GzipHow::Stitched);
        Ok(Some(body))
    }

    /// Makes the pieces of every item of `all` that has none, unless that
    /// is already under way.
    fn fill(self: &Arc<Self>, all: Items) {
        // Pieces that could not be kept would be made again and again.
        if !self.budget.has_room() || self.filling.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = self.clone();
        let work = move || {
            let entries: Vec<&Arc<Entry>> = all.iter().collect();
            // In batches, so that stitching is not held up meanwhile.
            let mut complete = true;
            for batch in entries.windows(2).collect::<Vec<_>>().chunks(256) {
                if !me.budget.has_room() {
                    complete = false;
                    break;
                }
                let todo: Vec<_> = {
                    let inner = me.lock();
                    batch
                        .iter()
                        .filter(|w| {
                            !inner
                                .by_key
                                .get(&*w[1].key)
                                .is_some_and(|s| s.fits(w[1], w[0]))
                        })
                        .collect()
                };
                let made: Vec<_> = todo
                    .into_iter()
                    .map(|w| {
                        (
                            w[0].clone(),
                            w[1].clone(),
                            Arc::new(piece_after(w[0], w[1])),
                        )
                    })
                    .collect();
                if !me.keep(made, all.len()) {
                    complete = false;
                    break;
                }
            }
            // Only a complete fill: one cut short by the budget would have
            // bodies remade whole over and over.
            if complete {
                me.fills.fetch_add(1, Ordering::AcqRel);
            }
            me.filling.store(false, Ordering::Release);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(work)),
            Err(_) => work(),
        }
    }

    /// Keeps pieces just made, as far as the budget allows (false once it
    /// does not), and lets go of those of dead entries once they are a
    /// third of what is kept for a type of `live` objects.
    fn keep(&self, made: Vec<(Arc<Entry>, Arc<Entry>, Arc<Piece>)>, live: usize) -> bool {
        let mut inner = self.lock();
        let mut fits = true;
        for (after, item, piece) in made {
            let slot = Slot {
                item: Arc::downgrade(&item),
                after: Arc::downgrade(&after),
                piece,
            };
            let cost = slot.cost(&item.key);
            if !self.budget.take(cost) {
                fits = false;
                break;
            }
            inner.charged += cost;
            if let Some(old) = inner.by_key.insert(item.key.clone(), slot) {
                let freed = old.cost(&item.key);
                inner.charged -= freed;
                self.budget.give_back(freed);
            }
        }
        if inner.by_key.len() > live + live / 2 + 64 {
            let mut freed = 0;
            inner.by_key.retain(|k, s| {
                let alive = s.item.strong_count() > 0;
                if !alive {
                    freed += s.cost(k);
                }
                alive
            });
            inner.charged -= freed;
            self.budget.give_back(freed);
        }
        fits
    }
}

impl Drop for Pieces {
    fn drop(&mut self) {
        let charged = self.lock().charged;
        self.budget.give_back(charged);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::codec::{ListStyle, TypeCodec};
    use crate::encode::json;
    use crate::encode::list_meta::ListMeta;
    use flate2::read::GzDecoder;
    use rand::{RngExt, SeedableRng};
    use std::io::Read;

    fn codec() -> TypeCodec {
        TypeCodec::new("", "v1", "Pod", true, ListStyle::Typed)
    }

    fn pod(i: usize, rv: u64) -> Arc<Entry> {
        pod_like(i, i, rv)
    }

    /// Pod `i`'s key with the content of fixture pod `look`.
    fn pod_like(i: usize, look: usize, rv: u64) -> Arc<Entry> {
        let mut p = crate::fixtures::pod(&format!("ns-{}", i % 7), look);
        p["metadata"]["name"] = format!("pod-{i:05}").into();
        p["metadata"]["resourceVersion"] = rv.to_string().into();
        Arc::new(
            codec()
                .from_object(&serde_json::to_vec(&p).unwrap())
                .unwrap(),
        )
    }

    fn items(entries: impl IntoIterator<Item = Arc<Entry>>) -> Items {
        entries.into_iter().collect()
    }

    fn gunzip(z: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        GzDecoder::new(z).read_to_end(&mut out).unwrap();
        out
    }

    /// Stitches the key-ordered run `run` of `all` and checks it against
    /// the list assembled plainly.
    fn check(pieces: &Arc<Pieces>, all: &Items, run: &[Arc<Entry>]) -> Option<()> {
        let meta = ListMeta {
            resource_version: 42,
            continue_token: None,
            remaining_item_count: None,
        };
        let c = codec();
        let (head, tail) = json::list_ends(&c, &meta);
        let z = pieces.stitch(&head, run, &tail, all).unwrap()?;
        let plain = crate::encode::Repr::Json.list(&c, &meta, run).unwrap();
        assert!(
            gunzip(&z) == plain[..],
            "a stitched body differs from the list"
        );
        Some(())
    }

    fn budget() -> Arc<Budget> {
        Arc::new(Budget::default())
    }

    #[test]
    fn lists_are_compressed_whole_until_the_pieces_are_made_then_stitched() {
        let all = items((0..300).map(|i| pod(i, 10 + i as u64)));
        let run: Vec<_> = all.iter().cloned().collect();
        let pieces = Arc::new(Pieces::new(budget()));
        // No runtime here: the first miss makes them all at once.
        assert_eq!(check(&pieces, &all, &run), None);
        assert_eq!(check(&pieces, &all, &run), Some(()));
        // A run from the middle (a page, a namespace) starts after its head.
        assert_eq!(check(&pieces, &all, &run[100..160]), Some(()));
        assert_eq!(check(&pieces, &all, &run[299..]), Some(()));
    }

    #[test]
    fn after_random_changes_every_stitched_list_is_the_list() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let mut all = items((0..200).map(|i| pod(i * 2, 1)));
        let pieces = Arc::new(Pieces::new(budget()));
        check(&pieces, &all, &all.iter().cloned().collect::<Vec<_>>());
        let mut rv = 2;
        let mut stitched = 0;
        for _ in 0..200 {
            // Modify, delete or insert a few objects, as events do.
            for _ in 0..rng.random_range(1..6) {
                rv += 1;
                let i = rng.random_range(0..400);
                let e = pod(i, rv);
                if rng.random_bool(0.3) {
                    all.remove(&e.key);
                } else {
                    all.insert(e);
                }
            }
            let run: Vec<_> = all.iter().cloned().collect();
            let from = rng.random_range(0..run.len() / 2);
            stitched += check(&pieces, &all, &run).is_some() as usize;
            stitched += check(&pieces, &all, &run[from..]).is_some() as usize;
        }
        assert!(stitched > 300, "only {stitched} of 400 were stitched");
        // Pieces of deleted objects do not pile up.
        assert!(pieces.lock().by_key.len() <= all.len() + all.len() / 2 + 64);
    }

    #[test]
    fn a_relist_replaces_every_entry_and_nothing_stale_is_stitched() {
        let before = items((0..100).map(|i| pod(i, 5)));
        let pieces = Arc::new(Pieces::new(budget()));
        check(
            &pieces,
            &before,
            &before.iter().cloned().collect::<Vec<_>>(),
        );
        // Same keys and versions, new entries: their pieces must be remade.
        let after = items((0..100).map(|i| pod_like(i, i + 1000, 5)));
        let run: Vec<_> = after.iter().cloned().collect();
        assert_eq!(check(&pieces, &after, &run), None);
        assert_eq!(check(&pieces, &after, &run), Some(()));
    }

    #[test]
    fn pieces_stay_within_the_budget_and_give_it_back() {
        let all = items((0..200).map(|i| pod(i, 5)));
        let run: Vec<_> = all.iter().cloned().collect();
        let b = budget();
        b.set_limit(20_000);
        let pieces = Arc::new(Pieces::new(b.clone()));
        for _ in 0..3 {
            // Too few pieces fit: compressed whole every time.
            assert_eq!(check(&pieces, &all, &run), None);
        }
        assert!(b.used() <= 20_000 && b.used() > 0);
        drop(pieces);
        assert_eq!(b.used(), 0);
    }
}
