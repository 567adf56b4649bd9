//! The simulated apiserver (`kubecache sim`): discovery, get/list/watch with
//! the apiserver's semantics over its own store and history, create, update
//! and delete, realistic generated objects, churn, and fault injection. It is
//! the demo's upstream, a test double with the real one's rules, and a load
//! generator. Where it and a real apiserver disagree, the real one is right.
//! Reads negotiate `Accept` as kubecache does (JSON, Tables,
//! PartialObjectMetadata[List], the apiserver's 406s), with JSON its only
//! serializer: no YAML or protobuf (see `api`).

pub mod api;
pub mod faults;
pub mod generate;
mod managed;

use crate::encode::table::Printer;
use crate::resource::{GroupVersionResource, ResourceType};
use crate::store::{Entry, EventType, HistoryLimits, ListStyle, Store, TypeCodec};
use faults::{FaultCommand, Faults};
use generate::Generator;
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
    /// Answer `sendInitialEvents` (streaming lists) and validate watch
    /// options like a current apiserver with the WatchList feature, instead
    /// of ignoring them like v1.20.
    pub watch_list: bool,
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
            watch_list: false,
        }
    }
}

pub struct Sim {
    pub types: BTreeMap<GroupVersionResource, Arc<SimType>>,
    /// The etcd revision: every write anywhere takes the next one.
    revision: AtomicU64,
    write_lock: Mutex<()>,
    generator: Mutex<Generator>,
    pub faults: Faults,
    /// Watch requests answered, for tests that count upstream load.
    pub watches_served: AtomicU64,
    pub watch_list: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{0}")]
    BadBody(String),
    #[error("already exists")]
    AlreadyExists,
    #[error("not found")]
    NotFound,
    #[error("conflict")]
    Conflict,
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

fn builtin_types() -> Vec<ResourceType> {
    let rt = |g: &str, r: &str, k: &str, ns: bool| ResourceType {
        gvr: GroupVersionResource::new(g, "v1", r),
        kind: k.into(),
        namespaced: ns,
        verbs: [
            "create", "delete", "get", "list", "patch", "update", "watch",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    };
    vec![
        rt("", "namespaces", "Namespace", false),
        rt("", "nodes", "Node", false),
        rt("", "pods", "Pod", true),
        rt("", "configmaps", "ConfigMap", true),
        rt("", "secrets", "Secret", true),
        rt("", "services", "Service", true),
        rt("", "events", "Event", true),
        rt("apps", "deployments", "Deployment", true),
    ]
}

impl Sim {
    pub fn new(opts: &SimOptions) -> Arc<Self> {
        let types = builtin_types()
            .into_iter()
            .map(|rt| {
                let codec = Arc::new(TypeCodec::for_type(&rt, ListStyle::Typed));
                let printer = Printer::builtin(&rt.gvr.group, &rt.gvr.version, &rt.gvr.resource);
                (
                    rt.gvr.clone(),
                    Arc::new(SimType {
                        rt,
                        codec,
                        store: Store::new(opts.history),
                        printer,
                    }),
                )
            })
            .collect();
        let sim = Arc::new(Sim {
            types,
            revision: AtomicU64::new(1),
            write_lock: Mutex::new(()),
            generator: Mutex::new(Generator::new(opts.seed)),
            faults: Faults::default(),
            watches_served: AtomicU64::new(0),
            watch_list: opts.watch_list,
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
        for i in 0..o.pods {
            let ns = &ns_names[i % ns_names.len()];
            let obj = self.gen(|g| g.pod(ns, i, o.nodes));
            self.must_create("", "pods", obj);
        }
        for i in 0..o.configmaps {
            let ns = &ns_names[i % ns_names.len()];
            let obj = self.gen(|g| g.configmap(ns, i));
            self.must_create("", "configmaps", obj);
        }
        for ns in ns_names.iter().skip(2) {
            for app in ["web", "api"] {
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

    /// Stamps an object with its new resource version and stores it, under
    /// the write lock so revisions are applied in order.
    fn commit(
        &self,
        t: &SimType,
        kind: EventType,
        mut obj: Value,
        check: impl FnOnce(Option<&Arc<Entry>>) -> Result<(), WriteError>,
    ) -> Result<Arc<Entry>, WriteError> {
        let _guard = self.write_lock.lock().unwrap_or_else(|e| e.into_inner());
        let key = {
            let name = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    WriteError::BadBody(
                        "metadata.name: Required value: name or generateName is required".into(),
                    )
                })?;
            match obj.pointer("/metadata/namespace").and_then(Value::as_str) {
                Some(ns) if t.rt.namespaced => format!("{ns}/{name}"),
                _ => name.to_string(),
            }
        };
        check(t.store.get(&key).as_ref())?;
        let rv = self.revision() + 1;
        let Some(Value::Object(meta)) = obj.get_mut("metadata").map(std::mem::take) else {
            return Err(WriteError::BadBody("metadata must be an object".into()));
        };
        let mut meta = meta;
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        // kind and apiVersion first, then metadata, then the rest in order.
        let Value::Object(rest) = obj else {
            return Err(WriteError::BadBody("the body must be a JSON object".into()));
        };
        let mut out = Map::new();
        out.insert("kind".into(), Value::String(t.rt.kind.clone()));
        out.insert("apiVersion".into(), Value::String(t.rt.gvr.api_version()));
        out.insert("metadata".into(), Value::Object(order_metadata(meta)));
        for (k, v) in rest {
            if k != "kind" && k != "apiVersion" && k != "metadata" {
                out.insert(k, v);
            }
        }
        let bytes = serde_json::to_vec(&Value::Object(out))
            .map_err(|e| WriteError::BadBody(e.to_string()))?;
        let entry = Arc::new(
            t.codec
                .from_object(&bytes)
                .map_err(|e| WriteError::BadBody(e.to_string()))?,
        );
        t.store
            .apply(kind, entry.clone())
            .map_err(|e| WriteError::BadBody(e.to_string()))?;
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
            .ok_or_else(|| WriteError::BadBody("metadata must be an object".into()))?;
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
        self.commit(t, EventType::Added, obj, |have| match have {
            Some(_) => Err(WriteError::AlreadyExists),
            None => Ok(()),
        })
    }

    pub fn update(&self, t: &SimType, obj: Value) -> Result<Arc<Entry>, WriteError> {
        let want_rv = obj
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        self.commit(t, EventType::Modified, obj, |have| match (have, want_rv) {
            (None, _) => Err(WriteError::NotFound),
            (Some(e), Some(rv)) if rv != e.rv.to_string() => Err(WriteError::Conflict),
            _ => Ok(()),
        })
    }

    pub fn delete(&self, t: &SimType, key: &str) -> Result<Arc<Entry>, WriteError> {
        let have = t.store.get(key).ok_or(WriteError::NotFound)?;
        let obj: Value = serde_json::from_slice(&t.codec.object_bytes(&have))
            .map_err(|e| WriteError::BadBody(e.to_string()))?;
        self.commit(t, EventType::Deleted, obj, |have| match have {
            None => Err(WriteError::NotFound),
            Some(_) => Ok(()),
        })
    }

    /// One churn step: a pod's status flips and its labels move, the kind of
    /// update a kubelet and controllers make all day.
    pub fn churn_once(&self, step: u64) {
        let Some(t) = self.type_of("", "v1", "pods").cloned() else {
            return;
        };
        let snap = t.store.current();
        if snap.items.is_empty() {
            return;
        }
        let idx = (step as usize * 7919) % snap.items.len();
        let Some((_, e)) = snap.items.iter().nth(idx) else {
            return;
        };
        let Ok(mut obj) = serde_json::from_slice::<Value>(&t.codec.object_bytes(e)) else {
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
        let _ = self.update(&t, obj);
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

/// Serves the simulator on `listener` until `shutdown`.
pub async fn run(
    sim: Arc<Sim>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) {
    crate::serve::serve_http(
        listener,
        move |req| api::handle(sim.clone(), req),
        shutdown,
        Duration::from_secs(5),
    )
    .await
}
