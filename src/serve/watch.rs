//! Watch streams served from a `Store`, as the apiserver's cacher serves
//! them: the starting point (the current state as ADDED events, every event
//! after a resourceVersion, or initial events closed by a bookmark), then
//! live events through the watcher's selection — an object entering it
//! arrives as ADDED, one leaving it as DELETED — bookmarks about once a
//! minute and just before the deadline, and a clean end at the deadline.
//! A watcher that falls too far behind is cut off without slowing anyone.
//! kubecache's watches and the simulator's come from here.

use super::respond::typed_response;
use crate::body::{self, Body};
use crate::encode::codec::{Change, Entry, Event, Items, Store, TypeCodec};
use crate::encode::{json, Repr, Unencodable};
use crate::metrics;
use crate::request::options::Initial;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::Status;
use crate::store::{EventType, BROADCAST_CAPACITY};
use bytes::Bytes;
use http::{Response, StatusCode};
use rand::RngExt;
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::broadcast::Receiver;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio::time::Instant;

/// Which objects a watcher sees.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub namespace: Option<String>,
    /// A single object (`metadata.name` in the path of a legacy watch).
    pub name: Option<String>,
}

impl Selection {
    pub fn matches(&self, e: &Entry) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|ns| e.namespace() == Some(ns))
            && self.name.as_deref().is_none_or(|n| e.name() == n)
            && self.labels.matches(|k| e.label(k))
            && self.fields.matches(|f| e.field(f))
    }
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// The current state as ADDED events, then what follows (RV "0").
    State,
    /// What follows the current state, without it (`sendInitialEvents=false`).
    Now,
    /// Every event after this resourceVersion.
    After(u64),
    /// `sendInitialEvents=true`: the state as ADDED events, then a bookmark
    /// marking their end (when bookmarks are allowed), then what follows.
    InitialEvents,
}

impl From<Initial> for Start {
    fn from(i: Initial) -> Start {
        match i {
            Initial::State => Start::State,
            Initial::Nothing => Start::Now,
            Initial::Events => Start::InitialEvents,
        }
    }
}

#[derive(Debug, Clone)]
pub struct WatchSpec {
    pub start: Start,
    pub selection: Selection,
    /// What each event's object is: the object, or its metadata only.
    pub repr: Repr,
    pub bookmarks: bool,
    pub timeout: Duration,
    /// When its bookmarks go out.
    pub schedule: Schedule,
}

/// When a watch's bookmarks go out.
#[derive(Clone, Default)]
pub enum Schedule {
    /// kubecache's own: about once a minute and 2 s before the deadline,
    /// each at the version the watcher stands at.
    #[default]
    Timer,
    /// An apiserver cacher's (the simulator's): only at the ticks of the
    /// type's [`BookmarkTimer`], to a watcher whose bucket is due by then,
    /// and only when the tick's version is past the one the watch started
    /// from.
    Cacher(Arc<BookmarkTimer>),
}

impl std::fmt::Debug for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Schedule::Timer => f.write_str("Timer"),
            Schedule::Cacher(_) => f.write_str("Cacher"),
        }
    }
}

/// One tick of a [`BookmarkTimer`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tick {
    /// Ticks so far.
    pub seq: u64,
    /// The second since the timer was made that the tick falls in: the
    /// buckets of watchers due up to it are popped.
    pub bucket: u64,
    /// The cacher's `lastProcessedResourceVersion`; 0 while it has none.
    pub rv: u64,
}

/// An apiserver cacher's bookmark timer, as `cacher.go`'s `dispatchEvents`
/// runs it (the same in v1.20 and the newest release): it ticks every
/// `wait.Jitter(time.Second, 0.25)` (1–1.25 s), and at each tick the
/// watchers whose bookmark is due by that second
/// (`watcherBookmarkTimeBuckets`: one bucket per second since the cacher
/// was made) get a bookmark at `lastProcessedResourceVersion`, if it is
/// past the version they started from (`cache_watcher.go`: `if
/// event.ResourceVersion > resourceVersion`), and are filed again at
/// their next time (`nextBookmarkTime`: a minute on, or 2 s before their
/// deadline if sooner, none once that is past).
pub struct BookmarkTimer {
    made: Instant,
    ticks: tokio::sync::watch::Sender<Tick>,
}

