//! Real clients watching through kubecache: kube-rs reflectors (list then
//! watch, RV=0 lists, streaming lists) and `kubectl get pods -w -o json`
//! end up with exactly the upstream's state while pods are created,
//! relabelled and deleted, and kubectl prints what it prints upstream.

mod common;

use common::*;
use futures::StreamExt;
use http::Method;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::{reflector, watcher};
use kube::{Api, Client, Config};
use serde_json::{json, Value};
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn pod(name: &str, app: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"app": app}},
           "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}})
}

async fn write(up: &str, method: Method, path: &str, body: Option<Value>) -> Value {
    let r = send(method, &format!("{up}{path}"), body).await;
    assert!(r.status.is_success(), "{path}: {}", r.text());
    r.json()
}

/// A fresh namespace upstream holding one pod, `p0`.
async fn namespace_with_a_pod(up: &str, tag: &str) -> String {
    let ns = format!("{tag}-{}", unique_suffix());
    ensure_namespace(up, &ns).await;
    let base = format!("/api/v1/namespaces/{ns}/pods");
    write(up, Method::POST, &base, Some(pod("p0", "web"))).await;
    ns
}

/// Creates three pods, relabels one, deletes one and p0: six events.
async fn churn(up: &str, ns: &str) {
    let base = format!("/api/v1/namespaces/{ns}/pods");
    for name in ["p1", "p2", "p3"] {
        write(up, Method::POST, &base, Some(pod(name, "web"))).await;
    }
    let mut p1 = write(up, Method::GET, &format!("{base}/p1"), None).await;
    p1["metadata"]["labels"]["app"] = json!("db");
    write(up, Method::PUT, &format!("{base}/p1"), Some(p1)).await;
    write(up, Method::DELETE, &format!("{base}/p2"), None).await;
    write(up, Method::DELETE, &format!("{base}/p0"), None).await;
}

