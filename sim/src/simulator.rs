//! The simulated apiserver's state and its writes: its types, each with a
//! store and history like the cacher's, the etcd revision every write
//! takes, generated objects and churn, the faults switched on, and create,
//! update, patch and delete with the apiserver's update rules, and why a
//! write is refused (`WriteError`).

use crate::faults::{FaultCommand, Faults};
use crate::generate::Generator;
use crate::{generate, patch};
use kubecache::encode::codec::{DecodeError, Entry, ListStyle, Snapshot, Store, TypeCodec};
use kubecache::encode::print::Printer;
use kubecache::resource::{GroupVersionResource, ResourceType};
use kubecache::serving::watch::BookmarkTimer;
use kubecache::store::{EventType, HistoryLimits, StoreError};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One simulated resource type.
pub struct SimType {
    pub rt: ResourceType,
    pub codec: Arc<TypeCodec>,
    pub store: Store,
    /// What its Tables are printed with: kubecache's port of the
    /// apiserver's printer for the type.
    pub printer: Option<Arc<Printer>>,
    /// What its discovery entry says beside the `ResourceType`.
    pub discovery: DiscoveryExtras,
    /// Its cacher's bookmark timer, running from the first watch.
    timer: std::sync::OnceLock<Arc<BookmarkTimer>>,
}

impl SimType {
    /// The type's bookmark timer, started on first use: it ticks with the
    /// cacher's `lastProcessedResourceVersion` as `personality` keeps it.
    pub fn timer(self: &Arc<Self>, personality: Personality) -> Arc<BookmarkTimer> {
        self.timer
            .get_or_init(|| {
                let timer = BookmarkTimer::new();
                let me = Arc::downgrade(self);
                // v1.20's starts at 0 and follows only the type's events
                // (`cacher.go` at v1.20: no progress notifications, the
                // EfficientWatchResumption gate off): a type with no event
                // since the simulator started gets no bookmark. A current
                // one's starts at its list's version and follows progress
                // notifications too.
                let born = self.store.rv();
                tokio::spawn(timer.clone().run(move || {
                    let rv = me.upgrade().map_or(0, |t| t.store.rv());
                    match personality {
                        Personality::V1_20 if rv <= born => 0,
                        _ => rv,
                    }
                }));
                timer
            })
            .clone()
    }
}

impl AsRef<Store> for SimType {
    fn as_ref(&self) -> &Store {
        &self.store
    }
}

#[derive(Debug, Clone)]
pub struct SimOptions {
    pub namespaces: usize,
    pub pods: usize,
    pub configmaps: usize,
    pub nodes: usize,
    /// Pod updates per second.
    pub churn: f64,
    pub history: HistoryLimits,
    pub seed: u64,
    /// Faults switched on from the start.
    pub faults: Vec<FaultCommand>,
    /// Faults repeated at an interval.
    pub fault_schedule: Vec<(Duration, FaultCommand)>,
    /// Which apiserver it behaves as.
    pub personality: Personality,
    /// Serve a custom resource too: `widgets.ref.example.com/v1`
    /// (namespaced, kind Widget, no printer columns), as a CRD would.
    pub custom_resource: bool,
}

/// The custom resource `custom_resource` adds: the one recorded from
/// v1.36 in `../shared/reference` is also `widgets` in `ref.example.com`.
pub const WIDGETS: (&str, &str, &str) = ("ref.example.com", "widgets", "Widget");

/// Which kube-apiserver the simulator behaves as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Personality {
    /// v1.20, the real apiserver the tests run beside it.
    #[default]
    V1_20,
    /// v1.36 (whose answers are recorded in `../shared/reference`),
    /// following the newest cacher's source (`staging/src/k8s.io/apiserver/pkg/storage/cacher`):
    /// streaming lists (`sendInitialEvents`, the watch-option validation of
    /// the WatchList feature); consistent lists and reads at a version
    /// newer than the watch cache served once it is fresh, a progress
    /// notification taking it to etcd's current revision
    /// (`delegator/interface.go` `ShouldDelegateConsistentRead`,
    /// `watch_cache.go` `waitUntilFreshLocked`, `progress/watch_progress.go`),
    /// which its bookmarks then carry, even for a quiet type.
    V1_36,
    /// v1.35: served as v1.36 is but for its `/version` and the
    /// representations kubecache writes as v1.35's (its Tables: v1.35's
    /// columns and printers where kubecache has them, `Personality::printers`).
    V1_35,
    /// v1.34: likewise, with v1.34's representations.
    V1_34,
    /// v1.33: likewise, with v1.33's representations (its streaming lists
    /// and consistent reads are the simulator's v1.36 ones; which of them
    /// 1.33's feature gates left on is not modelled).
    V1_33,
    /// v1.32: likewise, with v1.32's representations and its `/version`,
    /// which has no emulation fields (kubernetes#130019 added them in 1.33).
    V1_32,
    /// v1.31: likewise, with v1.31's representations and `/version`.
    V1_31,
    /// v1.30: likewise, with v1.30's.
    V1_30,
    /// v1.29: likewise, with v1.29's.
    V1_29,
    /// v1.28: likewise, with v1.28's.
    V1_28,
    /// v1.27: likewise, with v1.27's.
    V1_27,
    /// v1.26: likewise, with v1.26's.
    V1_26,
    /// v1.25: likewise, with v1.25's.
    V1_25,
    /// v1.24: likewise, with v1.24's.
    V1_24,
    /// v1.23: likewise, with v1.23's.
    V1_23,
    /// v1.22: likewise, with v1.22's.
    V1_22,
    /// v1.21: likewise, with v1.21's.
    V1_21,
}

