//! The registry of watch caches: one [`TypeCache`] per resource type,
//! started on first use or eagerly, and the discovery they are built from.
//! The reflectors and their upstream connections run on the cache's own
//! runtime, apart from the one serving clients.

use super::bodies::Budget;
use super::limits::{CacheLimits, CachedBytes};
use super::snapshot::{SnapshotError, Snapshots, TypeState};
use super::type_cache::TypeCache;
use crate::encode::codec::ListStyle;
use crate::encode::print::Printer;
use crate::freshness::{Freshness, FreshnessConfig};
use crate::reflector::{self, ReflectorConfig};
use crate::resource::{GroupVersionResource, ResourceType};
use crate::store::HistoryLimits;
use crate::upstream::discovery::Discovery;
use crate::upstream::health::{ProbeConfig, UpstreamHealth};
use crate::upstream::version::UpstreamVersion;
use crate::upstream::{Upstream, UpstreamConfig, UpstreamError};
use dashmap::DashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("starting the cache's runtime")]
    Runtime(#[source] std::io::Error),
    #[error("the cache's upstream client")]
    Upstream(#[from] UpstreamError),
    #[error("the snapshot: {0}")]
    Snapshot(#[from] SnapshotError),
}

/// Edge autonomy: what the cache keeps on disk, and whether it answers
/// from its last known state while the upstream is unreachable.
#[derive(Debug, Clone, Default)]
pub struct EdgeConfig {
    /// Where each type's cache and the discovery documents are persisted
    /// (`--snapshot-dir`); restored from on start.
    pub snapshot_dir: Option<std::path::PathBuf>,
    /// How often what changed is written.
    pub snapshot_every: Duration,
    /// `--serve-stale-when-offline`.
    pub serve_stale_when_offline: bool,
}

impl EdgeConfig {
    /// Whether any of it is on: then a relist's difference goes to
    /// watchers as events (`Store::resync`) instead of the cacher's 410.
    pub fn enabled(&self) -> bool {
        self.snapshot_dir.is_some() || self.serve_stale_when_offline
    }
}

/// The runtime the cache's input runs on: the reflectors and their
/// upstream connections. Were they among the serving tasks, every chunk of
/// a watch would wait its turn behind all of those: with 10,000 watchers
/// busy, events reached the cache tens of seconds after the upstream sent
/// them (fan-out benchmark), and trickling in, each went out to the
/// watchers a few at a time rather than in runs.
struct Ingest(Option<tokio::runtime::Runtime>);

impl Ingest {
    fn start() -> Result<Self, CacheError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .thread_name("kubecache-ingest")
            .enable_all()
            .build()
            .map_err(CacheError::Runtime)?;
        Ok(Ingest(Some(rt)))
    }

    fn handle(&self) -> &tokio::runtime::Handle {
        self.0
            .as_ref()
            .expect("the runtime is only taken when dropped")
            .handle()
    }
}

impl Drop for Ingest {
    fn drop(&mut self) {
        // Without waiting: the cache may be dropped inside a runtime.
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

pub struct Cache {
    ingest: Ingest,
    /// The cache's own client of the upstream: its requests and connections
    /// run on `ingest`.
    upstream: Arc<Upstream>,
    /// Whether the upstream answers kubecache and accepts its credentials.
    health: Arc<UpstreamHealth>,
    /// What proves a type's cache fresh for consistent reads, and what
    /// it knows of the upstream's version.
    freshness: Arc<Freshness>,
    discovery: RwLock<Arc<Discovery>>,
    discovered_at: RwLock<Option<Instant>>,
    refreshing: AtomicBool,
    types: DashMap<GroupVersionResource, Arc<TypeCache>>,
    limits: HistoryLimits,
    reflector: ReflectorConfig,
    cache_limits: CacheLimits,
    cached: Arc<CachedBytes>,
    /// What all types' kept bodies may take.
    body_budget: Arc<Budget>,
    edge: EdgeConfig,
    snapshots: Option<Snapshots>,
    /// Whether the snapshot has been restored from: until then nothing is
    /// written to it (a write removes the files of types not cached yet —
    /// those being restored).
    restored: AtomicBool,
    /// When the discovery documents were read from the upstream.
    discovery_as_of: RwLock<Option<std::time::SystemTime>>,
    /// The discovery last written to the snapshot; held while a snapshot
    /// is written, so that the interval's writer and the last one at
    /// shutdown never write the same file at once.
    discovery_written: std::sync::Mutex<Option<Arc<Discovery>>>,
}

/// Discovery is refreshed on a miss at most this often.
const DISCOVERY_MIN_AGE: Duration = Duration::from_secs(10);

impl Cache {
    pub fn new(
        upstream: &UpstreamConfig,
        limits: HistoryLimits,
        reflector: ReflectorConfig,
        cache_limits: CacheLimits,
        edge: EdgeConfig,
        freshness: FreshnessConfig,
    ) -> Result<Arc<Self>, CacheError> {
        let snapshots = match &edge.snapshot_dir {
            Some(dir) => Some(Snapshots::open(dir, upstream.url.as_str())?),
            None => None,
        };
        let ingest = Ingest::start()?;
        let upstream = Upstream::on_runtime(upstream, ingest.handle().clone())?;
        let health = UpstreamHealth::new();
        let version = Arc::new(UpstreamVersion::default());
        ingest.handle().spawn(health.clone().run(
            upstream.clone(),
            ProbeConfig::default(),
            version.clone(),
        ));
        let freshness = Freshness::new(
            upstream.clone(),
            version,
            ingest.handle().clone(),
            freshness,
        );
        let cache = Arc::new(Cache {
            ingest,
            upstream,
            health,
            freshness,
            discovery: RwLock::new(Arc::new(Discovery::default())),
            discovered_at: RwLock::new(None),
            refreshing: AtomicBool::new(false),
            types: DashMap::new(),
            limits,
            reflector,
            cache_limits,
            cached: Arc::default(),
            body_budget: Arc::new(Budget::with_limit(cache_limits.max_kept_bytes)),
            edge,
            snapshots,
            restored: AtomicBool::new(false),
            discovery_as_of: RwLock::new(None),
            discovery_written: Default::default(),
        });
        {
            // Every type's representations follow the upstream's release:
            // learnt at start, and changed by an upgrade behind kubecache.
            let weak = Arc::downgrade(&cache);
            let mut versions = cache.freshness.version().subscribe();
            cache.ingest.handle().spawn(async move {
                while versions.changed().await.is_ok() {
                    let Some(cache) = weak.upgrade() else { return };
                    let (personality, _) = cache.freshness.version().personality();
                    for tc in cache.all() {
                        tc.follow(personality);
                    }
                }
            });
        }
        if cache.snapshots.is_some() {
            let weak = Arc::downgrade(&cache);
            let every = cache.edge.snapshot_every.max(Duration::from_millis(100));
            cache.ingest.handle().spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    let Some(cache) = weak.upgrade() else { return };
                    cache.write_snapshot().await;
                }
            });
        }
        if let Some(idle) = cache_limits.idle_after {
            let weak = Arc::downgrade(&cache);
            cache.ingest.handle().spawn(async move {
                // Often enough that a type goes within a quarter of its
                // idle time past it.
                let every = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
                loop {
                    tokio::time::sleep(every).await;
                    let Some(cache) = weak.upgrade() else { return };
                    cache.let_go_idle(idle);
                }
            });
        }
        Ok(cache)
    }

    /// The bytes of objects every type's cache holds.
    pub fn cached_bytes(&self) -> usize {
        self.cached.total()
    }

    /// Lets go of the types nobody has asked for in `idle`, unless eager or
    /// watched: their reflectors stop, and the next read starts them again.
    fn let_go_idle(&self, idle: Duration) {
        let idle_type = |tc: &TypeCache| !tc.in_use() && tc.idle_for() >= idle;
        let candidates: Vec<GroupVersionResource> = self
            .types
            .iter()
            .filter(|e| idle_type(e.value()))
            .map(|e| e.key().clone())
            .collect();
        for gvr in candidates {
            // Asked again under the entry's lock: a read that came since
            // keeps the type. (One that took the type just before and
            // starts a watch on it after this finds it released: forwarded,
            // or its watch ends at once and is asked again.)
            let Some((_, tc)) = self.types.remove_if(&gvr, |_, tc| idle_type(tc)) else {
                continue;
            };
            tc.stop_reflector();
            use crate::reflector::{Update, Writer};
            let _ = tc.apply(Update::Released);
            tracing::info!(resource = %gvr, idle = ?tc.idle_for(), "letting an idle type's cache go");
            crate::metrics::cache_released(&gvr.to_string(), "idle");
        }
    }

    /// What the probes of the upstream found.
    /// What proves types fresh, and what is known of the upstream.
    pub fn freshness(&self) -> &Freshness {
        &self.freshness
    }

    pub fn upstream_health(&self) -> &UpstreamHealth {
        &self.health
    }

    /// The budget of the bodies kept for repeated lists.
    pub fn body_budget(&self) -> &Budget {
        &self.body_budget
    }

    pub fn discovery(&self) -> Arc<Discovery> {
        self.discovery
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub async fn refresh_discovery(&self) -> Result<(), crate::upstream::UpstreamError> {
        let d = Discovery::fetch(&self.upstream).await?;
        tracing::info!(types = d.len(), "discovery refreshed");
        *self.discovery.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(d);
        *self
            .discovery_as_of
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some(std::time::SystemTime::now());
        *self
            .discovered_at
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        Ok(())
    }

    /// A type discovery does not know may be a new CRD: look again, in the
    /// background and not too often.
    pub fn discovery_miss(self: &Arc<Self>) {
        let stale = self
            .discovered_at
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_none_or(|t| t.elapsed() > DISCOVERY_MIN_AGE);
        if stale && !self.refreshing.swap(true, Ordering::AcqRel) {
            let me = self.clone();
            tokio::spawn(async move {
                if let Err(e) = me.refresh_discovery().await {
                    tracing::warn!(error = %e, "discovery refresh failed");
                }
                me.refreshing.store(false, Ordering::Release);
            });
        }
    }

    /// The cache of a type, starting its reflector on first use.
    pub fn type_cache(&self, rt: &ResourceType) -> Arc<TypeCache> {
        if let Some(tc) = self.types.get(&rt.gvr) {
            return tc.clone();
        }
        let entry = self.types.entry(rt.gvr.clone()).or_insert_with(|| {
            let tc = self.new_type_cache(rt);
            self.start_reflector(&tc);
            tc
        });
        entry.clone()
    }

    fn new_type_cache(&self, rt: &ResourceType) -> Arc<TypeCache> {
        Arc::new(TypeCache::new(
            rt.clone(),
            self.limits,
            self.body_budget.clone(),
            self.cache_limits,
            self.cached.clone(),
            self.edge.enabled(),
            self.freshness.clone(),
        ))
    }

    fn start_reflector(&self, tc: &Arc<TypeCache>) {
        tracing::info!(resource = %tc.rt.gvr, "starting reflector");
        let task = self.ingest.handle().spawn(reflector::run(
            self.upstream.clone(),
            tc.clone(),
            self.reflector,
            self.health.clone(),
        ));
        tc.reflector_is(task.abort_handle());
    }

    /// Whether reads are answered from the last known state because the
    /// upstream is unreachable (`--serve-stale-when-offline`), as the last
    /// probe found.
    pub fn offline(&self) -> bool {
        self.edge.serve_stale_when_offline && self.health.is_unreachable()
    }

    /// The same for a request: one that comes before the first probe has
    /// said (just after start, a restored snapshot already served) waits
    /// for it, at most the probe's timeout, rather than being forwarded to
    /// an upstream that may be away.
    pub async fn offline_for_request(&self) -> bool {
        self.edge.serve_stale_when_offline
            && self
                .health
                .is_unreachable_once_probed(ProbeConfig::default().timeout)
                .await
    }

    /// When the discovery documents served were read from the upstream.
    pub fn discovery_as_of(&self) -> Option<std::time::SystemTime> {
        *self
            .discovery_as_of
            .read()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Restores discovery and every type from the snapshot, if there is
    /// one; what cannot be restored (corrupt, another upstream's, too
    /// large) is logged and left out, never served. Blocking: file reads.
    pub fn restore_snapshot(&self) {
        let Some(snaps) = &self.snapshots else {
            return;
        };
        let mut discovery = match snaps.read_discovery() {
            Ok(Some(d)) => match Discovery::from_documents(d.documents) {
                Ok(disc) => {
                    *self
                        .discovery_as_of
                        .write()
                        .unwrap_or_else(|e| e.into_inner()) = Some(d.written);
                    disc
                }
                Err(e) => {
                    tracing::warn!(error = %e, "snapshot: discovery ignored");
                    Discovery::default()
                }
            },
            Ok(None) => Discovery::default(),
            Err(e) => {
                tracing::warn!(error = %e, "snapshot ignored");
                Discovery::default()
            }
        };
        let paths = match snaps.type_paths() {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "snapshot: cannot list its files");
                Vec::new()
            }
        };
        let (mut restored, mut objects) = (Vec::new(), 0);
        for path in paths {
            let started = Instant::now();
            // Room asked before the file's body is read: a new type's.
            let read = snaps.read_type(&path, |bytes| {
                self.cached.room(&self.cache_limits, 0, bytes)
            });
            let r = match read {
                Ok(r) if snaps.type_path(&r.rt.gvr) == path => r,
                Ok(r) => {
                    tracing::warn!(path = %path.display(), resource = %r.rt.gvr,
                        "snapshot ignored: its file is not named for its type");
                    continue;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "snapshot ignored");
                    continue;
                }
            };
            let rt = r.rt.clone();
            let (n, written, rv) = (r.entries.len(), r.written, r.rv);
            let tc = self.new_type_cache(&rt);
            tc.restore(r);
            self.types.insert(rt.gvr.clone(), tc.clone());
            discovery = discovery.with_type(rt.clone());
            restored.push(tc);
            objects += n;
            tracing::info!(resource = %rt.gvr, objects = n, resource_version = rv,
                written = %crate::go::time::format_rfc3339(written), took = ?started.elapsed(),
                "restored from the snapshot");
        }
        *self.discovery.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(discovery);
        // Started once discovery names them all.
        for tc in &restored {
            self.start_reflector(tc);
        }
        let types = restored.len();
        if types > 0 {
            tracing::info!(types, objects, dir = %snaps.dir().display(), "snapshot restored");
        }
        self.restored.store(true, Ordering::Release);
    }

    /// Writes what changed since the last write to the snapshot: every
    /// synced type's state and the discovery documents; removes the files
    /// of types no longer cached.
    pub async fn write_snapshot(self: &Arc<Self>) {
        let Some(snaps) = self.snapshots.clone() else {
            return;
        };
        // Not while the snapshot is being read: the types not restored yet
        // are not cached, and their files would be removed as no longer
        // cached before they are read (a restore of 9,000 configmaps took
        // longer than a 200 ms interval, and the pods' file went).
        if !self.restored.load(Ordering::Acquire) {
            return;
        }
        let me = self.clone();
        let wrote = tokio::task::spawn_blocking(move || me.write_snapshot_now(&snaps)).await;
        if let Err(e) = wrote {
            tracing::warn!(error = %e, "snapshot writer failed");
        }
    }

    fn write_snapshot_now(&self, snaps: &Snapshots) {
        let discovery = self.discovery();
        let mut last = self
            .discovery_written
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if !discovery.documents().is_empty()
            && !last.as_ref().is_some_and(|d| Arc::ptr_eq(d, &discovery))
        {
            match snaps.write_discovery(discovery.documents()) {
                Ok(_) => *last = Some(discovery),
                Err(e) => tracing::warn!(error = %e, "snapshot: writing discovery"),
            }
        }
        // `last` is held to the end: one writer at a time.
        let mut kept = std::collections::HashSet::new();
        for tc in self.all() {
            if !tc.is_synced() {
                continue;
            }
            let path = snaps.type_path(&tc.rt.gvr);
            let snap = tc.store.current();
            let version = Some(snap.version());
            let mut written = tc
                .snapshot_written
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if *written != version {
                let codec = tc.codec();
                let started = Instant::now();
                let bytes = snap.items.iter().map(|e| e.item.len()).sum();
                let state = TypeState {
                    rt: &tc.rt,
                    codec: &codec,
                    rv: snap.rv,
                    items: &snap.items,
                    bytes,
                };
                let resource = tc.rt.gvr.to_string();
                match snaps.write_type(&state) {
                    Ok(size) => {
                        *written = version;
                        crate::metrics::snapshot_written(&resource, size, true);
                        tracing::debug!(%resource, objects = snap.items.len(), size,
                            took = ?started.elapsed(), "snapshot written");
                    }
                    Err(e) => {
                        crate::metrics::snapshot_written(&resource, 0, false);
                        tracing::warn!(error = %e, "snapshot: writing a type");
                    }
                }
            }
            kept.insert(path);
        }
        if let Ok(paths) = snaps.type_paths() {
            for path in paths.into_iter().filter(|p| !kept.contains(p)) {
                if let Err(e) = std::fs::remove_file(&path) {
                    tracing::warn!(path = %path.display(), error = %e, "snapshot: removing a type no longer cached");
                }
            }
        }
    }

    /// The cache of a type the configuration asks for from the start:
    /// readiness waits for it, as it does not for types clients start.
    pub fn start_eager(&self, rt: &ResourceType) -> Arc<TypeCache> {
        let tc = self.type_cache(rt);
        tc.make_eager();
        tc
    }

    /// How a type's objects print as Table rows, if the cache can print
    /// them as the apiserver does: a built-in printer, or a custom
    /// resource's columns read off its CRD (itself cached; until that cache
    /// has synced, `None`, and the request goes upstream).
    pub fn table_printer(&self, tc: &TypeCache) -> Option<Arc<Printer>> {
        let gvr = &tc.rt.gvr;
        if tc.codec().style == ListStyle::Typed {
            return tc.builtin_printer();
        }
        let crds =
            GroupVersionResource::new("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        let crd_rt = self.discovery().get(&crds)?.clone();
        let crd_cache = self.type_cache(&crd_rt);
        if !crd_cache.is_synced() {
            return None;
        }
        let snap = crd_cache.store.current();
        let crd = snap
            .items
            .get(format!("{}.{}", gvr.resource, gvr.group).as_str())?;
        let personality = tc.codec().personality;
        let mut cached = tc.custom_printer();
        if let Some(p) = cached
            .as_ref()
            .filter(|p| p.id() == crd.rv && p.printers() == personality.printers())
        {
            return Some(p.clone());
        }
        let doc: serde_json::Value = serde_json::from_slice(&crd.item).ok()?;
        let version = doc
            .pointer("/spec/versions")?
            .as_array()?
            .iter()
            .find(|v| v.get("name").and_then(|n| n.as_str()) == Some(gvr.version.as_str()))?;
        let columns = version
            .get("additionalPrinterColumns")
            .and_then(|c| c.as_array())
            .map_or(&[][..], Vec::as_slice);
        let p = Arc::new(Printer::custom(personality, crd.rv, columns));
        *cached = Some(p.clone());
        Some(p)
    }

    /// The type's cache, if one was started.
    pub fn existing(&self, gvr: &GroupVersionResource) -> Option<Arc<TypeCache>> {
        self.types.get(gvr).map(|e| e.value().clone())
    }

    /// Every type cache started so far, for readiness and metrics.
    pub fn all(&self) -> Vec<Arc<TypeCache>> {
        self.types.iter().map(|e| e.value().clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nothing_is_written_to_the_snapshot_before_it_is_restored_from() {
        let dir = std::env::temp_dir().join(format!(
            "kubecache-registry-{}-{}",
            std::process::id(),
            clock_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        // A type's file left by the last run, not read yet.
        let pods = dir.join("core_v1_pods.snapshot");
        std::fs::write(&pods, b"not read yet").unwrap();
        let upstream = UpstreamConfig::new("http://127.0.0.1:1").unwrap();
        let edge = EdgeConfig {
            snapshot_dir: Some(dir.clone()),
            snapshot_every: Duration::from_secs(3600),
            serve_stale_when_offline: false,
        };
        let cache = Cache::new(
            &upstream,
            HistoryLimits::default(),
            ReflectorConfig::default(),
            CacheLimits::default(),
            edge,
            FreshnessConfig::default(),
        )
        .unwrap();
        cache.write_snapshot().await;
        assert!(
            pods.exists(),
            "a write before the restore removed what it was to read"
        );
        // Once restored (here: the file found wanting and left out), the
        // writer keeps the snapshot to what is cached.
        let c = cache.clone();
        tokio::task::spawn_blocking(move || c.restore_snapshot())
            .await
            .unwrap();
        cache.write_snapshot().await;
        assert!(!pods.exists(), "a type not cached has no file");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_types_table_printer_follows_the_upstreams_release() {
        use crate::encode::personality::{Personality, Printers};
        let upstream = UpstreamConfig::new("http://127.0.0.1:1").unwrap();
        let cache = Cache::new(
            &upstream,
            HistoryLimits::default(),
            ReflectorConfig::default(),
            CacheLimits::default(),
            EdgeConfig::default(),
            FreshnessConfig::default(),
        )
        .unwrap();
        let pods = ResourceType {
            gvr: GroupVersionResource::new("", "v1", "pods"),
            kind: "Pod".into(),
            namespaced: true,
            verbs: vec!["list".into(), "watch".into()],
        };
        let tc = cache.type_cache(&pods);
        let printers = |tc: &TypeCache| cache.table_printer(tc).map(|p| p.printers());
        assert_eq!(printers(&tc), Some(Printers::V1_20));
        tc.follow(Personality::NEWEST);
        assert_eq!(printers(&tc), Some(Printers::V1_36));
        // Each release's own slot, not v1.36's rows.
        for p in Printers::ALL {
            tc.follow(Personality::of(1, p.minor()).0);
            assert_eq!(printers(&tc), Some(p));
        }
        tc.follow(Personality::NEWEST);
        assert_eq!(printers(&tc), Some(Printers::V1_36));
        tc.follow(Personality::V1_20);
        assert_eq!(printers(&tc), Some(Printers::V1_20));
    }

    fn clock_nanos() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    }
}
