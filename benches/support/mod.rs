//! What the side-by-side benchmarks share: the real kube-apiserver (the
//! one named by `KUBECACHE_REAL_APISERVER`, or one started from
//! ../shared/tools/real-apiserver), its load of realistic objects,
//! kubecache as its own process in front of it, nginx serving files, and
//! timing requests with curl — the client the targets were measured with.

#![allow(dead_code)]

pub mod load;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use kubecache_sim::generate::{self, Generator};
use serde_json::{json, Value};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const NAMESPACES: usize = 50;
pub const PER_NAMESPACE: usize = 200;

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The workspace's root: these benchmarks belong to the command's crate
/// (`cli/`), beside it.
pub fn repo() -> PathBuf {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR"));
    cli.parent().unwrap_or(cli).to_path_buf()
}

/// The real apiserver: the one the environment names, or our own.
pub struct RealApiserver {
    pub url: String,
    run: Option<PathBuf>,
}

impl RealApiserver {
    pub fn start_or_env() -> RealApiserver {
        if let Ok(url) = std::env::var("KUBECACHE_REAL_APISERVER") {
            return RealApiserver { url, run: None };
        }
        let tools = repo().join("../shared/tools/real-apiserver");
        let status = Command::new(tools.join("build"))
            .stdout(Stdio::null())
            .status()
            .expect("real-apiserver build");
        assert!(status.success(), "building the real apiserver failed");
        let run = repo().join("target/bench-real-apiserver");
        let insecure = free_port();
        let status = Command::new(tools.join("up"))
            .env("RUN", &run)
            .env("FRESH", "1")
            .env("ETCD_PORT", free_port().to_string())
            .env("ETCD_PEER_PORT", free_port().to_string())
            .env("SECURE_PORT", free_port().to_string())
            .env("INSECURE_PORT", insecure.to_string())
            .stdout(Stdio::null())
            .status()
            .expect("real-apiserver up");
        assert!(status.success(), "starting the real apiserver failed");
        RealApiserver {
            url: format!("http://127.0.0.1:{insecure}"),
            run: Some(run),
        }
    }

    /// The apiserver's process id, for its memory.
    pub fn pid(&self) -> Option<u32> {
        let run = self.run.clone().or_else(|| {
            std::env::var("KUBECACHE_REAL_APISERVER_RUN")
                .ok()
                .map(PathBuf::from)
        })?;
        let out = Command::new("pgrep")
            .args(["-f", &format!("kube-apiserver.*{}", run.display())])
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()?
            .trim()
            .parse()
            .ok()
    }
}

impl Drop for RealApiserver {
    fn drop(&mut self) {
        if let Some(run) = &self.run {
            let _ = Command::new(repo().join("../shared/tools/real-apiserver/down"))
                .env("RUN", run)
                .stdout(Stdio::null())
                .status();
        }
    }
}

pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build(HttpConnector::new())
}

pub async fn send(c: &HttpClient, method: &str, url: &str, ct: &str, body: &Value) -> (u16, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", ct)
        .header("user-agent", "kubecache-bench")
        .body(Full::new(Bytes::from(serde_json::to_vec(body).unwrap())))
        .unwrap();
    let (status, body) = exchange(c, req).await;
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// A request's status and body, read whole; a failed connection panics.
async fn exchange(c: &HttpClient, req: http::Request<Full<Bytes>>) -> (u16, Bytes) {
    let url = req.uri().to_string();
    let resp = c
        .request(req)
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    let status = resp.status().as_u16();
    (status, resp.into_body().collect().await.unwrap().to_bytes())
}

/// A GET's JSON body; `null` when there is none (or no server yet).
pub async fn get_json(c: &HttpClient, url: &str) -> Value {
    let req = http::Request::builder()
        .uri(url)
        .header("user-agent", "kubecache-bench")
        .body(Full::default())
        .unwrap();
    let Ok(resp) = c.request(req).await else {
        return Value::Null;
    };
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&body).unwrap_or(Value::Null)
}

/// A GET's status and body, read whole and not parsed.
pub async fn get_bytes(c: &HttpClient, url: &str) -> (u16, Bytes) {
    let req = http::Request::builder()
        .uri(url)
        .header("user-agent", "kubecache-bench")
        .header("accept", "application/json")
        .body(Full::default())
        .unwrap();
    exchange(c, req).await
}

pub fn namespace(i: usize) -> String {
    format!("bench-{i:02}")
}