impl Personality {
    /// `v1.20` to `v1.36` (the `v` optional).
    pub fn parse(s: &str) -> Option<Self> {
        match s.strip_prefix('v').unwrap_or(s) {
            "1.20" => Some(Personality::V1_20),
            "1.21" => Some(Personality::V1_21),
            "1.22" => Some(Personality::V1_22),
            "1.23" => Some(Personality::V1_23),
            "1.24" => Some(Personality::V1_24),
            "1.25" => Some(Personality::V1_25),
            "1.26" => Some(Personality::V1_26),
            "1.27" => Some(Personality::V1_27),
            "1.28" => Some(Personality::V1_28),
            "1.29" => Some(Personality::V1_29),
            "1.30" => Some(Personality::V1_30),
            "1.31" => Some(Personality::V1_31),
            "1.32" => Some(Personality::V1_32),
            "1.33" => Some(Personality::V1_33),
            "1.34" => Some(Personality::V1_34),
            "1.35" => Some(Personality::V1_35),
            "1.36" => Some(Personality::V1_36),
            _ => None,
        }
    }

    /// Whose representations its answers follow.
    pub fn representations(self) -> kubecache::encode::personality::Personality {
        use kubecache::encode::personality::Personality as P;
        match self {
            Personality::V1_20 => P::V1_20,
            Personality::V1_21 => P::of(1, 21).0,
            Personality::V1_22 => P::of(1, 22).0,
            Personality::V1_23 => P::of(1, 23).0,
            Personality::V1_24 => P::of(1, 24).0,
            Personality::V1_25 => P::of(1, 25).0,
            Personality::V1_26 => P::of(1, 26).0,
            Personality::V1_27 => P::of(1, 27).0,
            Personality::V1_28 => P::of(1, 28).0,
            Personality::V1_29 => P::of(1, 29).0,
            Personality::V1_30 => P::of(1, 30).0,
            Personality::V1_31 => P::of(1, 31).0,
            Personality::V1_32 => P::of(1, 32).0,
            Personality::V1_33 => P::of(1, 33).0,
            Personality::V1_34 => P::of(1, 34).0,
            Personality::V1_35 => P::of(1, 35).0,
            Personality::V1_36 => P::of(1, 36).0,
        }
    }

    /// Aggregated discovery (`apidiscovery.k8s.io/v2`, GA in 1.30), and
    /// resource lists naming each resource's singular.
    pub fn aggregated_discovery(self) -> bool {
        self != Personality::V1_20
    }

    /// Streaming lists and the WatchList feature's validation.
    pub fn watch_list(self) -> bool {
        self != Personality::V1_20
    }

    /// Whether a read waiting on the watch cache makes it fresh.
    pub fn progress_notify(self) -> bool {
        self != Personality::V1_20
    }

    /// Its `/version`.
    pub fn version(self) -> serde_json::Value {
        // A release before 1.33's emulation fields (kubernetes#130019).
        let before_emulation = |minor: &str, git: &str, go: &str| serde_json::json!({"major": "1", "minor": minor, "gitVersion": format!("{git}-kubecache-sim"), "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": go, "compiler": "gc", "platform": "linux/amd64"});
        match self {
            Personality::V1_20 => before_emulation("20", "v1.20.2", "go1.19"),
            // Go 1.23.3 built 1.32 (kubernetes#128852); no emulation fields.
            Personality::V1_32 => before_emulation("32", "v1.32.0", "go1.23.3"),
            // Go 1.16.1 (kubernetes#100106), 1.16.6 (#103669) and 1.17.3
            // (#106209): the last Go bump in each release's notes, and what
            // recorded `/version`s of v1.21.0, v1.22.0 and v1.23.0 show.
            Personality::V1_21 => before_emulation("21", "v1.21.0", "go1.16.1"),
            Personality::V1_22 => before_emulation("22", "v1.22.0", "go1.16.6"),
            Personality::V1_23 => before_emulation("23", "v1.23.0", "go1.17.3"),
            // Go 1.18.1 (kubernetes#109461, the last Go bump read in 1.24's
            // notes; a later one is not ruled out).
            Personality::V1_24 => before_emulation("24", "v1.24.0", "go1.18.1"),
            // Go 1.19.0 (kubernetes#111679, the last Go bump read in 1.25's
            // notes; a later one is not ruled out).
            Personality::V1_25 => before_emulation("25", "v1.25.0", "go1.19.0"),
            // Go 1.19.3 (kubernetes#113550, the last Go bump read in 1.26's
            // notes; a later one is not ruled out).
            Personality::V1_26 => before_emulation("26", "v1.26.0", "go1.19.3"),
            // Go 1.20.2 (kubernetes#116404, the last Go bump read in 1.27's
            // notes; a later one is not ruled out).
            Personality::V1_27 => before_emulation("27", "v1.27.0", "go1.20.2"),
            // Go 1.20.5 (kubernetes#118507, the last Go bump read in 1.28's
            // development notes; a later one is not ruled out).
            Personality::V1_28 => before_emulation("28", "v1.28.0", "go1.20.5"),
            // Go 1.21.4 (kubernetes#121808, the last Go bump read in 1.29's
            // notes), as for v1.30 below.
            Personality::V1_29 => before_emulation("29", "v1.29.0", "go1.21.4"),
            // Go 1.22.1 (kubernetes#123750, CHANGELOG-1.30's last Go bump
            // read here; a later one is not ruled out: kubecache reads no
            // more of /version than major, minor and gitVersion).
            Personality::V1_30 => before_emulation("30", "v1.30.0", "go1.22.1"),
            // Go 1.22.5 built 1.31 (kubernetes#125894); no emulation fields.
            Personality::V1_31 => before_emulation("31", "v1.31.0", "go1.22.5"),
            // As v1.33.3 (k3s) answered, its emulation fields included.
            Personality::V1_33 => {
                serde_json::json!({"major": "1", "minor": "33", "emulationMajor": "1", "emulationMinor": "33", "minCompatibilityMajor": "1", "minCompatibilityMinor": "32", "gitVersion": "v1.33.0-kubecache-sim", "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24.2", "compiler": "gc", "platform": "linux/amd64"})
            }
            Personality::V1_34 => {
                serde_json::json!({"major": "1", "minor": "34", "emulationMajor": "1", "emulationMinor": "34", "minCompatibilityMajor": "1", "minCompatibilityMinor": "33", "gitVersion": "v1.34.0-kubecache-sim", "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24.6", "compiler": "gc", "platform": "linux/amd64"})
            }
            Personality::V1_35 => {
                serde_json::json!({"major": "1", "minor": "35", "emulationMajor": "1", "emulationMinor": "35", "minCompatibilityMajor": "1", "minCompatibilityMinor": "34", "gitVersion": "v1.35.0-kubecache-sim", "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25.5", "compiler": "gc", "platform": "linux/amd64"})
            }
            Personality::V1_36 => {
                serde_json::json!({"major": "1", "minor": "36", "emulationMajor": "1", "emulationMinor": "36", "minCompatibilityMajor": "1", "minCompatibilityMinor": "35", "gitVersion": "v1.36.2-kubecache-sim", "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.27.3", "compiler": "gc", "platform": "linux/amd64"})
            }
        }
    }
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            namespaces: 5,
            pods: 100,
            configmaps: 50,
            nodes: 5,
            churn: 0.0,
            history: HistoryLimits::default(),
            seed: 42,
            faults: vec![],
            fault_schedule: vec![],
            personality: Personality::default(),
            custom_resource: false,
        }
    }
}

