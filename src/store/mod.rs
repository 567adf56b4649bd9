//! The watch cache of one resource type: the current objects ordered by key,
//! the history of recent events, snapshots at past resource versions, and the
//! resource version everything up to which has been applied.
//!
//! The state lives behind a synchronous lock that is never held across an
//! await; readers take an O(1) clone of the persistent map and work on that.
//!
//! The store keeps its entries' objects and facts only; what an encoder
//! keeps beside each (`M`) and an event's encoded line are opaque to it.

mod counts;
pub mod entry;
mod items;
pub mod page;

pub use entry::{Attrs, Entry, EntryKey};
pub use items::Items;

use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, watch};

/// Past events after some rv, and the live subscription that follows them.
pub type Replay<M = ()> = (Vec<Arc<Event<M>>>, broadcast::Receiver<Change<M>>);

/// What live subscribers receive, in the order the store saw it: every
/// writer holds the store's writers' lock (`Store::order`) from its change
/// through its send, so that two writers (the reflector's events, a
/// freshness proof's progress) cannot reach subscribers in the other
/// order. A progress at 1073 sent ahead of the event at 1071 it was
/// checked against moved watchers past 1071, which then skipped the event
/// as old (the chaos test's gap, seed 2121). The state lock itself is
/// released before the send: waking 10,000 parked subscribers holds it
/// 2.8 ms per event (`cargo bench --bench micro -- store`), and readers
/// need not wait for that. So a subscriber that subscribes between a
/// change and its send gets the change although its snapshot holds it
/// already: subscribers skip by rv what they have.
#[derive(Debug)]
pub enum Change<M = ()> {
    Event(Arc<Event<M>>),
    /// Nothing changed up to `rv` (an upstream bookmark).
    Progress(u64),
    /// A relist replaced the state at `rv`. `gap` unless the store already
    /// stood at `rv` with the same objects at the same versions: a list
    /// past what the store knew may hide events that left no trace in it
    /// (an object created and deleted in between), so watchers cannot
    /// simply go on from it.
    Relisted {
        rv: u64,
        gap: bool,
    },
    /// A relist that could be told as events (`Store::resync`): they take
    /// the state the store stood at to the list at `rv`, in order (its
    /// deletions last, all at `rv`: when each happened is not known), and
    /// are in the history too. A watcher sends them all, then stands at
    /// `rv`.
    Resynced {
        rv: u64,
        events: Arc<[Arc<Event<M>>]>,
    },
    /// The type is no longer cached (too large, idle): watches end, as the
    /// apiserver's end when its cacher stops, and clients watch again.
    Released,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, kept in the history. `entry` is the object as of the event
/// (for a deletion, the last state stamped with the deletion's rv).
#[derive(Debug)]
pub struct Event<M = ()> {
    pub rv: u64,
    pub kind: EventType,
    pub entry: Arc<Entry<M>>,
    pub prev: Option<Arc<Entry<M>>>,
    at: Instant,
    /// The event as a watch line, encoded once by the first watcher that
    /// sends it as it is and shared by all the others; tagged with the
    /// id of the encoder that wrote it (a watcher holding another encoder
    /// writes its own). Dropped once the event is deeper in the history
    /// than the broadcast reaches (see `Store::apply`).
    pub line: OnceLock<(u64, Bytes)>,
    /// The same as a protobuf frame, shared by protobuf watchers alike.
    pub frame: OnceLock<(u64, Bytes)>,
}

impl<M> Event<M> {
    /// The same event without its encoded line and frame.
    fn without_line(&self) -> Event<M> {
        Event {
            rv: self.rv,
            kind: self.kind,
            entry: self.entry.clone(),
            prev: self.prev.clone(),
            at: self.at,
            line: OnceLock::new(),
            frame: OnceLock::new(),
        }
    }
}

impl<M> Clone for Change<M> {
    fn clone(&self) -> Self {
        match self {
            Change::Event(e) => Change::Event(e.clone()),
            Change::Progress(rv) => Change::Progress(*rv),
            Change::Relisted { rv, gap } => Change::Relisted { rv: *rv, gap: *gap },
            Change::Resynced { rv, events } => Change::Resynced {
                rv: *rv,
                events: events.clone(),
            },
            Change::Released => Change::Released,
        }
    }
}

impl<M> AsRef<Store<M>> for Store<M> {
    fn as_ref(&self) -> &Store<M> {
        self
    }
}

/// A consistent view of the type at one resource version.
pub struct Snapshot<M = ()> {
    pub rv: u64,
    /// Which of the store's lists it descends from: a relist may bring
    /// another state at a resourceVersion the store already had (the old
    /// one had silently missed an event), so what is kept per snapshot is
    /// kept per `version()`, never per rv alone.
    pub epoch: u64,
    pub items: Items<M>,
}

impl<M> Snapshot<M> {
    /// (epoch, rv): ordered as the store's states follow each other.
    pub fn version(&self) -> (u64, u64) {
        (self.epoch, self.rv)
    }
}

impl<M> Clone for Snapshot<M> {
    fn clone(&self) -> Self {
        Snapshot {
            rv: self.rv,
            epoch: self.epoch,
            items: self.items.clone(),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum StoreError {
    #[error("event at resourceVersion {got} is not newer than the store's {have}")]
    NotNewer { got: u64, have: u64 },
    #[error("{kind} event for {key}, which the store does not hold")]
    Missing { kind: &'static str, key: String },
    /// A proof of freshness that does not hold for the state as it is:
    /// a relist came since, or events it saw are not applied yet.
    #[error("the proof at resourceVersion {rv} does not hold yet: the store is at {have}")]
    NotYet { rv: u64, have: u64 },
}

/// How much history to keep: events beyond `capacity`, and events older
/// than `window` but for the last `KEPT_REGARDLESS`, are dropped, which
/// moves the oldest servable resource version forward.
#[derive(Debug, Clone, Copy)]
pub struct HistoryLimits {
    pub capacity: usize,
    pub window: Duration,
}

/// The v1.20 cacher's defaults: its ring of events grows to keep at least
/// `eventFreshDuration` (75 s) of them, up to 100 × 1024, and never shrinks
/// below 100 however old they are. Reads the history no longer reaches are
/// forwarded (Exact, continue tokens); watches get the cacher's 410.
impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits {
            capacity: 100 * 1024,
            window: Duration::from_secs(75),
        }
    }
}

/// The cacher's lower bound: a quiet type keeps its last events however
/// old they are.
const KEPT_REGARDLESS: usize = 100;

struct State<M> {
    items: Items<M>,
    /// The cached objects' serialized size, for the size metrics.
    bytes: usize,
    rv: u64,
    /// Bumped by every relist that cannot be told as events.
    epoch: u64,
    /// Whether `items` is a list's (not the empty start, nor released):
    /// only then can a relist be told as the events from it.
    listed: bool,
    /// Snapshots can be rebuilt for any rv in `oldest..=rv`.
    oldest: u64,
    history: VecDeque<Arc<Event<M>>>,
    /// The last few rebuilt snapshots: a paginated walk asks for the same rv
    /// page after page.
    recent: VecDeque<Snapshot<M>>,
}

pub struct Store<M = ()> {
    state: RwLock<State<M>>,
    /// Taken by every writer around its change and its send, never by a
    /// reader (see `Change`). Taken before `state`.
    order: Mutex<()>,
    limits: HistoryLimits,
    rv_tx: watch::Sender<u64>,
    events: broadcast::Sender<Change<M>>,
    /// What page walks have learnt of the keys left (`remainingItemCount`).
    counts: counts::RemainingCounts,
}

const RECENT_SNAPSHOTS: usize = 4;

/// How far a live subscriber may fall behind before it is cut off.
pub const BROADCAST_CAPACITY: usize = 4096;

impl<M> Store<M> {
    pub fn new(limits: HistoryLimits) -> Self {
        let (rv_tx, _) = watch::channel(0);
        let (events, _) = broadcast::channel(BROADCAST_CAPACITY);
        Store {
            order: Mutex::new(()),
            state: RwLock::new(State {
                items: Items::new(),
                bytes: 0,
                rv: 0,
                epoch: 0,
                listed: false,
                oldest: 0,
                history: VecDeque::new(),
                recent: VecDeque::new(),
            }),
            limits,
            rv_tx,
            events,
            counts: counts::RemainingCounts::default(),
        }
    }

    /// What page walks of this store's snapshots have learnt of the keys
    /// left (`page::read_page_counted`).
    pub fn remaining_counts(&self) -> &counts::RemainingCounts {
        &self.counts
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State<M>> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State<M>> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }
    /// The writers' lock (see `Change`).
    fn order(&self) -> MutexGuard<'_, ()> {
        self.order.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces everything with a fresh list at `rv` (a relist): the history
    /// before it no longer connects to the new state, so it is dropped.
    pub fn replace(&self, entries: Vec<Arc<Entry<M>>>, rv: u64) {
        let order = self.order();
        self.replace_in_order(&order, entries, rv);
    }

    /// `replace`, by a writer holding the writers' lock.
    fn replace_in_order(&self, _order: &MutexGuard<'_, ()>, entries: Vec<Arc<Entry<M>>>, rv: u64) {
        let bytes = entries.iter().map(|e| e.item.len()).sum();
        let items = scattered(entries);
        let gap = {
            let mut s = self.write();
            let gap = s.rv != rv || !same_versions(&s.items, &items);
            s.items = items;
            s.bytes = bytes;
            s.rv = rv;
            s.epoch += 1;
            s.listed = true;
            s.oldest = rv;
            s.history.clear();
            s.recent.clear();
            // Only to free them: they are keyed by the old epoch.
            self.counts.clear();
            gap
        };
        // In the writers' order (see `Change`).
        self.rv_tx.send_replace(rv);
        let _ = self.events.send(Change::Relisted { rv, gap });
    }

    /// Replaces the state with a fresh list at `rv`, telling live watchers
    /// the difference as events when it can be told: the store holds a
    /// list, `rv` is not older, and every object changed since is newer
    /// than the store's rv. Watchers then go on through a relist (after an
    /// outage, a restored snapshot) with ADDED, MODIFIED and DELETED events
    /// instead of a 410. The difference is not the upstream's history: an
    /// object changed twice shows its last change, and a deleted object's
    /// event carries what `deleted(entry, rv)` makes of its last state (the
    /// object stamped with `rv`: when it went is not known). Otherwise (a
    /// first list, a cache found to have missed an event) it is
    /// [`Store::replace`]. Either way the history starts again at `rv`.
    pub fn resync(
        &self,
        mut entries: Vec<Arc<Entry<M>>>,
        rv: u64,
        deleted: impl Fn(&Entry<M>, u64) -> Option<Arc<Entry<M>>>,
    ) -> Resync {
        // Lists come in key order; the sort only checks that they did.
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        let order = self.order();
        let told = {
            let mut s = self.write();
            match s
                .listed
                .then(|| diff(&s.items, &entries, s.rv, rv, &deleted))
                .flatten()
            {
                Some((kept, events)) => {
                    s.bytes = kept.iter().map(|e| e.item.len()).sum();
                    s.items = scattered(kept);
                    s.rv = rv;
                    // The events are the difference, not what happened:
                    // an object changed twice shows its last change, a
                    // deletion the relist's version. No state between the
                    // two lists can be rebuilt from them, so, as after any
                    // relist, the history starts again here.
                    s.epoch += 1;
                    s.oldest = rv;
                    s.history.clear();
                    s.recent.clear();
                    self.counts.clear();
                    Some(events)
                }
                None => None,
            }
        };
        match told {
            Some(events) => {
                // In the writers' order (see `Change`).
                let n = events.len();
                self.rv_tx.send_replace(rv);
                let _ = self.events.send(Change::Resynced {
                    rv,
                    events: events.into(),
                });
                Resync::Told { events: n }
            }
            None => {
                self.replace_in_order(&order, entries, rv);
                Resync::Replaced
            }
        }
    }

    /// Lets every object and event go (the type is no longer cached), the
    /// rv kept so that it never goes back; live subscribers are told.
    pub fn release(&self) {
        let _order = self.order();
        {
            let mut s = self.write();
            s.items = Items::new();
            s.bytes = 0;
            s.epoch += 1;
            s.listed = false;
            s.oldest = s.rv;
            s.history.clear();
            s.recent.clear();
            self.counts.clear();
        }
        // In the writers' order (see `Change`).
        let _ = self.events.send(Change::Released);
    }

    /// Applies one watch event; events must come in increasing rv order.
    pub fn apply(&self, kind: EventType, entry: Arc<Entry<M>>) -> Result<(), StoreError> {
        let rv = entry.rv;
        let _order = self.order();
        let event = {
            let mut s = self.write();
            if rv <= s.rv {
                return Err(StoreError::NotNewer {
                    got: rv,
                    have: s.rv,
                });
            }
            let prev = match kind {
                EventType::Added | EventType::Modified => s.items.insert(entry.clone()),
                EventType::Deleted => s.items.remove(&entry.key),
            };
            if kind == EventType::Deleted && prev.is_none() {
                return Err(StoreError::Missing {
                    kind: kind.as_str(),
                    key: entry.key.to_string(),
                });
            }
            s.bytes -= prev.as_ref().map_or(0, |p| p.item.len());
            if kind != EventType::Deleted {
                s.bytes += entry.item.len();
            }
            s.rv = rv;
            let event = Arc::new(Event {
                rv,
                kind,
                entry,
                prev,
                at: Instant::now(),
                line: OnceLock::new(),
                frame: OnceLock::new(),
            });
            s.history.push_back(event.clone());
            // An event as deep in the history as the broadcast buffer is
            // long is sent again only to a watch resuming from that far
            // back: its line goes, so that the history holds each version
            // of an object once (its line is a second copy of it).
            if let Some(i) = s.history.len().checked_sub(BROADCAST_CAPACITY + 1) {
                let old = &s.history[i];
                if old.line.get().is_some() || old.frame.get().is_some() {
                    s.history[i] = Arc::new(s.history[i].without_line());
                }
            }
            self.trim(&mut s);
            event
        };
        // In the writers' order (see `Change`); no receivers is fine:
        // watches come and go.
        self.rv_tx.send_replace(rv);
        let _ = self.events.send(Change::Event(event));
        Ok(())
    }

    /// A bookmark or progress notification: nothing changed up to `rv`.
    pub fn advance(&self, rv: u64) {
        let _order = self.order();
        let advanced = {
            let mut s = self.write();
            let advanced = rv > s.rv;
            s.rv = s.rv.max(rv);
            advanced
        };
        if advanced {
            // In the writers' order (see `Change`).
            self.rv_tx.send_replace(rv);
            let _ = self.events.send(Change::Progress(rv));
        }
    }

    /// A proof of freshness: nothing changed up to `rv`, if the state
    /// still descends from the list of `epoch` and has applied everything
    /// through `through` (see `reflector::Update::Proven`). Checked and
    /// applied under the state lock, so that no relist or event slips
    /// between the check and the step.
    pub fn advance_proven(&self, epoch: u64, through: u64, rv: u64) -> Result<(), StoreError> {
        let _order = self.order();
        let advanced = {
            let mut s = self.write();
            if s.epoch != epoch || s.rv < through || !s.listed {
                return Err(StoreError::NotYet { rv, have: s.rv });
            }
            let advanced = rv > s.rv;
            s.rv = s.rv.max(rv);
            advanced
        };
        if advanced {
            // In the writers' order (see `Change`): a proof checked
            // against an event reaches subscribers after that event.
            self.rv_tx.send_replace(rv);
            let _ = self.events.send(Change::Progress(rv));
        }
        Ok(())
    }

    /// Forgets all history: only the current state can be read or watched
    /// from, as after a compaction at the current revision.
    pub fn compact(&self) {
        let mut s = self.write();
        s.oldest = s.rv;
        s.history.clear();
        s.recent.clear();
    }

    fn trim(&self, s: &mut State<M>) {
        let now = Instant::now();
        while let Some(front) = s.history.front() {
            let too_many = s.history.len() > self.limits.capacity;
            let too_old = s.history.len() > KEPT_REGARDLESS
                && now.duration_since(front.at) > self.limits.window;
            if !(too_many || too_old) {
                break;
            }
            // Dropping the event at rv R means states before R can no longer
            // be rebuilt; the state right at R still can.
            s.oldest = front.rv;
            s.history.pop_front();
        }
    }

    pub fn rv(&self) -> u64 {
        self.read().rv
    }

    /// How many events were applied in the last `window`, counting to
    /// `at_most` at most (the history holds them; a relist starts it empty).
    pub fn events_within(&self, window: Duration, at_most: usize) -> usize {
        let s = self.read();
        s.history
            .iter()
            .rev()
            .take(at_most)
            .take_while(|e| e.at.elapsed() <= window)
            .count()
    }

    /// Live subscribers: open watches.
    pub fn watchers(&self) -> usize {
        self.events.receiver_count()
    }

    /// The oldest rv a snapshot can still be built for.
    pub fn oldest(&self) -> u64 {
        self.read().oldest
    }

    pub fn len(&self) -> usize {
        self.read().items.len()
    }

    /// How many objects are cached and their serialized bytes.
    pub fn size(&self) -> (usize, usize) {
        let s = self.read();
        (s.items.len(), s.bytes)
    }

    /// How many events the history holds.
    pub fn history_len(&self) -> usize {
        self.read().history.len()
    }

    pub fn limits(&self) -> HistoryLimits {
        self.limits
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn current(&self) -> Snapshot<M> {
        let s = self.read();
        Snapshot {
            rv: s.rv,
            epoch: s.epoch,
            items: s.items.clone(),
        }
    }

    pub fn get(&self, key: &str) -> Option<Arc<Entry<M>>> {
        self.read().items.get(key).cloned()
    }

    /// The state as of `rv`, rebuilt by undoing newer events. `None` when
    /// `rv` is older than the history reaches. An `rv` beyond the store's own
    /// means "no change since": the caller decides whether that is known.
    pub fn snapshot_at(&self, rv: u64) -> Option<Snapshot<M>> {
        {
            let s = self.read();
            if rv < s.oldest {
                return None;
            }
            if rv >= s.rv {
                return Some(Snapshot {
                    rv,
                    epoch: s.epoch,
                    items: s.items.clone(),
                });
            }
            if let Some(hit) = s.recent.iter().find(|snap| snap.rv == rv) {
                return Some(hit.clone());
            }
        }
        let mut s = self.write();
        if rv < s.oldest {
            return None;
        }
        let mut items = s.items.clone();
        for ev in s.history.iter().rev().take_while(|e| e.rv > rv) {
            match &ev.prev {
                Some(prev) => {
                    items.insert(prev.clone());
                }
                None => {
                    items.remove(&ev.entry.key);
                }
            }
        }
        let snap = Snapshot {
            rv,
            epoch: s.epoch,
            items,
        };
        if s.recent.len() >= RECENT_SNAPSHOTS {
            s.recent.pop_front();
        }
        s.recent.push_back(snap.clone());
        Some(snap)
    }

    /// Waits until the store has applied everything up to `rv`, at most
    /// `timeout`; returns the rv reached either way.
    pub async fn wait_for(&self, rv: u64, timeout: Duration) -> Result<u64, u64> {
        let mut rx = self.rv_tx.subscribe();
        let reached = tokio::time::timeout(timeout, rx.wait_for(|have| *have >= rv))
            .await
            .ok()
            .and_then(Result::ok)
            .map(|have| *have);
        match reached {
            Some(have) => Ok(have),
            None => Err(*rx.borrow()),
        }
    }

    /// Events after `rv` from the history, then live ones; `None` if `rv` is
    /// older than the history. The subscription is taken under the lock so no
    /// event falls between the two.
    pub fn events_since(&self, rv: u64) -> Option<Replay<M>> {
        self.replay(rv).map(|(replay, _)| replay)
    }

    /// `events_since`, and the store's rv when it subscribed: once the
    /// past events are sent, a watcher stands there (a bookmark's progress
    /// past the last event included).
    pub fn replay(&self, rv: u64) -> Option<(Replay<M>, u64)> {
        let s = self.read();
        if rv < s.oldest {
            return None;
        }
        let rx = self.events.subscribe();
        let past = s.history.iter().filter(|e| e.rv > rv).cloned().collect();
        Some(((past, rx), s.rv.max(rv)))
    }

    /// The current state and a live subscription starting right after it.
    pub fn snapshot_and_subscribe(&self) -> (Snapshot<M>, broadcast::Receiver<Change<M>>) {
        let s = self.read();
        let rx = self.events.subscribe();
        (
            Snapshot {
                rv: s.rv,
                epoch: s.epoch,
                items: s.items.clone(),
            },
            rx,
        )
    }
}

/// The map of a list's entries, inserted in a scattered order: the
/// B-tree splits a full node in the middle, so entries inserted in key
/// order (as lists come) leave every node half full, while scattered
/// inserts leave them about two thirds full. 50,000 configmaps, when the
/// tree was a map of 24-byte slots: 68 bytes per object in key order, 50
/// scattered (of ~1,060 in all).
fn scattered<M>(entries: Vec<Arc<Entry<M>>>) -> Items<M> {
    let n = entries.len();
    // A stride prime to n visits every index once.
    let mut stride = 7919 % n.max(1);
    while gcd(stride, n) != 1 {
        stride += 1;
    }
    let mut slots: Vec<Option<Arc<Entry<M>>>> = entries.into_iter().map(Some).collect();
    let mut items = Items::new();
    let mut i = 0;
    for _ in 0..n {
        if let Some(e) = slots[i].take() {
            items.insert(e);
        }
        i = (i + stride) % n;
    }
    items
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// What a relist did (`Store::resync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resync {
    /// Told as this many events.
    Told { events: usize },
    /// Swapped in whole: watchers behind it get the cacher's 410.
    Replaced,
}

/// The events that take `old` (at `from`) to `new` (sorted by key, at
/// `to`), and the entries of the new state — the old ones where nothing
/// changed, so what was made of them once (protobuf, gzip pieces) stays.
/// `None` when they cannot be told: `to` older than `from`, an object
/// changed at or before `from` (the old state missed an event), a key
/// twice, or a deleted object that cannot be stamped.
#[allow(clippy::type_complexity)]
fn diff<M>(
    old: &Items<M>,
    new: &[Arc<Entry<M>>],
    from: u64,
    to: u64,
    deleted: &impl Fn(&Entry<M>, u64) -> Option<Arc<Entry<M>>>,
) -> Option<(Vec<Arc<Entry<M>>>, Vec<Arc<Event<M>>>)> {
    if to < from {
        return None;
    }
    let at = Instant::now();
    let event = |kind, rv, entry: &Arc<Entry<M>>, prev: Option<&Arc<Entry<M>>>| {
        Arc::new(Event {
            rv,
            kind,
            entry: entry.clone(),
            prev: prev.cloned(),
            at,
            line: OnceLock::new(),
            frame: OnceLock::new(),
        })
    };
    let mut kept = Vec::with_capacity(new.len());
    let mut changes = Vec::new();
    let mut gone = Vec::new();
    let mut olds = old.iter().peekable();
    let mut last: Option<&str> = None;
    for e in new {
        if last.is_some_and(|k| k >= &*e.key) {
            return None;
        }
        last = Some(&e.key);
        while let Some(o) = olds.next_if(|o| o.key < e.key) {
            gone.push(o);
        }
        let changed = |kind, prev| (from < e.rv && e.rv <= to).then(|| event(kind, e.rv, e, prev));
        match olds.next_if(|o| o.key == e.key) {
            Some(o) if o.rv == e.rv => kept.push(o.clone()),
            Some(o) => {
                changes.push(changed(EventType::Modified, Some(o))?);
                kept.push(e.clone());
            }
            None => {
                changes.push(changed(EventType::Added, None)?);
                kept.push(e.clone());
            }
        }
    }
    gone.extend(olds);
    if to == from && !(changes.is_empty() && gone.is_empty()) {
        return None;
    }
    changes.sort_by_key(|e| e.rv);
    for o in gone {
        let stamped = deleted(o, to)?;
        changes.push(event(EventType::Deleted, to, &stamped, Some(o)));
    }
    Some((kept, changes))
}

/// Whether two states hold the same objects at the same versions: a relist
/// at the store's own rv that finds this missed nothing.
fn same_versions<M>(a: &Items<M>, b: &Items<M>) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b.iter())
            .all(|(ea, eb)| ea.key == eb.key && ea.rv == eb.rv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, rv: u64) -> Arc<Entry> {
        Arc::new(Entry::for_test(key, rv))
    }

    fn keys(s: &Snapshot) -> Vec<String> {
        s.items
            .iter()
            .map(|e| format!("{}@{}", e.key, e.rv))
            .collect()
    }

    #[test]
    fn snapshots_rebuild_past_states_by_undoing_events() {
        let store = Store::new(HistoryLimits::default());
        store.replace(vec![entry("a", 5), entry("b", 6)], 10);
        store.apply(EventType::Modified, entry("a", 11)).unwrap();
        store.apply(EventType::Added, entry("c", 12)).unwrap();
        store.apply(EventType::Deleted, entry("b", 13)).unwrap();
        assert_eq!(keys(&store.current()), vec!["a@11", "c@12"]);
        assert_eq!(keys(&store.snapshot_at(10).unwrap()), vec!["a@5", "b@6"]);
        assert_eq!(keys(&store.snapshot_at(11).unwrap()), vec!["a@11", "b@6"]);
        assert_eq!(
            keys(&store.snapshot_at(12).unwrap()),
            vec!["a@11", "b@6", "c@12"]
        );
        assert!(store.snapshot_at(9).is_none());
        // A second read of the same rv comes from the recent snapshots.
        assert_eq!(keys(&store.snapshot_at(11).unwrap()), vec!["a@11", "b@6"]);
    }

    #[test]
    fn the_history_lets_go_of_lines_deeper_than_the_broadcast_reaches() {
        let store = Store::new(HistoryLimits::default());
        store.replace(vec![entry("a", 1)], 1);
        let events = BROADCAST_CAPACITY + 10;
        for rv in 2..2 + events as u64 {
            store.apply(EventType::Modified, entry("a", rv)).unwrap();
            // Every event is sent to a watcher as it happens.
            let (past, _) = store.events_since(rv - 1).unwrap();
            past[0]
                .line
                .get_or_init(|| (1, Bytes::from_static(b"line")));
        }
        let (past, _) = store.events_since(1).unwrap();
        assert_eq!(past.len(), events);
        let with_line = past.iter().filter(|e| e.line.get().is_some()).count();
        assert_eq!(with_line, BROADCAST_CAPACITY);
        assert!(past[..10].iter().all(|e| e.line.get().is_none()));
        // The events themselves stay: a snapshot far back still rebuilds.
        assert!(store.snapshot_at(2).is_some());
    }

    #[test]
    fn events_must_move_forward() {
        let store = Store::new(HistoryLimits::default());
        store.replace(vec![], 10);
        assert_eq!(
            store.apply(EventType::Added, entry("a", 10)),
            Err(StoreError::NotNewer { got: 10, have: 10 })
        );
        assert!(store.apply(EventType::Deleted, entry("zz", 11)).is_err());
        assert_eq!(store.rv(), 10);
    }

    #[test]
    fn history_capacity_moves_the_oldest_servable_version() {
        let store = Store::new(HistoryLimits {
            capacity: 2,
            window: Duration::from_secs(60),
        });
        store.replace(vec![], 1);
        for rv in 2..=5 {
            store
                .apply(EventType::Added, entry(&format!("k{rv}"), rv))
                .unwrap();
        }
        assert_eq!(store.oldest(), 3);
        assert!(store.snapshot_at(2).is_none());
        assert_eq!(store.snapshot_at(3).unwrap().items.len(), 2);
        let (past, _rx) = store.events_since(3).unwrap();
        assert_eq!(past.iter().map(|e| e.rv).collect::<Vec<_>>(), vec![4, 5]);
        assert!(store.events_since(2).is_none());
    }

    #[test]
    fn a_quiet_type_keeps_its_last_hundred_events_however_old() {
        let store = Store::new(HistoryLimits {
            capacity: 1000,
            window: Duration::ZERO,
        });
        store.replace(vec![], 1);
        for rv in 2..=150 {
            store
                .apply(EventType::Added, entry(&format!("k{rv}"), rv))
                .unwrap();
        }
        assert_eq!(store.history_len(), KEPT_REGARDLESS);
        let (past, _rx) = store.events_since(store.oldest()).unwrap();
        assert_eq!(past.first().map(|e| e.rv), Some(51));
    }

    #[test]
    fn relist_swaps_state_and_forgets_history() {
        let store = Store::new(HistoryLimits::default());
        store.replace(vec![entry("a", 1)], 2);
        store.apply(EventType::Added, entry("b", 3)).unwrap();
        store.replace(vec![entry("c", 7)], 9);
        assert_eq!(keys(&store.current()), vec!["c@7"]);
        assert!(store.snapshot_at(3).is_none());
        assert_eq!(store.rv(), 9);
    }

    #[test]
    fn a_released_store_holds_nothing_tells_its_subscribers_and_never_goes_back() {
        let store = Store::new(HistoryLimits::default());
        store.replace(vec![entry("a", 1)], 4);
        let before = store.current();
        let (_, mut rx) = store.snapshot_and_subscribe();
        store.release();
        assert!(matches!(rx.try_recv(), Ok(Change::Released)));
        assert_eq!(store.size(), (0, 0));
        assert_eq!(store.rv(), 4);
        assert!(store.current().version() > before.version());
        store.replace(vec![entry("a", 1)], 6);
        assert_eq!(keys(&store.current()), vec!["a@1"]);
    }

    #[test]
    fn a_relist_at_a_version_seen_before_is_a_newer_state() {
        let store = Store::new(HistoryLimits::default());
        store.replace(vec![entry("a", 1)], 4);
        let before = store.current();
        store.replace(vec![entry("a", 1), entry("b", 3)], 4);
        let after = store.current();
        assert_eq!(before.rv, after.rv);
        assert!(after.version() > before.version());
        assert_eq!(store.snapshot_at(4).unwrap().version(), after.version());
        store.apply(EventType::Added, entry("c", 5)).unwrap();
        assert_eq!(store.snapshot_at(4).unwrap().version(), after.version());
        assert_eq!(keys(&store.snapshot_at(4).unwrap()), vec!["a@1", "b@3"]);
    }

    #[test]
    fn subscribers_learn_of_events_progress_and_relists_in_order() {
        let store = Store::new(HistoryLimits::default());
        store.replace(vec![entry("a", 1)], 2);
        let (_, mut rx) = store.snapshot_and_subscribe();
        store.apply(EventType::Added, entry("b", 3)).unwrap();
        store.advance(6);
        store.replace(vec![entry("a", 1), entry("b", 3)], 6);
        store.replace(vec![entry("a", 7)], 8);
        assert!(matches!(rx.try_recv(), Ok(Change::Event(e)) if e.rv == 3));
        assert!(matches!(rx.try_recv(), Ok(Change::Progress(6))));
        assert!(matches!(
            rx.try_recv(),
            Ok(Change::Relisted { rv: 6, gap: false })
        ));
        assert!(matches!(
            rx.try_recv(),
            Ok(Change::Relisted { rv: 8, gap: true })
        ));
    }

    #[test]
    fn a_proof_made_against_an_event_reaches_subscribers_after_it() {
        // Two writers, as in kubecache: the reflector's events and a
        // freshness proof checked against them (advance_proven from
        // another task). A subscriber must never see an event at or below
        // a progress it already had: a watcher stands at the progress and
        // would skip the event as old (the chaos test's gap, seed 2121:
        // the proof's progress at 1073 broadcast ahead of the event at 1071
        // it had been checked against).
        let store = Arc::new(Store::<()>::new(HistoryLimits {
            capacity: 1 << 20,
            window: Duration::from_secs(3600),
        }));
        store.replace(vec![], 1);
        let epoch = store.current().epoch;
        let (_, mut rx) = store.snapshot_and_subscribe();
        const EVENTS: u64 = 20_000;
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // How many events the subscriber has taken: the reflector keeps
        // within the broadcast's capacity of it.
        let taken = Arc::new(std::sync::atomic::AtomicU64::new(0));
        // Events at odd versions (3, 5, …); proofs at the even version past
        // each, checked against it.
        let reflector = {
            let (store, taken) = (store.clone(), taken.clone());
            std::thread::spawn(move || {
                let mut rv = 1;
                for i in 0..EVENTS {
                    while i > taken.load(std::sync::atomic::Ordering::Relaxed) + 1000 {
                        std::thread::yield_now();
                    }
                    rv = if store.rv() % 2 == 0 {
                        store.rv() + 1
                    } else {
                        rv + 2
                    };
                    let key = format!("k{}", i % 64);
                    let kind = if store.get(&key).is_some() {
                        EventType::Modified
                    } else {
                        EventType::Added
                    };
                    store.apply(kind, entry(&key, rv)).unwrap();
                }
            })
        };
        let prover = {
            let (store, done) = (store.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let through = store.rv();
                    if through % 2 == 1 {
                        let _ = store.advance_proven(epoch, through, through + 1);
                    }
                }
            })
        };
        let (mut progress, mut events, mut behind) = (0, 0, Vec::new());
        while events < EVENTS {
            match rx.blocking_recv() {
                Ok(Change::Event(e)) => {
                    events += 1;
                    taken.store(events, std::sync::atomic::Ordering::Relaxed);
                    if e.rv <= progress {
                        behind.push((e.rv, progress));
                    }
                }
                Ok(Change::Progress(rv)) => progress = progress.max(rv),
                Ok(_) => {}
                Err(e) => panic!("{e}"),
            }
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        reflector.join().unwrap();
        prover.join().unwrap();
        assert!(
            behind.is_empty(),
            "events behind a progress: {:?}",
            &behind[..behind.len().min(5)]
        );
    }

