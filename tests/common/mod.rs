//! Builders for integration tests: a simulated apiserver, a kubecache in
//! front of any upstream, and a small HTTP client. Every server binds port 0.
#![allow(dead_code)]

pub mod fixtures;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use kubecache::cache::Cache;
use kubecache::reflector::ReflectorConfig;
use kubecache::serve::{ConsistentReads, ServeState};
use kubecache::store::HistoryLimits;
use kubecache::upstream::{Upstream, UpstreamConfig};
use kubecache_sim::{Sim, SimOptions};
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub struct SimServer {
    pub url: String,
    pub sim: Arc<Sim>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub struct SimBuilder {
    opts: SimOptions,
}

impl SimBuilder {
    pub fn new() -> Self {
        SimBuilder {
            opts: SimOptions {
                pods: 20,
                configmaps: 10,
                ..Default::default()
            },
        }
    }
    pub fn pods(mut self, n: usize) -> Self {
        self.opts.pods = n;
        self
    }
    /// Streaming lists answered like a current apiserver.
    pub fn watch_list(mut self) -> Self {
        self.opts.watch_list = true;
        self
    }
    pub async fn start(self) -> SimServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let sim = Sim::new(&self.opts);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(kubecache_sim::run(sim.clone(), listener, async {
            let _ = rx.await;
        }));
        SimServer {
            url: format!("http://{addr}"),
            sim,
            _stop: tx,
        }
    }
}