pub struct Sim {
    pub types: BTreeMap<GroupVersionResource, Arc<SimType>>,
    /// The etcd revision: every write anywhere takes the next one.
    revision: AtomicU64,
    /// Held by every write, so that revisions are applied in order; what it
    /// guards is the buffer each object is written into before the store
    /// copies it, kept between writes (see `commit`).
    write_lock: Mutex<Vec<u8>>,
    generator: Mutex<Generator>,
    /// The pods' keys in order, for churn (`churn_pick`).
    churn_keys: Mutex<Vec<Box<str>>>,
    pub faults: Arc<Faults>,
    /// Watch requests answered, for tests that count upstream load.
    pub watches_served: AtomicU64,
    /// List requests answered and in flight, for tests that count
    /// upstream load.
    pub lists: Concurrency,
    pub personality: Personality,
}

/// Requests of a kind: how many so far, how many now, and the most at once.
#[derive(Debug, Default)]
pub struct Concurrency {
    pub total: AtomicU64,
    pub now: AtomicU64,
    pub most: AtomicU64,
}

impl Concurrency {
    /// Counts one in until the guard goes.
    pub fn enter(&self) -> impl Drop + '_ {
        self.total.fetch_add(1, Ordering::Relaxed);
        let now = self.now.fetch_add(1, Ordering::AcqRel) + 1;
        self.most.fetch_max(now, Ordering::AcqRel);
        Leave(self)
    }
}

struct Leave<'a>(&'a Concurrency);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Why the simulator refused a write, as the apiserver's handlers and
/// storage refuse it; `api::errors` answers each with the apiserver's
/// Status, and the 400s' words are theirs.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("metadata.name: Required value: name or generateName is required")]
    NameRequired,
    #[error("the body must be a JSON object")]
    NotAnObject,
    #[error("metadata must be an object")]
    MetadataNotAnObject,
    /// An update or patch whose object has no name (the handlers' checkName).
    #[error(
        "the name of the object ({url} based on URL) was undeterminable: name must be provided"
    )]
    NameMissing { url: String },
    #[error("the name of the object ({object}) does not match the name on the URL ({url})")]
    NameMismatch { object: String, url: String },
    #[error("the namespace of the object ({object}) does not match the namespace on the request ({request})")]
    NamespaceMismatch { object: String, request: String },
    /// An update that changes the uid, which is immutable (422 Invalid).
    #[error("metadata.uid changed to {uid:?}")]
    UidChanged { uid: String },
    /// A PUT whose uid is not the stored object's: the uid precondition
    /// the storage checks before anything else (409), worded as etcd3's
    /// storage error, which names the object by its etcd `key`.
    #[error("StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {precondition}, UID in object meta: {stored}")]
    UidPrecondition {
        key: String,
        precondition: String,
        stored: String,
    },
    /// A resourceVersion that is not the stored object's (409 Conflict).
    #[error("resourceVersion {given} is not the stored {stored}")]
    StaleResourceVersion { given: String, stored: String },
    #[error(transparent)]
    Patch(#[from] patch::PatchError),
    #[error("the object already exists")]
    AlreadyExists,
    #[error("the object does not exist")]
    NotFound,
    /// The stored object does not read back as JSON.
    #[error(transparent)]
    Stored(serde_json::Error),
    /// The object to store does not write as JSON.
    #[error(transparent)]
    Unwritable(serde_json::Error),
    /// The object to store is not one the type's codec reads.
    #[error(transparent)]
    Undecodable(DecodeError),
    /// The store does not take the object's event.
    #[error(transparent)]
    Store(StoreError),
}

