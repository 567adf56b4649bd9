//! Builders for integration tests: a simulated apiserver, a kubecache in
//! front of any upstream, and a small HTTP client. Every server binds port 0.
#![allow(dead_code)]

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use kubecache::cache::Cache;
use kubecache::serve::{route::ConsistentReads, ServeState};
use kubecache::sim::{Sim, SimOptions};
use kubecache::store::HistoryLimits;
use kubecache::upstream::{Upstream, UpstreamConfig};
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
    pub async fn start(self) -> SimServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let sim = Sim::new(&self.opts);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(kubecache::sim::run(sim.clone(), listener, async {
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
    start_proxy_with(upstream, ConsistentReads::Forward).await
}

pub async fn start_proxy_with(upstream: &str, consistent: ConsistentReads) -> Proxy {
    let up = Upstream::new(&UpstreamConfig {
        url: upstream.into(),
        ..Default::default()
    })
    .unwrap();
    let cache = Cache::new(up, HistoryLimits::default());
    cache.refresh_discovery().await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = Arc::new(ServeState {
        cache: cache.clone(),
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
    let mut b = Request::builder()
        .method(method)
        .uri(url)
        .header("user-agent", "kubecache-tests")
        .header("accept", "application/json");
    let body = match body {
        Some(v) => {
            b = b.header("content-type", "application/json");
            Bytes::from(serde_json::to_vec(&v).unwrap())
        }
        None => Bytes::new(),
    };
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