pub struct Proxy {
    pub url: String,
    pub addr: SocketAddr,
    pub cache: Arc<Cache>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub async fn start_proxy(upstream: &str) -> Proxy {
    ProxyBuilder::new(upstream).start().await
}

pub async fn start_proxy_with(upstream: &str, consistent: ConsistentReads) -> Proxy {
    ProxyBuilder::new(upstream)
        .consistent(consistent)
        .start()
        .await
}

pub struct ProxyBuilder {
    upstream: UpstreamConfig,
    consistent: ConsistentReads,
    reflector: ReflectorConfig,
}

impl ProxyBuilder {
    pub fn new(upstream: &str) -> Self {
        ProxyBuilder {
            upstream: UpstreamConfig::new(upstream).expect("a test upstream's URL"),
            consistent: ConsistentReads::Forward,
            reflector: ReflectorConfig::default(),
        }
    }
    /// Credentials and CA for an https upstream.
    pub fn upstream(mut self, u: UpstreamConfig) -> Self {
        self.upstream = u;
        self
    }
    pub fn consistent(mut self, c: ConsistentReads) -> Self {
        self.consistent = c;
        self
    }
    /// How soon the reflector gives up on a silent watch.
    pub fn watch_idle(mut self, d: Duration) -> Self {
        self.reflector.watch_idle = d;
        self
    }
    pub async fn start(self) -> Proxy {
        proxy(&self.upstream, self.consistent, self.reflector).await
    }
}

async fn proxy(
    upstream: &UpstreamConfig,
    consistent: ConsistentReads,
    reflector: ReflectorConfig,
) -> Proxy {
    let cache = Cache::new(upstream, HistoryLimits::default(), reflector).unwrap();
    // An upstream that refuses us is a scenario too: discovery then stays
    // empty and every request is forwarded.
    if let Err(e) = cache.refresh_discovery().await {
        eprintln!("discovery failed: {e}");
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = Arc::new(ServeState {
        cache: cache.clone(),
        forward: Upstream::new(upstream).unwrap(),
        consistent,
        shutting_down: AtomicBool::new(false),
        prometheus: None,
    });
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(kubecache::serve::run(
        listener,
        state,
        async {
            let _ = rx.await;
        },
        Duration::from_secs(1),
    ));
    Proxy {
        url: format!("http://{addr}"),
        addr,
        cache,
        _stop: tx,
    }
}

pub struct Resp {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Resp {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build(HttpConnector::new())
}

pub async fn send(method: Method, url: &str, body: Option<serde_json::Value>) -> Resp {
    match body {
        Some(v) => {
            let body = Bytes::from(serde_json::to_vec(&v).unwrap());
            send_bytes(method, url, Some("application/json"), body).await
        }
        None => send_bytes(method, url, None, Bytes::new()).await,
    }
}

/// A request with a raw body and, if given, its Content-Type.
pub async fn send_bytes(
    method: Method,
    url: &str,
    content_type: Option<&str>,
    body: Bytes,
) -> Resp {
    let mut b = Request::builder()
        .method(method)
        .uri(url)
        .header("user-agent", "kubecache-tests")
        .header("accept", "application/json");
    if let Some(ct) = content_type {
        b = b.header("content-type", ct);
    }
    let resp = tokio::time::timeout(
        Duration::from_secs(30),
        client().request(b.body(Full::new(body)).unwrap()),
    )
    .await
    .expect("request timed out")
    .unwrap_or_else(|e| panic!("{url}: {e}"));
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    Resp {
        status,
        headers,
        body,
    }
}

pub async fn get(url: &str) -> Resp {
    send(Method::GET, url, None).await
}

/// Waits until the proxy's cache for `resource` (e.g. `v1/configmaps`) has
/// synced, touching it first so its reflector starts.
pub async fn wait_synced(p: &Proxy, collection_path: &str, resource: &str) {
    get(&format!("{}{collection_path}?resourceVersion=0", p.url)).await;
    for _ in 0..300 {
        let r = get(&format!("{}/readyz?verbose", p.url)).await;
        if r.text()
            .contains(&format!("[+]informer-sync/{resource} ok"))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{resource} never synced");
}

/// Items of a list body keyed by namespace/name, with the list's rv.
pub fn item_set(body: &serde_json::Value) -> (String, Vec<String>) {
    let rv = body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let mut items: Vec<String> = body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {body}"))
        .iter()
        .map(|i| serde_json::to_string(i).unwrap())
        .collect();
    items.sort();
    (rv, items)
}

/// Creates a namespace directly upstream (fine if it exists).
pub async fn ensure_namespace(up: &str, ns: &str) {
    let r = send(
        Method::POST,
        &format!("{up}/api/v1/namespaces"),
        Some(
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        ),
    )
    .await;
    assert!(r.status == 201 || r.status == 409, "{}", r.text());
}

/// A watch stream read line by line.
pub struct WatchStream {
    body: hyper::body::Incoming,
    buf: Vec<u8>,
}

pub enum WatchLine {
    Event(serde_json::Value),
    /// The server ended the stream.
    End,
    /// Nothing arrived in time.
    Silent,
}

impl WatchStream {
    pub async fn open(url: &str) -> WatchStream {
        let req = Request::get(url)
            .header("user-agent", "kubecache-tests")
            .header("accept", "application/json")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let resp = tokio::time::timeout(Duration::from_secs(30), client().request(req))
            .await
            .expect("watch request timed out")
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(resp.status(), 200, "{url}");
        WatchStream {
            body: resp.into_body(),
            buf: vec![],
        }
    }

    pub async fn next(&mut self, wait: Duration) -> WatchLine {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(nl) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=nl).collect();
                return WatchLine::Event(serde_json::from_slice(&line).unwrap_or_else(|e| {
                    serde_json::json!({"undecodable": e.to_string(), "line": String::from_utf8_lossy(&line)})
                }));
            }
            match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Err(_) => return WatchLine::Silent,
                Ok(None) | Ok(Some(Err(_))) => return WatchLine::End,
                Ok(Some(Ok(f))) => {
                    if let Ok(d) = f.into_data() {
                        self.buf.extend_from_slice(&d);
                    }
                }
            }
        }
    }

    /// The next event, failing the test if the stream ends or stays silent.
    pub async fn event(&mut self, wait: Duration) -> serde_json::Value {
        match self.next(wait).await {
            WatchLine::Event(v) => v,
            WatchLine::End => panic!("watch ended"),
            WatchLine::Silent => panic!("no event within {wait:?}"),
        }
    }
}