const META_ORDER: [&str; 16] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "clusterName",
    "managedFields",
];

/// Puts metadata fields in `ObjectMeta`'s struct order, as Go would write them.
fn order_metadata(meta: Map<String, Value>) -> Map<String, Value> {
    let mut meta = meta;
    let mut out = Map::new();
    for k in META_ORDER {
        if let Some(v) = meta.remove(k) {
            out.insert(k.to_string(), v);
        }
    }
    out.extend(meta);
    out
}

/// What v1.20's discovery says of each simulated type beside its
/// `ResourceType`: short names, categories, and its storage version's hash
/// (read off the real apiserver; `tests/sim_objects.rs` compares them).
pub struct DiscoveryExtras {
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub storage_version_hash: &'static str,
}

/// v1.20's verbs: every type has deletecollection but namespaces and
/// services (whose registries do not).
const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// `WIDGETS`, as its CRD's discovery shows it (the one recorded from
/// v1.36.2 in `../shared/reference/apiserver-v1.36`: a CRD's verbs in the
/// apiextensions-apiserver's order, its short name).
fn custom_type() -> (ResourceType, DiscoveryExtras) {
    let (group, resource, kind) = WIDGETS;
    const CRD_VERBS: [&str; 8] = [
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "create",
        "update",
        "watch",
    ];
    (
        ResourceType {
            gvr: GroupVersionResource::new(group, "v1", resource),
            kind: kind.into(),
            namespaced: true,
            verbs: CRD_VERBS.iter().map(|s| s.to_string()).collect(),
        },
        DiscoveryExtras {
            short_names: &["gd"],
            categories: &[],
            storage_version_hash: "Hb9xNw0bCZs=",
        },
    )
}

/// The built-in types as `release` lists them: v1.20's services lack
/// `deletecollection`, v1.36's have it (recorded); namespaces lack it in both.
fn builtin_types(release: Personality) -> Vec<(ResourceType, DiscoveryExtras)> {
    let rt = |g: &str,
              r: &str,
              k: &str,
              ns: bool,
              short: &'static [&'static str],
              cat: &'static [&'static str],
              hash: &'static str| {
        let collection = match r {
            "namespaces" => false,
            "services" => release != Personality::V1_20,
            _ => true,
        };
        (
            ResourceType {
                gvr: GroupVersionResource::new(g, "v1", r),
                kind: k.into(),
                namespaced: ns,
                verbs: VERBS
                    .iter()
                    .filter(|v| collection || **v != "deletecollection")
                    .map(|s| s.to_string())
                    .collect(),
            },
            DiscoveryExtras {
                short_names: short,
                categories: cat,
                storage_version_hash: hash,
            },
        )
    };
    vec![
        rt(
            "",
            "namespaces",
            "Namespace",
            false,
            &["ns"],
            &[],
            "Q3oi5N2YM8M=",
        ),
        rt("", "nodes", "Node", false, &["no"], &[], "XwShjMxG9Fs="),
        rt("", "pods", "Pod", true, &["po"], &["all"], "xPOwRZ+Yhw8="),
        rt(
            "",
            "configmaps",
            "ConfigMap",
            true,
            &["cm"],
            &[],
            "qFsyl6wFWjQ=",
        ),
        rt("", "secrets", "Secret", true, &[], &[], "S6u1pOWzb84="),
        rt(
            "",
            "services",
            "Service",
            true,
            &["svc"],
            &["all"],
            "0/CO1lhkEBI=",
        ),
        rt("", "events", "Event", true, &["ev"], &[], "r2yiGXH7wu8="),
        rt(
            "apps",
            "deployments",
            "Deployment",
            true,
            &["deploy"],
            &["all"],
            "8aSe+NMegvE=",
        ),
    ]
}

impl Sim {
    pub fn new(opts: &SimOptions) -> Arc<Self> {
        let mut types = builtin_types(opts.personality);
        if opts.custom_resource {
            types.push(custom_type());
        }
        let types = types
            .into_iter()
            .map(|(rt, discovery)| {
                // A custom resource is unstructured, and printed by its
                // CRD's columns (none here), not by printers.go.
                let custom = rt.gvr.group == WIDGETS.0;
                let style = if custom {
                    ListStyle::Unstructured
                } else {
                    ListStyle::Typed
                };
                let codec = Arc::new(
                    TypeCodec::for_type(&rt, style)
                        .with_personality(opts.personality.representations()),
                );
                let printer = Printer::builtin(
                    opts.personality.representations(),
                    &rt.gvr.group,
                    &rt.gvr.version,
                    &rt.gvr.resource,
                );
                (
                    rt.gvr.clone(),
                    Arc::new(SimType {
                        rt,
                        codec,
                        store: Store::new(opts.history),
                        printer,
                        discovery,
                        timer: Default::default(),
                    }),
                )
            })
            .collect();
        let sim = Arc::new(Sim {
            types,
            revision: AtomicU64::new(1),
            write_lock: Mutex::new(Vec::new()),
            generator: Mutex::new(Generator::new(opts.seed)),
            churn_keys: Mutex::default(),
            faults: Arc::default(),
            watches_served: AtomicU64::new(0),
            lists: Concurrency::default(),
            personality: opts.personality,
        });
        for t in sim.types.values() {
            t.store.replace(vec![], 1);
        }
        sim.populate(opts);
        sim
    }