    fn stamp(e: &Entry, rv: u64) -> Option<Arc<Entry>> {
        Some(Arc::new(Entry::for_test(&e.key, rv)))
    }

    fn told(rx: &mut broadcast::Receiver<Change>) -> Vec<String> {
        match rx.try_recv() {
            Ok(Change::Resynced { events, .. }) => events
                .iter()
                .map(|e| format!("{} {}@{}", e.kind.as_str(), e.entry.key, e.rv))
                .collect(),
            other => panic!("not a told relist: {other:?}"),
        }
    }

    #[test]
    fn a_relist_is_told_as_the_events_from_the_old_state_deletions_last() {
        let store = Store::new(HistoryLimits::default());
        store.replace(vec![entry("a", 1), entry("b", 2), entry("c", 3)], 4);
        let (_, mut rx) = store.snapshot_and_subscribe();
        let before = store.current().version();
        // b deleted, c modified at 7, d added at 6; the list is at 9.
        let r = store.resync(vec![entry("d", 6), entry("a", 1), entry("c", 7)], 9, stamp);
        assert_eq!(r, Resync::Told { events: 3 });
        assert_eq!(told(&mut rx), ["ADDED d@6", "MODIFIED c@7", "DELETED b@9"]);
        assert_eq!(keys(&store.current()), vec!["a@1", "c@7", "d@6"]);
        assert_eq!(store.rv(), 9);
        // What lay between the lists is not known: no state before the
        // new one is rebuilt, nor watched from.
        assert!(store.current().version() > before);
        assert!(store.snapshot_at(6).is_none());
        assert!(store.events_since(4).is_none());
        assert!(store
            .events_since(9)
            .is_some_and(|(past, _)| past.is_empty()));
        assert_eq!(store.size().0, 3);
    }