impl BookmarkTimer {
    pub fn new() -> Arc<Self> {
        Arc::new(BookmarkTimer {
            made: Instant::now(),
            ticks: tokio::sync::watch::channel(Tick::default()).0,
        })
    }

    /// The bucket of a time: its second since the timer was made.
    fn bucket(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.made).as_secs()
    }

    fn last(&self) -> Tick {
        *self.ticks.borrow()
    }

    fn subscribe(&self) -> tokio::sync::watch::Receiver<Tick> {
        self.ticks.subscribe()
    }

    /// Ticks, each carrying `last_processed()`, for as long as anyone
    /// holds the timer.
    pub async fn run(self: Arc<Self>, last_processed: impl Fn() -> u64) {
        let weak = Arc::downgrade(&self);
        drop(self);
        loop {
            let jitter = rand::rng().random_range(0.0..0.25);
            tokio::time::sleep(Duration::from_secs(1).mul_f64(1.0 + jitter)).await;
            let Some(timer) = weak.upgrade() else { return };
            let bucket = timer.bucket(Instant::now());
            let rv = last_processed();
            timer.ticks.send_modify(|t| {
                *t = Tick {
                    seq: t.seq + 1,
                    bucket,
                    rv,
                }
            });
        }
    }
}

/// The watch timeout: the client's `timeoutSeconds`, or the apiserver's
/// default of a random time between its minimum request timeout (30 min)
/// and twice that.
pub fn timeout(seconds: Option<i64>) -> Duration {
    match seconds {
        Some(s) if s > 0 => Duration::from_secs(s as u64),
        _ => Duration::from_secs(rand::rng().random_range(1800..3600)),
    }
}

/// About once a minute, like the cacher's bookmark timer.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);
/// Lines queued for the client before the watcher stops taking events and
/// lets its subscription absorb the backlog.
const PENDING_MAX: usize = 64;
/// How often a watcher stuck on a slow client checks how far behind it is.
const LAG_CHECK: Duration = Duration::from_millis(250);

/// Opens a watch on `store`: the response streams until the deadline, the
/// client leaves, or the watcher is cut off. `resource` labels metrics.
pub fn serve<S>(
    source: Arc<S>,
    codec: Arc<TypeCodec>,
    spec: WatchSpec,
    resource: String,
) -> Response<Body>
where
    S: AsRef<Store> + Send + Sync + 'static,
{
    let store = (*source).as_ref();
    let mut started = None;
    let (initial, pending, position, rx, closing) = match spec.start {
        Start::State | Start::InitialEvents => {
            let (snap, rx) = store.snapshot_and_subscribe();
            let end = (spec.start == Start::InitialEvents && spec.bookmarks)
                .then(|| spec.repr.bookmark(&codec, snap.rv, true).ok())
                .flatten()
                .map(|obj| spec.repr.event("BOOKMARK", &obj));
            let initial = InitialEvents {
                items: snap.items,
                after: None,
                end,
            };
            (Some(initial), VecDeque::new(), snap.rv, rx, false)
        }
        Start::Now => {
            let (snap, rx) = store.snapshot_and_subscribe();
            (None, VecDeque::new(), snap.rv, rx, false)
        }
        Start::After(rv) => match store.replay(rv) {
            Some(((past, rx), at)) => {
                // A cacher's bookmarks must pass the version asked for (or
                // the last event sent from the history), not where the
                // watcher stands.
                started = Some(past.last().map_or(rv, |e| e.rv.max(rv)));
                let position = at;
                let mut lines = VecDeque::new();
                let mut closing = false;
                for ev in past.iter() {
                    match event_line(&codec, &spec.repr, &spec.selection, ev) {
                        Ok(line) => lines.extend(line),
                        // The stream ends before what cannot be written.
                        Err(Unencodable) => {
                            closing = true;
                            break;
                        }
                    }
                }
                (None, lines, position, rx, closing)
            }
            None => return error_response(&spec.repr, &expired(rv, store.oldest())),
        },
    };
    let (tx, body) = body::channel(PENDING_MAX);
    let deadline = Instant::now() + spec.timeout;
    let watcher = Watcher {
        source,
        codec,
        spec,
        deadline,
        position,
        initial,
        told: None,
        pending,
        closing,
        resource,
        started_at: started.unwrap_or(position),
    };
    let content_type = watcher.spec.repr.watch_content_type();
    tokio::spawn(watcher.run(rx, tx));
    typed_response(StatusCode::OK, body, content_type)
}

