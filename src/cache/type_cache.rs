//! One resource type's cache: its store, the codec its objects are read and
//! written with, the readiness latch, the Table printers, and the bodies
//! and gzip pieces kept for its lists. Its reflector writes to it through
//! [`Writer`]; requests read it.

use super::bodies::{BodyCache, Budget, Pieces};
use crate::encode::codec::{Entry, ListStyle, Store, TypeCodec};
use crate::encode::print::Printer;
use crate::metrics;
use crate::reflector::{Condition, ReflectorStats, Writer};
use crate::resource::{GroupVersionResource, ResourceType};
use crate::store::{EventType, HistoryLimits, StoreError};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::watch;

pub struct TypeCache {
    pub rt: ResourceType,
    pub store: Store,
    /// Shared, not cloned, per request; replaced whole when a list teaches the style.
    codec: RwLock<Arc<TypeCodec>>,
    synced: watch::Sender<bool>,
    stats: ReflectorStats,
    condition: std::sync::Mutex<Condition>,
    /// Configured to be cached from the start: readiness waits for it.
    eager: std::sync::atomic::AtomicBool,
    /// A built-in type's Table printer (or that it has none), found once.
    builtin_printer: std::sync::OnceLock<Option<Arc<Printer>>>,
    /// A custom resource's Table printer, kept while its CRD is unchanged.
    custom_printer: std::sync::Mutex<Option<Arc<Printer>>>,
    /// Finished list bodies of the newest snapshot.
    pub bodies: BodyCache,
    /// Gzip pieces of the objects, for stitching gzipped lists.
    pub pieces: Arc<Pieces>,
}

impl AsRef<Store> for TypeCache {
    fn as_ref(&self) -> &Store {
        &self.store
    }
}

impl TypeCache {
    pub fn new(rt: ResourceType, limits: HistoryLimits, budget: Arc<Budget>) -> Self {
        let codec = TypeCodec::for_type(&rt, ListStyle::Typed);
        TypeCache {
            rt,
            store: Store::new(limits),
            codec: RwLock::new(Arc::new(codec)),
            synced: watch::channel(false).0,
            stats: ReflectorStats::default(),
            condition: std::sync::Mutex::new(Condition::Starting),
            eager: Default::default(),
            builtin_printer: Default::default(),
            custom_printer: Default::default(),
            bodies: BodyCache::new(budget.clone()),
            pieces: Arc::new(Pieces::new(budget)),
        }
    }

    pub fn codec(&self) -> Arc<TypeCodec> {
        self.codec.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// What the reflector has done so far.
    pub fn stats(&self) -> &ReflectorStats {
        &self.stats
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

    /// A built-in type's Table printer (or that it has none), found once.
    pub(super) fn builtin_printer(&self) -> Option<Arc<Printer>> {
        let gvr = &self.rt.gvr;
        self.builtin_printer
            .get_or_init(|| Printer::builtin(&gvr.group, &gvr.version, &gvr.resource))
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
        let (objects, bytes) = self.store.size();
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

    fn replace(&self, codec: TypeCodec, entries: Vec<Arc<Entry>>, rv: u64) {
        metrics::reflector_list(&self.rt.gvr.to_string(), self.store.limits().capacity);
        // The codec first: readers of the new state decode and encode it
        // with the codec that read it.
        *self.codec.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(codec);
        self.store.replace(entries, rv);
        self.report_size();
        self.synced.send_replace(true);
    }

    fn apply(&self, kind: EventType, entry: Arc<Entry>) -> Result<(), StoreError> {
        self.store.apply(kind, entry)?;
        self.report_size();
        Ok(())
    }

    fn advance(&self, rv: u64) {
        self.store.advance(rv);
    }

    fn stats(&self) -> &ReflectorStats {
        &self.stats
    }

    fn report(&self, condition: Condition) {
        let mut c = self.condition.lock().unwrap_or_else(|e| e.into_inner());
        if *c != condition {
            tracing::debug!(resource = %self.rt.gvr, ?condition, "reflector");
            *c = condition;
        }
    }

    fn snapshot(&self) -> crate::encode::codec::Snapshot {
        self.store.current()
    }
}