    #[test]
    fn an_unchanged_object_keeps_its_entry_through_a_told_relist() {
        let store = Store::new(HistoryLimits::default());
        let a = entry("a", 1);
        store.replace(vec![a.clone()], 4);
        store.resync(vec![entry("a", 1), entry("b", 5)], 5, stamp);
        assert!(Arc::ptr_eq(store.get("a").as_ref().unwrap(), &a));
    }

    #[test]
    fn a_relist_that_cannot_be_told_is_a_replacement() {
        let cases: [(&str, Vec<Arc<Entry>>, u64); 4] = [
            // An object changed at or before the store's rv: it missed it.
            ("missed", vec![entry("a", 3)], 9),
            // Older than the store.
            ("older", vec![entry("a", 1)], 3),
            // Changes at the store's own version.
            ("same rv", vec![entry("a", 1), entry("b", 4)], 4),
            ("twice", vec![entry("b", 5), entry("b", 6)], 9),
        ];
        for (why, list, rv) in cases {
            let store = Store::new(HistoryLimits::default());
            store.replace(vec![entry("a", 1)], 4);
            let (_, mut rx) = store.snapshot_and_subscribe();
            assert_eq!(store.resync(list, rv, stamp), Resync::Replaced, "{why}");
            assert!(
                matches!(rx.try_recv(), Ok(Change::Relisted { .. })),
                "{why}"
            );
        }
        // Nothing to tell from: the first list, and one after a release.
        let store = Store::new(HistoryLimits::default());
        assert_eq!(
            store.resync(vec![entry("a", 1)], 2, stamp),
            Resync::Replaced
        );
        store.release();
        assert_eq!(
            store.resync(vec![entry("a", 3)], 4, stamp),
            Resync::Replaced
        );
        // A deletion that cannot be stamped.
        let store = Store::new(HistoryLimits::default());
        store.replace(vec![entry("a", 1)], 2);
        assert_eq!(store.resync(vec![], 3, |_, _| None), Resync::Replaced);
    }

