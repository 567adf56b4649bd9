//! Real clients watching through kubecache: kube-rs reflectors (list then
//! watch, RV=0 lists, streaming lists) and `kubectl get pods -w -o json`
//! end up with exactly the upstream's state while pods are created,
//! relabelled and deleted, and kubectl prints what it prints upstream —
//! with consistent reads forwarded, and with them proven and answered from
//! the cache (`consistentReads: prove`, in front of the simulator as v1.36
//! and the real v1.20), `kubectl get` and the Python client too.

mod common;

use common::*;
use futures::StreamExt;
use http::Method;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::{reflector, watcher};
use kube::{Api, Client, Config};
use kubecache::serve::ConsistentReads;
use kubecache_sim::Personality;
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
async fn reflector_converges(up: &str, how: InitialList, hops: usize, consistent: ConsistentReads) {
    let chain = start_chain_with(up, hops, consistent).await;
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
    // kube-rs's streaming lists start from "0" (any state), its plain list
    // unset (consistent).
    if consistent == ConsistentReads::Prove && matches!(how, InitialList::MostRecent) {
        // The initial list was a consistent read, and the front kubecache
        // proved it rather than forwarding it — unless it could not prove
        // a quiet type (v1.20), which it says.
        let tc = type_cache(p, "v1/pods").unwrap();
        let (proven, unproven) = (
            tc.proofs.proven.load(std::sync::atomic::Ordering::Relaxed),
            tc.proofs
                .unproven
                .load(std::sync::atomic::Ordering::Relaxed),
        );
        eprintln!(
            "{how:?}: proven {proven}, not proven {unproven} ({})",
            tc.freshness_mode().why
        );
        assert!(proven + unproven >= 1, "{how:?}: no proof asked");
        if tc.freshness_mode().name == "bookmarks" {
            assert_eq!(unproven, 0, "{how:?}");
        }
    }
}

async fn reflectors_converge(up: &str, hops: usize) {
    reflectors_converge_with(up, hops, ConsistentReads::Forward).await
}

async fn reflectors_converge_with(up: &str, hops: usize, consistent: ConsistentReads) {
    for how in [
        InitialList::MostRecent,
        InitialList::Any,
        InitialList::Streaming,
    ] {
        // Which of the three, should it time out.
        eprintln!("initial list: {how:?}");
        within(60, reflector_converges(up, how, hops, consistent)).await;
    }
}

/// A streaming list as client-go ≥1.35 informers send it (resourceVersion
/// unset, `sendInitialEvents=true`), by kube-rs's watch call: every pod as
/// an ADDED event, then the initial-events-end bookmark at a version no
/// older than the last write — served from the cache, proven fresh.
async fn streaming_list_is_proven(up: &str) {
    use kube::api::{WatchEvent, WatchParams};
    let p = start_proxy_with(up, ConsistentReads::Prove).await;
    let ns = namespace_with_a_pod(up, "watchlist").await;
    wait_synced(&p, "/api/v1/pods", "v1/pods").await;
    let last = write(
        up,
        Method::POST,
        &format!("/api/v1/namespaces/{ns}/pods"),
        Some(pod("p1", "web")),
    )
    .await;
    let last: u64 = last["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let tc = type_cache(&p, "v1/pods").unwrap();
    let forwarded = tc.tally().forwarded();
    let client = Client::try_from(Config::new(p.url.parse().unwrap())).unwrap();
    let api: Api<Pod> = Api::namespaced(client, &ns);
    let wp = WatchParams::streaming_lists().timeout(5);
    let mut stream = api.watch(&wp, "").await.unwrap().boxed();
    let mut added = vec![];
    let end = loop {
        match stream.next().await.expect("the stream ended").unwrap() {
            WatchEvent::Added(p) => added.push(p.metadata.name.unwrap()),
            WatchEvent::Bookmark(b) => break b,
            other => panic!("{other:?}"),
        }
    };
    added.sort();
    assert_eq!(added, ["p0", "p1"]);
    assert_eq!(
        end.metadata
            .annotations
            .get("k8s.io/initial-events-end")
            .map(String::as_str),
        Some("true")
    );
    let at: u64 = end.metadata.resource_version.parse().unwrap();
    assert!(
        at >= last,
        "the end bookmark at {at} is older than the write at {last}"
    );
    let mode = tc.freshness_mode();
    if mode.name != "forwarded" {
        assert_eq!(tc.tally().forwarded(), forwarded, "served from the cache");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consistent_streaming_list_by_kube_rs_is_proven_and_served_from_the_cache() {
    let sim = SimBuilder::new()
        .personality(Personality::V1_36)
        .start()
        .await;
    within(30, streaming_list_is_proven(&sim.url)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_reflectors_with_proven_consistent_reads_converge_to_a_current_simulators_state() {
    let sim = SimBuilder::new()
        .personality(Personality::V1_36)
        .start()
        .await;
    reflectors_converge_with(&sim.url, 1, ConsistentReads::Prove).await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_reflectors_with_proven_consistent_reads_converge_to_the_real_apiservers_state() {
    reflectors_converge_with(&real_apiserver(), 1, ConsistentReads::Prove).await;
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
async fn kubectl_watch_converges(up: &str, consistent: ConsistentReads) {
    let p = start_proxy_with(up, consistent).await;
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
    // Plain `kubectl get` (a consistent, paginated list) prints what it
    // prints upstream.
    let get = ["get", "pods", "-n", &ns, "-o", "json"];
    let (ok, direct, err) = kubectl(up, &get, None);
    assert!(ok, "{err}");
    let (ok, cached, err) = kubectl(&p.url, &get, None);
    assert!(ok, "{err}");
    let items = |out: &str| serde_json::from_str::<Value>(out).unwrap()["items"].clone();
    assert_eq!(items(&cached), items(&direct));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_watch_through_kubecache_matches_the_simulator() {
    let sim = SimBuilder::new().start().await;
    within(
        60,
        kubectl_watch_converges(&sim.url, ConsistentReads::Forward),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_and_watch_with_proven_consistent_reads_match_a_current_simulator() {
    let sim = SimBuilder::new()
        .personality(Personality::V1_36)
        .start()
        .await;
    within(
        60,
        kubectl_watch_converges(&sim.url, ConsistentReads::Prove),
    )
    .await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_watch_through_kubecache_matches_the_real_apiserver() {
    within(
        60,
        kubectl_watch_converges(&real_apiserver(), ConsistentReads::Forward),
    )
    .await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_and_watch_with_proven_consistent_reads_match_the_real_apiserver() {
    within(
        60,
        kubectl_watch_converges(&real_apiserver(), ConsistentReads::Prove),
    )
    .await;
}