    /// Switches a fault on or off. Expiring compacts every type's history,
    /// as etcd compaction plus a watch cache restart would, then drops the
    /// open watches so their clients must resume from a now-too-old rv.
    pub fn fault(&self, c: &FaultCommand) {
        if *c == FaultCommand::Expire {
            let _guard = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
            // Compacting at a revision past every type's last event, as a
            // busy etcd would (other keys keep it moving), so that even a
            // client that had seen everything must relist.
            let rev = self.revision.fetch_add(1, Ordering::AcqRel) + 1;
            for t in self.types.values() {
                t.store.advance(rev);
                t.store.compact();
            }
        }
        self.faults.apply(c);
    }

    pub fn revision(&self) -> u64 {
        self.revision.load(Ordering::Acquire)
    }

    /// A type's objects at the current revision, as etcd reads them for a
    /// most-recent list. Read under the write lock: a write committed
    /// between reading the revision and reading the objects would otherwise
    /// label a newer state with an older revision (or the reverse).
    pub fn at_revision(&self, t: &SimType) -> Snapshot {
        let _guard = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        Snapshot {
            rv: self.revision(),
            ..t.store.current()
        }
    }

    /// A current apiserver's progress notification, asked by a read that
    /// waits on the type's watch cache: the cache reaches etcd's current
    /// revision (what its progress requester asks etcd for every 100 ms
    /// while anyone waits), and its watchers learn it. Under the write
    /// lock, so that it comes after every event at or below it. v1.20's
    /// cache never moves without an event.
    pub fn make_fresh(&self, t: &SimType) {
        if !self.personality.progress_notify() {
            return;
        }
        let _guard = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        t.store.advance(self.revision());
    }

    pub fn type_of(&self, group: &str, version: &str, resource: &str) -> Option<&Arc<SimType>> {
        self.types
            .get(&GroupVersionResource::new(group, version, resource))
    }

