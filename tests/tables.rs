//! Tables from the cache against the real apiserver: for every type
//! kubecache prints, realistic objects (pods in every phase, with restarts,
//! init containers, deletion timestamps; services of every type; …) read
//! as Tables through kubecache equal the apiserver's — column definitions
//! exactly, cells exactly but for ages (within a second), the row objects
//! in each `includeObject` form — and kubectl prints the same through
//! kubecache as directly.
#![cfg(feature = "real-apiserver")]

mod common;

use common::fixtures::*;
use common::*;
use http::Method;
use kubecache::serve::ConsistentReads;
use serde_json::{json, Value};
use std::time::Duration;

const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";
const TABLE_V1BETA1: &str = "application/json;as=Table;g=meta.k8s.io;v=v1beta1";
const META: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const META_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const KUBECTL_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

/// The request is answered from the cache, not forwarded.
fn assert_served_from_cache(p: &Proxy, path_and_query: &str, accept: &str) {
    assert_served_with(p, ConsistentReads::Forward, path_and_query, accept)
}

async fn table(url: &str, accept: &str) -> (u16, Value) {
    let (code, ct, body) = fetch(url, accept).await;
    assert!(ct.starts_with("application/json"), "{url}: {ct}");
    (
        code,
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{url}: {e}: {body}")),
    )
}

/// The same Table through kubecache as directly, served from the cache.
async fn same_table(up: &str, p: &Proxy, path: &str, accept: &str) -> Value {
    compare_tables(up, p, path, accept, false).await
}

/// The same for an RV=0 list, whose version is each cache's own.
async fn same_list_table(up: &str, p: &Proxy, path: &str, accept: &str) -> Value {
    compare_tables(up, p, path, accept, true).await
}

async fn compare_tables(up: &str, p: &Proxy, path: &str, accept: &str, any_version: bool) -> Value {
    assert_served_from_cache(p, path, accept);
    let (ca, a) = table(&format!("{up}{path}"), accept).await;
    let (cb, b) = table(&format!("{}{path}", p.url), accept).await;
    assert_eq!((cb, ca), (200, 200), "{path}: {b}");
    assert_tables_agree(&a, &b, path, any_version);
    b
}

/// The first cell of each row, in order.
fn row_names(t: &Value) -> Vec<Value> {
    t["rows"]
        .as_array()
        .map(|rows| rows.iter().map(|r| r["cells"][0].clone()).collect())
        .unwrap_or_default()
}

