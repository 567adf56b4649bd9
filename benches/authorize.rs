//! What authorize mode costs: the same reads, one run, same machine, same
//! 10,000 pods — straight to the real apiserver running RBAC, through
//! kubecache in trust-local mode, and through kubecache in authorize mode
//! with a token client whose token review and decisions are cached — all
//! over TLS with a kept-alive HTTP/1.1 connection, as client-go reads,
//! the three asked in turn.
//! Then the cost of a cold decision: gets whose attributes kubecache has
//! not yet asked the upstream about (a SubjectAccessReview each).
//!
//! `cargo bench --bench authorize` (uses `KUBECACHE_RBAC_APISERVER`,
//! `_INSECURE` and `_RUN` if set, else builds and starts one; `BENCH_N`
//! requests per case, default 30).

mod support;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;

type Https = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

const AGENT: &str = "kubectl/v1.20.2 (linux/amd64) kubernetes/faecb19";
const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";
/// Appended to an Accept: also ask for gzip (as client-go does).
const GZIP: &str = "+gzip";
/// pod-reader's token in tests/data/rbac-tokens.csv.
const TOKEN: &str = "pods-token-8c21";

/// The RBAC apiserver: (secure URL, insecure URL, RUN folder), and the
/// folder to stop when it is ours.
fn rbac_apiserver() -> (String, String, PathBuf, Option<PathBuf>) {
    if let (Ok(s), Ok(i), Ok(r)) = (
        std::env::var("KUBECACHE_RBAC_APISERVER"),
        std::env::var("KUBECACHE_RBAC_APISERVER_INSECURE"),
        std::env::var("KUBECACHE_RBAC_APISERVER_RUN"),
    ) {
        return (s, i, PathBuf::from(r), None);
    }
    let tools = repo().join("../shared/tools/real-apiserver");
    let ok = Command::new(tools.join("build"))
        .stdout(Stdio::null())
        .status()
        .expect("real-apiserver build")
        .success();
    assert!(ok, "building the real apiserver failed");
    let run = repo().join("target/bench-rbac-apiserver");
    let (secure, insecure) = (free_port(), free_port());
    let ok = Command::new(tools.join("up"))
        .env("RUN", &run)
        .env("FRESH", "1")
        .env("AUTHZ_MODE", "RBAC")
        .env("TOKENS_CSV", repo().join("tests/data/rbac-tokens.csv"))
        .env("ETCD_PORT", free_port().to_string())
        .env("ETCD_PEER_PORT", free_port().to_string())
        .env("SECURE_PORT", secure.to_string())
        .env("INSECURE_PORT", insecure.to_string())
        .stdout(Stdio::null())
        .status()
        .expect("real-apiserver up")
        .success();
    assert!(ok, "starting the real apiserver failed");
    (
        format!("https://127.0.0.1:{secure}"),
        format!("http://127.0.0.1:{insecure}"),
        run.clone(),
        Some(run),
    )
}

