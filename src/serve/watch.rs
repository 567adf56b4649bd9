//! Watch streams served from a `Store`, as the apiserver's cacher serves
//! them: the starting point (the current state as ADDED events, every event
//! after a resourceVersion, or initial events closed by a bookmark), then
//! live events through the watcher's selection — an object entering it
//! arrives as ADDED, one leaving it as DELETED — bookmarks about once a
//! minute and just before the deadline, and a clean end at the deadline.
//! A watcher that falls too far behind is cut off without slowing anyone.
//! kubecache's watches and the simulator's come from here; the simulator
//! adds its faults through `Interference`.

use crate::encode::json;
use crate::metrics;
use crate::request::options::Initial;
use crate::selector::{FieldSelector, LabelSelector};
use crate::serve::json_response;
use crate::status::Status;
use crate::store::{Change, Entry, Event, EventType, Store, TypeCodec, BROADCAST_CAPACITY};
use crate::upstream::{channel_body, Body};
use bytes::Bytes;
use http::{Response, StatusCode};
use rand::Rng;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::broadcast::Receiver;
use tokio::sync::{mpsc, watch};
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
            .is_none_or(|ns| e.namespace.as_deref() == Some(ns))
            && self.name.as_deref().is_none_or(|n| &*e.name == n)
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
    pub bookmarks: bool,
    pub timeout: Duration,
    /// Bookmarks are only sent once the store is past this version; the
    /// simulator uses it to keep the v1.20 cacher's silence for types that
    /// have seen no event.
    pub bookmarks_after: u64,
}

/// The watch timeout: the client's `timeoutSeconds`, or the apiserver's
/// default of a random time between its minimum request timeout (30 min)
/// and twice that.
pub fn timeout(seconds: Option<i64>) -> Duration {
    match seconds {
        Some(s) if s > 0 => Duration::from_secs(s as u64),
        _ => Duration::from_secs(rand::thread_rng().gen_range(1800..3600)),
    }
}

/// Asked before each line; true replaces the line with the given garbage.
pub type Garble = (Arc<dyn Fn() -> bool + Send + Sync>, &'static [u8]);

/// Disturbances injected from outside (the simulator's faults).
#[derive(Default)]
pub struct Interference {
    /// The stream ends when this changes, as a dropped connection would.
    pub drops: Option<watch::Receiver<u64>>,
    /// While true, nothing is sent and the connection stays open.
    pub stall: Option<watch::Receiver<bool>>,
    pub garble: Option<Garble>,
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
    interference: Interference,
    resource: String,
) -> Response<Body>
where
    S: AsRef<Store> + Send + Sync + 'static,
{
    let store = (*source).as_ref();
    let (initial, position, rx) = match spec.start {
        Start::State | Start::InitialEvents => {
            let (snap, rx) = store.snapshot_and_subscribe();
            let mut lines: VecDeque<Bytes> = snap
                .items
                .values()
                .filter(|e| spec.selection.matches(e))
                .map(|e| json::watch_event("ADDED", &codec.object_bytes(e)))
                .collect();
            if spec.start == Start::InitialEvents && spec.bookmarks {
                let obj = json::initial_events_end_bookmark(&codec, snap.rv);
                lines.push_back(json::watch_event("BOOKMARK", &obj));
            }
            (lines, snap.rv, rx)
        }
        Start::Now => {
            let (snap, rx) = store.snapshot_and_subscribe();
            (VecDeque::new(), snap.rv, rx)
        }
        Start::After(rv) => match store.events_since(rv) {
            Some((past, rx)) => {
                let position = past.last().map_or(rv, |e| e.rv.max(rv));
                let lines = past
                    .iter()
                    .filter_map(|ev| event_line(&codec, &spec.selection, ev))
                    .collect();
                (lines, position, rx)
            }
            None => return error_response(&expired(rv, store.oldest())),
        },
    };
    let (tx, body) = channel_body(PENDING_MAX);
    let deadline = Instant::now() + spec.timeout;
    let watcher = Watcher {
        source,
        codec,
        spec,
        deadline,
        position,
        pending: initial,
        closing: false,
        resource,
    };
    tokio::spawn(watcher.run(rx, tx, interference));
    json_response(StatusCode::OK, body)
}

/// A watch that fails after its request was accepted: as the cacher's
/// error watcher, one ERROR event carrying the Status, then the end.
pub fn error_response(status: &Status) -> Response<Body> {
    let (tx, body) = channel_body(1);
    let _ = tx.try_send(error_line(status));
    json_response(StatusCode::OK, body)
}

fn error_line(status: &Status) -> Bytes {
    let status = status.to_bytes();
    // The Status without its trailing newline is the event's object.
    json::watch_event("ERROR", &status[..status.len() - 1])
}

/// The cacher's 410 for a position its history no longer reaches.
fn expired(rv: u64, oldest: u64) -> Status {
    Status::expired(format!("too old resource version: {rv} ({oldest})"))
}

/// An event as a filtered watcher sees it: leaving the selection is a
/// DELETED, entering it an ADDED, like the cacher's watcher.
pub fn event_line(codec: &TypeCodec, sel: &Selection, ev: &Event) -> Option<Bytes> {
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
            let prev = ev.prev.as_ref()?;
            let obj = codec.object_bytes(prev);
            let obj = json::with_resource_version(&obj, ev.rv).unwrap_or(obj);
            return Some(json::watch_event("DELETED", &obj));
        }
        _ => return None,
    };
    Some(json::watch_event(kind, &codec.object_bytes(&ev.entry)))
}