/// A watch that fails after its request was accepted: as the cacher's
/// error watcher, one ERROR event carrying the Status, then the end.
pub fn error_response(repr: &Repr, status: &Status) -> Response<Body> {
    let (tx, body) = body::channel(1);
    let _ = tx.try_send(error_line(repr, status));
    typed_response(StatusCode::OK, body, repr.watch_content_type())
}

fn error_line(repr: &Repr, status: &Status) -> Bytes {
    let json = status.to_bytes();
    // The Status without its trailing newline is the event's object.
    let json = &json[..json.len() - 1];
    match repr {
        Repr::Protobuf(_) => repr.event("ERROR", &crate::encode::protobuf::status(status)),
        _ => repr.event("ERROR", json),
    }
}

/// The cacher's 410 for a position its history no longer reaches.
fn expired(rv: u64, oldest: u64) -> Status {
    Status::from(&WatchError::Expired { rv, oldest })
}

/// Why a watch ends with an ERROR event.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// Its position is older than the history reaches, or events since it
    /// were missed (the client must relist).
    #[error("too old resource version: {rv} ({oldest})")]
    Expired { rv: u64, oldest: u64 },
}

/// An event as a filtered watcher sees it: leaving the selection is a
/// DELETED, entering it an ADDED, like the cacher's watcher.
pub fn event_line(
    codec: &Arc<TypeCodec>,
    repr: &Repr,
    sel: &Selection,
    ev: &Event,
) -> Result<Option<Bytes>, Unencodable> {
    let now = sel.matches(&ev.entry);
    let before = ev.prev.as_ref().is_some_and(|p| sel.matches(p));
    let kind = match (ev.kind, before, now) {
        // Like the cacher, a deletion is judged by what was deleted.
        (EventType::Deleted, true, _) => "DELETED",
        (EventType::Added, _, true) => "ADDED",
        (EventType::Modified, true, true) => "MODIFIED",
        (EventType::Modified, false, true) => "ADDED",
        (EventType::Modified, true, false) => {
            // Leaving the selection: the previous content, as the watcher
            // last matched it, at the event's version.
            let Some(prev) = ev.prev.as_ref() else {
                return Ok(None);
            };
            let moved = json::with_resource_version(&prev.item, ev.rv)
                .and_then(|item| codec.from_item(item).ok());
            let obj = repr.object(codec, moved.as_ref().unwrap_or(prev))?;
            return Ok(Some(repr.event("DELETED", &obj)));
        }
        _ => return Ok(None),
    };
    let encode = || Ok(repr.event(kind, &repr.object(codec, &ev.entry)?));
    let shared = match repr {
        _ if kind != ev.kind.as_str() => None,
        Repr::Json => Some(&ev.line),
        Repr::Protobuf(None) => Some(&ev.frame),
        _ => None,
    };
    match shared {
        Some(slot) => shared_line(codec, slot, encode).map(Some),
        None => encode().map(Some),
    }
}

/// The event's line (or frame) as every watcher that sees it unchanged
/// sends it: encoded once, then shared, so fan-out costs a refcount per
/// watcher.
fn shared_line(
    codec: &TypeCodec,
    slot: &std::sync::OnceLock<(u64, Bytes)>,
    encode: impl FnOnce() -> Result<Bytes, Unencodable>,
) -> Result<Bytes, Unencodable> {
    match slot.get() {
        Some((with, line)) if *with == codec.id() => Ok(line.clone()),
        // A watcher still holding the type's previous codec.
        Some(_) => encode(),
        None => {
            let line = encode()?;
            // Two first watchers at once both encode it; either is kept.
            let _ = slot.set((codec.id(), line.clone()));
            Ok(line)
        }
    }
}

