//! The servers a test talks to: a simulated apiserver (`SimBuilder`), a
//! kubecache in front of any upstream (`ProxyBuilder`, `wait_synced`,
//! `assert_served_with`), a simulator behind review endpoints for
//! authorize mode (`ReviewingSim`), and the real apiserver's URL. Every server binds
//! port 0.

use super::http_client::get;
use http::Method;
use kubecache::cache::Cache;
use kubecache::reflector::ReflectorConfig;
use kubecache::serve::auth::{AuthConfig, AuthMode};
use kubecache::serve::limits::LimitsConfig;
use kubecache::serve::tls::{ServingCert, TlsServing};
use kubecache::serve::{ConsistentReads, ServeState};
use kubecache::store::HistoryLimits;
use kubecache::upstream::UpstreamConfig;
use kubecache_sim::{Sim, SimOptions};
use std::net::SocketAddr;
use std::path::PathBuf;
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
    pub fn configmaps(mut self, n: usize) -> Self {
        self.opts.configmaps = n;
        self
    }
    /// Streaming lists answered like a current apiserver.
    pub fn watch_list(self) -> Self {
        self.personality(kubecache_sim::Personality::V1_36)
    }
    /// Serve the custom resource `widgets.ref.example.com/v1` too.
    pub fn custom_resource(mut self) -> Self {
        self.opts.custom_resource = true;
        self
    }
    /// Which apiserver the simulator behaves as.
    pub fn personality(mut self, p: kubecache_sim::Personality) -> Self {
        self.opts.personality = p;
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
    /// What its answers hold while clients read them.
    pub in_flight: Arc<kubecache::serve::limits::BytesInFlight>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Proxy {
    /// Asks it to stop, as SIGTERM does (no shutdown delay; a 1 s drain).
    pub fn begin_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
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
    cache: kubecache::cache::CacheLimits,
    auth: AuthConfig,
    limits: LimitsConfig,
    tls: Option<TlsServing>,
    freshness: kubecache::freshness::FreshnessConfig,
}

impl ProxyBuilder {
    pub fn new(upstream: &str) -> Self {
        ProxyBuilder {
            upstream: UpstreamConfig::new(upstream).expect("a test upstream's URL"),
            consistent: ConsistentReads::Forward,
            reflector: ReflectorConfig::default(),
            cache: Default::default(),
            auth: AuthConfig::default(),
            limits: LimitsConfig::default(),
            tls: None,
            freshness: Default::default(),
        }
    }
    /// How proofs of freshness are bounded (`consistentReads: prove`).
    pub fn freshness(mut self, f: kubecache::freshness::FreshnessConfig) -> Self {
        self.freshness = f;
        self
    }
    /// Serve HTTPS with this certificate (reloaded as its files change).
    pub fn tls(mut self, cert: Arc<ServingCert>) -> Self {
        self.tls = Some(TlsServing {
            cert,
            clients: None,
        });
        self
    }
    /// Verify client certificates against the CA of this PEM file (with
    /// `tls`, after it).
    pub fn client_ca(mut self, ca: &std::path::Path) -> Self {
        let tls = self.tls.as_mut().expect("client_ca goes with tls");
        tls.clients = Some(kubecache::serve::tls::client_verifier(ca).unwrap());
        self.auth.client_ca = Some(ca.to_path_buf());
        self
    }
    /// authorize mode, with these review settings.
    pub fn authorize(mut self, access: kubecache::access::AccessConfig) -> Self {
        self.auth.mode = AuthMode::Authorize;
        self.auth.access = access;
        self
    }
    /// Per-user and per-request limits.
    pub fn limits(mut self, l: LimitsConfig) -> Self {
        self.limits = l;
        self
    }
    /// authorize: answer requests without credentials 401.
    pub fn no_anonymous(mut self) -> Self {
        self.auth.anonymous = false;
        self
    }
    /// trust-local's exec and attach (refused by default).
    pub fn allow_exec(mut self) -> Self {
        self.auth.allow_exec = true;
        self
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
    /// The reflector's watches ask to end after `seconds`, and are given
    /// up as stalled `grace` past that.
    pub fn watch_timeout(mut self, seconds: u64, grace: Duration) -> Self {
        self.reflector.watch_timeout_seconds = (seconds, seconds);
        self.reflector.recheck_timeout_seconds = seconds;
        self.reflector.watch_grace = grace;
        self
    }
    /// What the cache may hold; a type let go for its size lists again
    /// after `retry`.
    pub fn cache_limits(mut self, l: kubecache::cache::CacheLimits, retry: Duration) -> Self {
        self.cache = l;
        self.reflector.too_large_retry = retry;
        self
    }
    /// Whether the reflectors ask an upstream kubecache for gzipped watches.
    pub fn upstream_gzip(mut self, on: bool) -> Self {
        self.reflector.gzip = on;
        self
    }
    /// No consistency checks (their lists would be counted with what a
    /// test measures).
    pub fn no_consistency_check(mut self) -> Self {
        self.reflector.consistency_check = None;
        self
    }
    /// Each cached type is compared with the upstream this often.
    pub fn consistency_check(mut self, every: Duration) -> Self {
        self.reflector.consistency_check = Some(every);
        self
    }
    pub async fn start(self) -> Proxy {
        proxy(self).await
    }
}

async fn proxy(b: ProxyBuilder) -> Proxy {
    let cache = Cache::new(
        &b.upstream,
        HistoryLimits::default(),
        b.reflector,
        b.cache,
        Default::default(),
        b.freshness,
    )
    .unwrap();
    // An upstream that refuses us is a scenario too: discovery then stays
    // empty and every request is forwarded.
    if let Err(e) = cache.refresh_discovery().await {
        eprintln!("discovery failed: {e}");
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = ServeState::new(
        cache.clone(),
        &b.upstream,
        b.consistent,
        b.auth,
        b.limits,
        None,
    );
    let state = Arc::new(state.unwrap());
    let in_flight = state.limits.in_flight.clone();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let scheme = if b.tls.is_some() { "https" } else { "http" };
    tokio::spawn(kubecache::serve::run(
        listener,
        b.tls,
        state,
        async {
            let _ = rx.await;
        },
        kubecache::serve::Stop {
            delay: Duration::ZERO,
            drain: Duration::from_secs(1),
        },
    ));
    Proxy {
        url: format!("{scheme}://{addr}"),
        addr,
        cache,
        in_flight,
        stop: Some(tx),
    }
}

/// kubecaches one in front of the other: the first in front of the
/// upstream, each next in front of the one before it; clients talk to the
/// last (`front`). One hop is a plain kubecache.
pub struct Chain {
    pub hops: Vec<Proxy>,
}

impl Chain {
    pub fn front(&self) -> &Proxy {
        self.hops.last().expect("a chain has a hop")
    }
    /// What the front kubecache is in front of: the upstream, or the hop
    /// before it.
    pub fn behind_front<'a>(&'a self, upstream: &'a str) -> &'a str {
        match self.hops.len() {
            0 | 1 => upstream,
            n => &self.hops[n - 2].url,
        }
    }
}

pub async fn start_chain(upstream: &str, hops: usize) -> Chain {
    start_chain_with(upstream, hops, ConsistentReads::Forward).await
}

/// `start_chain`, every hop treating consistent reads as `consistent` says.
pub async fn start_chain_with(upstream: &str, hops: usize, consistent: ConsistentReads) -> Chain {
    let mut chain = Chain { hops: Vec::new() };
    for _ in 0..hops {
        let behind = chain.hops.last().map_or(upstream, |p| p.url.as_str());
        let p = start_proxy_with(behind, consistent).await;
        chain.hops.push(p);
    }
    chain
}

/// `wait_synced` for every hop, from the one nearest the upstream: the
/// front's reads are then served from caches all the way.
pub async fn wait_chain_synced(c: &Chain, collection_path: &str, resource: &str) {
    for p in &c.hops {
        wait_synced(p, collection_path, resource).await;
    }
}

/// The proxy's cache of `resource` (e.g. `v1/configmaps`), if it holds one.
pub fn type_cache(p: &Proxy, resource: &str) -> Option<Arc<kubecache::cache::TypeCache>> {
    p.cache
        .all()
        .into_iter()
        .find(|t| t.rt.gvr.to_string() == resource)
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

/// The request (a GET with this Accept) is answered from the cache under
/// `consistent`: neither forwarded nor rejected.
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

/// The real apiserver's insecure URL, which .ci/run starts.
pub fn real_apiserver() -> String {
    std::env::var("KUBECACHE_REAL_APISERVER")
        .expect("KUBECACHE_REAL_APISERVER=http://127.0.0.1:8080 (see .ci/run)")
}

/// The RBAC apiserver .ci/run starts.
pub struct RbacApiserver {
    /// Its TLS port.
    pub url: String,
    /// Its insecure port, where the tests set up (as nobody in particular).
    pub insecure: String,
    /// Its serving CA and its admin token.
    pub ca: PathBuf,
    pub token: PathBuf,
    /// .ci/client-certs' CA and users.
    pub certs: PathBuf,
}

pub fn rbac_apiserver() -> RbacApiserver {
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} (see .ci/run)"));
    let run = PathBuf::from(var("KUBECACHE_RBAC_APISERVER_RUN"));
    RbacApiserver {
        url: var("KUBECACHE_RBAC_APISERVER"),
        insecure: var("KUBECACHE_RBAC_APISERVER_INSECURE"),
        ca: run.join("certs/apiserver.crt"),
        token: run.join("token"),
        certs: PathBuf::from(var("KUBECACHE_REAL_APISERVER_CLIENT_CERTS")),
    }
}

/// The tokens `ReviewingSim` knows, and their users.
pub const REVIEWED_TOKENS: &[(&str, &str)] = &[
    ("alice-token", "alice"),
    ("nobody-token", "nobody"),
    ("kubecache-token", "kubecache"),
];

/// What reached the simulator behind a `ReviewingSim`.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path_and_query: String,
    pub authorization: Option<String>,
    pub protocol: Option<String>,
}

/// A simulator behind the review endpoints a kubecache in authorize mode
/// asks, as an apiserver with a token file and a small authorizer: the
/// tokens of `REVIEWED_TOKENS` are their users, everyone but `nobody`
/// may do anything. Every other request must carry one of those tokens
/// in `Authorization` (else 401; a token in `Sec-WebSocket-Protocol` is
/// not read), is recorded, and goes to the simulator.
pub struct ReviewingSim {
    pub url: String,
    /// The simulator itself, for setting up (no credentials needed).
    pub sim_url: String,
    pub sim: Arc<Sim>,
    pub seen: Arc<std::sync::Mutex<Vec<Seen>>>,
    /// kubecache's own token, in a file for its upstream configuration.
    pub kubecache_token: PathBuf,
}

impl ReviewingSim {
    pub async fn start(opts: SimBuilder) -> ReviewingSim {
        use http_body_util::BodyExt;
        let sim = Sim::new(&opts.opts);
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (s, log) = (sim.clone(), seen.clone());
        let handler = move |req: http::Request<hyper::body::Incoming>| {
            let (sim, seen) = (s.clone(), log.clone());
            async move {
                let user_of = |token: &str| {
                    REVIEWED_TOKENS
                        .iter()
                        .find(|(t, _)| *t == token)
                        .map(|(_, u)| *u)
                };
                let path = req.uri().path().to_string();
                let answer = |json: serde_json::Value, code: u16| {
                    let mut r = http::Response::new(kubecache::body::full(json.to_string()));
                    *r.status_mut() = http::StatusCode::from_u16(code).unwrap();
                    r.headers_mut()
                        .insert("content-type", "application/json".parse().unwrap());
                    r
                };
                if path.ends_with("/tokenreviews") || path.ends_with("/subjectaccessreviews") {
                    let body = req.into_body().collect().await.unwrap().to_bytes();
                    let review: serde_json::Value = serde_json::from_slice(&body).unwrap();
                    let status = if path.ends_with("/tokenreviews") {
                        match user_of(review["spec"]["token"].as_str().unwrap_or_default()) {
                            Some(u) => serde_json::json!({"authenticated": true,
                                "user": {"username": u, "groups": ["system:authenticated"]}}),
                            None => serde_json::json!({"authenticated": false}),
                        }
                    } else {
                        let allowed = review["spec"]["user"] != "nobody";
                        serde_json::json!({"allowed": allowed, "reason": if allowed { "" } else { "not nobody" }})
                    };
                    return answer(serde_json::json!({"status": status}), 201);
                }
                let header = |name: &str| {
                    req.headers()
                        .get(name)
                        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                };
                let authorization = header("authorization");
                seen.lock().unwrap().push(Seen {
                    path_and_query: req
                        .uri()
                        .path_and_query()
                        .map_or(path.clone(), |p| p.to_string()),
                    authorization: authorization.clone(),
                    protocol: header("sec-websocket-protocol"),
                });
                let token = authorization
                    .as_deref()
                    .and_then(|a| a.strip_prefix("Bearer "))
                    .unwrap_or_default();
                if user_of(token).is_none() {
                    let status = serde_json::json!({"kind": "Status", "apiVersion": "v1",
                        "metadata": {}, "status": "Failure", "message": "Unauthorized",
                        "reason": "Unauthorized", "code": 401});
                    return answer(status, 401);
                }
                kubecache_sim::api::handle(sim, req).await
            }
        };
        tokio::spawn(kubecache::serve::listener::serve_http(
            listener,
            None,
            handler,
            std::future::pending(),
            Duration::from_secs(1),
        ));
        let dir = std::env::temp_dir().join(format!(
            "kubecache-reviewing-{}",
            super::scratch::unique_suffix()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let kubecache_token = dir.join("token");
        std::fs::write(&kubecache_token, "kubecache-token").unwrap();
        let direct = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let sim_url = format!("http://{}", direct.local_addr().unwrap());
        tokio::spawn(kubecache_sim::run(
            sim.clone(),
            direct,
            std::future::pending(),
        ));
        ReviewingSim {
            url: format!("http://{addr}"),
            sim_url,
            sim,
            seen,
            kubecache_token,
        }
    }

    /// A kubecache in authorize mode in front of it, reading as itself.
    pub fn proxy(&self) -> ProxyBuilder {
        let upstream = UpstreamConfig::new(&self.url)
            .unwrap()
            .with_token_file(&self.kubecache_token)
            .unwrap();
        ProxyBuilder::new(&self.url)
            .upstream(upstream)
            .authorize(kubecache::access::AccessConfig::default())
    }

    /// What reached the simulator for paths containing `part`.
    pub fn seen(&self, part: &str) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.path_and_query.contains(part))
            .cloned()
            .collect()
    }
}
