//! Chaos (issue 21): random faults against the upstream — the simulator's
//! injected faults, or a real kube-apiserver and etcd killed, paused and
//! restarted — while writers create, change and delete configmaps and pods
//! straight on the upstream, and clients read through kubecache in every
//! resourceVersion mode and follow watches that resume where they were.
//! Then the faults stop and kubecache is proved right:
//!
//! - no read older than a write that had been answered before it (a
//!   refusal or a 5xx is allowed, a stale answer is not);
//! - no watch that skipped, repeated or reordered an event: each is
//!   compared with the upstream's own history (the simulator's stores, or
//!   etcd's revisions), not with what the writers think they did, since a
//!   write whose answer was lost to a kill may or may not have happened;
//! - every list served at a version equal, byte for byte, to the upstream's
//!   exact list at that version;
//! - once quiet, every cached type equal to the upstream.
//!
//! Consistent reads are answered from the cache once proven fresh
//! (`consistentReads: prove`), the simulator behaving as v1.36 (quiet
//! types proven by its bookmarks) and the real apiserver as v1.20 (quiet
//! types' reads forwarded, shared).
//!
//! `KUBECACHE_CHAOS_SECONDS` sets how long the faults last in each scenario
//! (default 20); `KUBECACHE_CHAOS_SEED` replays a run's random choices (of
//! faults, writes and reads; the timing is the machine's).

mod common;

use bytes::Bytes;
use common::*;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

const DEFAULT_SEED: u64 = 2121;
const DEFAULT_SECONDS: u64 = 20;

/// A write may wait out an etcd that is paused or restarting: answered
/// late, it is still a definite answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(15);
/// Longer than kubecache's 3 s wait for a version it has not reached.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Names each writer cycles through per namespace: few enough that
/// objects are created, changed and deleted again and again.
const NAMES_PER_NAMESPACE: usize = 6;

fn setting(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// One task's random choices: the run's seed told apart per task, so that
/// each task replays its own choices whatever the others do.
fn rng_for(seed: u64, task: u64) -> StdRng {
    StdRng::seed_from_u64(seed ^ task.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

// ---------------------------------------------------------------------------
// HTTP that never panics: under chaos, failures are data.

#[derive(Clone)]
struct Http(Client<HttpConnector, Full<Bytes>>);

enum Reply {
    Answer(StatusCode, Bytes),
    /// No connection was made: nothing was sent.
    Unreachable,
    /// Sent, and no whole answer came back: it may have taken effect.
    Lost(String),
}

impl Http {
    fn new() -> Http {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(Duration::from_secs(2)));
        Http(Client::builder(TokioExecutor::new()).build(connector))
    }

    fn request(method: Method, url: &str, body: Option<(&str, Vec<u8>)>) -> Request<Full<Bytes>> {
        let mut b = Request::builder()
            .method(method)
            .uri(url)
            .header("user-agent", "kubecache-chaos")
            .header("accept", "application/json");
        let body = match body {
            Some((content_type, bytes)) => {
                b = b.header("content-type", content_type);
                Bytes::from(bytes)
            }
            None => Bytes::new(),
        };
        b.body(Full::new(body)).unwrap()
    }

    async fn call(
        &self,
        method: Method,
        url: &str,
        body: Option<(&str, Vec<u8>)>,
        limit: Duration,
    ) -> Reply {
        let req = Self::request(method, url, body);
        let exchange = async {
            let resp = self.0.request(req).await.map_err(|e| {
                // Only a failed connect is known to have sent nothing.
                (!e.is_connect()).then(|| e.to_string())
            })?;
            let status = resp.status();
            let body = resp.into_body().collect().await;
            let body = body.map_err(|e| Some(e.to_string()))?.to_bytes();
            Ok((status, body))
        };
        match tokio::time::timeout(limit, exchange).await {
            Err(_) => Reply::Lost(format!("no answer within {limit:?}")),
            Ok(Err(None)) => Reply::Unreachable,
            Ok(Err(Some(e))) => Reply::Lost(e),
            Ok(Ok((status, body))) => Reply::Answer(status, body),
        }
    }

    async fn get(&self, url: &str) -> Reply {
        self.call(Method::GET, url, None, READ_TIMEOUT).await
    }

    /// A streaming request (a watch): the response once its headers came.
    async fn open(
        &self,
        method: Method,
        url: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Result<http::Response<hyper::body::Incoming>, String> {
        let req = Self::request(method, url, body);
        match tokio::time::timeout(READ_TIMEOUT, self.0.request(req)).await {
            Err(_) => Err("no headers in time".into()),
            Ok(r) => r.map_err(|e| e.to_string()),
        }
    }
}

/// A streamed body read line by line.
struct Lines {
    body: hyper::body::Incoming,
    buf: Vec<u8>,
}

enum Line {
    Data(Vec<u8>),
    /// The stream ended cleanly, or broke.
    End,
    /// Nothing came within the wait.
    Silent,
}

impl Lines {
    fn new(body: hyper::body::Incoming) -> Lines {
        Lines { body, buf: vec![] }
    }

    async fn next(&mut self, wait: Duration) -> Line {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(nl) = self.buf.iter().position(|b| *b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=nl).collect();
                line.pop();
                return Line::Data(line);
            }
            match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Err(_) => return Line::Silent,
                Ok(None) | Ok(Some(Err(_))) => return Line::End,
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// What is written, listed and watched.

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
enum Kind {
    ConfigMap,
    Pod,
}

const KINDS: [Kind; 2] = [Kind::ConfigMap, Kind::Pod];

impl Kind {
    fn plural(self) -> &'static str {
        match self {
            Kind::ConfigMap => "configmaps",
            Kind::Pod => "pods",
        }
    }

    fn collection(self, ns: Option<&str>) -> String {
        match ns {
            Some(ns) => format!("/api/v1/namespaces/{ns}/{}", self.plural()),
            None => format!("/api/v1/{}", self.plural()),
        }
    }

    /// The object a create writes; its `chaos/seq` annotation names the
    /// write, so that what is read can be told apart from what was written.
    fn object(self, key: &Key, seq: u64) -> Value {
        let metadata = json!({"name": key.name, "namespace": key.ns,
                              "labels": {"chaos": "true"},
                              "annotations": {"chaos/seq": seq.to_string()}});
        match self {
            Kind::ConfigMap => json!({"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": metadata, "data": {"seq": seq.to_string()}}),
            Kind::Pod => json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                                "spec": {"containers": [{"name": "c", "image": "registry.invalid/chaos:1"}]}}),
        }
    }

    /// An update as a merge patch, conditional on the version the writer
    /// last saw: a pod's spec cannot be replaced, and a write whose answer
    /// was lost must not be overwritten unknowingly.
    fn change(self, seq: u64, rv: u64) -> Value {
        let mut patch = json!({"metadata": {"resourceVersion": rv.to_string(),
                                            "annotations": {"chaos/seq": seq.to_string()}}});
        if self == Kind::ConfigMap {
            patch["data"] = json!({"seq": seq.to_string()});
        }
        patch
    }
}

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
struct Key {
    kind: Kind,
    ns: String,
    name: String,
}

impl Key {
    fn path(&self) -> String {
        format!("{}/{}", self.kind.collection(Some(&self.ns)), self.name)
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.kind.plural(), self.ns, self.name)
    }
}

/// What a list or a watch covers: one type, in one namespace or all.
#[derive(Clone, Debug)]
struct Scope {
    kind: Kind,
    ns: Option<String>,
}

impl Scope {
    fn path(&self) -> String {
        self.kind.collection(self.ns.as_deref())
    }