    #[test]
    fn a_relist_that_changed_nothing_is_told_with_no_events() {
        let store = Store::new(HistoryLimits::default());
        store.replace(vec![entry("a", 1)], 4);
        let (_, mut rx) = store.snapshot_and_subscribe();
        assert_eq!(
            store.resync(vec![entry("a", 1)], 8, stamp),
            Resync::Told { events: 0 }
        );
        assert!(told(&mut rx).is_empty());
        assert_eq!(store.rv(), 8);
    }

    #[test]
    fn a_list_inserted_scattered_holds_every_entry_once_in_key_order() {
        for n in [0, 1, 2, 7919, 7920, 15838] {
            let entries: Vec<_> = (0..n)
                .map(|i| entry(&format!("k{i:06}"), i as u64 + 1))
                .collect();
            let items = scattered(entries);
            assert_eq!(items.len(), n);
            let keys: Vec<&str> = items.iter().map(|e| &*e.key).collect();
            let mut sorted = keys.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(keys, sorted, "{n}");
        }
    }

    #[test]
    fn a_relist_past_the_stores_rv_is_a_gap_even_with_the_same_objects() {
        // Between 2 and 5 an object may have come and gone: a watcher that
        // went on would never see its ADDED and DELETED.
        let store = Store::new(HistoryLimits::default());
        store.replace(vec![entry("a", 1)], 2);
        let (_, mut rx) = store.snapshot_and_subscribe();
        store.replace(vec![entry("a", 1)], 5);
        assert!(matches!(
            rx.try_recv(),
            Ok(Change::Relisted { rv: 5, gap: true })
        ));
    }