/// namespace/name → resourceVersion of every item upstream lists now.
async fn upstream_state(up: &str, ns: &str) -> Vec<(String, String)> {
    let list = get(&format!("{up}/api/v1/namespaces/{ns}/pods"))
        .await
        .json();
    let mut state: Vec<(String, String)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap().to_string(),
                i["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    state.sort();
    state
}

#[derive(Clone, Copy, Debug)]
enum InitialList {
    /// A consistent paginated list (forwarded), then a watch from its rv.
    MostRecent,
    /// An RV=0 list from the cache, then a watch from its rv.
    Any,
    /// One watch with `sendInitialEvents=true`, all from the cache.
    Streaming,
}

/// Through `hops` kubecaches, each in front of the one before it.
async fn reflector_converges(up: &str, how: InitialList, hops: usize) {
    let chain = start_chain(up, hops).await;
    let p = chain.front();
    let ns = namespace_with_a_pod(up, "kube-rs").await;
    wait_chain_synced(&chain, "/api/v1/pods", "v1/pods").await;
    let client = Client::try_from(Config::new(p.url.parse().unwrap())).unwrap();
    let api: Api<Pod> = Api::namespaced(client, &ns);
    let config = match how {
        InitialList::MostRecent => watcher::Config::default(),
        InitialList::Any => watcher::Config::default().any_semantic(),
        InitialList::Streaming => watcher::Config::default().streaming_lists(),
    };
    let (reader, writer) = reflector::store();
    let errors = Arc::new(Mutex::new(Vec::new()));
    let seen = errors.clone();
    let task = tokio::spawn(reflector(writer, watcher(api, config)).for_each(move |ev| {
        if let Err(e) = ev {
            seen.lock().unwrap().push(e.to_string());
        }
        futures::future::ready(())
    }));
    reader.wait_until_ready().await.unwrap();
    churn(up, &ns).await;
    let want = upstream_state(up, &ns).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let mut got: Vec<(String, String)> = reader
            .state()
            .iter()
            .map(|p| {
                (
                    p.metadata.name.clone().unwrap(),
                    p.metadata.resource_version.clone().unwrap(),
                )
            })
            .collect();
        got.sort();
        if got == want {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{how:?}: reflector holds {got:?}, upstream {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let labels: Vec<_> = reader
        .state()
        .iter()
        .filter(|p| p.metadata.name.as_deref() == Some("p1"))
        .map(|p| p.metadata.labels.clone().unwrap_or_default()["app"].clone())
        .collect();
    assert_eq!(labels, ["db"], "{how:?}");
    task.abort();
    assert_eq!(*errors.lock().unwrap(), Vec::<String>::new(), "{how:?}");
}

async fn reflectors_converge(up: &str, hops: usize) {
    for how in [
        InitialList::MostRecent,
        InitialList::Any,
        InitialList::Streaming,
    ] {
        // Which of the three, should it time out.
        eprintln!("initial list: {how:?}");
        within(60, reflector_converges(up, how, hops)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_reflectors_converge_to_the_simulators_state() {
    let sim = SimBuilder::new().start().await;
    reflectors_converge(&sim.url, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_reflectors_through_two_kubecaches_converge_to_the_simulators_state() {
    let sim = SimBuilder::new().start().await;
    reflectors_converge(&sim.url, 2).await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_reflectors_converge_to_the_real_apiservers_state() {
    reflectors_converge(&real_apiserver(), 1).await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_reflectors_through_two_kubecaches_converge_to_the_real_apiservers_state() {
    reflectors_converge(&real_apiserver(), 2).await;
}

/// A `kubectl get -w` running in the background; what it printed so far.
struct KubectlWatch {
    child: std::process::Child,
    out: Arc<Mutex<Vec<u8>>>,
}

impl KubectlWatch {
    fn start(server: &str, args: &[&str]) -> KubectlWatch {
        let mut child = kubectl_command(server)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink = out.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        KubectlWatch { child, out }
    }

    /// The complete JSON documents printed so far.
    fn documents(&self) -> Vec<Value> {
        let out = self.out.lock().unwrap();
        serde_json::Deserializer::from_slice(&out)
            .into_iter::<Value>()
            .map_while(Result::ok)
            .collect()
    }

    /// Waits until a document about pod `name` is printed; all documents
    /// so far.
    async fn wait_for(&self, name: &str) -> Vec<Value> {
        for _ in 0..400 {
            let docs = self.documents();
            let about = |d: &Value| {
                let obj = d.get("object").unwrap_or(d);
                obj["metadata"]["name"] == name
            };
            if docs.iter().any(about) {
                return docs;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no {name} in what kubectl printed: {:?}", self.documents());
    }
}

impl Drop for KubectlWatch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `kubectl get pods -w -o json` through kubecache prints the same objects
/// as directly upstream, and with `--output-watch-events` its events fold
/// into the upstream's state.
async fn kubectl_watch_converges(up: &str) {
    let p = start_proxy(up).await;
    let ns = namespace_with_a_pod(up, "kubectl-w").await;
    wait_synced(&p, "/api/v1/pods", "v1/pods").await;
    let plain = ["get", "pods", "-n", &ns, "-w", "-o", "json"];
    let direct = KubectlWatch::start(up, &plain);
    let cached = KubectlWatch::start(&p.url, &plain);
    let mut with_events = plain.to_vec();
    with_events.push("--output-watch-events");
    let events = KubectlWatch::start(&p.url, &with_events);
    for w in [&direct, &cached, &events] {
        w.wait_for("p0").await;
    }
    churn(up, &ns).await;
    // A last pod marks the end of what each kubectl has to print.
    let base = format!("/api/v1/namespaces/{ns}/pods");
    write(up, Method::POST, &base, Some(pod("zz-end", "web"))).await;
    let want = direct.wait_for("zz-end").await;
    let got = cached.wait_for("zz-end").await;
    assert_eq!(got, want);
    let mut state = std::collections::BTreeMap::new();
    for e in events.wait_for("zz-end").await {
        let name = e["object"]["metadata"]["name"]
            .as_str()
            .unwrap()
            .to_string();
        let rv = e["object"]["metadata"]["resourceVersion"].as_str().unwrap();
        match e["type"].as_str().unwrap() {
            "ADDED" | "MODIFIED" => state.insert(name, rv.to_string()),
            "DELETED" => state.remove(&name),
            other => panic!("unexpected {other} event: {e}"),
        };
    }
    let folded: Vec<(String, String)> = state.into_iter().collect();
    assert_eq!(folded, upstream_state(up, &ns).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_watch_through_kubecache_matches_the_simulator() {
    let sim = SimBuilder::new().start().await;
    within(60, kubectl_watch_converges(&sim.url)).await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_watch_through_kubecache_matches_the_real_apiserver() {
    within(60, kubectl_watch_converges(&real_apiserver())).await;
}
