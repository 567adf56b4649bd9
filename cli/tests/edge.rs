//! Edge autonomy, as an edge site lives it: kubecache killed, its upstream
//! gone, kubecache started again from its snapshot — reads (lists, gets,
//! watches from RV=0, discovery, a fresh `kubectl get pods -A`) answered
//! with a `Warning` and equal to the state before the kill; the upstream
//! back with changes made meanwhile — the cache converges and a watch
//! opened offline receives the difference as events. A corrupt or
//! truncated snapshot is ignored with a log line, never served.

#[path = "../../tests/common/mod.rs"]
mod common;
mod running;

use common::*;
use http_body_util::BodyExt;
use running::Running;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

const EAGER: &str = "eager: [v1/pods, v1/configmaps]\n";

/// The Accept current kubectl asks `/api` and `/apis` with.
const KUBECTL_DISCOVERY: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

fn edge_kubecache(upstream: &str, dir: &Path) -> Running {
    let mut cmd = running::kubecache();
    let config = dir.with_extension("yaml");
    std::fs::write(&config, EAGER).unwrap();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--upstream", upstream])
        .arg("--config")
        .arg(&config)
        .arg("--snapshot-dir")
        .arg(dir)
        .args(["--snapshot-interval", "200ms", "--serve-stale-when-offline"]);
    running::spawn(cmd, "kubecache serving")
}

/// A GET: status, the Warning header (if any), the body as JSON (or Null).
async fn read(url: &str) -> (u16, Option<String>, Value) {
    let resp = request_with(url, &[("accept", "application/json")]).await;
    let status = resp.status().as_u16();
    let warning = resp
        .headers()
        .get("warning")
        .map(|v| v.to_str().unwrap().to_string());
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        warning,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    )
}

/// The items of a list, sorted as they come (key order).
fn items(list: &Value) -> Vec<Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

async fn ready(url: &str) -> bool {
    get(&format!("{url}/readyz")).await.status == 200
}

/// The snapshot file's text, if it reads whole.
fn snapshot_text(path: &Path) -> Option<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// Waits until the type's snapshot holds each of `marks` (names and
/// versions of the last changes), and none of `gone`.
async fn snapshot_holds(path: &Path, marks: &[String], gone: &[String]) {
    until("the snapshot holds the last changes", 20, || async {
        snapshot_text(path).is_some_and(|t| {
            marks.iter().all(|m| t.contains(m.as_str()))
                && !gone.iter().any(|g| t.contains(g.as_str()))
        })
    })
    .await;
}

/// `kubectl get pods` in `scope` (`-A`, or `-n NS`), with its discovery
/// cached in `cache` only.
fn kubectl_get_pods(url: &str, cache: &Path, scope: &[&str]) -> (bool, String, String) {
    let cache = format!("--cache-dir={}", cache.display());
    let mut args = vec![cache.as_str(), "get", "pods"];
    args.extend(scope);
    args.extend([
        "--no-headers",
        "-o",
        "custom-columns=NS:.metadata.namespace,NAME:.metadata.name,RV:.metadata.resourceVersion",
    ]);
    kubectl(url, &args, None)
}

fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("kubecache-edge-{name}-{}", unique_suffix()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Where the scenario runs: its upstream (writes go straight to it), the
/// namespace it reads and changes, and kubectl's scope.
struct Site<'a> {
    upstream: &'a str,
    ns: &'a str,
    kubectl_scope: &'a [&'a str],
}

