//! What the load benchmark (`benches/load.rs`) and its short version in CI
//! (`cli/tests/load.rs`) share: the simulator and kubecache as processes of
//! their own, their memory and descriptors sampled while they serve, a mix
//! of clients as informers, controllers and kubectl make them, idle
//! connections, and clients that ask for a list and never read it.
//!
//! Self-contained (no `super::`), so that the test can include it by path.

#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub const AGENT: &str = "kubectl/v1.20.2 (linux/amd64) kubernetes/faecb19";
pub const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
pub const MIB: u64 = 1 << 20;

/// A request that has not been answered whole in this long counts as hung.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What a child process's log said that matters to a load run.
#[derive(Default)]
pub struct LogTally {
    /// "accept failed": the descriptor table (or something else) refused a
    /// connection.
    pub accept_failed: AtomicU64,
    /// "connection limit reached": idle connections were closed to make room.
    pub limit_reached: AtomicU64,
    /// Every WARN or ERROR line.
    pub warnings: AtomicU64,
}

/// `kubecache sim` or `kubecache serve` as a process of its own, listening
/// on a port the kernel chose (read off its log), killed when dropped.
pub struct Process {
    child: Child,
    pub addr: SocketAddr,
    pub log: Arc<LogTally>,
}

impl Process {
    /// Runs `bin ARGS` and waits for the log line containing `serving`,
    /// which names the address (`listen=`). Warnings and errors it logs
    /// later are copied to stderr (the first 20) and counted.
    pub fn start(bin: &str, args: &[&str], serving: &'static str) -> Process {
        let mut child = Command::new(bin)
            .args(args)
            .env("NO_COLOR", "1")
            .env("KUBECACHE_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {bin}: {e}"));
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(LogTally::default());
        let (tx, rx) = std::sync::mpsc::channel();
        let tally = log.clone();
        let name = args.first().copied().unwrap_or("").to_string();
        std::thread::spawn(move || {
            let mut sent = false;
            let mut shown = 0;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent && line.contains(serving) {
                    let addr = line
                        .split_whitespace()
                        .find_map(|w| w.strip_prefix("listen="))
                        .and_then(|a| a.parse::<SocketAddr>().ok());
                    sent = tx.send(addr).is_ok();
                }
                if line.contains("accept failed") {
                    tally.accept_failed.fetch_add(1, Ordering::Relaxed);
                }
                if line.contains("connection limit reached") {
                    tally.limit_reached.fetch_add(1, Ordering::Relaxed);
                }
                if line.contains(" WARN ") || line.contains(" ERROR ") {
                    tally.warnings.fetch_add(1, Ordering::Relaxed);
                    if shown < 20 {
                        shown += 1;
                        eprintln!("[{name}] {line}");
                    }
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(180))
            .unwrap_or_else(|_| panic!("{bin} {args:?} never said it serves"))
            .expect("its log names where it listens");
        Process { child, addr, log }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The simulator with `pods` pods in `namespaces` namespaces, `churn`
/// pod updates a second.
pub fn start_sim(bin: &str, pods: usize, namespaces: usize, churn: f64) -> Process {
    Process::start(
        bin,
        &[
            "sim",
            "--listen",
            "127.0.0.1:0",
            "--pods",
            &pods.to_string(),
            "--namespaces",
            &namespaces.to_string(),
            "--configmaps",
            "100",
            "--churn",
            &churn.to_string(),
        ],
        "simulated apiserver serving",
    )
}

/// kubecache's bounds in a load run: the memory limit of the container it
/// stands for, and from it (a quarter each, as kubecache derives its
/// defaults from a container's limit) the cache's and the bytes in
/// flight's; connections and their timeouts.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub memory: u64,
    pub max_connections: usize,
    /// `--request-header-timeout` and `--connection-idle-timeout`, if not
    /// the defaults (32 s, 90 s).
    pub idle_timeout: Option<Duration>,
}

impl Bounds {
    pub fn cache_bytes(&self) -> u64 {
        self.memory / 4
    }
    pub fn bytes_in_flight(&self) -> u64 {
        self.memory / 4
    }
    /// Kept list bodies and gzip pieces, as kubecache derives them.
    pub fn kept_bytes(&self) -> u64 {
        (self.memory / 16).max(16 << 20)
    }
}

/// `kubecache serve` in front of `upstream` (serve-stale, so that
/// kubectl's and a walk's `limit=500` lists come from the cache too).
pub fn start_kubecache(bin: &str, upstream: &str, b: Bounds) -> Process {
    let mut args: Vec<String> = [
        "serve",
        "--upstream",
        upstream,
        "--listen",
        "127.0.0.1:0",
        "--consistent-reads",
        "serve-stale",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend([
        "--max-cache-bytes".into(),
        b.cache_bytes().to_string(),
        "--max-bytes-in-flight".into(),
        b.bytes_in_flight().to_string(),
        "--max-kept-body-bytes".into(),
        b.kept_bytes().to_string(),
        "--max-connections".into(),
        b.max_connections.to_string(),
    ]);
    if let Some(t) = b.idle_timeout {
        let t = format!("{}s", t.as_secs());
        args.extend([
            "--request-header-timeout".into(),
            t.clone(),
            "--connection-idle-timeout".into(),
            t,
        ]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Process::start(bin, &args, "kubecache serving")
}

pub type HttpClient = Client<HttpConnector, Empty<Bytes>>;

/// A client with a connection of its own, kept alive between requests.
pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(1)
        .build(HttpConnector::new())
}

pub fn get_request(url: &str, accept: &str, gzip: bool) -> http::Request<Empty<Bytes>> {
    let mut b = http::Request::builder()
        .uri(url)
        .header("accept", accept)
        .header("user-agent", AGENT);
    if gzip {
        b = b.header("accept-encoding", "gzip");
    }
    b.body(Empty::new()).unwrap()
}

/// A GET's status and body, read whole.
pub async fn get(c: &HttpClient, url: &str, accept: &str) -> Option<(u16, Bytes)> {
    let resp = tokio::time::timeout(REQUEST_TIMEOUT, c.request(get_request(url, accept, false)))
        .await
        .ok()?
        .ok()?;
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.ok()?.to_bytes();
    Some((status, body))
}

/// Waits until kubecache at `base` has synced pods, started by a list that
/// matches nothing (so that no list body is kept meanwhile).
pub async fn wait_pods_synced(base: &str, within: Duration) {
    let c = client();
    let deadline = Instant::now() + within;
    let nothing =
        format!("{base}/api/v1/pods?resourceVersion=0&labelSelector=kubecache-bench%3Dnone");
    loop {
        get(&c, &nothing, "application/json").await;
        if let Some((200, body)) = get(&c, &format!("{base}/readyz?verbose"), "*/*").await {
            if String::from_utf8_lossy(&body).contains("[+]informer-sync/v1/pods ok") {
                return;
            }
        }
        assert!(Instant::now() < deadline, "kubecache never synced pods");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The namespaces and pods the clients ask for by name.
#[derive(Clone, Default)]
pub struct Objects {
    pub namespaces: Vec<String>,
    pub pods: Vec<(String, String)>,
}

/// Read off the simulator itself (so that kubecache keeps nothing for it).
pub async fn objects(sim: &str) -> Objects {
    let c = client();
    let (status, body) = get(&c, &format!("{sim}/api/v1/pods"), "application/json")
        .await
        .expect("the simulator's pods");
    assert_eq!(status, 200);
    let list: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let mut o = Objects::default();
    for p in list["items"].as_array().unwrap() {
        let m = &p["metadata"];
        let ns = m["namespace"].as_str().unwrap().to_string();
        if !o.namespaces.contains(&ns) {
            o.namespaces.push(ns.clone());
        }
        o.pods.push((ns, m["name"].as_str().unwrap().to_string()));
    }
    o
}

/// The label values the simulator's pods carry (sim/src/generate.rs).
const APPS: [&str; 8] = [
    "web", "api", "worker", "cache", "db-proxy", "ingest", "auth", "search",
];

/// One kind of request in the mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    NamespaceList,
    AllList,
    AllSelected,
    NamespaceSelected,
    TableNamespace,
    TableAll,
    Get,
    Walk,
    Watch,
}

/// What the requesting clients ask for, an eighth of them each; the
/// watchers are clients of their own.
pub const REQUESTS: [Kind; 8] = [
    Kind::NamespaceList,
    Kind::AllList,
    Kind::AllSelected,
    Kind::NamespaceSelected,
    Kind::TableNamespace,
    Kind::TableAll,
    Kind::Get,
    Kind::Walk,
];

/// Every kind reported: the requests', then the watchers'.
pub const KINDS: [Kind; 9] = {
    let mut all = [Kind::Watch; 9];
    let mut i = 0;
    while i < REQUESTS.len() {
        all[i] = REQUESTS[i];
        i += 1;
    }
    all
};

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::NamespaceList => "namespace's pods, RV=0 (informer)",
            Kind::AllList => "all pods, RV=0 (informer)",
            Kind::AllSelected => "all pods, RV=0, app=X",
            Kind::NamespaceSelected => "namespace's pods, RV=0, tier=X",
            Kind::TableNamespace => "kubectl get pods -n NS (Table, limit=500)",
            Kind::TableAll => "kubectl get pods -A (Table, limit=500 pages)",
            Kind::Get => "pod get",
            Kind::Walk => "walk, limit=500 (a page each)",
            Kind::Watch => "watch (headers; resumes from its last RV)",
        }
    }

    fn index(self) -> usize {
        KINDS.iter().position(|k| *k == self).unwrap()
    }

    fn accept(self) -> &'static str {
        match self {
            Kind::TableNamespace | Kind::TableAll => TABLE,
            _ => "application/json",
        }
    }

    fn paged(self) -> bool {
        matches!(self, Kind::TableAll | Kind::Walk)
    }

    /// The path of a client's `n`-th request of this kind.
    fn path(self, o: &Objects, n: usize) -> String {
        let ns = &o.namespaces[n % o.namespaces.len()];
        match self {
            Kind::NamespaceList => format!("/api/v1/namespaces/{ns}/pods?resourceVersion=0"),
            Kind::AllList => "/api/v1/pods?resourceVersion=0".into(),
            Kind::AllSelected => format!(
                "/api/v1/pods?resourceVersion=0&labelSelector=app%3D{}",
                APPS[n % APPS.len()]
            ),
            Kind::NamespaceSelected => format!(
                "/api/v1/namespaces/{ns}/pods?resourceVersion=0&labelSelector=tier%3D{}",
                ["frontend", "backend"][n % 2]
            ),
            Kind::TableNamespace => format!("/api/v1/namespaces/{ns}/pods?limit=500"),
            Kind::TableAll | Kind::Walk => "/api/v1/pods?limit=500".into(),
            Kind::Get => {
                let (ns, name) = &o.pods[(n * 7919) % o.pods.len()];
                format!("/api/v1/namespaces/{ns}/pods/{name}")
            }
            Kind::Watch => unreachable!("watchers build their own"),
        }
    }
}

/// One kind's outcomes.
#[derive(Clone, Default)]
pub struct KindStats {
    /// Seconds to the whole answer (a watch: to its headers), successes only.
    pub times: Vec<f64>,
    /// 429s with Retry-After: refusals kubecache means clients to retry.
    pub throttled: u64,
    /// Everything else that was not a success: HTTP status, or `conn`
    /// (the request failed), `timeout` (not answered within
    /// [`REQUEST_TIMEOUT`]), `429 without Retry-After`, `watch cut` (the
    /// stream failed rather than ended).
    pub errors: BTreeMap<String, u64>,
    pub bytes: u64,
    /// Watches: events received, 410s met (each followed by a relist), and
    /// watches that ended before the run did (each resumed).
    pub events: u64,
    pub expired: u64,
    pub ended: u64,
}

impl KindStats {
    fn error(&mut self, what: impl Into<String>) {
        *self.errors.entry(what.into()).or_default() += 1;
    }