/// 10,000 pods as a kubelet leaves them (created, then their status
/// written) and 10,000 configmaps in 50 namespaces; kept between runs, as
/// loading takes the apiserver a minute or two. Whether it loaded them now.
pub async fn load(up: &str) -> bool {
    let c = client();
    let last = namespace(NAMESPACES - 1);
    let have = |kind: &'static str| {
        let c = c.clone();
        let url = format!("{up}/api/v1/namespaces/{last}/{kind}?limit=1000");
        async move {
            get_json(&c, &url).await["items"]
                .as_array()
                .map_or(0, Vec::len)
        }
    };
    if have("pods").await >= PER_NAMESPACE && have("configmaps").await >= PER_NAMESPACE {
        return false;
    }
    eprintln!(
        "loading {} pods and configmaps into {up}…",
        NAMESPACES * PER_NAMESPACE
    );
    let started = Instant::now();
    let gate = Arc::new(tokio::sync::Semaphore::new(16));
    let mut tasks = tokio::task::JoinSet::new();
    let mut g = Generator::new(42);
    for n in 0..NAMESPACES {
        let ns = namespace(n);
        let (s, _) = send(
            &c,
            "POST",
            &format!("{up}/api/v1/namespaces"),
            "application/json",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await;
        assert!(s == 201 || s == 409, "namespace {ns}: {s}");
        let existing = |kind| {
            let c = c.clone();
            let url = format!("{up}/api/v1/namespaces/{ns}/{kind}?limit=1000");
            async move {
                get_json(&c, &url).await["items"]
                    .as_array()
                    .map_or(0, Vec::len)
            }
        };
        let (pods, cms) = (existing("pods").await, existing("configmaps").await);
        for i in pods..PER_NAMESPACE {
            let k = n * PER_NAMESPACE + i;
            let mut pod = g.pod(&ns, generate::app_of(k), k, 100);
            let status = pod["status"].take();
            let meta = pod["metadata"].as_object_mut().unwrap();
            meta.remove("uid");
            meta.remove("creationTimestamp");
            let (c, up, ns, gate) = (c.clone(), up.to_string(), ns.clone(), gate.clone());
            tasks.spawn(async move {
                let _permit = gate.acquire().await.unwrap();
                let (s, created) = send(
                    &c,
                    "POST",
                    &format!("{up}/api/v1/namespaces/{ns}/pods"),
                    "application/json",
                    &pod,
                )
                .await;
                assert_eq!(s, 201, "{created}");
                let name = created["metadata"]["name"].as_str().unwrap();
                let (s, body) = send(
                    &c,
                    "PATCH",
                    &format!("{up}/api/v1/namespaces/{ns}/pods/{name}/status"),
                    "application/merge-patch+json",
                    &json!({"status": status}),
                )
                .await;
                assert_eq!(s, 200, "{body}");
            });
        }
        for i in cms..PER_NAMESPACE {
            let mut cm = g.configmap(&ns, i);
            let meta = cm["metadata"].as_object_mut().unwrap();
            meta.remove("uid");
            meta.remove("creationTimestamp");
            let (c, up, ns, gate) = (c.clone(), up.to_string(), ns.clone(), gate.clone());
            tasks.spawn(async move {
                let _permit = gate.acquire().await.unwrap();
                let (s, body) = send(
                    &c,
                    "POST",
                    &format!("{up}/api/v1/namespaces/{ns}/configmaps"),
                    "application/json",
                    &cm,
                )
                .await;
                assert!(s == 201 || s == 409, "{body}");
            });
        }
        while tasks.len() > 2000 {
            tasks.join_next().await.unwrap().unwrap();
        }
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
    eprintln!("loaded in {:.0?}", started.elapsed());
    true
}

/// kubecache as its own process, as it is deployed.
pub struct Kubecache {
    pub url: String,
    child: Child,
}

impl Kubecache {
    pub fn start(upstream: &str, consistent_reads: &str) -> Kubecache {
        Kubecache::start_with(upstream, consistent_reads, &[])
    }

    /// With these flags beside.
    pub fn start_with(upstream: &str, consistent_reads: &str, flags: &[&str]) -> Kubecache {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_kubecache"))
            .args([
                "serve",
                "--upstream",
                upstream,
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--consistent-reads",
                consistent_reads,
            ])
            .args(flags)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting kubecache");
        Kubecache {
            url: format!("http://127.0.0.1:{port}"),
            child,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until kubecache answers `path` from its cache with `items`
    /// objects (a type's cache starts on its first request).
    pub async fn wait_cached(&self, path: &str, items: usize) {
        let c = client();
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let before = metric(&self.url, "kubecache_forwarded_requests_total").await;
            let n = get_json(&c, &format!("{}{path}", self.url)).await["items"]
                .as_array()
                .map_or(0, Vec::len);
            let after = metric(&self.url, "kubecache_forwarded_requests_total").await;
            if n >= items && after == before {
                return;
            }
            assert!(Instant::now() < deadline, "kubecache never cached {path}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

impl Kubecache {
    /// Waits until the type at `path` (e.g. `/api/v1/pods`, resource
    /// `v1/pods`) holds `n` objects, started by a list that matches
    /// nothing, so that no list body is kept meanwhile.
    pub async fn wait_cached_quietly(&self, path: &str, resource: &str, n: usize) {
        let c = client();
        let nothing = format!(
            "{}{path}?resourceVersion=0&labelSelector=kubecache-bench%3Dnone",
            self.url
        );
        let gauge = format!("kubecache_cache_objects{{resource=\"{resource}\"}}");
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            get_json(&c, &nothing).await;
            if metric(&self.url, &gauge).await as usize >= n {
                return;
            }
            assert!(Instant::now() < deadline, "kubecache never cached {path}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Kubecache {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Prometheus sample's value (summed over series that start with `name`).
pub async fn metric(base: &str, name: &str) -> f64 {
    let text = text(&format!("{base}/metrics")).await;
    text.lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

pub async fn text(url: &str) -> String {
    let req = http::Request::builder()
        .uri(url)
        .body(Full::default())
        .unwrap();
    match client().request(req).await {
        Ok(resp) => String::from_utf8_lossy(&resp.into_body().collect().await.unwrap().to_bytes())
            .into_owned(),
        Err(_) => String::new(),
    }
}

/// nginx (Debian's package) serving a directory, `gzip_static` on.
pub struct Nginx {
    pub url: String,
    child: Child,
}

impl Nginx {
    pub fn start(root: &Path) -> Option<Nginx> {
        let bin = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .find(|p| Path::new(p).exists())?;
        let port = free_port();
        let prefix = root.parent().unwrap().join("nginx");
        std::fs::create_dir_all(prefix.join("logs")).unwrap();
        let conf = prefix.join("nginx.conf");
        std::fs::write(
            &conf,
            format!(
                "worker_processes auto;\ndaemon off;\npid {p}/nginx.pid;\nerror_log {p}/logs/error.log;\n\
                 worker_rlimit_nofile 20000;\nevents {{ worker_connections 16384; }}\n\
                 http {{\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n\
                   client_body_temp_path {p}/body; proxy_temp_path {p}/proxy; fastcgi_temp_path {p}/fcgi; uwsgi_temp_path {p}/uwsgi; scgi_temp_path {p}/scgi;\n\
                   server {{\n    listen 127.0.0.1:{port};\n    root {r};\n    gzip_static on;\n    default_type application/json;\n  }}\n}}\n",
                p = prefix.display(),
                r = root.display(),
            ),
        )
        .unwrap();
        let child = Command::new(bin)
            .args([
                "-p",
                &prefix.display().to_string(),
                "-c",
                &conf.display().to_string(),
            ])
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let url = format!("http://127.0.0.1:{port}");
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(Nginx { url, child });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM: the master takes its workers down with it (a SIGKILLed
        // master leaves them running, holding our stdout open).
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// One request by curl: (HTTP status, bytes received, seconds).
pub fn curl(url: &str, headers: &[&str], body_to: Option<&Path>) -> (u16, u64, f64) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-w", "%{http_code} %{size_download} %{time_total}"]);
    cmd.arg("-o")
        .arg(body_to.map_or("/dev/null".into(), |p| p.display().to_string()));
    for h in headers {
        cmd.args(["-H", h]);
    }
    cmd.arg(url);
    let out = cmd.output().expect("curl");
    let s = String::from_utf8_lossy(&out.stdout);
    let mut f = s.split_whitespace();
    let code = f.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let size = f.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let secs = f.next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
    (code, size, secs)
}

/// Latencies in seconds.
pub struct Sample(pub Vec<f64>);

impl Sample {
    pub fn quantile(&self, q: f64) -> f64 {
        let mut v = self.0.clone();
        v.sort_by(|a, b| a.total_cmp(b));
        if v.is_empty() {
            return f64::NAN;
        }
        let i = ((v.len() as f64 - 1.0) * q).round() as usize;
        v[i]
    }
}

pub fn ms(s: f64) -> String {
    if s < 0.01 {
        format!("{:.2} ms", s * 1000.0)
    } else {
        format!("{:.1} ms", s * 1000.0)
    }
}

pub fn mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / 1e6)
}

/// A process's resident memory, in bytes.
pub fn rss(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = s
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// A Prometheus metric's value summed over the series whose labels
/// contain every one of `labels` (e.g. `verb="LIST"`).
pub async fn metric_with(base: &str, name: &str, labels: &[&str]) -> f64 {
    let text = text(&format!("{base}/metrics")).await;
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .filter(|l| labels.iter().all(|want| l.contains(want)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The CPU time a process has used (user + system), in seconds.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces: fields count from its closing paren.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // USER_HZ is 100 on every Linux this runs on.
    Some(ticks / 100.0)
}

/// A benchmark's setting from the environment, or its default.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