/// Waits until an RV=0 list of `path` through the proxy holds what the
/// upstream holds (items and list rv).
pub async fn converged(up: &str, p: &Proxy, path: &str, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let a = get(&format!("{up}{path}?resourceVersion=0")).await;
        let b = get(&format!("{}{path}?resourceVersion=0", p.url)).await;
        let (a, b) = (item_set(&a.json()), item_set(&b.json()));
        if a == b {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            panic!(
                "{path} did not converge within {within:?}: upstream rv {} ({} items), kubecache rv {} ({} items)",
                a.0,
                a.1.len(),
                b.0,
                b.1.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until an RV=0 list of `path` through the proxy holds the items the
/// upstream holds, whatever each list's version (a quiet type's cache
/// upstream may have moved on with progress notifications kubecache's
/// watch does not get).
pub async fn converged_items(up: &str, p: &Proxy, path: &str, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let a = get(&format!("{up}{path}?resourceVersion=0")).await;
        let b = get(&format!("{}{path}?resourceVersion=0", p.url)).await;
        let (a, b) = (item_set(&a.json()).1, item_set(&b.json()).1);
        if a == b {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path} did not converge within {within:?}: upstream {} items, kubecache {}",
            a.len(),
            b.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs the real kubectl (KUBECTL, installed by .ci/run) against `server`,
/// ignoring any kubeconfig of the machine: (success, stdout, stderr).
pub fn kubectl(server: &str, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let mut cmd = kubectl_command(server);
    cmd.arg("--request-timeout=30s").args(args);
    let out = if let Some(input) = stdin {
        use std::io::Write;
        let mut child = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    } else {
        cmd.output().unwrap()
    };
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The real kubectl aimed at `server`, ignoring any kubeconfig of the
/// machine.
pub fn kubectl_command(server: &str) -> std::process::Command {
    let bin = std::env::var("KUBECTL").expect("KUBECTL=path/to/kubectl (see .ci/run)");
    let mut cmd = std::process::Command::new(bin);
    cmd.args(["--server", server])
        .env("KUBECONFIG", "/dev/null");
    cmd
}

/// A CustomResourceDefinition in group kubecache.test, version v1.
pub fn crd(plural: &str, kind: &str, scope: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.kubecache.test")},
        "spec": {
            "group": "kubecache.test",
            "scope": scope,
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}}
            }]
        }
    })
}

/// Creates a CRD upstream (fine if it exists) and waits until it serves.
pub async fn establish(up: &str, body: serde_json::Value) {
    let name = body["metadata"]["name"].as_str().unwrap().to_string();
    let r = send(
        Method::POST,
        &format!("{up}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        Some(body),
    )
    .await;
    assert!(r.status == 201 || r.status == 409, "{}", r.text());
    for _ in 0..200 {
        let r = get(&format!(
            "{up}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
        ))
        .await;
        let established = r.json()["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
            });
        // Established, and served: the first list can still 404 briefly.
        let plural = name.split('.').next().unwrap();
        if established
            && get(&format!("{up}/apis/kubecache.test/v1/{plural}"))
                .await
                .status
                == 200
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{name} never became established");
}

/// Writes an executable shell script (a credential plugin) to `path`.
pub fn write_script(path: &std::path::Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A suffix for names no earlier run has used: the process id and the
/// clock's nanoseconds.
pub fn unique_suffix() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{}-{}", std::process::id() % 100000, nanos % 100000)
}

/// The real apiserver's insecure URL, which .ci/run starts.
pub fn real_apiserver() -> String {
    std::env::var("KUBECACHE_REAL_APISERVER")
        .expect("KUBECACHE_REAL_APISERVER=http://127.0.0.1:8080 (see .ci/run)")
}

/// A GET with an Accept header.
pub async fn request(url: &str, accept: &str) -> http::Response<hyper::body::Incoming> {
    request_with(url, &[("accept", accept)]).await
}

/// A GET with the given headers.
pub async fn request_with(
    url: &str,
    headers: &[(&str, &str)],
) -> http::Response<hyper::body::Incoming> {
    let mut req = Request::builder().uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    client()
        .request(req.body(Full::default()).unwrap())
        .await
        .unwrap()
}

/// A GET with an Accept header: (status, content-type, body).
pub async fn fetch(url: &str, accept: &str) -> (u16, String, String) {
    let (status, ct, body) = fetch_with(url, &[("accept", accept)]).await;
    (status, ct, String::from_utf8_lossy(&body).into_owned())
}

/// A GET with the given headers: (status, content-type, body bytes).
pub async fn fetch_with(url: &str, headers: &[(&str, &str)]) -> (u16, String, Vec<u8>) {
    let resp = request_with(url, headers).await;
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, ct, body.to_vec())
}

/// A watch with an Accept header, read line by line.
pub struct LineWatch {
    body: hyper::body::Incoming,
    buf: Vec<u8>,
}

impl LineWatch {
    pub async fn open(url: &str, accept: &str) -> LineWatch {
        Self::open_with(url, &[("accept", accept)]).await
    }

    pub async fn open_with(url: &str, headers: &[(&str, &str)]) -> LineWatch {
        let resp = request_with(url, headers).await;
        assert_eq!(resp.status(), 200);
        LineWatch {
            body: resp.into_body(),
            buf: Vec::new(),
        }
    }