/// The state a watch starts with, sent as ADDED events a few at a time as
/// the client takes them, so that a watch of a large type does not hold
/// all its lines at once.
struct InitialEvents {
    items: Items,
    /// The key of the last item sent.
    after: Option<Box<str>>,
    /// The initial-events-end bookmark, sent after the items.
    end: Option<Bytes>,
}

/// A relist's events being sent (`Watcher::refill_told`).
struct Told {
    events: Arc<[Arc<Event>]>,
    next: usize,
    /// Where the watcher stood when the relist came: events at or below it
    /// are not sent.
    after: u64,
    rv: u64,
}

struct Watcher<S> {
    source: Arc<S>,
    codec: Arc<TypeCodec>,
    spec: WatchSpec,
    deadline: Instant,
    /// The last resourceVersion this watcher has accounted for: events at
    /// or below it are not sent again, and bookmarks carry it.
    position: u64,
    /// Initial events still to send; live changes wait until they are.
    initial: Option<InitialEvents>,
    /// A relist told as events (`Change::Resynced`) still to send, like
    /// initial events a few at a time; live changes wait until they are.
    told: Option<Told>,
    pending: VecDeque<Bytes>,
    /// Set once the stream must end after what is queued (a 410 ERROR).
    closing: bool,
    resource: String,
    /// The version the watch started from: a cacher's bookmarks must pass it.
    started_at: u64,
}

/// The next tick of a cacher's timer; never without one, `None` once it
/// is gone.
async fn next_tick(ticks: &mut Option<tokio::sync::watch::Receiver<Tick>>) -> Option<Tick> {
    match ticks {
        Some(rx) => match rx.changed().await {
            Ok(()) => Some(*rx.borrow_and_update()),
            Err(_) => None,
        },
        None => std::future::pending().await,
    }
}

/// Why a watch stream ended.
enum End {
    Done,
    /// Cut off for falling behind.
    TooSlow,
}