    fn holds(&self, key: &Key) -> bool {
        key.kind == self.kind && self.ns.as_deref().is_none_or(|ns| ns == key.ns)
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.ns {
            Some(ns) => write!(f, "{} in {ns}", self.kind.plural()),
            None => write!(f, "all {}", self.kind.plural()),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Change {
    Added,
    Modified,
    Deleted,
}

/// One change the upstream made, from its own history.
#[derive(Clone, Debug)]
struct Made {
    key: Key,
    rv: u64,
    change: Change,
    /// The `chaos/seq` of the object the upstream stored at `rv`: which
    /// write it holds (none for a delete).
    seq: Option<u64>,
}

/// The `chaos/seq` annotation's value in an object as the upstream stores
/// it, JSON or protobuf (etcd holds the apiserver's protobuf): the digits
/// after the key, past the few bytes that separate them (`":"`, or a
/// field tag and a length).
fn stored_seq(value: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"chaos/seq";
    let at = value.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let rest = &value[at..];
    let start = rest.iter().take(4).position(u8::is_ascii_digit)?;
    let digits: Vec<u8> = rest[start..]
        .iter()
        .copied()
        .take_while(u8::is_ascii_digit)
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

#[derive(Deserialize)]
struct ObjectIn {
    #[serde(default)]
    metadata: MetaIn,
}

#[derive(Deserialize, Default)]
struct MetaIn {
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    name: String,
    #[serde(rename = "resourceVersion", default)]
    resource_version: String,
    #[serde(default)]
    annotations: Option<HashMap<String, String>>,
    #[serde(rename = "deletionTimestamp", default)]
    deletion_timestamp: Option<String>,
}

/// An object as the checks see it.
struct Obj {
    ns: String,
    name: String,
    rv: u64,
    seq: Option<u64>,
    /// Its deletion was asked for (`deletionTimestamp` set).
    deleting: bool,
}

fn object_of(raw: &[u8]) -> Option<Obj> {
    let o: ObjectIn = serde_json::from_slice(raw).ok()?;
    let m = o.metadata;
    Some(Obj {
        rv: m.resource_version.parse().ok()?,
        seq: m
            .annotations
            .as_ref()
            .and_then(|a| a.get("chaos/seq"))
            .and_then(|s| s.parse().ok()),
        deleting: m.deletion_timestamp.is_some(),
        ns: m.namespace,
        name: m.name,
    })
}

#[derive(Deserialize)]
struct ListIn<'a> {
    #[serde(default)]
    metadata: ListMetaIn,
    #[serde(borrow, default)]
    items: Vec<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct ListMetaIn {
    #[serde(rename = "resourceVersion", default)]
    resource_version: String,
    #[serde(rename = "continue", default)]
    continue_token: String,
}

/// One listed object: namespace, name, version and a hash of its exact
/// bytes — what two lists are compared on.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
struct Item {
    ns: String,
    name: String,
    rv: u64,
    bytes: u64,
}

struct Listed {
    rv: u64,
    cont: Option<String>,
    items: Vec<Item>,
}

fn parse_list(body: &[u8]) -> Option<Listed> {
    let l: ListIn = serde_json::from_slice(body).ok()?;
    let mut items = Vec::with_capacity(l.items.len());
    for raw in l.items {
        let o = object_of(raw.get().as_bytes())?;
        let mut h = DefaultHasher::new();
        raw.get().hash(&mut h);
        items.push(Item {
            ns: o.ns,
            name: o.name,
            rv: o.rv,
            bytes: h.finish(),
        });
    }
    items.sort();
    Some(Listed {
        rv: l.metadata.resource_version.parse().ok()?,
        cont: Some(l.metadata.continue_token).filter(|t| !t.is_empty()),
        items,
    })
}

/// The summary's hash over (namespace, name, resourceVersion).
fn nnr_hash(items: &[Item]) -> u64 {
    let mut h = DefaultHasher::new();
    for i in items {
        (&i.ns, &i.name, i.rv).hash(&mut h);
    }
    h.finish()
}

/// What differs between a list through kubecache and the upstream's.
fn diff(kube: &[Item], up: &[Item]) -> String {
    let name = |i: &Item| format!("{}/{}@{}", i.ns, i.name, i.rv);
    // The first few of `a` that `b` lacks.
    let only = |a: &[Item], b: &[Item]| -> Vec<String> {
        let b: HashSet<_> = b.iter().collect();
        a.iter()
            .filter(|i| !b.contains(i))
            .map(name)
            .take(4)
            .collect()
    };
    let (only_kube, only_up) = (only(kube, up), only(up, kube));
    format!(
        "{} items through kubecache, {} upstream; only through kubecache (or other bytes): {only_kube:?}; only upstream: {only_up:?}",
        kube.len(),
        up.len()
    )
}

// ---------------------------------------------------------------------------
// What the run counts and finds.

#[derive(Default)]
struct Findings {
    stale: AtomicU64,
    gaps: AtomicU64,
    duplicates: AtomicU64,
    disorder: AtomicU64,
    mismatches: AtomicU64,
    examples: Mutex<Vec<String>>,
}

impl Findings {
    fn note(&self, counter: &AtomicU64, what: String) {
        counter.fetch_add(1, Ordering::Relaxed);
        let mut examples = self.examples.lock().unwrap();
        if examples.len() < 40 {
            eprintln!("chaos finding: {what}");
            examples.push(what);
        }
    }
}

#[derive(Default)]
struct Counts {
    /// Requests to kubecache, by what came back.
    requests: AtomicU64,
    answered: AtomicU64,
    error_statuses: AtomicU64,
    failed: AtomicU64,
    watch_events: AtomicU64,
    undecodable_lines: AtomicU64,
    /// Writes to the upstream, by what came back.
    writes: AtomicU64,
    applied: AtomicU64,
    refused: AtomicU64,
    lost: AtomicU64,
    /// Updates answered 2xx with the object pending deletion: the upstream
    /// deleted it instead (see `writer`).
    deleted_by_update: AtomicU64,
    /// Lists compared with the upstream's exact list at their version.
    verified: AtomicU64,
    /// ... of which compared after the faults, the upstream failing when served.
    deferred: AtomicU64,
    /// Not compared: the comparers were all busy.
    left_out: AtomicU64,
    /// Not comparable: the upstream's history compacted, or the upstream
    /// still failing after the faults.
    unverifiable: AtomicU64,
}

fn add(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

fn n(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

/// Where a list is: its path and `?selector`, and its version.
type At = (String, u64);

/// A list kubecache served, to compare with the upstream's.
struct Served {
    at: String,
    rv: u64,
    items: Vec<Item>,
    what: &'static str,
}

/// An object a get served, and how it was asked for.
struct ServedObject {
    key: Key,
    rv: u64,
    seq: Option<u64>,
    how: &'static str,
}

/// Everything the tasks of one scenario share.
struct Ctx {
    up: String,
    kube: String,
    http: Http,
    namespaces: Vec<String>,
    /// Writers and readers run while this holds.
    running: AtomicBool,
    seq: AtomicU64,
    /// The highest version a write's answer has given so far.
    committed: AtomicU64,
    /// Writes whose answer gave their version: version → (object, seq).
    written: Mutex<HashMap<u64, (Key, u64)>>,
    /// Updates the upstream carried out as deletes: (object, the version
    /// its answer gave, seq), to prove by the upstream's history.
    deleted_by_update: Mutex<Vec<(Key, u64, u64)>>,
    /// Reads after a write that did not show it: (the write's version,
    /// what was read), judged once the upstream's history is read, since
    /// a write the upstream itself lost is no fault of kubecache's.
    stale_after_write: Mutex<Vec<(u64, String)>>,
    /// Versions the upstream answered two writes at: (version, which).
    answered_twice: Mutex<Vec<(u64, String)>>,
    counts: Counts,
    found: Findings,
    /// The upstream's exact lists already read.
    exact: Mutex<HashMap<At, Vec<Item>>>,
    /// Lists served while the upstream could not give its exact list, to
    /// compare once it can: (path and selector, rv) → the lists, and how.
    deferred: Mutex<HashMap<At, Vec<Served>>>,
    /// Lists queued for the comparer.
    comparisons: tokio::sync::mpsc::Sender<Served>,
    /// Lists queued or being compared.
    queued: AtomicU64,
    /// Objects gets served.
    served_objects: Mutex<Vec<ServedObject>>,
    first_refusal: Mutex<Option<String>>,
}

impl Ctx {
    fn new(up: &str, kube: &str, namespaces: Vec<String>) -> Arc<Ctx> {
        let (comparisons, jobs) = tokio::sync::mpsc::channel(256);
        let jobs = Arc::new(tokio::sync::Mutex::new(jobs));
        let ctx = Arc::new(Ctx {
            up: up.to_string(),
            kube: kube.to_string(),
            http: Http::new(),
            namespaces,
            running: AtomicBool::new(true),
            seq: AtomicU64::new(0),
            committed: AtomicU64::new(0),
            written: Mutex::default(),
            deleted_by_update: Mutex::default(),
            stale_after_write: Mutex::default(),
            answered_twice: Mutex::default(),
            counts: Counts::default(),
            found: Findings::default(),
            exact: Mutex::default(),
            deferred: Mutex::default(),
            comparisons,
            queued: AtomicU64::new(0),
            served_objects: Mutex::default(),
            first_refusal: Mutex::default(),
        });
        for _ in 0..COMPARERS {
            tokio::spawn(comparer(ctx.clone(), jobs.clone()));
        }
        ctx
    }

    fn running(&self) -> bool {
        self.running.load(Ordering::Relaxed)
    }

    fn keys(&self, kind: Kind) -> Vec<Key> {
        let prefix = match kind {
            Kind::ConfigMap => "cm",
            Kind::Pod => "pod",
        };
        self.namespaces
            .iter()
            .flat_map(|ns| {
                (0..NAMES_PER_NAMESPACE).map(move |i| Key {
                    kind,
                    ns: ns.clone(),
                    name: format!("{prefix}-{i}"),
                })
            })
            .collect()
    }

    /// A GET through kubecache, counted.
    async fn read(&self, path_and_query: &str) -> Reply {
        add(&self.counts.requests);
        let r = self
            .http
            .get(&format!("{}{path_and_query}", self.kube))
            .await;
        match &r {
            Reply::Answer(s, _) if s.is_success() => add(&self.counts.answered),
            Reply::Answer(..) => add(&self.counts.error_statuses),
            _ => add(&self.counts.failed),
        }
        r
    }

    /// Has a list kubecache served at `rv` compared with the upstream's
    /// exact list at that version (`selector` beside it, if the list had
    /// one): by the comparers, so that reads through kubecache go on while
    /// the upstream is slow to answer. Lists are served faster than the
    /// upstream gives exact ones: those that find every comparer busy are
    /// counted and left out.
    fn compare(&self, path: &str, selector: &str, rv: u64, items: &[Item], what: &'static str) {
        let at = format!("{path}?{selector}");
        let known = self.exact.lock().unwrap().get(&(at.clone(), rv)).cloned();
        if let Some(upstream) = known {
            return self.same(&at, rv, items, &upstream, what);
        }
        let items = items.to_vec();
        let list = Served {
            at,
            rv,
            items,
            what,
        };
        self.queued.fetch_add(1, Ordering::SeqCst);
        if self.comparisons.try_send(list).is_err() {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            add(&self.counts.left_out);
        }
    }

    /// Keeps a list to compare once the faults are over. Lists served from
    /// the cache while the upstream is away are what most needs checking;
    /// the cache's version hardly moves meanwhile, so they are few.
    fn defer(&self, list: Served) {
        let mut deferred = self.deferred.lock().unwrap();
        if deferred.len() >= 5000 {
            return add(&self.counts.unverifiable);
        }
        let lists = deferred.entry((list.at.clone(), list.rv)).or_default();
        if !lists.iter().any(|l| l.items == list.items) {
            lists.push(list);
        }
    }

    /// Waits until the comparers are done with every list queued so far.
    async fn comparisons_done(&self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.queued.load(Ordering::SeqCst) > 0 {
            assert!(Instant::now() < deadline, "the comparers are stuck");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The upstream's exact list at `rv` of `at` (a path and `?selector`).
    async fn exact_list(&self, at: &str, rv: u64) -> Exact {
        let key = (at.to_string(), rv);
        if let Some(items) = self.exact.lock().unwrap().get(&key) {
            return Exact::Items(items.clone());
        }
        let and = if at.ends_with('?') { "" } else { "&" };
        let url = format!(
            "{}{at}{and}resourceVersion={rv}&resourceVersionMatch=Exact",
            self.up
        );
        let body = match self.http.get(&url).await {
            Reply::Answer(StatusCode::OK, body) => body,
            // Compacted: nothing to compare with.
            Reply::Answer(StatusCode::GONE, _) => return Exact::Gone,
            _ => return Exact::Failing,
        };
        let Some(l) = parse_list(&body) else {
            panic!(
                "the upstream's exact list is no list: {}",
                String::from_utf8_lossy(&body)
            );
        };
        let mut exact = self.exact.lock().unwrap();
        if exact.len() > 4000 {
            exact.clear();
        }
        exact.insert(key, l.items.clone());
        Exact::Items(l.items)
    }

    fn same(&self, at: &str, rv: u64, items: &[Item], upstream: &[Item], what: &str) {
        add(&self.counts.verified);
        if items != upstream {
            self.found.note(
                &self.found.mismatches,
                format!(
                    "{what} of {at} at {rv} differs from the upstream's exact list at {rv}: {}",
                    diff(items, upstream)
                ),
            );
        }
    }

    /// The comparisons put off while the upstream was failing, now that it
    /// is back.
    async fn compare_deferred(&self) {
        let deferred = std::mem::take(&mut *self.deferred.lock().unwrap());
        for ((at, rv), lists) in deferred {
            let mut exact = Exact::Failing;
            for _ in 0..20 {
                exact = self.exact_list(&at, rv).await;
                if !matches!(exact, Exact::Failing) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            for Served { items, what, .. } in lists {
                add(&self.counts.deferred);
                match &exact {
                    Exact::Items(upstream) => self.same(&at, rv, &items, upstream, what),
                    _ => add(&self.counts.unverifiable),
                }
            }
        }
    }
}

enum Exact {
    Items(Vec<Item>),
    Gone,
    Failing,
}

/// How many lists are compared at once.
const COMPARERS: usize = 4;

/// Compares the lists queued by `Ctx::compare`; one of `COMPARERS`.
async fn comparer(
    ctx: Arc<Ctx>,
    jobs: Arc<tokio::sync::Mutex<tokio::sync::mpsc::Receiver<Served>>>,
) {
    loop {
        let Some(list) = jobs.lock().await.recv().await else {
            return;
        };
        match ctx.exact_list(&list.at, list.rv).await {
            Exact::Items(upstream) => {
                ctx.same(&list.at, list.rv, &list.items, &upstream, list.what)
            }
            Exact::Gone => add(&ctx.counts.unverifiable),
            Exact::Failing => ctx.defer(list),
        }
        ctx.queued.fetch_sub(1, Ordering::SeqCst);
    }
}

// ---------------------------------------------------------------------------
// Writers: straight to the upstream, each read back through kubecache.

/// How fresh a read must be after a write at a version.
#[derive(Clone, Copy)]
enum Want {
    /// The object at this version or later (most recent, NotOlderThan).
    AtLeast,
    /// The object exactly at this version (Exact).
    Exactly,
}

async fn writer(ctx: Arc<Ctx>, kind: Kind, mut rng: StdRng) {
    let keys = ctx.keys(kind);
    // What the writer believes each object is: absent or at a version.
    // A write without an answer makes it unknown until read again.
    let mut model: HashMap<Key, Option<u64>> = keys.iter().map(|k| (k.clone(), None)).collect();
    while ctx.running() {
        let key = &keys[rng.random_range(0..keys.len())];
        let Some(&current) = model.get(key) else {
            match ctx.http.get(&format!("{}{}", ctx.up, key.path())).await {
                Reply::Answer(StatusCode::OK, body) => {
                    let o = object_of(&body).expect("an object");
                    model.insert(key.clone(), Some(o.rv));
                }
                Reply::Answer(StatusCode::NOT_FOUND, _) => {
                    model.insert(key.clone(), None);
                }
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
            continue;
        };
        let seq = ctx.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let json = |v: Value| serde_json::to_vec(&v).unwrap();
        let (method, url, body) = match current {
            None => (
                Method::POST,
                format!("{}{}", ctx.up, kind.collection(Some(&key.ns))),
                Some(("application/json", json(kind.object(key, seq)))),
            ),
            Some(rv) if rng.random_bool(0.7) => (
                Method::PATCH,
                format!("{}{}", ctx.up, key.path()),
                Some(("application/merge-patch+json", json(kind.change(seq, rv)))),
            ),
            Some(_) => (Method::DELETE, format!("{}{}", ctx.up, key.path()), None),
        };
        let deleting = method == Method::DELETE;
        add(&ctx.counts.writes);
        match ctx.http.call(method, &url, body, WRITE_TIMEOUT).await {
            Reply::Answer(s, body) if s.is_success() => {
                add(&ctx.counts.applied);
                if deleting {
                    model.insert(key.clone(), None);
                    read_your_delete(&ctx, key).await;
                    continue;
                }
                let o = object_of(&body).expect("a write's answer is the object");
                if o.deleting {
                    // An update of an object whose deletion was asked for
                    // with no grace period (a pod with no node) and that is
                    // still there, because the apiserver or etcd died
                    // between the delete's two steps (set deletionTimestamp,
                    // then delete): the apiserver deletes it instead
                    // (generic registry's ShouldDeleteDuringUpdate) and
                    // answers 200 with the request's object at the version
                    // it had before, a version the upstream holds with
                    // other content. Seen as an etcd-lost write with a
                    // reused revision on 2026-11-24 (seed 2121); it is the
                    // apiserver's documented behaviour, and etcd's history
                    // must show it (`check_answered_writes`).
                    add(&ctx.counts.deleted_by_update);
                    let done = (key.clone(), o.rv, seq);
                    ctx.deleted_by_update.lock().unwrap().push(done);
                    model.insert(key.clone(), None);
                    read_your_delete(&ctx, key).await;
                    continue;
                }
                model.insert(key.clone(), Some(o.rv));
                let was = ctx.written.lock().unwrap().insert(o.rv, (key.clone(), seq));
                if let Some((k, s)) = was {
                    // Two writes answered at one version: the upstream
                    // reused a revision (kubecache is not on this path).
                    let what = format!("{key} as {seq}, and before it {k} as {s}");
                    ctx.answered_twice.lock().unwrap().push((o.rv, what));
                }
                ctx.committed.fetch_max(o.rv, Ordering::Relaxed);
                read_your_write(&ctx, key, o.rv, &mut rng).await;
            }
            Reply::Answer(s, body) if s.is_client_error() => {
                add(&ctx.counts.refused);
                // A conflict or a 404: an earlier write's lost answer hid
                // what it did; read the object again.
                if s == StatusCode::CONFLICT || s == StatusCode::NOT_FOUND {
                    model.remove(key);
                } else {
                    let mut first = ctx.first_refusal.lock().unwrap();
                    first.get_or_insert_with(|| format!("{s} {}", String::from_utf8_lossy(&body)));
                }
            }
            Reply::Unreachable => {
                add(&ctx.counts.refused);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Reply::Answer(..) | Reply::Lost(_) => {
                add(&ctx.counts.lost);
                model.remove(key);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// After a write answered at `rv`: a most-recent read through kubecache,
/// then one at that version (NotOlderThan or Exact), must show the object
/// at `rv` or later — or be refused.
async fn read_your_write(ctx: &Ctx, key: &Key, rv: u64, rng: &mut StdRng) {
    let coll = key.kind.collection(Some(&key.ns));
    let by_name = format!("fieldSelector=metadata.name%3D{}", key.name);
    let (path, selector, list) = match rng.random_range(0..3) {
        0 => (key.path(), String::new(), false),
        1 => (coll.clone(), by_name, true),
        _ => (coll.clone(), String::new(), true),
    };
    fresh(
        ctx,
        key,
        rv,
        (&path, &selector, ""),
        list,
        Want::AtLeast,
        "most recent",
    )
    .await;
    let at = format!("resourceVersion={rv}");
    match rng.random_range(0..4) {
        0 => {
            fresh(
                ctx,
                key,
                rv,
                (&key.path(), "", &at),
                false,
                Want::AtLeast,
                "NotOlderThan",
            )
            .await
        }
        1 => {
            fresh(
                ctx,
                key,
                rv,
                (&coll, "", &at),
                true,
                Want::AtLeast,
                "NotOlderThan",
            )
            .await
        }
        2 => {
            let q = format!("{at}&resourceVersionMatch=NotOlderThan");
            fresh(
                ctx,
                key,
                rv,
                (&coll, "", &q),
                true,
                Want::AtLeast,
                "NotOlderThan",
            )
            .await
        }
        _ => {
            let q = format!("{at}&resourceVersionMatch=Exact");
            fresh(ctx, key, rv, (&coll, "", &q), true, Want::Exactly, "Exact").await
        }
    }
}

/// One read of `key` after its write at `rv`: (path, selector, version
/// query).
async fn fresh(
    ctx: &Ctx,
    key: &Key,
    rv: u64,
    (path, selector, version): (&str, &str, &str),
    list: bool,
    want: Want,
    how: &'static str,
) {
    let query: Vec<&str> = [selector, version]
        .into_iter()
        .filter(|q| !q.is_empty())
        .collect();
    let url = format!("{path}?{}", query.join("&"));
    let Reply::Answer(status, body) = ctx.read(&url).await else {
        return;
    };
    let ok = |got: u64| match want {
        Want::AtLeast => got >= rv,
        Want::Exactly => got == rv,
    };
    let stale = |what: String| {
        let what = format!("{how} read {url} after {key} was written at {rv}: {what}");
        eprintln!("chaos: stale unless the upstream lost the write: {what}");
        ctx.stale_after_write.lock().unwrap().push((rv, what));
    };
    match status {
        StatusCode::OK if list => {
            let l = parse_list(&body).expect("a list");
            if !ok(l.rv) {
                return stale(format!("a list at {}", l.rv));
            }
            match l
                .items
                .iter()
                .find(|i| i.name == key.name && i.ns == key.ns)
            {
                None => stale(format!("a list at {} without it", l.rv)),
                Some(i) if !ok(i.rv) => stale(format!("it at {}", i.rv)),
                Some(_) => ctx.compare(path, selector, l.rv, &l.items, how),
            }
        }
        StatusCode::OK => {
            let o = object_of(&body).expect("an object");
            if !ok(o.rv) {
                return stale(format!("it at {}", o.rv));
            }
            let (key, rv, seq) = (key.clone(), o.rv, o.seq);
            let served = ServedObject { key, rv, seq, how };
            ctx.served_objects.lock().unwrap().push(served);
        }
        StatusCode::NOT_FOUND if !list => stale("404".into()),
        // Refused or failing: allowed under faults.
        _ => {}
    }
}

/// After a delete was answered: a most-recent get must not find it.
async fn read_your_delete(ctx: &Ctx, key: &Key) {
    if let Reply::Answer(StatusCode::OK, body) = ctx.read(&key.path()).await {
        let o = object_of(&body).map(|o| o.rv).unwrap_or_default();
        ctx.found.note(
            &ctx.found.stale,
            format!("most recent get of {key} after its delete was answered: it, at {o}"),
        );
    }
}

// ---------------------------------------------------------------------------
// Readers: lists, walks and gets through kubecache in every RV mode.

async fn reader(ctx: Arc<Ctx>, mut rng: StdRng) {
    while ctx.running() {
        let kind = KINDS[rng.random_range(0..KINDS.len())];
        let ns = rng
            .random_bool(0.7)
            .then(|| ctx.namespaces[rng.random_range(0..ctx.namespaces.len())].clone());
        let path = Scope { kind, ns }.path();
        // What a write had been answered at before this read was asked.
        let committed = ctx.committed.load(Ordering::Relaxed);
        match rng.random_range(0..10) {
            0 | 1 => list(&ctx, &path, "resourceVersion=0", None, "RV=0 list").await,
            2 => list(&ctx, &path, "", Some(Want::AtLeast), "most recent list").await,
            3 => {
                let q = format!("resourceVersion={committed}");
                list(&ctx, &path, &q, Some(Want::AtLeast), "NotOlderThan list").await
            }
            4 => {
                let at = committed.saturating_sub(rng.random_range(0..40)).max(1);
                let q = format!("resourceVersion={at}&resourceVersionMatch=Exact");
                list(&ctx, &path, &q, Some(Want::Exactly), "Exact list").await
            }
            5 | 6 => {
                let limit = rng.random_range(1..=4);
                let from = match rng.random_range(0..3) {
                    0 => String::new(),
                    1 => "&resourceVersion=0".to_string(),
                    _ => format!("&resourceVersion={committed}"),
                };
                walk(&ctx, &path, limit, &from).await
            }
            _ => {
                let keys = ctx.keys(kind);
                let key = &keys[rng.random_range(0..keys.len())];
                let (q, how) = match rng.random_range(0..3) {
                    0 => ("?resourceVersion=0".to_string(), "RV=0 get"),
                    1 => (String::new(), "most recent get"),
                    _ => (format!("?resourceVersion={committed}"), "NotOlderThan get"),
                };
                if let Reply::Answer(StatusCode::OK, body) =
                    ctx.read(&format!("{}{q}", key.path())).await
                {
                    let o = object_of(&body).expect("an object");
                    let (key, rv, seq) = (key.clone(), o.rv, o.seq);
                    let served = ServedObject { key, rv, seq, how };
                    ctx.served_objects.lock().unwrap().push(served);
                }
            }
        }
    }
}

/// A list; with `want`, its version must be at least (or exactly) the
/// version `query` names, else the committed version when it names none.
async fn list(ctx: &Ctx, path: &str, query: &str, want: Option<Want>, how: &'static str) {
    let floor = ctx.committed.load(Ordering::Relaxed);
    let named = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("resourceVersion="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(floor);
    let Reply::Answer(StatusCode::OK, body) = ctx.read(&format!("{path}?{query}")).await else {
        return;
    };
    let l = parse_list(&body).expect("a list");
    let stale = match want {
        Some(Want::AtLeast) => l.rv < named,
        Some(Want::Exactly) => l.rv != named,
        None => false,
    };
    if stale {
        let what = format!("{how} {path}?{query} answered at {}, wanted {named}", l.rv);
        return ctx.found.note(&ctx.found.stale, what);
    }
    ctx.compare(path, "", l.rv, &l.items, how);
}

/// A limit/continue walk to its end: every page at the first page's
/// version, no object twice, the whole equal to the upstream's exact list.
async fn walk(ctx: &Ctx, path: &str, limit: u32, from: &str) {
    let mut query = format!("limit={limit}{from}");
    let mut items: Vec<Item> = vec![];
    let mut rv = None;
    for page in 0.. {
        let Reply::Answer(StatusCode::OK, body) = ctx.read(&format!("{path}?{query}")).await else {
            // A refused page (a 410 for an expired token included) ends the walk.
            return;
        };
        let l = parse_list(&body).expect("a list");
        let first = *rv.get_or_insert(l.rv);
        if l.rv != first {
            let what = format!(
                "walk of {path} ({from}): page {page} at {}, the first at {first}",
                l.rv
            );
            return ctx.found.note(&ctx.found.mismatches, what);
        }
        items.extend(l.items);
        match l.cont {
            Some(token) => {
                let token: String =
                    url::form_urlencoded::byte_serialize(token.as_bytes()).collect();
                query = format!("limit={limit}&continue={token}");
            }
            None => break,
        }
        assert!(page < 1000, "a walk of {path} does not end");
    }
    let rv = rv.unwrap_or_default();
    // v1.20: a version with a limit is a list at exactly that version.
    if let Some(at) = from
        .strip_prefix("&resourceVersion=")
        .and_then(|v| v.parse::<u64>().ok())
    {
        if at != 0 && rv != at {
            let what = format!("walk of {path} from {at}: at {rv}");
            return ctx.found.note(&ctx.found.mismatches, what);
        }
    }
    let before = items.len();
    items.sort();
    items.dedup_by(|a, b| a.ns == b.ns && a.name == b.name);
    if items.len() != before {
        let what = format!("walk of {path} ({from}) at {rv}: an object on two pages");
        return ctx.found.note(&ctx.found.duplicates, what);
    }
    ctx.compare(path, "", rv, &items, "walk");
}

// ---------------------------------------------------------------------------
// Watchers: list, then watch from the list's version, resuming from the
// last version seen whenever a watch ends; after an ERROR event, relist.

#[derive(Clone, Debug)]
struct Seen {
    rv: u64,
    change: Change,
    key: Key,
    seq: Option<u64>,
    /// The chain's end when it arrived: everything up to it had been
    /// delivered, by an event or a bookmark.
    after: u64,
}

/// Everything one watcher saw from one list on: the list's version, then
/// the events of the watches that resumed one after another.
struct Chain {
    scope: Scope,
    start: u64,
    /// The version everything up to which has been delivered: the last
    /// event's or bookmark's.
    end: u64,
    events: Vec<Seen>,
    /// The versions each watch resumed from.
    resumes: Vec<u64>,
    /// The ERROR event (or 410) that ended it, after which it relisted.
    ended: Option<String>,
}

enum Event {
    Seen(Seen),
    Bookmark(u64),
    Error(String),
}

#[derive(Deserialize)]
struct EventIn<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(borrow)]
    object: &'a RawValue,
}

fn parse_event(kind: Kind, line: &[u8]) -> Option<Event> {
    let e: EventIn = serde_json::from_slice(line).ok()?;
    let raw = e.object.get().as_bytes();
    let change = match e.kind.as_str() {
        "ADDED" => Change::Added,
        "MODIFIED" => Change::Modified,
        "DELETED" => Change::Deleted,
        "BOOKMARK" => return Some(Event::Bookmark(object_of(raw)?.rv)),
        "ERROR" => return Some(Event::Error(e.object.get().to_string())),
        _ => return None,
    };
    let o = object_of(raw)?;
    Some(Event::Seen(Seen {
        rv: o.rv,
        change,
        key: Key {
            kind,
            ns: o.ns,
            name: o.name,
        },
        seq: o.seq,
        after: 0,
    }))
}

async fn watcher(
    ctx: Arc<Ctx>,
    scope: Scope,
    mut rng: StdRng,
    progress: Arc<AtomicU64>,
    mut stop: watch::Receiver<bool>,
) -> Vec<Chain> {
    let path = scope.path();
    let mut chains = vec![];
    let pause = || tokio::time::sleep(Duration::from_millis(200));
    'relist: while !*stop.borrow() {
        let from = if rng.random_bool(0.5) {
            "resourceVersion=0"
        } else {
            ""
        };
        let Reply::Answer(StatusCode::OK, body) = ctx.read(&format!("{path}?{from}")).await else {
            pause().await;
            continue;
        };
        let l = parse_list(&body).expect("a list");
        ctx.compare(&path, "", l.rv, &l.items, "a watcher's list");
        let mut chain = Chain {
            scope: scope.clone(),
            start: l.rv,
            end: l.rv,
            events: vec![],
            resumes: vec![],
            ended: None,
        };
        progress.store(chain.end, Ordering::Relaxed);
        loop {
            if *stop.borrow() {
                chains.push(chain);
                break 'relist;
            }
            let timeout = rng.random_range(1..=8u64);
            let bookmarks = if rng.random_bool(0.5) {
                "&allowWatchBookmarks=true"
            } else {
                ""
            };
            let url = format!(
                "{}{path}?watch=1&resourceVersion={}&timeoutSeconds={timeout}{bookmarks}",
                ctx.kube, chain.end
            );
            add(&ctx.counts.requests);
            let opened = tokio::select! {
                r = ctx.http.open(Method::GET, &url, None) => r,
                _ = stop.changed() => {
                    chains.push(chain);
                    break 'relist;
                }
            };
            let resp = match opened {
                Ok(r) if r.status() == StatusCode::OK => r,
                Ok(r) => {
                    add(&ctx.counts.error_statuses);
                    if r.status() == StatusCode::GONE {
                        chain.ended = Some("410 status".into());
                        chains.push(chain);
                        continue 'relist;
                    }
                    pause().await;
                    continue;
                }
                Err(_) => {
                    add(&ctx.counts.failed);
                    pause().await;
                    continue;
                }
            };
            add(&ctx.counts.answered);
            chain.resumes.push(chain.end);
            let mut lines = Lines::new(resp.into_body());
            loop {
                // Past its timeout a watch kubecache serves has ended; one
                // forwarded to a stalled upstream may hang: resume it.
                let wait = Duration::from_secs(timeout + 20);
                let line = tokio::select! {
                    l = lines.next(wait) => l,
                    _ = stop.changed() => {
                        chains.push(chain);
                        break 'relist;
                    }
                };
                let Line::Data(line) = line else {
                    break;
                };
                match parse_event(scope.kind, &line) {
                    Some(Event::Seen(mut seen)) => {
                        add(&ctx.counts.watch_events);
                        seen.after = chain.end;
                        chain.end = chain.end.max(seen.rv);
                        chain.events.push(seen);
                    }
                    Some(Event::Bookmark(rv)) => chain.end = chain.end.max(rv),
                    Some(Event::Error(status)) => {
                        chain.ended = Some(status);
                        chains.push(chain);
                        continue 'relist;
                    }
                    None => {
                        // As client-go does with an undecodable event: end
                        // the watch and resume from the last version.
                        add(&ctx.counts.undecodable_lines);
                        break;
                    }
                }
                progress.store(chain.end, Ordering::Relaxed);
            }
        }
    }
    chains
}

// ---------------------------------------------------------------------------
// The run: load, faults, quiet, checks.

/// A scenario's name and settings.
struct Run {
    scenario: &'static str,
    seed: u64,
    seconds: u64,
}

impl Run {
    fn new(scenario: &'static str) -> Run {
        let run = Run {
            scenario,
            seed: setting("KUBECACHE_CHAOS_SEED", DEFAULT_SEED),
            seconds: setting("KUBECACHE_CHAOS_SECONDS", DEFAULT_SECONDS),
        };
        eprintln!(
            "chaos[{scenario}]: seed {}, {} s of faults",
            run.seed, run.seconds
        );
        run
    }
}

struct Load {
    tasks: Vec<JoinHandle<()>>,
    watchers: Vec<(Scope, Arc<AtomicU64>, JoinHandle<Vec<Chain>>)>,
    stop_watchers: watch::Sender<bool>,
}

fn start_load(ctx: &Arc<Ctx>, seed: u64) -> Load {
    let mut tasks = vec![];
    for (i, kind) in KINDS.into_iter().enumerate() {
        tasks.push(tokio::spawn(writer(
            ctx.clone(),
            kind,
            rng_for(seed, 10 + i as u64),
        )));
    }
    // A third of what a reader asks is forwarded upstream and waits out a
    // paused apiserver: more readers keep kubecache busy meanwhile.
    for i in 0..3 {
        tasks.push(tokio::spawn(reader(ctx.clone(), rng_for(seed, 20 + i))));
    }
    let (stop_watchers, stop) = watch::channel(false);
    let scopes = [
        Scope {
            kind: Kind::ConfigMap,
            ns: None,
        },
        Scope {
            kind: Kind::ConfigMap,
            ns: Some(ctx.namespaces[0].clone()),
        },
        Scope {
            kind: Kind::Pod,
            ns: None,
        },
        Scope {
            kind: Kind::Pod,
            ns: Some(ctx.namespaces[1].clone()),
        },
    ];
    let watchers = scopes
        .into_iter()
        .enumerate()
        .map(|(i, scope)| {
            let progress = Arc::new(AtomicU64::new(0));
            let task = watcher(
                ctx.clone(),
                scope.clone(),
                rng_for(seed, 30 + i as u64),
                progress.clone(),
                stop.clone(),
            );
            (scope, progress, tokio::spawn(task))
        })
        .collect();
    Load {
        tasks,
        watchers,
        stop_watchers,
    }
}

/// Stops the writers and readers (the faults are over).
async fn stop_writing(ctx: &Ctx, load: &mut Load) {
    ctx.running.store(false, Ordering::Relaxed);
    for t in load.tasks.drain(..) {
        t.await.expect("a writer or reader panicked");
    }
}

/// The rest of a run once the faults are over and the writers stopped:
/// kubecache must converge to the upstream, its watchers must have seen
/// exactly the upstream's history (read by `history`), and the summary is
/// printed.
async fn finish(
    run: Run,
    ctx: &Arc<Ctx>,
    proxy: &Proxy,
    load: Load,
    faults: BTreeMap<&'static str, u64>,
    history: impl AsyncFn() -> Vec<Made>,
) {
    let Run {
        scenario,
        seed,
        seconds,
    } = run;
    let quiet = Instant::now();
    let types = converge(ctx, proxy).await;
    eprintln!(
        "chaos[{scenario}]: converged {:.1?} after the faults",
        quiet.elapsed()
    );
    // How the consistent reads were answered: proven and served from the
    // cache, or forwarded.
    for tc in proxy.cache.all() {
        let p = &tc.proofs;
        eprintln!(
            "chaos[{scenario}]: {}: consistent reads proven {}, not proven (forwarded) {}; reads served {}, forwarded {}",
            tc.rt.gvr,
            p.proven.load(Ordering::Relaxed),
            p.unproven.load(Ordering::Relaxed),
            tc.activity.served.load(Ordering::Relaxed),
            tc.activity.forwarded.load(Ordering::Relaxed),
        );
    }

    // Every watcher catches up with the last change in its scope.
    let history_then = history().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    for (scope, progress, _) in &load.watchers {
        let last = history_then
            .iter()
            .filter(|m| scope.holds(&m.key))
            .map(|m| m.rv)
            .max()
            .unwrap_or(0);
        while progress.load(Ordering::Relaxed) < last {
            if Instant::now() > deadline {
                let at = progress.load(Ordering::Relaxed);
                ctx.found.note(
                    &ctx.found.gaps,
                    format!("the watcher of {scope} never caught up: at {at}, the last change at {last}"),
                );
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let _ = load.stop_watchers.send(true);
    let mut chains = vec![];
    for (_, _, task) in load.watchers {
        chains.extend(task.await.expect("a watcher panicked"));
    }
    ctx.comparisons_done().await;
    ctx.compare_deferred().await;
    // Read again: whatever the watchers saw is in it, even a change the
    // upstream made of its own accord meanwhile (a restarted apiserver's).
    let history = history().await;
    let answers = check_answered_writes(ctx, &history);
    check_chains(ctx, &chains, &history);
    check_served_objects(ctx, &history);

    let c = &ctx.counts;
    let f = &ctx.found;
    let faults_total: u64 = faults.values().sum();
    let faults_line = faults
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    let reflectors: Vec<String> = proxy
        .cache
        .all()
        .iter()
        .map(|t| {
            let s = t.stats();
            format!(
                "{} {} lists/{} watches/{} errors",
                t.rt.gvr,
                n(&s.lists),
                n(&s.watches),
                n(&s.errors)
            )
        })
        .collect();
    let relists = chains.iter().filter(|c| c.ended.is_some()).count();
    println!(
        "chaos[{scenario}] seed {seed} (KUBECACHE_CHAOS_SEED), {seconds} s of faults: \
         faults {faults_total} ({faults_line}); \
         requests through kubecache {} ({} answered, {} error statuses, {} failed), \
         {} watch events in {} chains ({} ended by an ERROR and relisted), {} undecodable lines; \
         writes {} ({} applied, {} refused, {} failed: a 5xx or no answer; \
         {} updates the upstream carried out as deletes, {} of them shown by its history); \
         acknowledged writes lost by the upstream (its history rewrote their revision) {}, \
         reads after them that did not show them {} (not kubecache's: not failures); \
         lists compared with the upstream's exact list {} ({} of them once it was back), {} not comparable, {} left out (comparers busy); \
         stale reads {}, gaps {}, duplicates {}, out of order {}, mismatches {}; \
         reflectors: {}; final: {}",
        n(&c.requests),
        n(&c.answered),
        n(&c.error_statuses),
        n(&c.failed),
        n(&c.watch_events),
        chains.len(),
        relists,
        n(&c.undecodable_lines),
        n(&c.writes),
        n(&c.applied),
        n(&c.refused),
        n(&c.lost),
        n(&c.deleted_by_update),
        answers.deletes_shown,
        answers.lost.len(),
        answers.reads_after_lost,
        n(&c.verified),
        n(&c.deferred),
        n(&c.unverifiable),
        n(&c.left_out),
        n(&f.stale),
        n(&f.gaps),
        n(&f.duplicates),
        n(&f.disorder),
        n(&f.mismatches),
        reflectors.join(", "),
        types.join(", "),
    );
    if let Some(r) = ctx.first_refusal.lock().unwrap().as_ref() {
        eprintln!("chaos[{scenario}]: a write was refused: {r}");
    }
    for lost in &answers.lost {
        eprintln!("chaos[{scenario}]: {lost}");
    }
    let examples = f.examples.lock().unwrap().join("\n  ");
    assert_eq!(
        (n(&f.stale), n(&f.gaps), n(&f.duplicates), n(&f.disorder), n(&f.mismatches)),
        (0, 0, 0, 0, 0),
        "chaos[{scenario}] seed {seed}: stale reads, gaps, duplicates, out of order, mismatches:\n  {examples}"
    );
    // A run that did nothing proves nothing.
    assert!(faults_total > 0, "no fault was injected");
    assert!(n(&c.applied) >= 20, "only {} writes applied", n(&c.applied));
    assert!(
        n(&c.watch_events) > 0 && n(&c.verified) > 0,
        "nothing watched or compared"
    );
}

/// Waits until every cached type's RV=0 list through kubecache holds
/// exactly what the upstream's most recent list holds; notes a mismatch
/// for each type that does not within a generous deadline. Returns each
/// type's count and hash over (namespace, name, resourceVersion).
async fn converge(ctx: &Ctx, proxy: &Proxy) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut report = vec![];
        let mut differ = vec![];
        for tc in proxy.cache.all() {
            let path = tc.rt.gvr.path(None);
            let ours = ctx
                .http
                .get(&format!("{}{path}?resourceVersion=0", ctx.kube))
                .await;
            let theirs = ctx.http.get(&format!("{}{path}", ctx.up)).await;
            let (Reply::Answer(StatusCode::OK, ours), Reply::Answer(StatusCode::OK, theirs)) =
                (ours, theirs)
            else {
                differ.push(format!("{path}: not both answered"));
                continue;
            };
            let (ours, theirs) = (
                parse_list(&ours).expect("a list"),
                parse_list(&theirs).expect("a list"),
            );
            let (a, b) = (nnr_hash(&ours.items), nnr_hash(&theirs.items));
            if a == b && ours.items == theirs.items {
                report.push(format!(
                    "{} {} objects, hash {a:016x} = upstream's",
                    tc.rt.gvr,
                    ours.items.len()
                ));
            } else {
                differ.push(format!(
                    "{} hash {a:016x} against the upstream's {b:016x}: {}",
                    tc.rt.gvr,
                    diff(&ours.items, &theirs.items)
                ));
            }
        }
        if differ.is_empty() {
            return report;
        }
        if Instant::now() > deadline {
            for d in differ {
                ctx.found.note(
                    &ctx.found.mismatches,
                    format!("after the faults, within 60 s: {d}"),
                );
            }
            return report;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What the upstream's own history says of the writes it answered.
struct Answers {
    /// Updates carried out as deletes (answered with the object pending
    /// deletion) whose history shows the delete.
    deletes_shown: u64,
    /// Acknowledged writes the upstream lost, each described.
    lost: Vec<String>,
    /// Reads after a lost write that did not show it: what the upstream
    /// did, not kubecache.
    reads_after_lost: u64,
}

/// How the upstream's history (`made`, by kind and version) does not hold
/// a write of `key` answered at `rv` as `seq`, if it does not: the change
/// at `rv` is of another object, a delete or another write, or there is
/// none of a pod or configmap (another object's, or none at all).
fn not_held(made: &HashMap<(Kind, u64), &Made>, key: &Key, rv: u64, seq: u64) -> Option<String> {
    match made.get(&(key.kind, rv)) {
        None => Some(format!("holds no change of {} there", key.kind.plural())),
        Some(m) if m.key != *key => Some(format!("holds {:?} {} there", m.change, m.key)),
        Some(m) if m.change == Change::Deleted => Some("holds its delete there".into()),
        Some(m) => match m.seq {
            Some(s) if s != seq => Some(format!("holds write {s} of it there")),
            _ => None,
        },
    }
}

/// Whether the upstream's history (in version order) shows an update of
/// `key` answered at `rv` with the object pending deletion as the delete
/// it was: `key` changed at `rv` (the delete's first step, or an earlier
/// write) and its next change a delete. The delete's version, or why not.
fn delete_shown(history: &[Made], key: &Key, rv: u64) -> Result<u64, String> {
    let mut changes = history.iter().filter(|m| m.key == *key);
    match changes.find(|m| m.rv >= rv) {
        Some(m) if m.rv == rv && m.change != Change::Deleted => {}
        Some(m) => {
            return Err(format!(
                "its first change from {rv} is {:?} at {}",
                m.change, m.rv
            ))
        }
        None => return Err(format!("it has no change from {rv}")),
    }
    match changes.next() {
        Some(m) if m.change == Change::Deleted => Ok(m.rv),
        Some(m) => Err(format!("its next change is {:?} at {}", m.change, m.rv)),
        None => Err("it was never deleted".into()),
    }
}

/// Every write the upstream answered, against the upstream's own history
/// (etcd's revisions, or the simulator's stores), once quiet. A write
/// whose revision the history holds with other content, or two writes
/// answered at one revision, were acknowledged and lost by the upstream:
/// counted and printed, not held against kubecache, and taken out of
/// `written` so that the checks after this one judge kubecache by what
/// the upstream holds. Only a loss shown write by write is excused: a
/// read's staleness about any other write is a finding.
fn check_answered_writes(ctx: &Ctx, history: &[Made]) -> Answers {
    let made: HashMap<(Kind, u64), &Made> =
        history.iter().map(|m| ((m.key.kind, m.rv), m)).collect();
    let mut deletes_shown = 0;
    for (key, rv, seq) in ctx.deleted_by_update.lock().unwrap().iter() {
        match delete_shown(history, key, *rv) {
            Ok(_) => deletes_shown += 1,
            Err(why) => ctx.found.note(
                &ctx.found.mismatches,
                format!(
                    "update {seq} of {key} was answered at {rv} with it pending deletion, \
                     but the upstream's history does not show it deleted: {why}"
                ),
            ),
        }
    }
    let mut lost = vec![];
    let mut lost_at = HashSet::new();
    let mut written = ctx.written.lock().unwrap();
    let mut gone: Vec<(u64, Key, u64, String)> = written
        .iter()
        .filter_map(|(&rv, (key, seq))| {
            Some((rv, key.clone(), *seq, not_held(&made, key, rv, *seq)?))
        })
        .collect();
    gone.sort_by_key(|g| g.0);
    for (rv, key, seq, how) in gone {
        written.remove(&rv);
        lost_at.insert(rv);
        lost.push(format!(
            "acknowledged write lost by the upstream (its history rewrote revision {rv}): \
             {key} written as {seq} and answered at {rv}; the history {how}"
        ));
    }
    drop(written);
    for (rv, what) in ctx.answered_twice.lock().unwrap().iter() {
        lost_at.insert(*rv);
        lost.push(format!(
            "acknowledged write lost by the upstream (it answered two writes at revision {rv}): {what}"
        ));
    }
    let mut reads_after_lost = 0;
    for (rv, what) in std::mem::take(&mut *ctx.stale_after_write.lock().unwrap()) {
        if lost_at.contains(&rv) {
            reads_after_lost += 1;
        } else {
            ctx.found.note(&ctx.found.stale, what);
        }
    }
    Answers {
        deletes_shown,
        lost,
        reads_after_lost,
    }
}

/// Every watch event is one the upstream made, in order, each once, and
/// none that the upstream made within what a chain covers is missing.
fn check_chains(ctx: &Ctx, chains: &[Chain], history: &[Made]) {
    let f = &ctx.found;
    let made: HashMap<(Kind, u64), &Made> =
        history.iter().map(|m| ((m.key.kind, m.rv), m)).collect();
    let written = ctx.written.lock().unwrap();
    for chain in chains {
        let scope = &chain.scope;
        let context = || {
            format!(
                "watch of {scope} from {} to {}, resumed from {:?}{}",
                chain.start,
                chain.end,
                chain.resumes,
                chain
                    .ended
                    .as_ref()
                    .map(|e| format!(", ended by {e}"))
                    .unwrap_or_default()
            )
        };
        let mut seen = HashSet::new();
        for e in &chain.events {
            if e.rv <= chain.start || seen.contains(&e.rv) {
                f.note(
                    &f.duplicates,
                    format!("{:?} {} at {} again: {}", e.change, e.key, e.rv, context()),
                );
            } else if e.rv <= e.after {
                let what = format!(
                    "{:?} {} at {} after {}: {}",
                    e.change,
                    e.key,
                    e.rv,
                    e.after,
                    context()
                );
                f.note(&f.disorder, what);
            }
            seen.insert(e.rv);
            match made.get(&(e.key.kind, e.rv)) {
                Some(m) if m.key == e.key && m.change == e.change => {}
                Some(m) => f.note(
                    &f.mismatches,
                    format!(
                        "{:?} {} at {}, where the upstream made {:?} {}: {}",
                        e.change,
                        e.key,
                        e.rv,
                        m.change,
                        m.key,
                        context()
                    ),
                ),
                None => f.note(
                    &f.mismatches,
                    format!(
                        "{:?} {} at {}, which the upstream never made: {}",
                        e.change,
                        e.key,
                        e.rv,
                        context()
                    ),
                ),
            }
            if let (Some((key, seq)), false) = (written.get(&e.rv), e.change == Change::Deleted) {
                if *key != e.key || e.seq != Some(*seq) {
                    f.note(
                        &f.mismatches,
                        format!(
                            "{} at {} carries write {:?}, written as {seq}: {}",
                            e.key,
                            e.rv,
                            e.seq,
                            context()
                        ),
                    );
                }
            }
        }
        for m in history.iter().filter(|m| scope.holds(&m.key)) {
            if m.rv > chain.start && m.rv <= chain.end && !seen.contains(&m.rv) {
                f.note(
                    &f.gaps,
                    format!(
                        "{:?} {} at {} never arrived: {}",
                        m.change,
                        m.key,
                        m.rv,
                        context()
                    ),
                );
            }
        }
    }
}

/// Every object a get served is a version the upstream made.
fn check_served_objects(ctx: &Ctx, history: &[Made]) {
    let made: HashSet<(&Key, u64)> = history
        .iter()
        .filter(|m| m.change != Change::Deleted)
        .map(|m| (&m.key, m.rv))
        .collect();
    let written = ctx.written.lock().unwrap();
    for o in ctx.served_objects.lock().unwrap().iter() {
        let ServedObject { key, rv, seq, how } = o;
        let wrong = if !made.contains(&(key, *rv)) {
            Some("a version the upstream never made".to_string())
        } else {
            match written.get(rv) {
                Some((k, s)) if k != key || Some(*s) != *seq => {
                    Some(format!("write {seq:?}, written as {s}"))
                }
                _ => None,
            }
        };
        if let Some(wrong) = wrong {
            ctx.found.note(
                &ctx.found.mismatches,
                format!("{how} of {key} served it at {rv}: {wrong}"),
            );
        }
    }
}

/// The namespaces the writers use, created upstream.
async fn namespaces(up: &str) -> Vec<String> {
    let sfx = unique_suffix();
    let names: Vec<String> = (0..3).map(|i| format!("chaos-{sfx}-{i}")).collect();
    for ns in &names {
        ensure_namespace(up, ns).await;
    }
    names
}

// ---------------------------------------------------------------------------
// The checks of answered writes against the upstream's history, alone.

#[cfg(test)]
mod answered_writes {
    use super::*;

    fn pod(name: &str) -> Key {
        Key {
            kind: Kind::Pod,
            ns: "ns".into(),
            name: name.into(),
        }
    }

    fn made(name: &str, rv: u64, change: Change, seq: Option<u64>) -> Made {
        let key = pod(name);
        Made {
            key,
            rv,
            change,
            seq,
        }
    }

    #[test]
    fn the_seq_annotation_is_read_from_the_apiservers_protobuf_and_from_json() {
        // ObjectMeta's annotations as protobuf map entries: a field tag and
        // a length before each string (etcd holds pods as protobuf).
        let proto =
            b"k8s\x00\x0a\x09\x0a\x02v1\x12\x03Pod\x62\x11\x0a\x09chaos/seq\x12\x043580\x6a\x00";
        assert_eq!(stored_seq(proto), Some(3580));
        let json = br#"{"metadata":{"annotations":{"chaos/seq":"3669"}}}"#;
        assert_eq!(stored_seq(json), Some(3669));
        assert_eq!(stored_seq(br#"{"metadata":{}}"#), None);
    }

    #[test]
    fn a_write_is_held_when_its_revision_holds_its_seq_and_lost_otherwise() {
        let history = [
            made("a", 10, Change::Added, Some(1)),
            made("b", 11, Change::Added, Some(2)),
            made("a", 12, Change::Modified, Some(3)),
            made("a", 13, Change::Deleted, None),
        ];
        let m: HashMap<(Kind, u64), &Made> =
            history.iter().map(|m| ((m.key.kind, m.rv), m)).collect();
        assert_eq!(not_held(&m, &pod("a"), 10, 1), None);
        assert_eq!(not_held(&m, &pod("a"), 12, 3), None);
        // Revision 12 rewritten with an earlier write of the same object.
        let other = not_held(&m, &pod("a"), 12, 7).unwrap();
        assert!(other.contains("write 3"), "{other}");
        assert!(not_held(&m, &pod("a"), 11, 2)
            .unwrap()
            .contains("pods ns/b"));
        assert!(not_held(&m, &pod("a"), 13, 4).unwrap().contains("delete"));
        assert!(not_held(&m, &pod("a"), 14, 5)
            .unwrap()
            .contains("no change"));
        // A stored object whose seq could not be read is no proof of loss.
        let unread = [made("a", 20, Change::Modified, None)];
        let m: HashMap<(Kind, u64), &Made> =
            unread.iter().map(|m| ((m.key.kind, m.rv), m)).collect();
        assert_eq!(not_held(&m, &pod("a"), 20, 9), None);
    }

    #[test]
    fn an_update_carried_out_as_a_delete_is_shown_only_by_a_delete_next() {
        // seed 2121's pod-5: created at 3680, its delete's first step at
        // 3728 (the apiserver then killed), an update answered at 3728,
        // and the delete it became at 3749.
        let history = [
            made("p", 3680, Change::Added, Some(3580)),
            made("q", 3700, Change::Added, Some(3600)),
            made("p", 3728, Change::Modified, Some(3580)),
            made("q", 3740, Change::Deleted, None),
            made("p", 3749, Change::Deleted, None),
            made("p", 3800, Change::Added, Some(3700)),
        ];
        assert_eq!(delete_shown(&history, &pod("p"), 3728), Ok(3749));
        // Answered at a version where it did not change, or whose next
        // change is not a delete: not shown.
        assert!(delete_shown(&history, &pod("p"), 3700).is_err());
        assert!(delete_shown(&history, &pod("p"), 3680).is_err());
        assert!(delete_shown(&history, &pod("p"), 3800).is_err());
        assert!(delete_shown(&history, &pod("p"), 3749).is_err());
    }
}

// ---------------------------------------------------------------------------
// Scenario 1: the simulator's faults.

/// Every change the simulator's stores make, read off their broadcasts in
/// process, where no HTTP fault reaches: the upstream's history.
struct SimHistory {
    ask: tokio::sync::mpsc::Sender<tokio::sync::oneshot::Sender<Vec<Made>>>,
}

impl SimHistory {
    fn start(sim: &SimServer) -> SimHistory {
        use tokio::sync::broadcast::error::{RecvError, TryRecvError};
        let mut subscriptions = vec![];
        for kind in KINDS {
            let t = sim
                .sim
                .type_of("", "v1", kind.plural())
                .expect("a simulated type");
            subscriptions.push((kind, t.store.snapshot_and_subscribe().1));
        }
        let [(k0, mut rx0), (k1, mut rx1)] = <[_; 2]>::try_from(subscriptions).ok().unwrap();
        let (ask, mut asked) = tokio::sync::mpsc::channel::<tokio::sync::oneshot::Sender<_>>(1);
        tokio::spawn(async move {
            let mut history = vec![];
            // What a store's change was, if it was a change of an object.
            let made = |kind: Kind, change: kubecache::store::Change<_>| {
                use kubecache::store::{Change as StoreChange, EventType};
                let StoreChange::Event(ev) = change else {
                    return None;
                };
                let e = &ev.entry;
                let key = Key {
                    kind,
                    ns: e.namespace().unwrap_or_default().to_string(),
                    name: e.name().to_string(),
                };
                let change = match ev.kind {
                    EventType::Added => Change::Added,
                    EventType::Modified => Change::Modified,
                    EventType::Deleted => Change::Deleted,
                };
                let seq = (change != Change::Deleted)
                    .then(|| object_of(&e.item)?.seq)
                    .flatten();
                Some(Made {
                    key,
                    rv: ev.rv,
                    change,
                    seq,
                })
            };
            let lagged = |n| panic!("the simulator's history tap fell {n} events behind");
            loop {
                tokio::select! {
                    r = rx0.recv() => match r {
                        Ok(c) => history.extend(made(k0, c)),
                        Err(RecvError::Lagged(n)) => lagged(n),
                        Err(RecvError::Closed) => return,
                    },
                    r = rx1.recv() => match r {
                        Ok(c) => history.extend(made(k1, c)),
                        Err(RecvError::Lagged(n)) => lagged(n),
                        Err(RecvError::Closed) => return,
                    },
                    reply = asked.recv() => {
                        let Some(reply) = reply else { return };
                        // A store broadcasts a change before its write is
                        // answered: everything answered before this was
                        // asked is waiting here already.
                        for (kind, rx) in [(k0, &mut rx0), (k1, &mut rx1)] {
                            loop {
                                match rx.try_recv() {
                                    Ok(c) => history.extend(made(kind, c)),
                                    Err(TryRecvError::Lagged(n)) => lagged(n),
                                    Err(_) => break,
                                }
                            }
                        }
                        let mut sorted = history.clone();
                        sorted.sort_by_key(|m| m.rv);
                        let _ = reply.send(sorted);
                    }
                }
            }
        });
        SimHistory { ask }
    }

    /// The history up to now.
    async fn read(&self) -> Vec<Made> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.ask.send(reply).await.expect("the history tap");
        answer.await.expect("the history tap")
    }
}

async fn sim_fault(http: &Http, sim: &str, query: &str) {
    match http.get(&format!("{sim}/sim/faults?{query}")).await {
        Reply::Answer(StatusCode::OK, _) => {}
        Reply::Answer(s, body) => panic!(
            "/sim/faults?{query}: {s} {}",
            String::from_utf8_lossy(&body)
        ),
        Reply::Lost(e) => panic!("/sim/faults?{query}: {e}"),
        Reply::Unreachable => panic!("/sim/faults?{query}: the simulator is unreachable"),
    }
}

/// Random faults until `until`, each kind counted; then none.
async fn simulator_faults(
    http: &Http,
    sim: &str,
    mut rng: StdRng,
    until: Instant,
) -> BTreeMap<&'static str, u64> {
    let mut counts = BTreeMap::new();
    let ms = |rng: &mut StdRng, lo: u64, hi: u64| Duration::from_millis(rng.random_range(lo..hi));
    while Instant::now() < until {
        tokio::time::sleep(ms(&mut rng, 100, 1000)).await;
        let kind = match rng.random_range(0..6) {
            0 => {
                sim_fault(http, sim, &format!("errors={}", rng.random_range(1..=20))).await;
                "500s"
            }
            1 => {
                sim_fault(
                    http,
                    sim,
                    &format!("latencyMs={}", rng.random_range(20..400)),
                )
                .await;
                tokio::time::sleep(ms(&mut rng, 300, 2500)).await;
                sim_fault(http, sim, "latencyMs=0").await;
                "latency"
            }
            2 => {
                sim_fault(http, sim, "dropWatches=true").await;
                "watches dropped"
            }
            3 => {
                // Longer than the reflector's watch timeout and grace at
                // times: it gives the watch up, and relists if it stalls again.
                sim_fault(http, sim, "stallWatches=true").await;
                tokio::time::sleep(ms(&mut rng, 300, 12_000)).await;
                sim_fault(http, sim, "stallWatches=false").await;
                "watches stalled"
            }
            4 => {
                let n = rng.random_range(1..=3);
                sim_fault(http, sim, &format!("garbageWatchEvents={n}")).await;
                "truncated events"
            }
            _ => {
                sim_fault(http, sim, "expire=true").await;
                "history compacted (410)"
            }
        };
        *counts.entry(kind).or_default() += 1;
    }
    sim_fault(
        http,
        sim,
        "errors=0&latencyMs=0&stallWatches=false&garbageWatchEvents=0",
    )
    .await;
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_random_simulator_faults_no_read_is_stale_no_watch_skips_and_the_cache_ends_equal() {
    let run = Run::new("simulator");
    within(run.seconds + 150, async {
        // As a current apiserver: quiet types' consistent reads are
        // proven by its bookmarks, busy ones' by their events.
        let sim = SimBuilder::new()
            .personality(kubecache_sim::Personality::V1_36)
            .start()
            .await;
        let tap = SimHistory::start(&sim);
        let namespaces = namespaces(&sim.url).await;
        // Short watches: resuming, stalls and relists come often.
        // Consistent reads answered from the cache once proven fresh.
        let proxy = ProxyBuilder::new(&sim.url)
            .watch_timeout(5, Duration::from_secs(2))
            .consistent(kubecache::serve::ConsistentReads::Prove)
            .start()
            .await;
        for kind in KINDS {
            let path = kind.collection(None);
            wait_synced(&proxy, &path, &format!("v1/{}", kind.plural())).await;
        }
        let ctx = Ctx::new(&sim.url, &proxy.url, namespaces);
        let mut load = start_load(&ctx, run.seed);
        let until = Instant::now() + Duration::from_secs(run.seconds);
        let faults = simulator_faults(&ctx.http, &sim.url, rng_for(run.seed, 1), until).await;
        stop_writing(&ctx, &mut load).await;
        finish(run, &ctx, &proxy, load, faults, async || tap.read().await).await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// Scenario 2: a real kube-apiserver and etcd of the test's own, killed,
// paused and restarted.

#[cfg(feature = "real-apiserver")]
mod real {
    use super::*;
    use base64::Engine as _;
    use std::path::PathBuf;

    #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
    pub enum Proc {
        Etcd,
        Apiserver,
    }

    impl Proc {
        /// The name of its PID file and log in `$RUN`, as `up` writes them.
        fn name(self) -> &'static str {
            match self {
                Proc::Etcd => "etcd",
                Proc::Apiserver => "kube-apiserver",
            }
        }
    }

    /// An etcd and kube-apiserver started by ../shared/tools/real-apiserver
    /// for this test alone, on free loopback ports that stay theirs across
    /// restarts; stopped with `down` when dropped, a panic included.
    pub struct Instance {
        tools: PathBuf,
        run: PathBuf,
        ports: [(&'static str, u16); 4],
        /// Each process's command line, to start it again alone.
        argv: Mutex<BTreeMap<Proc, Vec<std::ffi::OsString>>>,
    }

    fn kind_of(plural: &str) -> Option<Kind> {
        KINDS.into_iter().find(|k| k.plural() == plural)
    }

    /// Free ports below the kernel's ephemeral range: one from port 0
    /// could be handed to any socket of this process (the simulator's
    /// scenario runs beside this one) between being found free and the
    /// apiserver binding it, or while the apiserver is down for a restart.
    fn free_ports<const N: usize>() -> [u16; N] {
        let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .ok()
            .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
            .unwrap_or(32768);
        let mut rng = rand::rng();
        let mut ports = [0; N];
        let mut found = 0;
        while found < N {
            let port = rng.random_range(10_000..low.max(10_001));
            if !ports.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                ports[found] = port;
                found += 1;
            }
        }
        ports
    }

    impl Instance {
        pub async fn start() -> Instance {
            Self::start_in("chaos-real-apiserver").await
        }

        /// One in its own `$RUN` (under the test's temporary directory,
        /// named `dir`), apart from any other test's.
        pub async fn start_in(dir: &str) -> Instance {
            let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
            let tools = std::env::var_os("REAL_APISERVER_TOOLS")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("../shared/tools/real-apiserver"));
            let [etcd, peer, secure, insecure] = free_ports();
            let inst = Instance {
                tools,
                run: PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir),
                ports: [
                    ("ETCD_PORT", etcd),
                    ("ETCD_PEER_PORT", peer),
                    ("SECURE_PORT", secure),
                    ("INSECURE_PORT", insecure),
                ],
                argv: Mutex::default(),
            };
            // One a killed earlier run left behind.
            inst.script("down", false).await;
            assert!(
                inst.script("up", true).await,
                "the real apiserver did not start"
            );
            inst.read_argv();
            eprintln!(
                "chaos[real apiserver]: etcd's data and both logs in {} (kept until the next run)",
                inst.run.display()
            );
            inst
        }

        fn port(&self, name: &str) -> u16 {
            self.ports.iter().find(|(n, _)| *n == name).unwrap().1
        }

        pub fn url(&self) -> String {
            format!("http://127.0.0.1:{}", self.port("INSECURE_PORT"))
        }

        pub fn etcd(&self) -> String {
            format!("http://127.0.0.1:{}", self.port("ETCD_PORT"))
        }

        /// Runs `up` or `down` for this instance; whether it succeeded.
        async fn script(&self, name: &str, fresh: bool) -> bool {
            let mut cmd = tokio::process::Command::new(self.tools.join(name));
            cmd.env("RUN", &self.run)
                .envs(self.ports.iter().map(|(k, v)| (k, v.to_string())));
            if fresh {
                cmd.env("FRESH", "1");
            }
            let out = cmd.output().await.unwrap_or_else(|e| panic!("{name}: {e}"));
            if !out.status.success() {
                eprintln!(
                    "{name} failed: {}\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            out.status.success()
        }

        /// Adds each process's log so far to `<name>.earlier.log` beside
        /// it: `up` starts the logs anew, and what led to a finding is
        /// often before the last down/up. (The whole `$RUN`, etcd's data
        /// included, stays until the next run starts.)
        fn keep_logs(&self) {
            use std::io::Write;
            for p in [Proc::Etcd, Proc::Apiserver] {
                let log = self.run.join(format!("{}.log", p.name()));
                let Ok(text) = std::fs::read(&log) else {
                    continue;
                };
                let earlier = self.run.join(format!("{}.earlier.log", p.name()));
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&earlier)
                    .and_then(|mut f| f.write_all(&text))
                    .unwrap_or_else(|e| panic!("{}: {e}", earlier.display()));
            }
        }

        fn pid(&self, p: Proc) -> u32 {
            let file = self.run.join(format!("{}.pid", p.name()));
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            text.trim().parse().unwrap()
        }

        fn read_argv(&self) {
            use std::os::unix::ffi::OsStringExt;
            let mut argv = self.argv.lock().unwrap();
            for p in [Proc::Etcd, Proc::Apiserver] {
                let raw = std::fs::read(format!("/proc/{}/cmdline", self.pid(p))).unwrap();
                let args = raw
                    .split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| std::ffi::OsString::from_vec(a.to_vec()))
                    .collect();
                argv.insert(p, args);
            }
        }

        fn signal(&self, p: Proc, signal: &str) {
            let pid = self.pid(p).to_string();
            let status = std::process::Command::new("kill")
                .args([signal, pid.as_str()])
                .status()
                .unwrap();
            assert!(status.success(), "kill {signal} {pid} ({p:?})");
        }

        /// Waits until `pid` has exited (reaped or a zombie).
        async fn gone(pid: u32) {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                    Err(_) => return,
                    Ok(stat) => {
                        let state = stat
                            .rsplit(')')
                            .next()
                            .unwrap_or("")
                            .split_whitespace()
                            .next();
                        if matches!(state, Some("Z" | "X")) {
                            return;
                        }
                    }
                }
                assert!(Instant::now() < deadline, "PID {pid} does not exit");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }

        /// SIGKILL, as a crash; then, after `pause`, the same command line
        /// again, detached as `up` starts it, its PID where `down` finds it.
        pub async fn kill_and_restart(&self, p: Proc, pause: Duration) {
            let pid = self.pid(p);
            self.signal(p, "-KILL");
            Self::gone(pid).await;
            tokio::time::sleep(pause).await;
            let argv = self.argv.lock().unwrap()[&p].clone();
            let log = self.run.join(format!("{}.log", p.name()));
            let out = tokio::process::Command::new("bash")
                .arg("-c")
                .arg(r#"log=$1; shift; nohup "$@" >>"$log" 2>&1 </dev/null & echo $!"#)
                .arg("bash")
                .arg(&log)
                .args(&argv)
                .output()
                .await
                .unwrap();
            let new = String::from_utf8_lossy(&out.stdout).trim().to_string();
            assert!(out.status.success() && !new.is_empty(), "restarting {p:?}");
            std::fs::write(
                self.run.join(format!("{}.pid", p.name())),
                format!("{new}\n"),
            )
            .unwrap();
        }

        /// `down` then `up` without FRESH: both stopped in order and
        /// started again on their data.
        pub async fn restart_both(&self) {
            assert!(self.script("down", false).await, "down");
            self.keep_logs();
            assert!(self.script("up", false).await, "up again on the same data");
            self.read_argv();
        }

        /// SIGSTOP for `d`, then SIGCONT: alive, holding every connection,
        /// answering nothing.
        pub async fn pause(&self, p: Proc, d: Duration) {
            self.signal(p, "-STOP");
            tokio::time::sleep(d).await;
            self.signal(p, "-CONT");
        }

        /// Until etcd is healthy and the apiserver ready.
        pub async fn wait_ready(&self, http: &Http) {
            let deadline = Instant::now() + Duration::from_secs(120);
            let ok = |r: Reply, want: &str| matches!(r, Reply::Answer(StatusCode::OK, b) if String::from_utf8_lossy(&b).contains(want));
            loop {
                let etcd = ok(
                    http.get(&format!("{}/health", self.etcd())).await,
                    "\"health\":\"true\"",
                );
                if etcd && ok(http.get(&format!("{}/readyz", self.url())).await, "ok") {
                    return;
                }
                assert!(
                    Instant::now() < deadline,
                    "the real apiserver is not ready again within 120 s"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }

        /// etcd's every revision up to now, for the pods and configmaps:
        /// the upstream's history, however many answers the kills lost.
        pub async fn history(&self, http: &Http) -> Vec<Made> {
            let all = json!({"key": "AA==", "range_end": "AA=="});
            let mut count = all.clone();
            count["count_only"] = json!(true);
            let body = Some(("application/json", serde_json::to_vec(&count).unwrap()));
            let Reply::Answer(StatusCode::OK, now) = http
                .call(
                    Method::POST,
                    &format!("{}/v3/kv/range", self.etcd()),
                    body,
                    READ_TIMEOUT,
                )
                .await
            else {
                panic!("etcd's current revision");
            };
            let now: Value = serde_json::from_slice(&now).unwrap();
            let now: u64 = now["header"]["revision"].as_str().unwrap().parse().unwrap();
            let mut create = all;
            create["start_revision"] = json!("1");
            let body = Some((
                "application/json",
                serde_json::to_vec(&json!({"create_request": create})).unwrap(),
            ));
            let resp = http
                .open(Method::POST, &format!("{}/v3/watch", self.etcd()), body)
                .await
                .unwrap();
            let mut lines = Lines::new(resp.into_body());
            let mut history = vec![];
            let b64 = base64::engine::general_purpose::STANDARD;
            // Every revision is one write, and every write is under the
            // watched range: the one at `now` ends the history.
            let mut reached = 0;
            while reached < now {
                let Line::Data(line) = lines.next(Duration::from_secs(30)).await else {
                    panic!("etcd's history ended at {reached} of {now}");
                };
                let v: Value = serde_json::from_slice(&line).unwrap();
                let result = &v["result"];
                assert!(
                    result["compact_revision"].is_null(),
                    "etcd's history is compacted: {v}"
                );
                for e in result["events"].as_array().into_iter().flatten() {
                    let kv = &e["kv"];
                    let num = |f: &str| {
                        kv[f]
                            .as_str()
                            .and_then(|s| s.parse::<u64>().ok())
                            .unwrap_or(0)
                    };
                    let rv = num("mod_revision");
                    reached = reached.max(rv);
                    let key = b64.decode(kv["key"].as_str().unwrap()).unwrap();
                    let key = String::from_utf8_lossy(&key).into_owned();
                    let parts: Vec<&str> =
                        key.trim_start_matches("/registry/").split('/').collect();
                    let [plural, ns, name] = parts[..] else {
                        continue;
                    };
                    let Some(kind) = kind_of(plural) else {
                        continue;
                    };
                    let change = match (e["type"].as_str(), num("create_revision") == rv) {
                        (Some("DELETE"), _) => Change::Deleted,
                        (_, true) => Change::Added,
                        (_, false) => Change::Modified,
                    };
                    let key = Key {
                        kind,
                        ns: ns.to_string(),
                        name: name.to_string(),
                    };
                    let seq = kv["value"]
                        .as_str()
                        .and_then(|v| b64.decode(v).ok())
                        .and_then(|v| stored_seq(&v));
                    history.push(Made {
                        key,
                        rv,
                        change,
                        seq,
                    });
                }
            }
            history
        }
    }

    impl Drop for Instance {
        fn drop(&mut self) {
            // A paused process would hold `down` up until it is killed.
            for p in [Proc::Etcd, Proc::Apiserver] {
                if let Ok(pid) = std::fs::read_to_string(self.run.join(format!("{}.pid", p.name())))
                {
                    let _ = std::process::Command::new("kill")
                        .args(["-CONT", pid.trim()])
                        .status();
                }
            }
            let _ = std::process::Command::new(self.tools.join("down"))
                .env("RUN", &self.run)
                .stdout(std::process::Stdio::null())
                .status();
        }
    }

    /// Random kills, pauses and restarts until `until`; then everything up.
    pub async fn faults(
        inst: &Instance,
        http: &Http,
        mut rng: StdRng,
        until: Instant,
    ) -> BTreeMap<&'static str, u64> {
        let mut counts = BTreeMap::new();
        let started = Instant::now();
        let ms =
            |rng: &mut StdRng, lo: u64, hi: u64| Duration::from_millis(rng.random_range(lo..hi));
        while Instant::now() < until {
            tokio::time::sleep(ms(&mut rng, 300, 2000)).await;
            let at = started.elapsed();
            // Kills and pauses weigh more than down/up, which takes ~10 s;
            // pauses are at times longer than a watch's timeout and grace,
            // so that kubecache finds its watch stalled.
            let kind = match rng.random_range(0..10) {
                0..=2 => {
                    inst.kill_and_restart(Proc::Apiserver, ms(&mut rng, 0, 2000))
                        .await;
                    inst.wait_ready(http).await;
                    "apiserver killed"
                }
                3..=5 => {
                    inst.kill_and_restart(Proc::Etcd, ms(&mut rng, 0, 2000))
                        .await;
                    inst.wait_ready(http).await;
                    "etcd killed"
                }
                6 | 7 => {
                    inst.pause(Proc::Apiserver, ms(&mut rng, 300, 10_000)).await;
                    "apiserver paused"
                }
                8 => {
                    inst.pause(Proc::Etcd, ms(&mut rng, 300, 10_000)).await;
                    "etcd paused"
                }
                _ => {
                    inst.restart_both().await;
                    "both restarted (down, up)"
                }
            };
            eprintln!(
                "chaos[real apiserver] +{at:.1?}: {kind} (back after {:.1?})",
                started.elapsed() - at
            );
            *counts.entry(kind).or_default() += 1;
        }
        inst.wait_ready(http).await;
        counts
    }

    /// The apiserver's behaviour behind seed 2121's write that seemed
    /// lost, made deterministic. There, the apiserver was killed between
    /// the two steps of a pod's delete (deletionTimestamp and a zero grace
    /// period set at 3728, then the delete), and the writer's next update
    /// of the pod was answered 200 at 3728 with the update's content while
    /// the pod was deleted at 3749. Here a finalizer holds the pod pending
    /// deletion instead of the kill, and the update removes it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_update_of_a_pod_pending_deletion_is_answered_at_its_old_version_and_deletes_it() {
        within(120, async {
            let inst = Instance::start_in("chaos-real-apiserver-delete-by-update").await;
            let (up, http) = (inst.url(), Http::new());
            let ns = format!("chaos-{}", unique_suffix());
            ensure_namespace(&up, &ns).await;
            let key = Key {
                kind: Kind::Pod,
                ns: ns.clone(),
                name: "held".into(),
            };
            let json = |v: Value| Some(("application/json", serde_json::to_vec(&v).unwrap()));
            let mut pod = Kind::Pod.object(&key, 1);
            pod["metadata"]["finalizers"] = json!(["chaos/hold"]);
            let url = format!("{up}{}", key.path());
            let coll = format!("{up}{}", Kind::Pod.collection(Some(&ns)));
            let answered = |r: Reply| match r {
                Reply::Answer(s, body) if s.is_success() => object_of(&body).expect("an object"),
                Reply::Answer(s, body) => panic!("{s} {}", String::from_utf8_lossy(&body)),
                _ => panic!("no answer"),
            };
            let limit = WRITE_TIMEOUT;
            answered(http.call(Method::POST, &coll, json(pod), limit).await);
            let pending = answered(http.call(Method::DELETE, &url, None, limit).await);
            assert!(pending.deleting, "held by its finalizer, pending deletion");

            let mut patch = Kind::Pod.change(2, pending.rv);
            patch["metadata"]["finalizers"] = Value::Null;
            let body = Some((
                "application/merge-patch+json",
                serde_json::to_vec(&patch).unwrap(),
            ));
            let o = answered(http.call(Method::PATCH, &url, body, limit).await);
            // Answered as if written at the version it had, with the
            // update's content, and pending deletion...
            assert_eq!((o.rv, o.seq, o.deleting), (pending.rv, Some(2), true));
            // ... and gone.
            let gone = http.get(&url).await;
            assert!(matches!(gone, Reply::Answer(StatusCode::NOT_FOUND, _)));
            // etcd's revision there holds the earlier write, the next
            // change is the delete: what `check_answered_writes` takes as
            // an update carried out as a delete, not as a lost write.
            let history = inst.history(&http).await;
            let at: Vec<&Made> = history.iter().filter(|m| m.key == key).collect();
            let held = at
                .iter()
                .find(|m| m.rv == pending.rv)
                .expect("its revision");
            assert_eq!(held.seq, Some(1), "{at:?}");
            let deleted = delete_shown(&history, &key, pending.rv).unwrap();
            assert!(deleted > pending.rv);
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_a_real_apiserver_and_etcd_killed_paused_and_restarted_no_read_is_stale_no_watch_skips_and_the_cache_ends_equal(
    ) {
        let run = Run::new("real apiserver");
        within(run.seconds + 240, async {
            let inst = Instance::start().await;
            let up = inst.url();
            let namespaces = namespaces(&up).await;
            let proxy = ProxyBuilder::new(&up)
                .watch_timeout(5, Duration::from_secs(2))
                .consistent(kubecache::serve::ConsistentReads::Prove)
                .start()
                .await;
            for kind in KINDS {
                let path = kind.collection(None);
                wait_synced(&proxy, &path, &format!("v1/{}", kind.plural())).await;
            }
            let ctx = Ctx::new(&up, &proxy.url, namespaces);
            let mut load = start_load(&ctx, run.seed);
            let until = Instant::now() + Duration::from_secs(run.seconds);
            let faults = faults(&inst, &ctx.http, rng_for(run.seed, 2), until).await;
            stop_writing(&ctx, &mut load).await;
            let history = async || inst.history(&ctx.http).await;
            finish(run, &ctx, &proxy, load, faults, history).await;
        })
        .await;
    }
}