    #[test]
    fn the_size_follows_adds_updates_deletes_and_relists() {
        let store = Store::new(HistoryLimits::default());
        let one = entry("a", 1).item.len();
        store.replace(vec![entry("a", 1)], 1);
        assert_eq!(store.size(), (1, one));
        store.apply(EventType::Added, entry("b", 2)).unwrap();
        store.apply(EventType::Modified, entry("b", 3)).unwrap();
        assert_eq!(store.size(), (2, 2 * one));
        store.apply(EventType::Deleted, entry("a", 4)).unwrap();
        assert_eq!(store.size(), (1, one));
        store.replace(vec![], 5);
        assert_eq!(store.size(), (0, 0));
    }

    #[test]
    fn a_proof_advances_only_the_state_it_was_made_for() {
        let s: Store = Store::new(HistoryLimits::default());
        s.replace(vec![entry("a", 5)], 5);
        let epoch = s.current().epoch;
        // Events the side watch saw (through 8) are not applied yet.
        assert_eq!(
            s.advance_proven(epoch, 8, 20),
            Err(StoreError::NotYet { rv: 20, have: 5 })
        );
        s.apply(EventType::Modified, entry("a", 8)).unwrap();
        let mut rx = s.snapshot_and_subscribe().1;
        assert_eq!(s.advance_proven(epoch, 8, 20), Ok(()));
        assert_eq!(s.rv(), 20);
        assert!(matches!(rx.try_recv(), Ok(Change::Progress(20))));
        // A proof older than the state is no step back.
        assert_eq!(s.advance_proven(epoch, 8, 12), Ok(()));
        assert_eq!(s.rv(), 20);
        // After a relist, a proof made before it holds nothing.
        s.replace(vec![entry("a", 25)], 25);
        assert!(s.advance_proven(epoch, 8, 30).is_err());
        assert_eq!(s.rv(), 25);
    }

    #[test]
    fn compaction_keeps_the_state_and_only_the_current_version_servable() {
        let store = Store::new(HistoryLimits::default());
        store.replace(vec![entry("a", 1)], 2);
        store.apply(EventType::Added, entry("b", 3)).unwrap();
        store.advance(5);
        store.compact();
        assert_eq!(keys(&store.current()), vec!["a@1", "b@3"]);
        assert_eq!(store.oldest(), 5);
        assert!(store.snapshot_at(3).is_none());
        assert!(store.events_since(4).is_none());
        assert!(store
            .events_since(5)
            .is_some_and(|(past, _)| past.is_empty()));
    }

    #[tokio::test]
    async fn waiting_for_a_version_ends_when_it_arrives_or_times_out() {
        let store = Arc::new(Store::<()>::new(HistoryLimits::default()));
        store.replace(vec![], 1);
        assert_eq!(store.wait_for(5, Duration::from_millis(20)).await, Err(1));
        let s2 = store.clone();
        let waiter = tokio::spawn(async move { s2.wait_for(3, Duration::from_secs(10)).await });
        store.advance(3);
        assert_eq!(waiter.await.unwrap(), Ok(3));
    }
}
