//! One resource type's cache: its store, the codec its objects are read and
//! written with, the readiness latch, the Table printers, and the bodies
//! and gzip pieces kept for its lists. Its reflector writes to it through
//! [`Writer`]; requests read it.

use super::bodies::{BodyCache, Budget, Pieces};
use super::limits::{CacheLimits, CachedBytes};
use crate::encode::codec::{Entry, ListStyle, Store, TypeCodec};
use crate::encode::print::Printer;
use crate::freshness::{Freshness, Mode, Proven, TypeProofs, Unproven, Want};
use crate::metrics;
use crate::metrics::TypeTally;
use crate::reflector::{Condition, Overflow, Update, Writer};
use crate::resource::{GroupVersionResource, ResourceType};
use crate::store::{HistoryLimits, Resync, StoreError};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::watch;

pub struct TypeCache {
    pub rt: ResourceType,
    pub store: Store,
    /// Shared, not cloned, per request; replaced whole when a list teaches the style.
    codec: RwLock<Arc<TypeCodec>>,
    synced: watch::Sender<bool>,
    /// What clients and the reflector did with it (`metrics` counts).
    tally: TypeTally,
    condition: std::sync::Mutex<Condition>,
    /// When the condition last changed kind (see `report`).
    condition_since: std::sync::Mutex<std::time::Instant>,
    /// Configured to be cached from the start: readiness waits for it.
    eager: std::sync::atomic::AtomicBool,
    /// A built-in type's Table printer (or that it has none), found once
    /// for each release's printers (a slot per `Printers`).
    builtin_printers:
        [std::sync::OnceLock<Option<Arc<Printer>>>; crate::encode::personality::Printers::COUNT],
    /// A custom resource's Table printer, kept while its CRD is unchanged.
    custom_printer: std::sync::Mutex<Option<Arc<Printer>>>,
    /// Finished list bodies of the newest snapshot.
    pub bodies: BodyCache,
    /// Gzip pieces of the objects, for stitching gzipped lists.
    pub pieces: Arc<Pieces>,
    limits: CacheLimits,
    /// Every type's bytes, this one's as last reported (`reported`).
    cached: Arc<CachedBytes>,
    reported: AtomicUsize,
    /// When a request last asked for the type, in seconds of `clock()`.
    last_asked: AtomicU64,
    /// Its reflector's task, stopped when the type is let go.
    reflector: OnceLock<tokio::task::AbortHandle>,
    /// When the upstream was last heard from for it and its reflector's
    /// last error, for the status page (its counts are in `tally`).
    pub activity: Activity,
    /// Whether a relist's difference goes to watchers as events
    /// (`Store::resync`; edge autonomy) rather than as the cacher's 410.
    tell_relists: bool,
    /// When the snapshot its state was restored from was written, until
    /// the upstream lists the type again: its answers are stale till then.
    restored: std::sync::Mutex<Option<std::time::SystemTime>>,
    /// The version of its state last written to the snapshot.
    pub(super) snapshot_written: std::sync::Mutex<Option<(u64, u64)>>,
    /// What proves it fresh for consistent reads (shared by every type),
    /// and its own proofs.
    freshness: Arc<Freshness>,
    pub proofs: Arc<TypeProofs>,
}

/// How a type's upstream is doing, for `/debug/cache`: when it was last
/// heard from, and the reflector's last error.
#[derive(Debug, Default)]
pub struct Activity {
    /// When the upstream was last heard from for it (a list, an event or
    /// a bookmark), in milliseconds of `clock_ms()`; 0: never.
    heard: AtomicU64,
    /// The reflector's last error and when (it stays after recovery).
    last_error: std::sync::Mutex<Option<(String, std::time::SystemTime)>>,
}

impl Activity {
    fn heard_now(&self) {
        self.heard.store(clock_ms().max(1), Ordering::Relaxed);
    }

    /// How long since the upstream was last heard from for the type.
    pub fn lag(&self) -> Option<Duration> {
        match self.heard.load(Ordering::Relaxed) {
            0 => None,
            at => Some(Duration::from_millis(clock_ms().saturating_sub(at))),
        }
    }

    pub fn last_error(&self) -> Option<(String, std::time::SystemTime)> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn failed(&self, why: &str) {
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((why.to_string(), std::time::SystemTime::now()));
    }
}

static START: OnceLock<Instant> = OnceLock::new();

/// Seconds since the first call: a coarse clock an atomic can hold.
fn clock() -> u64 {
    START.get_or_init(Instant::now).elapsed().as_secs()
}