    fn merge(&mut self, o: KindStats) {
        self.times.extend(o.times);
        self.throttled += o.throttled;
        for (k, v) in o.errors {
            *self.errors.entry(k).or_default() += v;
        }
        self.bytes += o.bytes;
        self.events += o.events;
        self.expired += o.expired;
        self.ended += o.ended;
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// A whole mixed run's outcomes, per kind.
pub struct Report {
    pub kinds: Vec<KindStats>,
    pub secs: f64,
    pub clients: usize,
    pub watchers: usize,
}

impl Report {
    pub fn of(&self, k: Kind) -> &KindStats {
        &self.kinds[k.index()]
    }

    /// Errors other than 429s with Retry-After, all kinds.
    pub fn errors(&self) -> u64 {
        self.kinds.iter().map(KindStats::error_count).sum()
    }

    pub fn throttled(&self) -> u64 {
        self.kinds.iter().map(|k| k.throttled).sum()
    }

    /// Requests answered whole (a watch counts once per opening).
    pub fn answered(&self) -> usize {
        self.kinds.iter().map(|k| k.times.len()).sum()
    }

    pub fn per_second(&self) -> f64 {
        self.answered() as f64 / self.secs
    }

    /// A Markdown table: per kind, answered, 429s, errors by status,
    /// p50 / p90 / p99 / max.
    pub fn table(&self) -> String {
        let mut s = String::from(
            "| request | answered | 429 (Retry-After) | errors | p50 / p90 / p99 / max |\n|---|---|---|---|---|\n",
        );
        for k in KINDS {
            let st = self.of(k);
            let errors = if st.errors.is_empty() {
                "0".to_string()
            } else {
                st.errors
                    .iter()
                    .map(|(k, v)| format!("{v}× {k}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let mut t = st.times.clone();
            t.sort_by(f64::total_cmp);
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} / {} / {} / {} |\n",
                k.name(),
                st.times.len(),
                st.throttled,
                errors,
                ms(quantile(&t, 0.5)),
                ms(quantile(&t, 0.9)),
                ms(quantile(&t, 0.99)),
                ms(t.last().copied().unwrap_or(f64::NAN)),
            ));
        }
        let w = self.of(Kind::Watch);
        s.push_str(&format!(
            "\nwatches: {} events received, {} ended and resumed, {} expired (410, relisted)\n",
            w.events, w.ended, w.expired
        ));
        s
    }
}

/// `q` of sorted `v`.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() as f64 - 1.0) * q).round() as usize]
}

pub fn ms(s: f64) -> String {
    if s.is_nan() {
        "—".into()
    } else if s < 0.01 {
        format!("{:.2} ms", s * 1000.0)
    } else {
        format!("{:.1} ms", s * 1000.0)
    }
}

pub fn mib(b: u64) -> String {
    format!("{:.0} MiB", b as f64 / MIB as f64)
}

/// What one request came to.
enum Outcome {
    Done { head: Vec<u8>, gzipped: bool },
    Throttled { retry_after: Option<u64> },
    Failed(String),
}

/// Sends a GET and reads its body to the end (keeping only its first
/// 4 KiB, where a list's continue token is), within [`REQUEST_TIMEOUT`].
async fn fetch(c: &HttpClient, url: &str, accept: &str, bytes: &mut u64) -> Outcome {
    let req = get_request(url, accept, true);
    let answer = async {
        let resp = match c.request(req).await {
            Ok(r) => r,
            Err(_) => return Outcome::Failed("conn".into()),
        };
        let status = resp.status().as_u16();
        if status == 429 {
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok()?.parse().ok());
            // Read the refusal's body, so that the connection stays usable.
            let _ = resp.into_body().collect().await;
            return Outcome::Throttled { retry_after };
        }
        let gzipped = resp.headers().contains_key("content-encoding");
        let mut body = resp.into_body();
        let mut head = Vec::new();
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else {
                return Outcome::Failed("body cut".into());
            };
            if let Some(d) = frame.data_ref() {
                *bytes += d.len() as u64;
                if head.len() < 4096 {
                    let take = (4096 - head.len()).min(d.len());
                    head.extend_from_slice(&d[..take]);
                }
            }
        }
        if status != 200 {
            return Outcome::Failed(status.to_string());
        }
        Outcome::Done { head, gzipped }
    };
    match tokio::time::timeout(REQUEST_TIMEOUT, answer).await {
        Ok(o) => o,
        Err(_) => Outcome::Failed("timeout".into()),
    }
}