/// The fixtures' tests one at a time: each makes cluster-scoped fixtures,
/// which the other's RV=0 lists would see come and go between two reads.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_every_printed_type_equal_the_real_apiservers() {
    let _turn = ONE_AT_A_TIME.lock().await;
    within(240, tables_of_every_printed_type(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_through_two_kubecaches_equal_the_real_apiservers() {
    let _turn = ONE_AT_A_TIME.lock().await;
    within(240, tables_of_every_printed_type(2)).await;
}

/// Through `hops` kubecaches, each in front of the one before it.
async fn tables_of_every_printed_type(hops: usize) {
    let up = real_apiserver();
    {
        let fixtures = Fixtures::make(&up, "tables").await;
        let ns = &fixtures.ns;
        let chain = start_chain(&up, hops).await;
        let p = chain.front();
        for path in &fixtures.paths {
            synced_chain(&up, &chain, path).await;
            for accept in [TABLE, TABLE_V1BETA1, KUBECTL_ACCEPT] {
                same_list_table(&up, p, &format!("{path}?resourceVersion=0"), accept).await;
            }
            for include in ["None", "Object", "Metadata"] {
                same_list_table(
                    &up,
                    p,
                    &format!("{path}?resourceVersion=0&includeObject={include}"),
                    TABLE,
                )
                .await;
            }
            // Every object alone, as a get; and as metadata (which, like
            // Table rows, is the apiserver's internal object's).
            let list = get(&format!("{up}{path}")).await.json();
            for item in list["items"].as_array().unwrap().iter().take(12) {
                let name = item["metadata"]["name"].as_str().unwrap();
                same_table(&up, p, &format!("{path}/{name}?resourceVersion=0"), TABLE).await;
                let one = format!("{path}/{name}?resourceVersion=0");
                assert_served_from_cache(p, &one, META);
                let (a, b) = (
                    fetch(&format!("{up}{one}"), META).await,
                    fetch(&format!("{}{one}", p.url), META).await,
                );
                assert_eq!(b, a, "{one}");
            }
            let all = format!("{path}?resourceVersion=0");
            assert_served_from_cache(p, &all, META_LIST);
            let (a, b) = (
                fetch(&format!("{up}{all}"), META_LIST).await,
                fetch(&format!("{}{all}", p.url), META_LIST).await,
            );
            let items = |body: &str| item_set(&serde_json::from_str::<Value>(body).unwrap()).1;
            assert_eq!(items(&b.2), items(&a.2), "{all} as metadata");
            // A page at an exact version (one the cache holds) keeps its
            // continue token and count.
            let cached = get(&format!("{}{path}?resourceVersion=0", p.url))
                .await
                .json();
            let rv = cached["metadata"]["resourceVersion"].as_str().unwrap();
            let page = same_table(
                &up,
                p,
                &format!("{path}?resourceVersion={rv}&resourceVersionMatch=Exact&limit=1"),
                TABLE,
            )
            .await;
            if list["items"].as_array().unwrap().len() > 1 {
                assert!(page["metadata"]["continue"].is_string(), "{path}: {page}");
            }
            if path.ends_with("/flowschemas") {
                // The list printer sorts a page by precedence, then name:
                // the rows come in the apiserver's order.
                for query in [
                    "resourceVersion=0".to_string(),
                    format!("resourceVersion={rv}&resourceVersionMatch=Exact&limit=5"),
                ] {
                    let url = format!("{path}?{query}&includeObject=None");
                    let (_, a) = table(&format!("{up}{url}"), TABLE).await;
                    let (_, b) = table(&format!("{}{url}", p.url), TABLE).await;
                    assert_eq!(row_names(&b), row_names(&a), "{url}");
                }
            }
        }
        release(&up, ns).await;
    }
}

/// A CRD whose printer columns cover every cell type and client-go's
/// JSONPath grammar (filters, indexes, wildcards, recursive descent).
fn gadget_crd(n: &str) -> Value {
    let mut c = crd(&format!("gadgets{n}"), &format!("Gadget{n}"), "Namespaced");
    let v = &mut c["spec"]["versions"][0];
    v["schema"]["openAPIV3Schema"]["properties"]["status"] =
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    v["additionalPrinterColumns"] = json!([
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "priority": 1},
        {"name": "On", "type": "boolean", "jsonPath": ".spec.on"},
        {"name": "Color", "type": "string", "jsonPath": ".spec.color", "description": "What it looks like."},
        {"name": "Parts", "type": "string", "jsonPath": ".spec.parts"},
        {"name": "Built", "type": "date", "jsonPath": ".spec.built"},
        {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
        {"name": "Why", "type": "string", "jsonPath": ".status.conditions[?(@.status==\"True\")].reason"},
        {"name": "First", "type": "string", "jsonPath": ".spec.list[0]"},
        {"name": "Last", "type": "string", "jsonPath": ".spec.list[-1]"},
        {"name": "All", "type": "string", "jsonPath": ".spec.list[*]"},
        {"name": "Deep", "type": "string", "jsonPath": "..deep"},
        {"name": "Replicas", "type": "integer", "jsonPath": ".status.replicas", "priority": 2},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]);
    c
}

/// Replaces the gadgets CRD's versions and waits until the apiserver
/// prints with their columns.
async fn set_gadget_versions(up: &str, n: &str, versions: Value) {
    let url = format!(
        "{up}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets{n}.kubecache.test"
    );
    let mut def = get(&url).await.json();
    let want: Vec<Value> = std::iter::once(json!("Name"))
        .chain(
            versions[0]["additionalPrinterColumns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].clone()),
        )
        .collect();
    def["spec"]["versions"] = versions;
    let r = send(Method::PUT, &url, Some(def)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    for _ in 0..100 {
        let (_, t) = table(
            &format!("{up}/apis/kubecache.test/v1/gadgets{n}?limit=1"),
            TABLE,
        )
        .await;
        if column_names(&t) == Value::Array(want.clone()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the apiserver never printed gadgets with {want:?}");
}

fn column_names(t: &Value) -> Value {
    Value::Array(
        t["columnDefinitions"]
            .as_array()
            .map(|c| c.iter().map(|c| c["name"].clone()).collect())
            .unwrap_or_default(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resource_tables_follow_their_printer_columns() {
    let up = real_apiserver();
    within(90, async {
        // A CRD of the run's own: updating one right after it is made
        // leaves its endpoint 404 for a while.
        let n = unique_suffix().replace('-', "");
        establish(&up, gadget_crd(&n)).await;
        establish(&up, crd("widgets", "Widget", "Namespaced")).await;
        let ns = format!("crtables-{}", unique_suffix());
        ensure_namespace(&up, &ns).await;
        let g = format!("/apis/kubecache.test/v1/namespaces/{ns}/gadgets{n}");
        let w = format!("/apis/kubecache.test/v1/namespaces/{ns}/widgets");
        let specs = [
            json!({"size": 3, "ratio": 0.5, "on": true, "color": "<red>", "parts": {"b": 1, "a": [1, 2]}, "built": "2026-01-01T00:00:00Z",
                "list": ["x", "y", "z"], "nested": {"deep": "d1", "more": {"deep": "d2"}}}),
            json!({"size": 7, "ratio": 2, "color": "blue", "built": "not a date", "list": [], "nested": {"deep": 5}}),
            json!({}),
        ];
        let statuses = [
            json!({"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True", "reason": "Up"}], "replicas": 3}),
            json!({"conditions": [{"type": "Ready", "status": "False"}]}),
            json!({}),
        ];
        for (i, (spec, status)) in specs.into_iter().zip(statuses).enumerate() {
            create(&up, &g, json!({"apiVersion": "kubecache.test/v1", "kind": format!("Gadget{n}"), "metadata": {"name": format!("g{i}")}, "spec": spec, "status": status})).await;
            create(&up, &w, json!({"apiVersion": "kubecache.test/v1", "kind": "Widget", "metadata": {"name": format!("w{i}")}, "spec": {"size": i}})).await;
        }
        let p = start_proxy(&up).await;
        wait_synced(&p, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "apiextensions.k8s.io/v1/customresourcedefinitions").await;
        for (path, one) in [(&g, "g0"), (&w, "w0")] {
            synced(&up, &p, path).await;
            for include in ["None", "Object", "Metadata"] {
                same_list_table(&up, &p, &format!("{path}?resourceVersion=0&includeObject={include}"), TABLE).await;
            }
            same_table(&up, &p, &format!("{path}/{one}?resourceVersion=0"), TABLE).await;
        }
        // Columns changed on the CRD: the next Table follows them.
        let mut versions = gadget_crd(&n)["spec"]["versions"].clone();
        versions[0]["additionalPrinterColumns"] = json!([{"name": "Only", "type": "string", "jsonPath": ".spec.color"}]);
        set_gadget_versions(&up, &n, versions).await;
        let want = json!(["Name", "Only"]);
        for _ in 0..100 {
            let (_, t) = table(&format!("{}{g}?resourceVersion=0", p.url), TABLE).await;
            if column_names(&t) == want {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        same_list_table(&up, &p, &format!("{g}?resourceVersion=0"), TABLE).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_watches_carry_column_definitions_on_the_first_event_only() {
    let up = real_apiserver();
    within(60, async {
        let ns = format!("tablewatch-{}", unique_suffix());
        ensure_namespace(&up, &ns).await;
        let cms = format!("/api/v1/namespaces/{ns}/configmaps");
        for i in 0..3 {
            create(&up, &cms, json!({"metadata": {"name": format!("cm{i}"), "labels": {"i": i.to_string()}}, "data": {"k": "v"}})).await;
        }
        let p = start_proxy(&up).await;
        synced(&up, &p, &cms).await;
        // From 0: the state first; from a version: only changes.
        for from_zero in [true, false] {
            let from = if from_zero {
                "0".to_string()
            } else {
                get(&format!("{up}{cms}")).await.json()["metadata"]["resourceVersion"].as_str().unwrap().to_string()
            };
            let path = format!("{cms}?watch=1&resourceVersion={from}&labelSelector=i%21%3D9&includeObject=Object");
            assert_served_from_cache(&p, &path, TABLE);
            let mut direct = LineWatch::open(&format!("{up}{path}"), TABLE).await;
            let mut cached = LineWatch::open(&format!("{}{path}", p.url), TABLE).await;
            let changes = if from == "0" { 0 } else { 3 };
            if changes > 0 {
                let mut cm = get(&format!("{up}{cms}/cm0")).await.json();
                cm["data"]["k2"] = json!("v2");
                assert_eq!(send(Method::PUT, &format!("{up}{cms}/cm0"), Some(cm)).await.status, 200);
                // Leaving the selection reads as a deletion.
                let mut cm = get(&format!("{up}{cms}/cm1")).await.json();
                cm["metadata"]["labels"]["i"] = json!("9");
                assert_eq!(send(Method::PUT, &format!("{up}{cms}/cm1"), Some(cm)).await.status, 200);
                assert_eq!(send(Method::DELETE, &format!("{up}{cms}/cm2"), None).await.status, 200);
            }
            let n = if from == "0" { 3 } else { changes };
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for _ in 0..n {
                a.push(serde_json::from_str::<Value>(&direct.line().await).unwrap());
                b.push(serde_json::from_str::<Value>(&cached.line().await).unwrap());
            }
            if from == "0" {
                // RV=0's initial state comes in no particular order.
                let first = |v: &Vec<Value>| v[0]["object"]["columnDefinitions"].is_array();
                assert!(first(&a) && first(&b));
                for v in [&mut a, &mut b] {
                    for e in v.iter_mut() {
                        e["object"]["columnDefinitions"] = json!(null);
                    }
                    v.sort_by_key(|e| e.to_string());
                }
            }
            for (x, y) in a.iter().zip(&b) {
                assert_eq!(x["type"], y["type"]);
                assert_tables_agree(&x["object"], &y["object"], &path, false);
            }
            for (i, e) in b.iter().enumerate() {
                assert_eq!(e["object"]["columnDefinitions"].is_array(), i == 0 && from != "0", "{e}");
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_watch_bookmarks_are_tables_of_the_kinds_empty_object() {
    let up = real_apiserver();
    within(60, async {
        let ns = format!("tablebm-{}", unique_suffix());
        ensure_namespace(&up, &ns).await;
        let pods = format!("/api/v1/namespaces/{ns}/pods");
        let hpas = format!("/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers");
        let p = start_proxy(&up).await;
        // An autoscaling/v1 bookmark prints the internal empty object,
        // which has no metrics (a v1 object converts to an 80% CPU
        // target), and carries the v1 empty object.
        let kinds = [
            (
                pods.clone(),
                "",
                pod(
                    "bm",
                    json!({"containers": containers(&["app"])}),
                    json!({"phase": "Running"}),
                ),
            ),
            (
                hpas.clone(),
                "&includeObject=Object",
                json!({"metadata": {"name": "bm"},
                    "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3, "targetCPUUtilizationPercentage": 50},
                    "status": {"currentReplicas": 1, "desiredReplicas": 1, "currentCPUUtilizationPercentage": 10}}),
            ),
        ];
        for (collection, include, obj) in kinds {
            synced(&up, &p, &collection).await;
            let rv = get(&format!("{up}{collection}")).await.json()["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .to_string();
            // v1.20 bookmarks a watcher 2 s before its deadline, once an
            // event newer than its start has passed.
            let path = format!(
                "{collection}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=5{include}"
            );
            assert_served_from_cache(&p, &path, TABLE);
            let mut direct = LineWatch::open(&format!("{up}{path}"), TABLE).await;
            let mut cached = LineWatch::open(&format!("{}{path}", p.url), TABLE).await;
            create_with_status(&up, &collection, obj).await;
            for _ in 0..2 {
                let (a, b) = (direct.line().await, cached.line().await);
                let (va, vb): (Value, Value) = (
                    serde_json::from_str(&a).unwrap(),
                    serde_json::from_str(&b).unwrap(),
                );
                assert_eq!(vb["type"], va["type"], "{b}");
                assert_tables_agree(&va["object"], &vb["object"], &path, false);
            }
            let (a, b) = (direct.line().await, cached.line().await);
            assert!(a.contains("\"type\":\"BOOKMARK\""), "{a}");
            assert_eq!(b, a);
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_service_table_watches_carry_column_definitions_on_every_event() {
    let up = real_apiserver();
    within(60, async {
        // A CRD in a group of its own: the apiserver registers an API
        // service for the group (and removes it with the CRD).
        let n = unique_suffix().replace('-', "");
        let group = format!("g{n}.kubecache.test");
        let mut def = crd("things", "Thing", "Namespaced");
        def["metadata"]["name"] = json!(format!("things.{group}"));
        def["spec"]["group"] = json!(group);
        let services = "/apis/apiregistration.k8s.io/v1/apiservices";
        let p = start_proxy(&up).await;
        synced(&up, &p, services).await;
        let rv = get(&format!("{up}{services}")).await.json()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        let path = format!(
            "{services}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=5"
        );
        assert_served_from_cache(&p, &path, TABLE);
        let mut direct = LineWatch::open(&format!("{up}{path}"), TABLE).await;
        let mut cached = LineWatch::open(&format!("{}{path}", p.url), TABLE).await;
        let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
        create(&up, crds, def).await;
        // Its events, then the bookmark: each a Table with the columns.
        let mut events = 0;
        loop {
            let (a, b) = (direct.line().await, cached.line().await);
            let (va, vb): (Value, Value) = (
                serde_json::from_str(&a).unwrap(),
                serde_json::from_str(&b).unwrap(),
            );
            assert_eq!(vb["type"], va["type"], "{b}");
            assert!(va["object"]["columnDefinitions"].is_array(), "{a}");
            if va["type"] == "BOOKMARK" {
                assert_eq!(b, a);
                break;
            }
            assert_tables_agree(&va["object"], &vb["object"], &path, false);
            events += 1;
        }
        assert!(events > 0);
        send(Method::DELETE, &format!("{up}{crds}/things.{group}"), None).await;
    })
    .await;
}

/// kubectl's table output with ages blanked and runs of spaces collapsed
/// (a second can pass between the two reads and widen a column).
fn normalize(out: &str) -> String {
    out.lines()
        .map(|l| {
            l.split_whitespace()
                .map(|w| {
                    if human_seconds(w).is_some() {
                        "<age>"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_prints_the_same_through_kubecache() {
    let up = real_apiserver();
    within(240, async {
        let (_, ns) = namespace_with_fixtures(&up, "kgtables").await;
        // kubectl reads consistently (no resourceVersion): serve those from
        // the cache, once it has caught up.
        let p = ProxyBuilder::new(&up)
            .consistent(ConsistentReads::ServeStale)
            .start()
            .await;
        let paths = namespaced(&ns);
        for path in &paths {
            synced(&up, &p, path).await;
            // What kubectl asks: the cache answers it.
            assert_served_with(
                &p,
                ConsistentReads::ServeStale,
                &format!("{path}?limit=500"),
                KUBECTL_ACCEPT,
            );
        }
        for resource in [
            "pods",
            "configmaps",
            "secrets",
            "serviceaccounts",
            "services",
            "endpoints",
            "events",
            "persistentvolumeclaims",
            "events.events.k8s.io",
            "endpointslices",
            "deployments",
            "replicasets",
            "statefulsets",
            "daemonsets",
            "jobs",
            "cronjobs",
            "ingresses.networking.k8s.io",
            "leases",
            "roles",
            "rolebindings",
            "networkpolicies",
            "poddisruptionbudgets",
            "podtemplates",
            "resourcequotas",
            "controllerrevisions",
            "horizontalpodautoscalers",
        ] {
            for extra in [
                &[][..],
                &["-o", "wide"][..],
                &["--show-labels"][..],
                &["-L", "app,tier"][..],
            ] {
                let mut args = vec!["get", resource, "-n", &ns];
                args.extend_from_slice(extra);
                let (ok_a, a, err_a) = kubectl(&up, &args, None);
                let (ok_b, b, err_b) = kubectl(&p.url, &args, None);
                assert!(ok_a && ok_b, "{args:?}: {err_a} / {err_b}");
                assert_eq!(normalize(&b), normalize(&a), "kubectl {args:?}");
            }
        }
        // `kubectl get -w`: the list, then the watch's rows.
        let watch = |server: &str| {
            let mut cmd = kubectl_command(server);
            cmd.args(["get", "configmaps", "-n", &ns, "-w", "--request-timeout=4s"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null());
            cmd.spawn().unwrap()
        };
        let (direct, cached) = (watch(&up), watch(&p.url));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        create(
            &up,
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            json!({"metadata": {"name": "late"}, "data": {"x": "1"}}),
        )
        .await;
        let (a, b) = (
            direct.wait_with_output().unwrap(),
            cached.wait_with_output().unwrap(),
        );
        let (a, b) = (
            String::from_utf8_lossy(&a.stdout),
            String::from_utf8_lossy(&b.stdout),
        );
        assert!(a.contains("late"), "{a}");
        assert_eq!(normalize(&b), normalize(&a));
        release(&up, &ns).await;
    })
    .await;
}