/// The same clock in milliseconds.
fn clock_ms() -> u64 {
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

impl AsRef<Store> for TypeCache {
    fn as_ref(&self) -> &Store {
        &self.store
    }
}

impl TypeCache {
    pub fn new(
        rt: ResourceType,
        history: HistoryLimits,
        budget: Arc<Budget>,
        limits: CacheLimits,
        cached: Arc<CachedBytes>,
        tell_relists: bool,
        freshness: Arc<Freshness>,
    ) -> Self {
        let codec = TypeCodec::for_type(&rt, ListStyle::Typed)
            .with_personality(freshness.version().personality().0);
        TypeCache {
            rt,
            store: Store::new(history),
            codec: RwLock::new(Arc::new(codec)),
            synced: watch::channel(false).0,
            tally: TypeTally::default(),
            condition: std::sync::Mutex::new(Condition::Starting),
            condition_since: std::sync::Mutex::new(std::time::Instant::now()),
            eager: Default::default(),
            builtin_printers: Default::default(),
            custom_printer: Default::default(),
            bodies: BodyCache::new(budget.clone()),
            pieces: Arc::new(Pieces::new(budget)),
            limits,
            cached,
            reported: AtomicUsize::new(0),
            last_asked: AtomicU64::new(clock()),
            reflector: OnceLock::new(),
            activity: Activity::default(),
            tell_relists,
            restored: Default::default(),
            snapshot_written: Default::default(),
            freshness,
            proofs: Arc::default(),
        }
    }

    /// Proves that the cache holds what `want` asks of a read that
    /// arrived at `arrived` (`freshness`), or says why not.
    pub async fn prove(
        self: &Arc<Self>,
        want: Want,
        arrived: tokio::time::Instant,
    ) -> Result<Proven, Unproven> {
        self.freshness
            .clone()
            .prove(self, &self.proofs, want, arrived)
            .await
    }

    /// Writes its representations as `personality`'s apiserver does from
    /// now on: the upstream's release changed (an upgrade behind kubecache)
    /// or was just learnt. The codec is replaced, so nothing encoded with
    /// the old one is shared again.
    pub fn follow(&self, personality: crate::encode::personality::Personality) {
        let mut codec = self.codec.write().unwrap_or_else(|e| e.into_inner());
        if codec.personality != personality {
            *codec = Arc::new(codec.with_personality(personality));
        }
    }

    /// How its consistent reads are proven now, and why.
    pub fn freshness_mode(&self) -> Mode {
        self.freshness.mode(&self.store)
    }

    /// The state a snapshot held, served (with a warning) until the
    /// upstream lists the type again; its reflector's first list is a
    /// consistent one, never older than this.
    pub(super) fn restore(&self, r: super::snapshot::Restored) {
        let codec = r
            .codec
            .with_personality(self.freshness.version().personality().0);
        *self.codec.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(codec);
        self.store.replace(r.entries, r.rv);
        *self.restored.lock().unwrap_or_else(|e| e.into_inner()) = Some(r.written);
        *self
            .snapshot_written
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(self.store.current().version());
        self.report_size();
        self.synced.send_replace(true);
    }

    /// When the snapshot the type's state came from was written, if the
    /// upstream has not listed it since.
    pub fn restored_at(&self) -> Option<std::time::SystemTime> {
        *self.restored.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn reflector_is(&self, task: tokio::task::AbortHandle) {
        let _ = self.reflector.set(task);
    }

    pub(super) fn stop_reflector(&self) {
        if let Some(task) = self.reflector.get() {
            task.abort();
        }
    }

    /// A request asked for the type.
    pub fn touch(&self) {
        self.last_asked.store(clock(), Ordering::Relaxed);
    }

    /// How long since a request last asked for it, to the second.
    pub fn idle_for(&self) -> Duration {
        Duration::from_secs(clock().saturating_sub(self.last_asked.load(Ordering::Relaxed)))
    }

    /// Whether anyone depends on it now: it is eager or watched.
    pub fn in_use(&self) -> bool {
        self.is_eager() || self.store.watchers() > 0
    }

    pub fn codec(&self) -> Arc<TypeCodec> {
        self.codec.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// What clients and the reflector have done with it so far.
    pub fn tally(&self) -> &TypeTally {
        &self.tally
    }

    /// What its reflector is doing now.
    pub fn condition(&self) -> Condition {
        self.condition
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether the cache follows the upstream right now (a synced type
    /// whose reflector is failing still serves what needs no freshness).
    pub fn is_current(&self) -> bool {
        // Asked per serve-stale read: the lock only, no clone.
        self.is_synced()
            && self
                .condition
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_current()
    }

    /// Whether readiness waits for this type: configured to be cached,
    /// not started by a client's read.
    pub fn is_eager(&self) -> bool {
        self.eager.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(super) fn make_eager(&self) {
        self.eager.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// A built-in type's Table printer as its codec's personality prints
    /// (or that it has none).
    pub(super) fn builtin_printer(&self) -> Option<Arc<Printer>> {
        // Found once per release's printers, not per request: a Table
        // read would otherwise take the printers' global lock.
        let personality = self.codec().personality;
        let slot = &self.builtin_printers[personality.printers().index()];
        let gvr = &self.rt.gvr;
        slot.get_or_init(|| Printer::builtin(personality, &gvr.group, &gvr.version, &gvr.resource))
            .clone()
    }

    /// The slot of a custom resource's Table printer.
    pub(super) fn custom_printer(&self) -> std::sync::MutexGuard<'_, Option<Arc<Printer>>> {
        self.custom_printer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// What the type's cache holds, for the size metrics.
    fn report_size(&self) {
        metrics::cache_resource_version(&self.rt.gvr.to_string(), self.store.rv());
        let (objects, bytes) = self.store.size();
        self.cached
            .changed(self.reported.swap(bytes, Ordering::Relaxed), bytes);
        let history = self.store.history_len();
        metrics::cache_size(&self.rt.gvr.to_string(), objects, bytes, history);
    }

    /// The readiness latch: once synced, a type stays servable; relists swap
    /// state atomically, so readers never see a half-built list.
    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        let mut rx = self.synced.subscribe();
        let synced = matches!(
            tokio::time::timeout(timeout, rx.wait_for(|s| *s)).await,
            Ok(Ok(_))
        );
        synced
    }
}

/// The reflector's side of the cache.
impl Writer for TypeCache {
    fn resource(&self) -> &GroupVersionResource {
        &self.rt.gvr
    }

    fn codec(&self) -> Arc<TypeCodec> {
        TypeCache::codec(self)
    }

    fn apply(&self, update: Update) -> Result<(), StoreError> {
        match update {
            Update::Listed { codec, entries, rv } => self.listed(codec, entries, rv),
            Update::Event(kind, entry) => {
                self.store.apply(kind, entry)?;
                metrics::event_dispatched(&self.rt.gvr.to_string());
                self.report_size();
                self.activity.heard_now();
            }
            Update::Progress(rv) => {
                self.store.advance(rv);
                metrics::cache_resource_version(&self.rt.gvr.to_string(), self.store.rv());
                self.activity.heard_now();
            }
            Update::Proven { epoch, through, rv } => {
                self.store.advance_proven(epoch, through, rv)?;
                metrics::cache_resource_version(&self.rt.gvr.to_string(), self.store.rv());
                self.activity.heard_now();
            }
            Update::Released => {
                self.synced.send_replace(false);
                // Watchers end; the kept bodies go with the old epoch.
                self.store.release();
                self.report_size();
            }
        }
        Ok(())
    }

    fn restored(&self) -> bool {
        self.restored_at().is_some()
    }

    fn tally(&self) -> &TypeTally {
        &self.tally
    }

    fn report(&self, condition: Condition) {
        let mut c = self.condition.lock().unwrap_or_else(|e| e.into_inner());
        if *c == condition {
            return;
        }
        if let Condition::Failing(why) = &condition {
            self.activity.failed(why);
        }
        // One line per change of state; a failing reflector's next error
        // is its own warning, not a new state.
        let mut since = self
            .condition_since
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if std::mem::discriminant(&*c) != std::mem::discriminant(&condition) {
            let (objects, bytes) = self.store.size();
            let was = c.name();
            let state = condition.name();
            let after = since.elapsed();
            match &condition {
                Condition::Failing(why) => tracing::warn!(
                    resource = %self.rt.gvr, state, was, ?after, objects, bytes, error = %why,
                    "reflector state"
                ),
                _ => tracing::info!(
                    resource = %self.rt.gvr, state, was, ?after, objects, bytes,
                    "reflector state"
                ),
            }
            *since = std::time::Instant::now();
        }
        *c = condition;
    }

    fn snapshot(&self) -> crate::encode::codec::Snapshot {
        self.store.current()
    }

    fn room(&self, bytes: usize) -> Result<(), Overflow> {
        self.cached
            .room(&self.limits, self.reported.load(Ordering::Relaxed), bytes)
    }

    fn cached_bytes(&self) -> usize {
        self.store.size().1
    }
}

impl TypeCache {
    /// A whole list replaces the state (`Update::Listed`), its
    /// representations following the upstream's release as it is now.
    fn listed(&self, mut codec: TypeCodec, entries: Vec<Arc<Entry>>, rv: u64) {
        codec.personality = self.freshness.version().personality().0;
        metrics::reflector_list(&self.rt.gvr.to_string(), self.store.limits().capacity);
        // The codec first: readers of the new state decode and encode it
        // with the codec that read it.
        let tell = self.tell_relists && self.codec().style == codec.style;
        let codec = Arc::new(codec);
        *self.codec.write().unwrap_or_else(|e| e.into_inner()) = codec.clone();
        let resource = self.rt.gvr.to_string();
        if tell {
            // A deleted object's event carries its last state at the
            // relist's version, as the upstream's DELETED would.
            let stamped = |e: &Entry, rv| {
                crate::encode::json::with_resource_version(&e.item, rv)
                    .and_then(|item| codec.from_item(item).ok())
                    .map(Arc::new)
            };
            match self.store.resync(entries, rv, stamped) {
                Resync::Told { events } => {
                    tracing::debug!(%resource, events, rv, "relist told to watchers as events");
                    metrics::relist_told(&resource, events);
                }
                Resync::Replaced => metrics::relist_replaced(&resource),
            }
        } else {
            self.store.replace(entries, rv);
            metrics::relist_replaced(&resource);
        }
        self.report_size();
        self.activity.heard_now();
        *self.restored.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.synced.send_replace(true);
    }
}

impl Drop for TypeCache {
    fn drop(&mut self) {
        self.cached.changed(*self.reported.get_mut(), 0);
    }
}