    pub async fn line(&mut self) -> String {
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return String::from_utf8(line).unwrap();
            }
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .expect("no event")
                .expect("stream ended")
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.buf.extend_from_slice(&data);
            }
        }
    }
}

/// Seconds in a `duration.HumanDuration` string ("2m30s", "3d4h"), and
/// the size of its coarsest unit.
pub fn human_seconds(s: &str) -> Option<(i64, i64)> {
    let (mut total, mut num, mut unit_max) = (0i64, String::new(), 0);
    if s.is_empty() {
        return None;
    }
    for c in s.chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'y' => 365 * 86_400,
            _ => return None,
        };
        total += num.parse::<i64>().ok()? * unit;
        unit_max = unit_max.max(unit);
        num.clear();
    }
    num.is_empty().then_some((total, unit_max))
}

/// Two cells read a second apart agree: equal, or ages within a second
/// (or one step of their unit, at a rounding boundary).
pub fn cells_agree(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    if a == b {
        return true;
    }
    match (
        a.as_str().and_then(human_seconds),
        b.as_str().and_then(human_seconds),
    ) {
        (Some((x, ux)), Some((y, uy))) => {
            let step = if ux == 1 && uy == 1 {
                1
            } else {
                ux.min(uy).max(1)
            };
            (x - y).abs() <= step.max(1)
        }
        _ => false,
    }
}

/// A Table from kubecache equals the apiserver's: everything but the
/// cells exactly, rows matched by name and object (RV=0 order is
/// unspecified). An RV=0 list is as recent as each cache is: its version
/// is not compared.
pub fn assert_tables_agree(
    up: &serde_json::Value,
    kc: &serde_json::Value,
    what: &str,
    any_version: bool,
) {
    let strip = |t: &serde_json::Value| {
        let mut t = t.clone();
        if any_version {
            t["metadata"]["resourceVersion"] = serde_json::json!("any");
        }
        if let Some(rows) = t["rows"].as_array_mut() {
            for r in rows.iter_mut() {
                r["cells"] = serde_json::json!(null);
            }
            rows.sort_by_key(|r| r.to_string());
        }
        t
    };
    assert_eq!(
        strip(kc),
        strip(up),
        "{what}: tables differ beyond their cells"
    );
    let key = |r: &serde_json::Value| format!("{}|{}", r["cells"], r["object"]);
    let mut rows_up: Vec<&serde_json::Value> = up["rows"]
        .as_array()
        .map(|r| r.iter().collect())
        .unwrap_or_default();
    let mut rows_kc: Vec<&serde_json::Value> = kc["rows"]
        .as_array()
        .map(|r| r.iter().collect())
        .unwrap_or_default();
    rows_up.sort_by_key(|r| key(r));
    rows_kc.sort_by_key(|r| key(r));
    for (a, b) in rows_up.iter().zip(&rows_kc) {
        let (ca, cb) = (
            a["cells"].as_array().unwrap(),
            b["cells"].as_array().unwrap(),
        );
        assert_eq!(ca.len(), cb.len(), "{what}: {ca:?} vs {cb:?}");
        for (x, y) in ca.iter().zip(cb) {
            assert!(
                cells_agree(x, y),
                "{what}: cells {ca:?} (apiserver) vs {cb:?} (kubecache)"
            );
        }
    }
}

/// The request (a GET with this Accept) is answered from the cache under
/// `consistent`: neither forwarded nor rejected.
#[allow(dead_code)]
pub fn assert_served_with(
    p: &Proxy,
    consistent: ConsistentReads,
    path_and_query: &str,
    accept: &str,
) {
    let mut headers = http::HeaderMap::new();
    headers.insert("accept", http::HeaderValue::from_str(accept).unwrap());
    let uri: http::Uri = path_and_query.parse().unwrap();
    let request = kubecache::request::Request::parse(&Method::GET, &uri, &headers);
    use kubecache::serve::route::{decide, Route};
    match decide(&p.cache, consistent, &request) {
        Ok(_) => {}
        Err(Route::Forward(r)) => panic!("{path_and_query} forwarded ({})", r.as_str()),
        Err(Route::Refused(e)) => panic!("{path_and_query} refused: {e:?}"),
        Err(Route::Answered(_)) => panic!("{path_and_query} answered before reading"),
    }
}