/// Kill, restart offline from the snapshot, read; upstream back with
/// changes: converge, and a watch opened offline gets the difference.
async fn restart_offline_then_reconnect(site: Site<'_>) {
    let Site {
        upstream,
        ns,
        kubectl_scope,
    } = site;
    let relay = Relay::start(upstream).await;
    let dir = scratch_dir("restart");
    let first = edge_kubecache(&relay.url, &dir);
    let url = first.url();
    until("eager types synced", 30, || ready(&url)).await;
    // Changes while it runs: in the snapshot too.
    let made = fixtures::create(upstream, &format!("/api/v1/namespaces/{ns}/configmaps"),
        serde_json::json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"edge-before"},"data":{"k":"v"}})).await;
    let made_rv = made["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    until("the configmap is cached", 20, || async {
        let (status, _, cm) = read(&format!(
            "{url}/api/v1/namespaces/{ns}/configmaps/edge-before?resourceVersion=0"
        ))
        .await;
        status == 200 && cm["metadata"]["resourceVersion"] == made_rv.as_str()
    })
    .await;
    let pods_path = format!("/api/v1/namespaces/{ns}/pods");
    let (_, _, pods_before) = read(&format!("{url}{pods_path}?resourceVersion=0")).await;
    let (_, _, cms_before) = read(&format!(
        "{url}/api/v1/namespaces/{ns}/configmaps?resourceVersion=0"
    ))
    .await;
    let names = |list: &Value| -> Vec<String> {
        items(list)
            .iter()
            .map(|i| format!("\"name\":{}", i["metadata"]["name"]))
            .collect()
    };
    snapshot_holds(
        &dir.join("core_v1_pods.snapshot"),
        &names(&pods_before),
        &[],
    )
    .await;
    snapshot_holds(
        &dir.join("core_v1_configmaps.snapshot"),
        &[format!("\"resourceVersion\":\"{made_rv}\"")],
        &[],
    )
    .await;
    assert!(items(&pods_before).len() >= 4, "{pods_before}");
    let one = items(&pods_before)[3].clone();
    let name = one["metadata"]["name"].as_str().unwrap().to_string();
    let pod_path = format!("{pods_path}/{name}");
    let (_, _, discovery_v1) = read(&format!("{upstream}/api/v1")).await;
    // What current kubectl asks first: the upstream's aggregated discovery
    // (as 1.30+ serve it) or its plain documents (as v1.20 answers).
    let mut first_questions = Vec::new();
    for doc in ["/api", "/apis"] {
        let online = fetch_with(
            &format!("{upstream}{doc}"),
            &[("accept", KUBECTL_DISCOVERY)],
        )
        .await;
        first_questions.push((doc, online));
    }
    let online_cache = dir.with_extension("kubectl-online");
    let (ok, online, err) = kubectl_get_pods(&url, &online_cache, kubectl_scope);
    assert!(ok, "{err}");

    // The edge loses its upstream and kubecache dies with it.
    drop(first);
    relay.cut();
    let second = edge_kubecache(&relay.url, &dir);
    let url = second.url();
    assert!(
        second.log().contains("restored from the snapshot"),
        "{}",
        second.log()
    );

    // Lists at RV=0 and most-recent, gets, discovery: the state before,
    // each answer saying it is stale.
    for query in ["?resourceVersion=0", "", "?limit=500"] {
        let path = format!("{pods_path}{query}");
        let (status, warning, list) = read(&format!("{url}{path}")).await;
        assert_eq!(status, 200, "{path}: {list}");
        let warning = warning.unwrap_or_else(|| panic!("{path}: no Warning"));
        assert!(
            warning.starts_with("299 - \"kubecache: the upstream is unreachable"),
            "{warning}"
        );
        assert_eq!(items(&list), items(&pods_before), "{path}");
    }
    let (status, warning, cms) = read(&format!("{url}/api/v1/namespaces/{ns}/configmaps")).await;
    assert_eq!((status, warning.is_some()), (200, true));
    assert_eq!(items(&cms), items(&cms_before));
    let (status, warning, pod) = read(&format!("{url}{pod_path}")).await;
    assert_eq!((status, warning.is_some()), (200, true), "{pod}");
    assert_eq!(pod["metadata"], one["metadata"]);
    for doc in ["/api", "/apis", "/api/v1", "/version"] {
        let (status, warning, body) = read(&format!("{url}{doc}")).await;
        assert_eq!(status, 200, "{doc}: {body}");
        assert!(warning.is_some_and(|w| w.contains("discovery")), "{doc}");
        if doc == "/api/v1" {
            assert_eq!(body, discovery_v1);
        }
    }
    for (doc, (status, content_type, body)) in &first_questions {
        let resp = request_with(&format!("{url}{doc}"), &[("accept", KUBECTL_DISCOVERY)]).await;
        assert_eq!(resp.status().as_u16(), *status, "{doc}");
        assert!(resp.headers().contains_key("warning"), "{doc}");
        assert_eq!(
            resp.headers()["content-type"],
            content_type.as_str(),
            "{doc}"
        );
        let offline = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            String::from_utf8_lossy(&offline),
            String::from_utf8_lossy(body),
            "{doc}"
        );
    }
    // The status page says so too.
    let (_, _, page) = read(&format!("{url}/debug/cache")).await;
    assert_eq!(page["servingStale"], true, "{page}");
    let pods_row = page["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["resource"] == "v1/pods")
        .unwrap();
    assert!(pods_row["restoredFrom"].is_string(), "{pods_row}");
    // A kubectl with no discovery cached finds the types and lists.
    let offline_cache = dir.with_extension("kubectl-offline");
    let (ok, offline, err) = kubectl_get_pods(&url, &offline_cache, kubectl_scope);
    assert!(ok, "kubectl get pods offline: {err}");
    assert_eq!(offline, online);
    assert!(
        err.contains("Warning: kubecache: the upstream is unreachable"),
        "{err}"
    );
    // What only the upstream can answer still fails as it would.
    let (status, _, _) = read(&format!("{url}{pod_path}/log")).await;
    assert_eq!(status, 503);

    // A watch from RV=0, opened offline: the state, then what changes.
    let resp = request_with(
        &format!("{url}{pods_path}?watch=1&resourceVersion=0&timeoutSeconds=1"),
        &[],
    )
    .await;
    assert!(
        resp.headers().contains_key("warning"),
        "a watch's head says it is stale too"
    );
    drop(resp);
    let mut watch = WatchStream::open(&format!("{url}{pods_path}?watch=1&resourceVersion=0")).await;
    for _ in 0..items(&pods_before).len() {
        assert_eq!(watch.event(Duration::from_secs(10)).await["type"], "ADDED");
    }

    // Meanwhile, upstream: one pod deleted, one added, one relabelled.
    let victim = items(&pods_before)[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let gone = send(
        http::Method::DELETE,
        &format!("{upstream}{pods_path}/{victim}?gracePeriodSeconds=0"),
        None,
    )
    .await;
    assert_eq!(gone.status, 200, "{}", gone.text());
    fixtures::create(
        upstream,
        &pods_path,
        fixtures::pod(
            "edge-new",
            serde_json::json!({"containers": fixtures::containers(&["c"])}),
            serde_json::json!({}),
        ),
    )
    .await;
    let patched = send_with(
        http::Method::PATCH,
        &format!("{upstream}{pod_path}"),
        &[("content-type", "application/merge-patch+json")],
        bytes::Bytes::from_static(br#"{"metadata":{"labels":{"edge":"changed"}}}"#),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.text());

    relay.restore().await;
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < 3 {
        let ev = watch.event(Duration::from_secs(30)).await;
        let name = ev["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        seen.insert(format!("{} {name}", ev["type"].as_str().unwrap()));
    }
    let want: std::collections::BTreeSet<String> = [
        format!("DELETED {victim}"),
        "ADDED edge-new".to_string(),
        format!("MODIFIED {name}"),
    ]
    .into();
    assert_eq!(seen, want);
    // Converged: the upstream's state, and no warning any more.
    // Both reads: a consistent one may be forwarded while an RV=0 one is
    // still served from the snapshot (a relist of a big type takes
    // seconds).
    until("the cache converges", 30, || async {
        let (status, warning, list) = read(&format!("{url}{pods_path}?limit=500")).await;
        let (_, cached_warning, _) = read(&format!("{url}{pods_path}?resourceVersion=0")).await;
        status == 200
            && warning.is_none()
            && cached_warning.is_none()
            && list.to_string().contains("edge-new")
    })
    .await;
    let (_, warning, now) = read(&format!("{url}{pods_path}?resourceVersion=0")).await;
    let (_, _, upstream_now) = read(&format!("{upstream}{pods_path}")).await;
    assert_eq!(warning, None);
    assert_eq!(items(&now), items(&upstream_now));
    drop(second);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_offline_from_its_snapshot_it_serves_the_last_state_and_converges_when_the_upstream_returns(
) {
    within(240, async {
        // As v1.36: its aggregated discovery is what kubectl finds offline.
        let sim = running::sim_as(60, "v1.36");
        let sim_url = format!("http://{}", sim.addr);
        restart_offline_then_reconnect(Site {
            upstream: &sim_url,
            ns: "team-02",
            kubectl_scope: &["-A"],
        })
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_the_real_apiserver_a_restart_offline_serves_the_last_state_and_converges() {
    within(240, async {
        let up = std::env::var("KUBECACHE_REAL_APISERVER")
            .expect("KUBECACHE_REAL_APISERVER=http://127.0.0.1:PORT (see .ci/run)");
        let ns = format!("edge-{}", unique_suffix());
        fixtures::create(
            &up,
            "/api/v1/namespaces",
            serde_json::json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name": ns}}),
        )
        .await;
        for i in 0..5 {
            fixtures::create(
                &up,
                &format!("/api/v1/namespaces/{ns}/pods"),
                fixtures::pod(
                    &format!("pod-{i}"),
                    serde_json::json!({"containers": fixtures::containers(&["c"])}),
                    serde_json::json!({}),
                ),
            )
            .await;
        }
        // Other tests change other namespaces meanwhile: kubectl reads this one.
        restart_offline_then_reconnect(Site {
            upstream: &up,
            ns: &ns,
            kubectl_scope: &["-n", &ns],
        })
        .await;
        let _ = send(
            http::Method::DELETE,
            &format!("{up}/api/v1/namespaces/{ns}"),
            None,
        )
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_or_truncated_snapshot_is_ignored_with_a_log_line_and_never_served() {
    within(120, async {
        let sim = running::sim(30);
        let sim_url = format!("http://{}", sim.addr);
        let relay = Relay::start(&sim_url).await;
        let dir = scratch_dir("corrupt");
        let first = edge_kubecache(&relay.url, &dir);
        let url = first.url();
        until("eager types synced", 30, || ready(&url)).await;
        for file in ["core_v1_pods.snapshot", "core_v1_configmaps.snapshot"] {
            snapshot_holds(&dir.join(file), &[], &[]).await;
        }
        drop(first);
        relay.cut();
        let pods_file = dir.join("core_v1_pods.snapshot");
        let whole = std::fs::read(&pods_file).unwrap();
        std::fs::write(&pods_file, &whole[..whole.len() * 2 / 3]).unwrap();
        let cms_file = dir.join("core_v1_configmaps.snapshot");
        let mut cms = std::fs::read(&cms_file).unwrap();
        let at = cms.len() / 2;
        cms[at] ^= 0x01;
        std::fs::write(&cms_file, &cms).unwrap();

        let second = edge_kubecache(&relay.url, &dir);
        let url = second.url();
        let log = second.log();
        for file in ["core_v1_pods.snapshot", "core_v1_configmaps.snapshot"] {
            assert!(
                log.lines().any(|l| l.contains("snapshot ignored")
                    && l.contains(file)
                    && l.contains("corrupt")),
                "no line for {file}: {log}"
            );
        }
        for path in [
            "/api/v1/pods?resourceVersion=0",
            "/api/v1/configmaps?resourceVersion=0",
        ] {
            let (status, warning, body) = read(&format!("{url}{path}")).await;
            // Not cached: forwarded, and the upstream is away.
            assert_eq!(status, 503, "{path}: {body}");
            assert_eq!(warning, None);
        }
        drop(second);
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}