    fn gen<T>(&self, f: impl FnOnce(&mut Generator) -> T) -> T {
        f(&mut self.generator.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn populate(&self, o: &SimOptions) {
        let ns_names: Vec<String> = (0..o.namespaces.max(1))
            .map(|i| match i {
                0 => "default".to_string(),
                1 => "kube-system".to_string(),
                i => format!("team-{i:02}"),
            })
            .collect();
        for ns in &ns_names {
            let obj = self.gen(|g| g.namespace(ns));
            self.must_create("", "namespaces", obj);
        }
        for i in 0..o.nodes {
            let obj = self.gen(|g| g.node(i));
            self.must_create("", "nodes", obj);
        }
        // A namespace's pods go through the apps in turn (web, api, …), and
        // its deployments are those of the first two, so that a deployment
        // selects pods (`kubectl logs deploy/x`, `describe`) as in a real
        // cluster.
        let mut apps: Vec<Vec<&str>> = vec![Vec::new(); ns_names.len()];
        for i in 0..o.pods {
            let n = i % ns_names.len();
            let app = generate::app_of(i / ns_names.len());
            let obj = self.gen(|g| g.pod(&ns_names[n], app, i, o.nodes));
            if !apps[n].contains(&app) {
                apps[n].push(app);
            }
            self.must_create("", "pods", obj);
        }
        for i in 0..o.configmaps {
            let ns = &ns_names[i % ns_names.len()];
            let obj = self.gen(|g| g.configmap(ns, i));
            self.must_create("", "configmaps", obj);
        }
        for (ns, seen) in ns_names.iter().zip(&apps).skip(2) {
            let apps = if seen.is_empty() {
                &["web", "api"][..]
            } else {
                &seen[..seen.len().min(2)]
            };
            for app in apps {
                let obj = self.gen(|g| g.deployment(ns, app));
                self.must_create("apps", "deployments", obj);
            }
        }
    }

    fn must_create(&self, group: &str, resource: &str, obj: Value) {
        let t = self
            .type_of(group, "v1", resource)
            .expect("built-in type")
            .clone();
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Err(e) = self.create(&t, ns.as_deref(), obj) {
            tracing::warn!(error = %e, "generated object rejected");
        }
    }

    /// The store key of an object of `t` by its metadata.
    fn key_of(t: &SimType, obj: &Value) -> Result<String, WriteError> {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or(WriteError::NameRequired)?;
        Ok(
            match obj.pointer("/metadata/namespace").and_then(Value::as_str) {
                Some(ns) if t.rt.namespaced => format!("{ns}/{name}"),
                _ => name.to_string(),
            },
        )
    }

    /// Makes the object to store at `key` from what is stored there now,
    /// stamps it with the next resource version and stores it, all under
    /// the write lock so revisions are applied in order. An update that
    /// changes nothing is no write, as etcd3's GuaranteedUpdate skips it:
    /// the object keeps its version and watchers see no event.
    fn commit(
        &self,
        t: &SimType,
        kind: EventType,
        key: &str,
        make: impl FnOnce(Option<&Arc<Entry>>) -> Result<Value, WriteError>,
    ) -> Result<Arc<Entry>, WriteError> {
        let mut buf = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let have = t.store.get(key);
        let obj = make(have.as_ref())?;
        let rv = self.revision() + 1;
        let Value::Object(mut rest) = obj else {
            return Err(WriteError::NotAnObject);
        };
        let Some(Value::Object(mut meta)) = rest.shift_remove("metadata") else {
            return Err(WriteError::MetadataNotAnObject);
        };
        // In its place among the metadata; the version is set below.
        meta.insert("resourceVersion".into(), Value::Null);
        // kind and apiVersion first, then metadata, then the rest in order.
        let mut out = Map::new();
        out.insert("kind".into(), Value::String(t.rt.kind.clone()));
        out.insert("apiVersion".into(), Value::String(t.rt.gvr.api_version()));
        out.insert("metadata".into(), Value::Object(order_metadata(meta)));
        for (k, v) in rest {
            if k != "kind" && k != "apiVersion" {
                out.insert(k, v);
            }
        }
        let mut out = Value::Object(out);
        if let (EventType::Modified, Some(old)) = (kind, &have) {
            set_resource_version(&mut out, old.rv);
            let unchanged = serde_json::from_slice::<Value>(&t.codec.object_bytes(old))
                .is_ok_and(|stored| stored == out);
            if unchanged {
                return Ok(old.clone());
            }
        }
        set_resource_version(&mut out, rv);
        // Written into the kept buffer, which the codec copies to the
        // object's exact size: a fresh `to_vec` grew (and freed) a buffer
        // of each size up to twice the object's, per write, and that churn
        // of kilobyte blocks between the objects kept made glibc's malloc
        // slower the more objects there were.
        buf.clear();
        serde_json::to_writer(&mut *buf, &out).map_err(WriteError::Unwritable)?;
        let entry = Arc::new(t.codec.from_object(&buf).map_err(WriteError::Undecodable)?);
        t.store
            .apply(kind, entry.clone())
            .map_err(WriteError::Store)?;
        self.revision.store(rv, Ordering::Release);
        Ok(entry)
    }

    pub fn create(
        &self,
        t: &SimType,
        ns: Option<&str>,
        mut obj: Value,
    ) -> Result<Arc<Entry>, WriteError> {
        let (uid, now) = self.gen(|g| (g.uid(), generate::rfc3339(generate::now_secs())));
        let meta = obj
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .ok_or(WriteError::MetadataNotAnObject)?;
        if t.rt.namespaced {
            let ns = ns.unwrap_or("default");
            meta.insert("namespace".into(), Value::String(ns.into()));
        }
        if !meta.contains_key("name") {
            if let Some(prefix) = meta.get("generateName").and_then(Value::as_str) {
                let name = format!("{prefix}{}", &uid[..5]);
                meta.insert("name".into(), Value::String(name));
            }
        }
        meta.insert("uid".into(), Value::String(uid));
        meta.entry("creationTimestamp")
            .or_insert(Value::String(now.clone()));
        if meta.get("creationTimestamp") == Some(&Value::Null) {
            meta.insert("creationTimestamp".into(), Value::String(now));
        }
        let key = Self::key_of(t, &obj)?;
        self.commit(t, EventType::Added, &key, |have| match have {
            Some(_) => Err(WriteError::AlreadyExists),
            None => Ok(obj),
        })
    }

    /// A PUT of the object named `name` (in `ns`): the apiserver's checks
    /// of the name and namespace, its resourceVersion precondition, and
    /// what its update strategies keep from the stored object.
    pub fn update(
        &self,
        t: &SimType,
        ns: Option<&str>,
        name: &str,
        mut obj: Value,
    ) -> Result<Arc<Entry>, WriteError> {
        check_name(t, ns, name, &mut obj)?;
        let key = Self::key_of(t, &obj)?;
        self.commit(t, EventType::Modified, &key, |have| {
            let old = stored_object(t, have)?;
            let stored_uid = meta_str(&old, "uid").unwrap_or("");
            match meta_str(&obj, "uid") {
                Some(uid) if !uid.is_empty() && uid != stored_uid => {
                    Err(WriteError::UidPrecondition {
                        key: etcd_key(t, &key),
                        precondition: uid.to_string(),
                        stored: stored_uid.to_string(),
                    })
                }
                _ => prepare_for_update(t, &old, obj),
            }
        })
    }

    /// A PATCH of the object named `name` (in `ns`): the patch applied to
    /// the stored object, then checked and kept as an update is.
    pub fn patch(
        &self,
        t: &SimType,
        ns: Option<&str>,
        name: &str,
        ty: patch::PatchType,
        body: &[u8],
    ) -> Result<Arc<Entry>, WriteError> {
        let key = match ns {
            Some(ns) if t.rt.namespaced => format!("{ns}/{name}"),
            _ => name.to_string(),
        };
        self.commit(t, EventType::Modified, &key, |have| {
            let old = stored_object(t, have)?;
            let mut obj = patch::apply(ty, &t.rt.kind, &old, body)?;
            check_name(t, ns, name, &mut obj)?;
            prepare_for_update(t, &old, obj)
        })
    }

    pub fn delete(&self, t: &SimType, key: &str) -> Result<Arc<Entry>, WriteError> {
        self.commit(t, EventType::Deleted, key, |have| stored_object(t, have))
    }

    /// A write as a controller with the status subresource makes it: the
    /// whole object replaced, no update rules applied.
    fn replace(&self, t: &SimType, obj: Value) -> Result<Arc<Entry>, WriteError> {
        let key = Self::key_of(t, &obj)?;
        self.commit(t, EventType::Modified, &key, |have| match have {
            None => Err(WriteError::NotFound),
            Some(_) => Ok(obj),
        })
    }

    /// One churn step: a pod's status flips and its labels move, the kind of
    /// update a kubelet and controllers make all day.
    pub fn churn_once(&self, step: u64) {
        let Some(t) = self.type_of("", "v1", "pods").cloned() else {
            return;
        };
        let Some(e) = self.churn_pick(&t, step) else {
            return;
        };
        let Ok(mut obj) = serde_json::from_slice::<Value>(&t.codec.object_bytes(&e)) else {
            return;
        };
        if let Some(labels) = obj
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
        {
            labels.insert("churn".into(), Value::String((step % 5).to_string()));
        }
        if let Some(cs) = obj.pointer_mut("/status/containerStatuses/0/restartCount") {
            *cs = Value::from(cs.as_u64().unwrap_or(0) + (step % 2));
        }
        let _ = self.replace(&t, obj);
    }

    /// The pod churn step `step` updates: the `step × 7919`th (modulo their
    /// count) in key order. Found in the pods' keys as last read, read
    /// again when the count has changed or the key is gone: walking the
    /// B-tree to it on every step cost a core at 1,000,000 pods (100 steps
    /// a second, each a walk of half a million entries on average), which
    /// starved the simulator's reads until kubecache's list of them
    /// expired.
    fn churn_pick(&self, t: &SimType, step: u64) -> Option<Arc<Entry>> {
        let mut keys = self.churn_keys.lock().unwrap_or_else(|e| e.into_inner());
        for fresh in [false, true] {
            if fresh || keys.len() != t.store.len() {
                *keys = t
                    .store
                    .current()
                    .items
                    .iter()
                    .map(|e| e.key.clone())
                    .collect();
            }
            if keys.is_empty() {
                return None;
            }
            let key = &keys[(step as usize).wrapping_mul(7919) % keys.len()];
            if let Some(e) = t.store.get(key) {
                return Some(e);
            }
        }
        None
    }

    /// Applies the start-up faults and runs the scheduled ones.
    pub fn start_faults(self: &Arc<Self>, opts: &SimOptions) {
        for c in &opts.faults {
            self.fault(c);
        }
        for (every, c) in opts.fault_schedule.iter().cloned() {
            let me = self.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    tracing::info!(fault = ?c, "injecting");
                    me.fault(&c);
                }
            });
        }
    }

    pub fn start_churn(self: &Arc<Self>, per_sec: f64) {
        if per_sec <= 0.0 {
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / per_sec));
            let mut step = 0u64;
            loop {
                tick.tick().await;
                step += 1;
                me.churn_once(step);
            }
        });
    }
}