/// A kubecache over TLS in front of the apiserver, reading it as admin.
struct Served {
    url: String,
    child: Child,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kubecache(upstream: &str, run: &Path, cert: &Path, key: &Path, mode: &str) -> Served {
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_kubecache"))
        .args(["serve", "--upstream", upstream, "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--token-file")
        .arg(run.join("token"))
        .arg("--ca-file")
        .arg(run.join("certs/apiserver.crt"))
        .args(["--auth-mode", mode, "--tls-cert-file"])
        .arg(cert)
        .arg("--tls-private-key-file")
        .arg(key)
        .env("KUBECACHE_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting kubecache");
    Served {
        url: format!("https://127.0.0.1:{port}"),
        child,
    }
}

fn https(ca_pem: &Path) -> Https {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_file_iter(ca_pem).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_only()
        .enable_http1()
        .build();
    Client::builder(TokioExecutor::new()).build(connector)
}

/// One GET: status (0: no connection), bytes, seconds.
async fn get(c: &Https, url: &str, token: Option<&str>, accept: &str) -> (u16, usize, f64) {
    let (accept, gzip) = match accept.strip_suffix(GZIP) {
        Some(a) => (a, true),
        None => (accept, false),
    };
    let mut req = http::Request::get(url)
        .header("user-agent", AGENT)
        .header("accept", accept);
    if gzip {
        req = req.header("accept-encoding", "gzip");
    }
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let started = Instant::now();
    let Ok(resp) = c.request(req.body(Full::default()).unwrap()).await else {
        return (0, 0, started.elapsed().as_secs_f64());
    };
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, body.len(), started.elapsed().as_secs_f64())
}

/// The targets' samples of one case, taken in turn (one request each,
/// round after round) so that whatever else the machine does falls on
/// all alike, after warm-up requests and a pause for what they set going
/// in the background (gzip pieces) to finish.
async fn measure(
    targets: &[(&Https, String, Option<&str>)],
    accept: &str,
    n: usize,
) -> Vec<Sample> {
    for (c, url, token) in targets {
        for _ in 0..3 {
            let (code, _, _) = get(c, url, *token, accept).await;
            assert_eq!(code, 200, "{url}");
        }
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut times = vec![Vec::with_capacity(n); targets.len()];
    for _ in 0..n {
        for (i, (c, url, token)) in targets.iter().enumerate() {
            times[i].push(get(c, url, *token, accept).await.2);
        }
    }
    times.into_iter().map(Sample).collect()
}

/// A self-signed serving certificate for 127.0.0.1, written to `dir`.
fn serving_cert(dir: &Path) -> (PathBuf, PathBuf) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let (c, k) = (dir.join("serving.crt"), dir.join("serving.key"));
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    (c, k)
}

fn main() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let n: usize = env_or("BENCH_N", 30);
    let (secure, insecure, run, ours) = rbac_apiserver();
    rt.block_on(load(&insecure));
    // pod-reader reads pods everywhere.
    rt.block_on(async {
        let c = client();
        let role = serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "bench-pod-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]});
        let binding = serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "bench-pod-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "bench-pod-reader"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "pod-reader"}]});
        let rbac = format!("{insecure}/apis/rbac.authorization.k8s.io/v1");
        for (path, body) in [("clusterroles", role), ("clusterrolebindings", binding)] {
            let (code, _) = send(&c, "POST", &format!("{rbac}/{path}"), "application/json", &body).await;
            assert!(code == 201 || code == 409, "{path}: {code}");
        }
    });
    let (cert, key) = serving_cert(&repo().join("target/bench-authorize"));
    let local = kubecache(&secure, &run, &cert, &key, "trust-local");
    let authorize = kubecache(&secure, &run, &cert, &key, "authorize");
    let to_apiserver = https(&run.join("certs/apiserver.crt"));
    let to_kubecache = https(&cert);
    let pods = NAMESPACES * PER_NAMESPACE;
    let all = "/api/v1/pods?resourceVersion=0";
    // Both caches synced (the first lists start them; RBAC may take a
    // moment to see the binding).
    rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(300);
        for (url, token) in [(&local.url, None), (&authorize.url, Some(TOKEN))] {
            loop {
                let ready = get(&to_kubecache, &format!("{url}/readyz?verbose"), None, "*/*").await;
                let listed = get(
                    &to_kubecache,
                    &format!("{url}{all}"),
                    token,
                    "application/json",
                )
                .await;
                let synced = ready.0 == 200 && listed.0 == 200 && listed.1 > pods * 1000;
                if synced {
                    break;
                }
                assert!(Instant::now() < deadline, "{url} never served the pods");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    });
    let ns = namespace(7);
    let one = format!("/api/v1/namespaces/{ns}/pods?resourceVersion=0&limit=1");
    let name = rt.block_on(async {
        let req = http::Request::get(format!("{insecure}{one}"))
            .body(Full::default())
            .unwrap();
        let resp = client().request(req).await.unwrap();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        v["items"][0]["metadata"]["name"]
            .as_str()
            .unwrap()
            .to_string()
    });
    let cases = [
        (
            "pods list RV=0, JSON (compact)",
            all.to_string(),
            "application/json",
        ),
        (
            "pods list RV=0, JSON, gzip (as client-go asks)",
            all.to_string(),
            "application/json+gzip",
        ),
        ("pods list RV=0, Table", all.to_string(), TABLE),
        (
            "namespace list, 200 pods",
            format!("/api/v1/namespaces/{ns}/pods?resourceVersion=0"),
            "application/json",
        ),
        (
            "single get",
            format!("/api/v1/namespaces/{ns}/pods/{name}?resourceVersion=0"),
            "application/json",
        ),
    ];
    println!("\n{pods} pods; {n} samples per case; TLS, kept-alive HTTP/1.1; p50 / p99\n");
    println!("| case | apiserver (token) | kubecache trust-local | kubecache authorize (token) | authorize ÷ trust-local (p50) | apiserver ÷ authorize (p50) |");
    println!("|---|---|---|---|---|---|");
    for (label, path, accept) in &cases {
        let targets = [
            (&to_apiserver, format!("{secure}{path}"), Some(TOKEN)),
            (&to_kubecache, format!("{}{path}", local.url), None),
            (
                &to_kubecache,
                format!("{}{path}", authorize.url),
                Some(TOKEN),
            ),
        ];
        let mut samples = rt.block_on(measure(&targets, accept, n)).into_iter();
        let (a, l, z) = (
            samples.next().unwrap(),
            samples.next().unwrap(),
            samples.next().unwrap(),
        );
        let p = |s: &Sample| format!("{} / {}", ms(s.quantile(0.5)), ms(s.quantile(0.99)));
        println!(
            "| {label} | {} | {} | {} | {:.2} | {:.1}× |",
            p(&a),
            p(&l),
            p(&z),
            z.quantile(0.5) / l.quantile(0.5),
            a.quantile(0.5) / z.quantile(0.5),
        );
    }
    // Cold decisions: a get of one pod in each namespace, each with
    // attributes not asked about before (the token's review is cached);
    // then the same gets again, their decisions cached.
    let (cold, warm) = rt.block_on(async {
        let mut cold = Vec::new();
        let mut names = Vec::new();
        for i in 0..NAMESPACES {
            let ns = namespace(i);
            let req = http::Request::get(format!("{insecure}/api/v1/namespaces/{ns}/pods?limit=1"))
                .body(Full::default())
                .unwrap();
            let body = client()
                .request(req)
                .await
                .unwrap()
                .into_body()
                .collect()
                .await
                .unwrap()
                .to_bytes();
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            names.push((
                ns,
                v["items"][0]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            ));
        }
        for (ns, name) in &names {
            let url = format!(
                "{}/api/v1/namespaces/{ns}/pods/{name}?resourceVersion=0",
                authorize.url
            );
            let (code, _, t) = get(&to_kubecache, &url, Some(TOKEN), "application/json").await;
            assert_eq!(code, 200);
            cold.push(t);
        }
        let mut warm = Vec::new();
        for (ns, name) in &names {
            let url = format!(
                "{}/api/v1/namespaces/{ns}/pods/{name}?resourceVersion=0",
                authorize.url
            );
            warm.push(
                get(&to_kubecache, &url, Some(TOKEN), "application/json")
                    .await
                    .2,
            );
        }
        (Sample(cold), Sample(warm))
    });
    println!(
        "\na get with a cold decision (one SubjectAccessReview upstream): p50 {} / p99 {}; the same gets with it cached: p50 {} / p99 {}",
        ms(cold.quantile(0.5)),
        ms(cold.quantile(0.99)),
        ms(warm.quantile(0.5)),
        ms(warm.quantile(0.99)),
    );
    drop((local, authorize));
    if let Some(run) = ours {
        let _ = Command::new(repo().join("../shared/tools/real-apiserver/down"))
            .env("RUN", run)
            .stdout(Stdio::null())
            .status();
    }
}