struct Watcher<S> {
    source: Arc<S>,
    codec: Arc<TypeCodec>,
    spec: WatchSpec,
    deadline: Instant,
    /// The last resourceVersion this watcher has accounted for: events at
    /// or below it are not sent again, and bookmarks carry it.
    position: u64,
    pending: VecDeque<Bytes>,
    /// Set once the stream must end after what is queued (a 410 ERROR).
    closing: bool,
    resource: String,
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

    async fn run(
        mut self,
        mut rx: Receiver<Change>,
        tx: mpsc::Sender<Bytes>,
        mut interference: Interference,
    ) {
        let end = self.pump(&mut rx, &tx, &mut interference).await;
        if let End::TooSlow = end {
            metrics::watcher_terminated(&self.resource);
        }
    }

    async fn pump(
        &mut self,
        rx: &mut Receiver<Change>,
        tx: &mpsc::Sender<Bytes>,
        interference: &mut Interference,
    ) -> End {
        let mut bookmark_at = self.next_bookmark();
        let mut lag_check = tokio::time::interval(LAG_CHECK);
        let (_never_drop, never_dropped) = watch::channel(0u64);
        let mut drops = interference.drops.take().unwrap_or(never_dropped);
        let (_never_stall, never_stalled) = watch::channel(false);
        let mut stall = interference.stall.take().unwrap_or(never_stalled);
        loop {
            if self.closing && self.pending.is_empty() {
                return End::Done;
            }
            let stalled = *stall.borrow_and_update();
            let sending = !stalled && !self.pending.is_empty();
            let taking = !stalled && !self.closing && self.pending.len() < PENDING_MAX;
            let bookmark = async {
                match bookmark_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                _ = tokio::time::sleep_until(self.deadline) => return End::Done,
                _ = drops.changed() => return End::Done,
                _ = stall.changed() => {}
                permit = tx.reserve(), if sending => {
                    let Ok(permit) = permit else { return End::Done };
                    let Some(line) = self.pending.pop_front() else { continue };
                    let line = match &interference.garble {
                        Some((garble, garbage)) if garble() => Bytes::from_static(garbage),
                        _ => line,
                    };
                    permit.send(line);
                }
                change = rx.recv(), if taking => match change {
                    Ok(c) => self.take(c),
                    Err(RecvError::Lagged(_)) => return End::TooSlow,
                    Err(RecvError::Closed) => return End::Done,
                },
                _ = lag_check.tick() => {
                    // A client that stopped reading leaves us blocked on it
                    // while the subscription fills: cut it off before the
                    // broadcast overwrites what it has not seen.
                    if rx.len() > BROADCAST_CAPACITY * 3 / 4 {
                        return End::TooSlow;
                    }
                }
                _ = bookmark, if !stalled && !self.closing => {
                    bookmark_at = self.next_bookmark();
                    if self.position > self.spec.bookmarks_after {
                        let obj = json::bookmark_object(&self.codec, self.position);
                        self.pending.push_back(json::watch_event("BOOKMARK", &obj));
                    }
                }
            }
        }
    }

    /// Accounts for one change from the store.
    fn take(&mut self, change: Change) {
        match change {
            Change::Event(ev) => {
                if ev.rv > self.position {
                    self.position = ev.rv;
                    self.pending
                        .extend(event_line(&self.codec, &self.spec.selection, &ev));
                }
            }
            Change::Progress(rv) => self.position = self.position.max(rv),
            Change::Relisted { rv, changed } => {
                if changed && self.position < rv {
                    // Events between our position and the relist were
                    // missed: the client must relist, as after a 410.
                    let oldest = (*self.source).as_ref().oldest();
                    self.pending
                        .push_back(error_line(&expired(self.position, oldest)));
                    self.closing = true;
                    return;
                }
                self.position = self.position.max(rv);
            }
        }
    }
}