impl<S: AsRef<Store> + Send + Sync + 'static> Watcher<S> {
    /// The cacher's schedule: about once a minute, and 2 s before the
    /// deadline so the client resumes from as late as possible.
    fn next_bookmark(&self) -> Option<Instant> {
        if !self.spec.bookmarks {
            return None;
        }
        let now = Instant::now();
        let before_deadline = self.deadline.checked_sub(Duration::from_secs(2))?;
        let at = (now + BOOKMARK_EVERY).min(before_deadline);
        (at > now).then_some(at)
    }

    /// The bucket of a cacher's timer in which the bookmark after `now`
    /// is due (`nextBookmarkTime`, then `addWatcherThreadUnsafe`: never
    /// before the bucket after the last popped); `None`: no more.
    fn due_bucket(&self, timer: &BookmarkTimer, now: Instant) -> Option<u64> {
        let at = self.next_bookmark_after(now)?;
        Some(timer.bucket(at).max(timer.last().bucket + 1))
    }

    /// The cacher's next bookmark time after `now`: a minute on, or 2 s
    /// before the deadline if that is sooner, none once that is past.
    fn next_bookmark_after(&self, now: Instant) -> Option<Instant> {
        if !self.spec.bookmarks {
            return None;
        }
        let before_deadline = self.deadline.checked_sub(Duration::from_secs(2))?;
        let at = (now + BOOKMARK_EVERY).min(before_deadline);
        (at >= now).then_some(at)
    }

    async fn run(mut self, mut rx: Receiver<Change>, tx: mpsc::Sender<Bytes>) {
        let end = self.pump(&mut rx, &tx).await;
        if let End::TooSlow = end {
            metrics::watcher_terminated(&self.resource);
        }
    }

    async fn pump(&mut self, rx: &mut Receiver<Change>, tx: &mpsc::Sender<Bytes>) -> End {
        // Timers are made once and reset, not remade on every turn: with
        // thousands of watchers, registering and clearing timer entries per
        // event was a tenth of the fan-out's CPU (perf).
        let deadline = tokio::time::sleep_until(self.deadline);
        tokio::pin!(deadline);
        let timer = match &self.spec.schedule {
            Schedule::Timer => None,
            Schedule::Cacher(t) => Some(t.clone()),
        };
        let mut ticks = timer.as_ref().map(|t| t.subscribe());
        let mut due = timer
            .as_ref()
            .and_then(|t| self.due_bucket(t, Instant::now()));
        let mut bookmark_at = match timer {
            None => self.next_bookmark(),
            Some(_) => None,
        };
        let bookmark = tokio::time::sleep_until(bookmark_at.unwrap_or(self.deadline));
        tokio::pin!(bookmark);
        let lag_check = tokio::time::sleep(LAG_CHECK);
        tokio::pin!(lag_check);
        loop {
            self.refill();
            // Whatever is ready now is taken and sent now, so a watcher that
            // wakes behind takes a run of events in one turn and its
            // connection writes them together.
            if let Err(end) = self.exchange(rx, tx) {
                return end;
            }
            // Ends as soon as its last line (a 410 ERROR) is out.
            if self.closing && self.pending.is_empty() {
                return End::Done;
            }
            let sending = !self.pending.is_empty();
            let taking = self.taking();
            tokio::select! {
                biased;
                _ = &mut deadline => return End::Done,
                permit = tx.reserve(), if sending => {
                    let Ok(permit) = permit else { return End::Done };
                    if let Some(line) = self.pending.pop_front() {
                        permit.send(line);
                    }
                }
                change = rx.recv(), if taking => match change {
                    Ok(c) => self.take(c),
                    Err(RecvError::Lagged(_)) => return End::TooSlow,
                    Err(RecvError::Closed) => return End::Done,
                },
                // A client that stopped reading leaves us blocked on it
                // while the subscription fills: cut it off before the
                // broadcast overwrites what it has not seen.
                _ = &mut lag_check, if !taking => {
                    if rx.len() > BROADCAST_CAPACITY * 3 / 4 {
                        return End::TooSlow;
                    }
                    lag_check.as_mut().reset(Instant::now() + LAG_CHECK);
                }
                // Like the cacher, no bookmark among the initial events.
                _ = &mut bookmark, if bookmark_at.is_some() && !self.closing && self.initial.is_none() && self.told.is_none() => {
                    bookmark_at = self.next_bookmark();
                    if let Some(at) = bookmark_at {
                        bookmark.as_mut().reset(at);
                    }
                    self.bookmark();
                }
                // A cacher's tick: due watchers get its bookmark. Like the
                // cacher, none among the initial events.
                tick = next_tick(&mut ticks),
                    if !self.closing && self.initial.is_none() && self.told.is_none() => {
                    let (Some(timer), Some(tick)) = (&timer, tick) else {
                        // The timer is gone: no more bookmarks.
                        ticks = None;
                        continue;
                    };
                    if due.is_some_and(|d| d <= tick.bucket) {
                        // What was dispatched before the tick is taken
                        // first, as the cacher dispatches in order.
                        if let Err(end) = self.exchange(rx, tx) {
                            return end;
                        }
                        if tick.rv > self.started_at {
                            self.bookmark();
                        }
                        due = self.due_bucket(timer, Instant::now());
                    }
                }
            }
        }
    }

    /// Queues a bookmark at the version the watcher stands at.
    fn bookmark(&mut self) {
        let repr = &self.spec.repr;
        if let Ok(obj) = repr.bookmark(&self.codec, self.position, false) {
            self.pending.push_back(repr.event("BOOKMARK", &obj));
        }
    }

    /// Whether the watcher takes changes from its subscription: not while
    /// closing, sending initial events or with a full queue.
    fn taking(&self) -> bool {
        !self.closing
            && self.initial.is_none()
            && self.told.is_none()
            && self.pending.len() < PENDING_MAX
    }

    /// Takes the changes already waiting and sends the lines the client's
    /// channel has room for, without waiting for either.
    fn exchange(&mut self, rx: &mut Receiver<Change>, tx: &mpsc::Sender<Bytes>) -> Result<(), End> {
        // A few rounds at most, so a fast client and a busy type do not keep
        // the task from yielding.
        for _ in 0..4 {
            self.refill();
            while self.taking() {
                match rx.try_recv() {
                    Ok(c) => self.take(c),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Lagged(_)) => return Err(End::TooSlow),
                    Err(TryRecvError::Closed) => return Err(End::Done),
                }
            }
            if self.pending.is_empty() {
                return Ok(());
            }
            while !self.pending.is_empty() {
                match tx.try_reserve() {
                    Ok(permit) => {
                        if let Some(line) = self.pending.pop_front() {
                            permit.send(line);
                        }
                    }
                    Err(TrySendError::Full(())) => return Ok(()),
                    Err(TrySendError::Closed(())) => return Err(End::Done),
                }
            }
        }
        Ok(())
    }

    /// Queues a relist's events until the queue is full or they are all
    /// out; then the watcher stands at the relist's rv.
    fn refill_told(&mut self) {
        let Some(told) = &mut self.told else {
            return;
        };
        while self.pending.len() < PENDING_MAX {
            let Some(ev) = told.events.get(told.next) else {
                self.position = self.position.max(told.rv);
                self.told = None;
                return;
            };
            told.next += 1;
            // A watch that started after the relist has these already.
            if ev.rv <= told.after {
                continue;
            }
            match event_line(&self.codec, &self.spec.repr, &self.spec.selection, ev) {
                Ok(line) => self.pending.extend(line),
                Err(Unencodable) => {
                    self.told = None;
                    self.cannot_write();
                    return;
                }
            }
        }
    }

    /// Queues initial events until the queue is full or they are all out.
    fn refill(&mut self) {
        self.refill_told();
        let Some(init) = &mut self.initial else {
            return;
        };
        let room = PENDING_MAX.saturating_sub(self.pending.len());
        if room == 0 {
            return;
        }
        let rest = match &init.after {
            None => init.items.range((Bound::Unbounded, Bound::Unbounded)),
            Some(k) => init.items.range((Bound::Excluded(&**k), Bound::Unbounded)),
        };
        let mut taken = 0;
        let mut last = None;
        let mut unwritable = false;
        for e in rest {
            last = Some(&e.key);
            if self.spec.selection.matches(e) {
                let Ok(obj) = self.spec.repr.object(&self.codec, e) else {
                    unwritable = true;
                    break;
                };
                self.pending.push_back(self.spec.repr.event("ADDED", &obj));
                taken += 1;
                if taken == room {
                    break;
                }
            }
        }
        if unwritable {
            self.cannot_write();
            return;
        }
        match last {
            Some(key) if taken == room => init.after = Some(key.clone()),
            _ => {
                // Every item is out: the end bookmark, then live changes.
                self.pending.extend(init.end.take());
                self.initial = None;
            }
        }
    }

    /// An object the watch's representation cannot hold: like the
    /// apiserver's watch on an encoding error, the stream ends after what
    /// is queued, and the client's next watch is forwarded upstream.
    fn cannot_write(&mut self) {
        self.initial = None;
        self.closing = true;
    }

    /// Accounts for one change from the store.
    fn take(&mut self, change: Change) {
        match change {
            Change::Event(ev) => {
                if ev.rv > self.position {
                    self.position = ev.rv;
                    match event_line(&self.codec, &self.spec.repr, &self.spec.selection, &ev) {
                        Ok(line) => self.pending.extend(line),
                        Err(Unencodable) => self.cannot_write(),
                    }
                }
            }
            Change::Progress(rv) => self.position = self.position.max(rv),
            // What is queued goes out, then the stream ends.
            Change::Released => self.closing = true,
            Change::Resynced { rv, events } => {
                if rv > self.position {
                    self.told = Some(Told {
                        events,
                        next: 0,
                        after: self.position,
                        rv,
                    });
                    self.refill_told();
                }
            }
            Change::Relisted { rv, gap } => {
                if gap && self.position < rv {
                    // Events between our position and the relist may have
                    // been missed: the client must relist, as after a 410
                    // (v1.20's cacher ends every watch on a relist).
                    let oldest = (*self.source).as_ref().oldest();
                    let expired = expired(self.position, oldest);
                    self.pending
                        .push_back(error_line(&self.spec.repr, &expired));
                    self.closing = true;
                    return;
                }
                self.position = self.position.max(rv);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::codec::ListStyle;
    use crate::store::HistoryLimits;
    use http_body_util::BodyExt;
    use serde_json::json;

    fn codec() -> Arc<TypeCodec> {
        Arc::new(TypeCodec::new(
            "",
            "v1",
            "ConfigMap",
            false,
            ListStyle::Typed,
        ))
    }

    fn store_of(n: usize) -> Arc<Store> {
        let store = Store::new(HistoryLimits::default());
        let entries = (0..n)
            .map(|i| Arc::new(Entry::for_test(&format!("cm-{i:04}"), 1)))
            .collect();
        store.replace(entries, 7);
        Arc::new(store)
    }

    /// Everything the watch sends until it ends.
    async fn lines(resp: Response<Body>) -> Vec<serde_json::Value> {
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        serde_json::Deserializer::from_slice(&body)
            .into_iter::<serde_json::Value>()
            .map(Result::unwrap)
            .collect()
    }

    fn spec(start: Start, name: Option<&str>) -> WatchSpec {
        WatchSpec {
            start,
            selection: Selection {
                name: name.map(str::to_string),
                ..Default::default()
            },
            repr: Repr::Json,
            bookmarks: true,
            timeout: Duration::from_millis(300),
            schedule: Schedule::Timer,
        }
    }

    #[tokio::test]
    async fn initial_events_come_in_key_order_many_times_the_queue_then_the_end_bookmark() {
        let n = PENDING_MAX * 3 + 5;
        let resp = serve(
            store_of(n),
            codec(),
            spec(Start::InitialEvents, None),
            "v1/configmaps".into(),
        );
        let got = lines(resp).await;
        assert_eq!(got.len(), n + 1);
        for (i, e) in got[..n].iter().enumerate() {
            assert_eq!(e["type"], "ADDED");
            assert_eq!(e["object"]["metadata"]["name"], format!("cm-{i:04}"));
        }
        let end = &got[n];
        assert_eq!(end["type"], "BOOKMARK");
        assert_eq!(end["object"]["metadata"]["resourceVersion"], "7");
        assert_eq!(
            end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
            "true"
        );
    }

    #[tokio::test]
    async fn initial_events_skip_what_the_selection_excludes() {
        let resp = serve(
            store_of(PENDING_MAX * 2),
            codec(),
            spec(Start::State, Some("cm-0100")),
            "v1/configmaps".into(),
        );
        let got = lines(resp).await;
        let names: Vec<_> = got
            .iter()
            .map(|e| (e["type"].clone(), e["object"]["metadata"]["name"].clone()))
            .collect();
        assert_eq!(names, [(json!("ADDED"), json!("cm-0100"))]);
    }

    #[test]
    fn watchers_that_see_an_event_unchanged_share_one_encoded_line() {
        let store = store_of(2);
        let (_, rx) = store.snapshot_and_subscribe();
        drop(rx);
        store
            .apply(EventType::Modified, Arc::new(Entry::for_test("cm-0001", 8)))
            .unwrap();
        let (past, _) = store.events_since(7).unwrap();
        let codec = codec();
        let all = Selection::default();
        let a = event_line(&codec, &Repr::Json, &all, &past[0])
            .unwrap()
            .unwrap();
        let b = event_line(&codec, &Repr::Json, &all, &past[0])
            .unwrap()
            .unwrap();
        assert_eq!(a.as_ptr(), b.as_ptr());
        // A watcher holding another codec gets its own, equal, line.
        let other = Arc::new((*codec).clone());
        let c = event_line(&other, &Repr::Json, &all, &past[0])
            .unwrap()
            .unwrap();
        assert_eq!(a, c);
        assert_ne!(a.as_ptr(), c.as_ptr());
        // Protobuf watchers share a frame of their own.
        let proto = Repr::Protobuf(None);
        let f = event_line(&codec, &proto, &all, &past[0]).unwrap().unwrap();
        let g = event_line(&codec, &proto, &all, &past[0]).unwrap().unwrap();
        assert_eq!(f.as_ptr(), g.as_ptr());
        assert_ne!(f, a);
        assert_eq!(
            &f[4..],
            &crate::encode::protobuf::watch_event(
                "MODIFIED",
                &proto.object(&codec, &past[0].entry).unwrap()
            )[4..]
        );
    }

    #[tokio::test]
    async fn a_burst_many_times_the_queue_arrives_whole_and_in_order_at_a_client_that_reads_late() {
        let store = store_of(3);
        let resp = serve(
            store.clone(),
            codec(),
            spec(Start::Now, None),
            "v1/configmaps".into(),
        );
        // Far more events than the watcher's queue and the client's channel
        // hold, while the client is not reading.
        let n = PENDING_MAX * 6;
        let name = |rv: u64| format!("burst-{rv:04}");
        for rv in 8..8 + n as u64 {
            store
                .apply(EventType::Added, Arc::new(Entry::for_test(&name(rv), rv)))
                .unwrap();
            if rv % 50 == 0 {
                tokio::task::yield_now().await;
            }
        }
        let got = lines(resp).await;
        let names: Vec<_> = got
            .iter()
            .map(|e| (e["type"].clone(), e["object"]["metadata"]["name"].clone()))
            .collect();
        let want: Vec<_> = (8..8 + n as u64)
            .map(|rv| (json!("ADDED"), json!(name(rv))))
            .collect();
        assert_eq!(names, want);
    }

    #[tokio::test(start_paused = true)]
    async fn a_watcher_a_relist_left_behind_gets_a_410_and_ends_at_once() {
        let store = store_of(3);
        let mut long = spec(Start::Now, None);
        long.timeout = Duration::from_secs(600);
        let resp = serve(store.clone(), codec(), long, "v1/configmaps".into());
        tokio::task::yield_now().await;
        let began = Instant::now();
        // Another state at a later version: events were missed.
        store.replace(vec![Arc::new(Entry::for_test("cm-new", 9))], 9);
        let got = lines(resp).await;
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0]["type"], "ERROR");
        assert_eq!(got[0]["object"]["code"], 410);
        // (Paused time: only waiting on a timer moves it.)
        assert_eq!(Instant::now(), began, "the stream ended without waiting");
    }

    #[tokio::test]
    async fn a_told_relist_reaches_a_watcher_as_events_many_times_the_queue_then_it_goes_on() {
        let n = PENDING_MAX * 3;
        let store = store_of(n);
        let resp = serve(
            store.clone(),
            codec(),
            spec(Start::Now, None),
            "v1/configmaps".into(),
        );
        tokio::task::yield_now().await;
        // Every object but the first modified at 8.., the first deleted:
        // a relist at 500 found them so.
        let mut list: Vec<_> = (1..n)
            .map(|i| Arc::new(Entry::for_test(&format!("cm-{i:04}"), 7 + i as u64)))
            .collect();
        list.push(Arc::new(Entry::for_test("cm-new", 400)));
        let stamp = |e: &Entry, rv| Some(Arc::new(Entry::for_test(&e.key, rv)));
        let told = store.resync(list, 500, stamp);
        assert_eq!(told, crate::store::Resync::Told { events: n + 1 });
        store
            .apply(EventType::Added, Arc::new(Entry::for_test("cm-after", 501)))
            .unwrap();
        let got = lines(resp).await;
        let seen: Vec<_> = got
            .iter()
            .filter(|e| e["type"] != "BOOKMARK")
            .map(|e| {
                let m = &e["object"]["metadata"];
                format!(
                    "{} {} {}",
                    e["type"].as_str().unwrap(),
                    m["name"].as_str().unwrap(),
                    m["resourceVersion"].as_str().unwrap_or("-")
                )
            })
            .collect();
        assert_eq!(seen.len(), n + 2, "{seen:?}");
        assert_eq!(seen[0], "MODIFIED cm-0001 -");
        assert_eq!(seen[n - 1], "ADDED cm-new -");
        assert_eq!(seen[n], "DELETED cm-0000 -");
        assert_eq!(seen[n + 1], "ADDED cm-after -");
    }
}