/// Where the apiserver keeps an object of `t` in etcd (its errors name it).
fn etcd_key(t: &SimType, key: &str) -> String {
    let prefix = match t.rt.gvr.resource.as_str() {
        "services" => "services/specs",
        "nodes" => "minions",
        other => other,
    };
    format!("/registry/{prefix}/{key}")
}

fn set_resource_version(obj: &mut Value, rv: u64) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

/// The stored object, or NotFound.
fn stored_object(t: &SimType, have: Option<&Arc<Entry>>) -> Result<Value, WriteError> {
    let have = have.ok_or(WriteError::NotFound)?;
    serde_json::from_slice(&t.codec.object_bytes(have)).map_err(WriteError::Stored)
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// The handlers' `checkName`, then `BeforeUpdate`'s namespace rule: the
/// object must carry the URL's name; a namespaced one takes the URL's
/// namespace when it has none, and a cluster-scoped one loses any.
fn check_name(
    t: &SimType,
    ns: Option<&str>,
    name: &str,
    obj: &mut Value,
) -> Result<(), WriteError> {
    let meta = match obj.get_mut("metadata").and_then(Value::as_object_mut) {
        Some(meta)
            if meta
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty()) =>
        {
            meta
        }
        _ => {
            return Err(WriteError::NameMissing {
                url: name.to_string(),
            })
        }
    };
    let have = meta.get("name").and_then(Value::as_str).unwrap_or("");
    if have != name {
        return Err(WriteError::NameMismatch {
            object: have.to_string(),
            url: name.to_string(),
        });
    }
    match (t.rt.namespaced, ns) {
        (true, Some(ns)) => match meta.get("namespace").and_then(Value::as_str) {
            Some(have) if !have.is_empty() && have != ns => {
                return Err(WriteError::NamespaceMismatch {
                    object: have.to_string(),
                    request: ns.to_string(),
                })
            }
            _ => {
                meta.insert("namespace".into(), Value::String(ns.to_string()));
            }
        },
        _ => {
            meta.shift_remove("namespace");
        }
    }
    Ok(())
}