/// The head of a body as JSON text: `head` itself, or as much as it
/// decompresses to (up to 4 KiB) when gzipped.
fn plain_head(head: &[u8], gzipped: bool) -> Vec<u8> {
    if !gzipped {
        return head.to_vec();
    }
    let mut plain = vec![0u8; 4096];
    let mut z = flate2::read::GzDecoder::new(head);
    let mut n = 0;
    while n < plain.len() {
        match z.read(&mut plain[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    plain.truncate(n);
    plain
}

/// The page's continue token, if another page follows, read off the list's
/// metadata at the head of the body (its items, or a Table's columns and
/// rows, come after it).
fn next_page(head: &[u8], gzipped: bool) -> Option<String> {
    let plain = plain_head(head, gzipped);
    let text = std::str::from_utf8(&plain).ok()?;
    let end = ["\"items\"", "\"columnDefinitions\"", "\"rows\""]
        .iter()
        .filter_map(|k| text.find(k))
        .min()?;
    let token = text[..end]
        .split("\"continue\":\"")
        .nth(1)?
        .split('"')
        .next()?;
    (!token.is_empty()).then(|| token.to_string())
}

/// A client asking for one kind of request again and again (its own, of
/// [`REQUESTS`]) on a connection of its own until `until`; a 429 is
/// retried after its Retry-After, as client-go does. One kind per client:
/// going round them all, clients spent the run in the 20-page walks (each
/// page a request, and a second's wait after each 429) and hardly any
/// reached a get.
async fn requester(base: String, o: Arc<Objects>, id: usize, until: Instant) -> Vec<KindStats> {
    let c = client();
    let mut stats = vec![KindStats::default(); KINDS.len()];
    let kind = REQUESTS[id % REQUESTS.len()];
    let mut n = id / REQUESTS.len();
    let mut token: Option<String> = None;
    while Instant::now() < until {
        let st = &mut stats[kind.index()];
        let mut path = kind.path(&o, n);
        if let Some(t) = &token {
            path.push_str(&format!("&continue={t}"));
        }
        let started = Instant::now();
        match fetch(&c, &format!("{base}{path}"), kind.accept(), &mut st.bytes).await {
            Outcome::Done { head, gzipped } => {
                st.times.push(started.elapsed().as_secs_f64());
                token = if kind.paged() {
                    next_page(&head, gzipped)
                } else {
                    None
                };
            }
            Outcome::Throttled {
                retry_after: Some(s),
            } => {
                st.throttled += 1;
                let wake = Instant::now() + Duration::from_secs(s.min(5));
                tokio::time::sleep_until(wake.min(until).into()).await;
                continue;
            }
            Outcome::Throttled { retry_after: None } => {
                st.error("429 without Retry-After");
                token = None;
            }
            Outcome::Failed(why) => {
                st.error(why);
                token = None;
            }
        }
        // A walk stays on its kind until its last page.
        if token.is_none() {
            n += 1;
        }
    }
    stats
}

/// The resourceVersion in an event's object (its metadata's, the first
/// the line holds: the simulator's pods carry no other).
fn event_rv(line: &[u8]) -> Option<&str> {
    let key = b"\"resourceVersion\":\"";
    let at = memchr::memmem::find(line, key)? + key.len();
    let end = memchr::memchr(b'"', &line[at..])?;
    std::str::from_utf8(&line[at..at + end]).ok()
}

/// An informer: lists (RV=0), then watches from the list's version with
/// bookmarks and a short timeout, and when the watch ends watches again
/// from the last version it saw; a 410 sends it back to the list.
/// Watcher 0 of every 4 watches all pods, the rest a namespace each.
async fn watcher(
    base: String,
    o: Arc<Objects>,
    id: usize,
    until: Instant,
    secs: f64,
) -> Vec<KindStats> {
    let c = client();
    let mut stats = vec![KindStats::default(); KINDS.len()];
    let (list_kind, collection) = if id.is_multiple_of(4) {
        (Kind::AllList, "/api/v1/pods".to_string())
    } else {
        let ns = &o.namespaces[id % o.namespaces.len()];
        (Kind::NamespaceList, format!("/api/v1/namespaces/{ns}/pods"))
    };
    // Watches end now and then, so that the run sees them resume: after a
    // sixth to a half of the run (10–29 s of 60).
    let timeout = (secs / 6.0).max(1.0) as usize + id % ((secs / 3.0) as usize).max(2);
    let mut rv: Option<String> = None;
    while Instant::now() < until {
        let Some(from) = rv.clone() else {
            let st = &mut stats[list_kind.index()];
            let started = Instant::now();
            let url = format!("{base}{collection}?resourceVersion=0");
            match fetch(&c, &url, "application/json", &mut st.bytes).await {
                Outcome::Done { head, gzipped } => {
                    st.times.push(started.elapsed().as_secs_f64());
                    rv = event_rv(&plain_head(&head, gzipped)).map(str::to_string);
                    if rv.is_none() {
                        st.error("list without a resourceVersion");
                    }
                }
                Outcome::Throttled {
                    retry_after: Some(s),
                } => {
                    st.throttled += 1;
                    tokio::time::sleep(Duration::from_secs(s.min(5))).await;
                }
                Outcome::Throttled { retry_after: None } => st.error("429 without Retry-After"),
                Outcome::Failed(why) => st.error(why),
            }
            continue;
        };
        let st = &mut stats[Kind::Watch.index()];
        let url = format!(
            "{base}{collection}?watch=1&resourceVersion={from}&allowWatchBookmarks=true&timeoutSeconds={timeout}"
        );
        let started = Instant::now();
        let resp = match tokio::time::timeout(
            REQUEST_TIMEOUT,
            c.request(get_request(&url, "application/json", true)),
        )
        .await
        {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => {
                st.error("conn");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            Err(_) => {
                st.error("timeout");
                continue;
            }
        };
        match resp.status().as_u16() {
            200 => st.times.push(started.elapsed().as_secs_f64()),
            429 => {
                st.throttled += 1;
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            s => {
                st.error(s.to_string());
                let _ = resp.into_body().collect().await;
                continue;
            }
        }
        let mut body = resp.into_body();
        let mut line: Vec<u8> = Vec::new();
        loop {
            let frame = match tokio::time::timeout_at(until.into(), body.frame()).await {
                Err(_) => break,
                Ok(None) => {
                    st.ended += 1;
                    break;
                }
                Ok(Some(Err(_))) => {
                    st.error("watch cut");
                    break;
                }
                Ok(Some(Ok(f))) => f,
            };
            let Some(d) = frame.data_ref() else { continue };
            st.bytes += d.len() as u64;
            let mut rest: &[u8] = d;
            while let Some(nl) = memchr::memchr(b'\n', rest) {
                line.extend_from_slice(&rest[..nl]);
                rest = &rest[nl + 1..];
                if line.starts_with(b"{\"type\":\"ERROR\"") {
                    if memchr::memmem::find(&line, b"\"code\":410").is_some() {
                        st.expired += 1;
                    } else {
                        st.error("watch ERROR event");
                    }
                    rv = None;
                } else if let Some(v) = event_rv(&line) {
                    st.events += 1;
                    rv = Some(v.to_string());
                }
                line.clear();
            }
            line.extend_from_slice(rest);
        }
    }
    stats
}

/// `clients` at once against `base` for `secs`: a quarter of them
/// informers that list and then watch, the rest asking for one of
/// [`REQUESTS`] each.
pub async fn run_mix(base: &str, o: Arc<Objects>, clients: usize, secs: f64) -> Report {
    let watchers = clients / 4;
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(secs);
    let mut tasks = tokio::task::JoinSet::new();
    for id in 0..clients {
        let (base, o) = (base.to_string(), o.clone());
        if id < watchers {
            tasks.spawn(watcher(base, o, id, until, secs));
        } else {
            tasks.spawn(requester(base, o, id, until));
        }
    }
    let mut kinds = vec![KindStats::default(); KINDS.len()];
    while let Some(t) = tasks.join_next().await {
        for (k, s) in t.expect("a client panicked").into_iter().enumerate() {
            kinds[k].merge(s);
        }
    }
    Report {
        kinds,
        secs: started.elapsed().as_secs_f64(),
        clients,
        watchers,
    }
}

/// A process's resident memory (`VmRSS`) or its peak (`VmHWM`), in bytes.
pub fn status_bytes(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// A process's open descriptors.
pub fn fd_count(pid: u32) -> Option<u64> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64)
}

/// Samples a process's RSS and descriptors on a thread of its own, keeping
/// the peaks, until dropped.
pub struct Sampler {
    pid: u32,
    peak_rss: Arc<AtomicU64>,
    peak_fds: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Sampler {
    pub fn start(pid: u32, every: Duration) -> Sampler {
        let s = Sampler {
            pid,
            peak_rss: Arc::new(AtomicU64::new(0)),
            peak_fds: Arc::new(AtomicU64::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let (rss, fds, stop) = (s.peak_rss.clone(), s.peak_fds.clone(), s.stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(r) = status_bytes(pid, "VmRSS") {
                    rss.fetch_max(r, Ordering::Relaxed);
                }
                if let Some(f) = fd_count(pid) {
                    fds.fetch_max(f, Ordering::Relaxed);
                }
                std::thread::sleep(every);
            }
        });
        s
    }

    /// The highest RSS sampled, and the kernel's own peak (`VmHWM`, which
    /// no sampling interval can miss), whichever is higher.
    pub fn peak_rss(&self) -> u64 {
        let hwm = status_bytes(self.pid, "VmHWM").unwrap_or(0);
        self.peak_rss.load(Ordering::Relaxed).max(hwm)
    }

    /// The highest RSS sampled (when the kernel's peak cannot be reset).
    pub fn sampled_peak_rss(&self) -> u64 {
        self.peak_rss.load(Ordering::Relaxed)
    }

    pub fn peak_fds(&self) -> u64 {
        self.peak_fds.load(Ordering::Relaxed)
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Idle connections: each asked `/livez` once and was answered, and then
/// sits, kept alive, as an HTTP client's idle pool leaves its connections.
pub struct Idle {
    pub streams: Vec<std::net::TcpStream>,
    pub failed: usize,
    pub first_error: Option<String>,
}

impl Idle {
    /// How many the server has not closed.
    pub fn still_open(&self) -> usize {
        self.streams
            .iter()
            .filter(|s| {
                let _ = s.set_nonblocking(true);
                let mut b = [0u8; 1];
                matches!(s.peek(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            })
            .count()
    }
}

/// Opens `n` idle connections to `addr` one after another (from `source`,
/// another loopback address, so that their ports do not come out of the
/// range other connections share). Blocking: run it on a thread.
pub fn hold_idle(addr: SocketAddr, n: usize, source: Option<IpAddr>) -> Idle {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut idle = Idle {
        streams: Vec::with_capacity(n),
        failed: 0,
        first_error: None,
    };
    let req = format!("GET /livez HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: {AGENT}\r\n\r\n");
    for _ in 0..n {
        let opened = rt.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            if let Some(ip) = source {
                socket.bind(SocketAddr::new(ip, 0))?;
            }
            let s = tokio::time::timeout(Duration::from_secs(10), socket.connect(addr))
                .await
                .map_err(|_| std::io::Error::other("connect timed out"))??;
            s.into_std()
        });
        let asked = opened.and_then(|mut s| {
            s.set_nonblocking(false)?;
            s.set_read_timeout(Some(Duration::from_secs(10)))?;
            s.write_all(req.as_bytes())?;
            read_answer(&mut s)?;
            Ok(s)
        });
        match asked {
            Ok(s) => idle.streams.push(s),
            Err(e) => {
                idle.failed += 1;
                idle.first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    idle
}

/// Reads one small HTTP/1.1 answer whole (its Content-Length body); an
/// error unless it is a 200.
fn read_answer(s: &mut std::net::TcpStream) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        let k = s.read(&mut chunk)?;
        if k == 0 {
            return Err(std::io::Error::other("closed before answering"));
        }
        buf.extend_from_slice(&chunk[..k]);
        let Some(end) = memchr::memmem::find(&buf, b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if buf.len() >= end + 4 + len {
            if !head.starts_with("http/1.1 200") {
                return Err(std::io::Error::other(
                    head.lines().next().unwrap_or("").to_string(),
                ));
            }
            return Ok(());
        }
    }
}

/// A client that asked for a list and reads nothing of it past the
/// answer's head (its receive buffer small, so that the server's writes
/// stop soon): its status, whether a 429 came with Retry-After, and the
/// connection, held open by the caller.
pub struct Stalled {
    pub status: u16,
    pub retry_after: bool,
    pub stream: tokio::net::TcpStream,
}

pub async fn ask_and_stall(addr: SocketAddr, path: &str) -> std::io::Result<Stalled> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_recv_buffer_size(4096)?;
    let mut s = socket.connect(addr).await?;
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\nUser-Agent: {AGENT}\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await?;
    let mut head = Vec::new();
    let mut chunk = [0u8; 512];
    let read = async {
        while memchr::memmem::find(&head, b"\r\n\r\n").is_none() && head.len() < 16384 {
            let k = s.read(&mut chunk).await?;
            if k == 0 {
                return Err(std::io::Error::other("closed before answering"));
            }
            head.extend_from_slice(&chunk[..k]);
        }
        Ok(())
    };
    tokio::time::timeout(REQUEST_TIMEOUT, read)
        .await
        .map_err(|_| std::io::Error::other("no answer"))??;
    let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let status = text
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("no status line"))?;
    Ok(Stalled {
        status,
        retry_after: text.contains("\r\nretry-after: "),
        stream: s,
    })
}

/// A list asked for again and again on one connection while something
/// else goes on: its statuses and latencies.
#[derive(Default)]
pub struct Probe {
    pub times: Vec<f64>,
    pub statuses: BTreeMap<u16, u64>,
}

impl Probe {
    pub fn summary(&self) -> String {
        let mut t = self.times.clone();
        t.sort_by(f64::total_cmp);
        let statuses = self
            .statuses
            .iter()
            .map(|(s, n)| format!("{n}× {s}"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "{statuses}; answered p50 / p99 / max {} / {} / {}",
            ms(quantile(&t, 0.5)),
            ms(quantile(&t, 0.99)),
            ms(t.last().copied().unwrap_or(f64::NAN))
        )
    }
}

/// Asks for `url` (gzip, as Go clients do) until `until`, a request every
/// `gap`; a 429 waits its Retry-After.
pub async fn probe(url: String, until: Instant, gap: Duration) -> Probe {
    let c = client();
    let mut p = Probe::default();
    while Instant::now() < until {
        let started = Instant::now();
        let mut bytes = 0;
        match fetch(&c, &url, "application/json", &mut bytes).await {
            Outcome::Done { .. } => {
                p.times.push(started.elapsed().as_secs_f64());
                *p.statuses.entry(200).or_default() += 1;
            }
            Outcome::Throttled { retry_after } => {
                *p.statuses.entry(429).or_default() += 1;
                let wait = retry_after.unwrap_or(1).min(5);
                tokio::time::sleep(Duration::from_secs(wait)).await;
            }
            Outcome::Failed(why) => {
                *p.statuses.entry(why.parse().unwrap_or(0)).or_default() += 1;
            }
        }
        tokio::time::sleep(gap).await;
    }
    p
}

/// Raises this process's soft open-files limit to its hard limit (and the
/// hard limit to `want`, if it is below and the process may: root); the
/// limit it got. Children inherit it.
pub fn raise_open_files(want: u64) -> u64 {
    use rlimit::Resource;
    let (soft, hard) = rlimit::getrlimit(Resource::NOFILE).unwrap_or((1024, 1024));
    if hard < want && rlimit::setrlimit(Resource::NOFILE, want, want).is_ok() {
        return want;
    }
    if soft < hard && rlimit::setrlimit(Resource::NOFILE, hard, hard).is_ok() {
        return hard;
    }
    soft
}

/// A Prometheus sample summed over the series that start with `name`.
pub async fn metric(base: &str, name: &str) -> f64 {
    let Some((200, body)) = get(&client(), &format!("{base}/metrics"), "text/plain").await else {
        return f64::NAN;
    };
    String::from_utf8_lossy(&body)
        .lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Gauges of kubecache's, sampled together every `every` until `until`
/// on a connection of their own: per name (a prefix of its sample's line),
/// (highest, mean).
pub async fn sample_gauges(
    base: String,
    names: Vec<String>,
    until: Instant,
    every: Duration,
) -> Vec<(f64, f64)> {
    let c = client();
    let mut seen = vec![(0f64, 0f64); names.len()];
    let mut n = 0;
    while Instant::now() < until {
        if let Some((200, body)) = get(&c, &format!("{base}/metrics"), "text/plain").await {
            let text = String::from_utf8_lossy(&body);
            for (name, (max, sum)) in names.iter().zip(seen.iter_mut()) {
                let v: f64 = text
                    .lines()
                    .filter(|l| l.starts_with(name.as_str()))
                    .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                    .sum();
                *max = max.max(v);
                *sum += v;
            }
            n += 1;
        }
        tokio::time::sleep(every).await;
    }
    seen.into_iter()
        .map(|(max, sum)| (max, if n > 0 { sum / n as f64 } else { f64::NAN }))
        .collect()
}