/// What `rest.BeforeUpdate` and the types' update strategies do with an
/// update of `old`: the resourceVersion precondition, the uid kept (and
/// immutable), creationTimestamp kept, generation kept (a deployment's
/// bumped when its spec or annotations change), status kept for the
/// types whose status is written through `/status` only, and empty
/// collections Go would omit dropped.
fn prepare_for_update(t: &SimType, old: &Value, mut obj: Value) -> Result<Value, WriteError> {
    let old_rv = meta_str(old, "resourceVersion").unwrap_or("");
    if let Some(rv) = meta_str(&obj, "resourceVersion") {
        if !rv.is_empty() && rv != old_rv {
            return Err(WriteError::StaleResourceVersion {
                given: rv.to_string(),
                stored: old_rv.to_string(),
            });
        }
    }
    let old_uid = meta_str(old, "uid").unwrap_or("").to_string();
    match meta_str(&obj, "uid") {
        Some(uid) if !uid.is_empty() && uid != old_uid => {
            return Err(WriteError::UidChanged {
                uid: uid.to_string(),
            })
        }
        _ => {}
    }
    let old_meta = old.get("metadata").cloned().unwrap_or_default();
    let spec_changed = old.get("spec") != obj.get("spec")
        || old_meta.get("annotations") != obj.pointer("/metadata/annotations");
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return Err(WriteError::MetadataNotAnObject);
    };
    meta.insert("uid".into(), Value::String(old_uid));
    for kept in ["creationTimestamp", "generation"] {
        match old_meta.get(kept) {
            Some(v) => meta.insert(kept.into(), v.clone()),
            None => meta.shift_remove(kept),
        };
    }
    let kind = t.rt.kind.as_str();
    if kind == "Deployment" && spec_changed {
        let generation = old_meta
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        meta.insert("generation".into(), Value::from(generation + 1));
    }
    // Collections Go omits when empty (`omitempty`), as the typed object
    // the apiserver re-encodes would: what a patch empties goes.
    let empty = |v: &Value| match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    };
    meta.retain(|k, v| {
        !(matches!(
            k.as_str(),
            "labels" | "annotations" | "ownerReferences" | "finalizers"
        ) && empty(v))
    });
    if let (Value::Object(o), "ConfigMap" | "Secret") = (&mut obj, kind) {
        o.retain(|k, v| !(matches!(k.as_str(), "data" | "binaryData") && empty(v)));
    }
    if matches!(
        kind,
        "Pod" | "Deployment" | "Node" | "Namespace" | "Service"
    ) {
        // A namespace's spec (its finalizers) is written through
        // `/finalize` only.
        let kept: &[&str] = if kind == "Namespace" {
            &["spec", "status"]
        } else {
            &["status"]
        };
        if let Value::Object(o) = &mut obj {
            for field in kept {
                match old.get(*field) {
                    Some(v) => o.insert((*field).into(), v.clone()),
                    None => o.shift_remove(*field),
                };
            }
        }
    }
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Churn picks its pod from the keys it read, not by walking the
    /// store each step: the same pod the walk found (the step × 7919th in
    /// key order), and a pod created since is among those it picks from.
    #[test]
    fn churn_updates_the_nth_pod_in_key_order_from_keys_read_once_per_change() {
        let sim = Sim::new(&SimOptions {
            pods: 50,
            configmaps: 0,
            ..Default::default()
        });
        let t = sim.type_of("", "v1", "pods").unwrap().clone();
        let nth = |step: u64| -> String {
            let snap = t.store.current();
            let idx = (step as usize * 7919) % snap.items.len();
            let key = snap.items.iter().nth(idx).unwrap().key.to_string();
            key
        };
        for step in 1..=5 {
            let want = nth(step);
            let before = t.store.get(&want).unwrap().rv;
            sim.churn_once(step);
            assert!(
                t.store.get(&want).unwrap().rv > before,
                "step {step}: {want}"
            );
        }
        assert_eq!(sim.churn_keys.lock().unwrap().len(), 50);
        let pod = json!({"metadata": {"name": "a-new-one"}, "spec": {"containers": []}});
        sim.create(&t, Some("default"), pod).unwrap();
        sim.churn_once(6);
        assert_eq!(sim.churn_keys.lock().unwrap().len(), 51);
    }

    /// `kubectl logs deploy/x` and `describe` find a deployment's pods by
    /// its selector: each generated one must select some.
    #[test]
    fn every_generated_deployment_selects_pods_of_its_namespace() {
        for namespaces in [3, 5, 8, 10] {
            let sim = Sim::new(&SimOptions {
                pods: 200,
                configmaps: 0,
                nodes: 4,
                namespaces,
                ..Default::default()
            });
            let objects = |resource: &str, group: &str| -> Vec<Value> {
                let t = sim.type_of(group, "v1", resource).unwrap().clone();
                let now = sim.at_revision(&t);
                let bytes = |e: &Arc<Entry>| t.codec.object_bytes(e);
                now.items
                    .iter()
                    .map(|e| serde_json::from_slice(&bytes(e)).unwrap())
                    .collect()
            };
            let pods = objects("pods", "");
            let deployments = objects("deployments", "apps");
            assert_eq!(
                deployments.len(),
                2 * (namespaces - 2),
                "{namespaces} namespaces"
            );
            for d in &deployments {
                let ns = &d["metadata"]["namespace"];
                let app = &d["spec"]["selector"]["matchLabels"]["app"];
                let selected = pods.iter().filter(|p| {
                    &p["metadata"]["namespace"] == ns && &p["metadata"]["labels"]["app"] == app
                });
                assert!(
                    selected.count() > 0,
                    "{ns}/{app} of {namespaces} namespaces selects no pod"
                );
            }
        }
    }

    /// A write lands between reading the revision and reading the objects
    /// often enough under a busy writer: each most-recent read must still
    /// be the state exactly at the revision it is labelled with.
    #[test]
    fn a_most_recent_read_is_the_state_at_its_revision_while_writes_land() {
        let sim = Sim::new(&SimOptions {
            pods: 0,
            configmaps: 0,
            nodes: 0,
            namespaces: 1,
            ..Default::default()
        });
        let t = sim.type_of("", "v1", "configmaps").unwrap().clone();
        let writer = {
            let (sim, t) = (sim.clone(), t.clone());
            std::thread::spawn(move || {
                for i in 0..20_000 {
                    let name = format!("cm-{}", i % 50);
                    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": name}, "data": {"i": i.to_string()}});
                    if sim.create(&t, Some("default"), obj).is_err() {
                        sim.delete(&t, &format!("default/{name}")).unwrap();
                    }
                }
            })
        };
        let mut reads = 0;
        while !writer.is_finished() {
            let now = sim.at_revision(&t);
            let newest = now.items.iter().map(|e| e.rv).max().unwrap_or(0);
            assert!(
                newest <= now.rv,
                "read {reads}: an object at {newest} in the state at {}",
                now.rv
            );
            let at = t.store.snapshot_at(now.rv).expect("within the history");
            let versions = |s: &Snapshot| s.items.iter().map(|e| e.rv).collect::<Vec<_>>();
            assert_eq!(versions(&now), versions(&at), "read {reads} at {}", now.rv);
            reads += 1;
        }
        writer.join().unwrap();
        assert!(reads > 100, "only {reads} reads");
    }
}
