//! For a battery of list and get requests, the answer through kubecache
//! equals the upstream's own: same items (in the same order where the
//! upstream promises one), same list metadata, same Status for errors.
//! Runs against the simulator always, and against the real kube-apiserver
//! with `--features real-apiserver` (KUBECACHE_REAL_APISERVER=http://…).

mod common;

use common::*;
use http::Method;
use kubecache::serve::ConsistentReads;
use serde_json::json;
use std::time::Duration;

fn cm(name: &str, i: usize) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": {"i": i.to_string(), "parity": if i.is_multiple_of(2) {"even"} else {"odd"}}},
           "data": {"k": format!("v{i}")}})
}

async fn create(base: &str, ns: &str, name: &str, i: usize) -> u64 {
    let r = send(
        Method::POST,
        &format!("{base}/api/v1/namespaces/{ns}/configmaps"),
        Some(cm(name, i)),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

async fn both(up: &str, kc: &str, path: &str) -> (Resp, Resp) {
    let a = get(&format!("{up}{path}")).await;
    let b = get(&format!("{kc}{path}")).await;
    (a, b)
}

async fn same_bytes(up: &str, kc: &str, path: &str) -> Resp {
    let (a, b) = both(up, kc, path).await;
    assert_eq!(a.status, b.status, "{path}: {} vs {}", a.text(), b.text());
    assert_eq!(a.text(), b.text(), "{path}");
    b
}

/// RV=0 lists come from the apiserver's watch cache, whose v1.20 order is
/// unspecified: compare items as a set, and the list's rv.
async fn same_set(up: &str, kc: &str, path: &str) {
    let (a, b) = both(up, kc, path).await;
    assert_eq!(a.status, 200, "{path}: {}", a.text());
    assert_eq!(b.status, 200, "{path}: {}", b.text());
    assert_eq!(item_set(&a.json()), item_set(&b.json()), "{path}");
}

/// Walks a paginated list through both, page by page, starting at `first`.
async fn same_walk(
    up: &str,
    kc: &str,
    first: &str,
    between_pages: impl AsyncFnMut(usize),
) -> usize {
    let mut between_pages = between_pages;
    let mut path = first.to_string();
    let mut pages = 0;
    loop {
        let r = same_bytes(up, kc, &path).await;
        pages += 1;
        let v = r.json();
        match v["metadata"]["continue"].as_str() {
            Some(c) if !c.is_empty() => {
                between_pages(pages).await;
                let base = first.split('?').next().unwrap();
                let q: String = url_keep(first, &["limit", "labelSelector", "fieldSelector"]);
                path = format!("{base}?{q}&continue={c}");
            }
            _ => return pages,
        }
    }
}

/// Consistent lists served stale (the load-test setting) are still paged
/// by their limit, as the upstream's consistent list is: the same items on
/// each page, the same remainingItemCount, until the last page. (The
/// list's resourceVersion is the cache's, not etcd's newest: that is what
/// serving stale means.)
async fn stale_pages_like_the_upstreams(up: &str, behind: &str, nsp: &str, items: usize) {
    let stale = ProxyBuilder::new(behind)
        .consistent(ConsistentReads::ServeStale)
        .start()
        .await;
    wait_synced(&stale, nsp, "v1/configmaps").await;
    let page = |v: &serde_json::Value| {
        let names: Vec<String> = v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        (names, v["metadata"]["remainingItemCount"].clone())
    };
    let (mut a_path, mut b_path) = (format!("{nsp}?limit=3"), format!("{nsp}?limit=3"));
    let mut seen = 0;
    loop {
        let a = get(&format!("{up}{a_path}")).await.json();
        let b = get(&format!("{}{b_path}", stale.url)).await;
        assert_eq!(b.status, 200, "{b_path}: {}", b.text());
        assert_served_with(
            &stale,
            ConsistentReads::ServeStale,
            &b_path,
            "application/json",
        );
        let b = b.json();
        assert_eq!(page(&a), page(&b), "{a_path} / {b_path}");
        seen += page(&b).0.len();
        let next = |v: &serde_json::Value| {
            v["metadata"]["continue"]
                .as_str()
                .filter(|c| !c.is_empty())
                .map(str::to_string)
        };
        match (next(&a), next(&b)) {
            (Some(x), Some(y)) => {
                a_path = format!("{nsp}?limit=3&continue={x}");
                b_path = format!("{nsp}?limit=3&continue={y}");
            }
            (None, None) => break,
            other => panic!("one list ends before the other: {other:?}"),
        }
    }
    assert_eq!(seen, items);
}

fn url_keep(path: &str, keys: &[&str]) -> String {
    let q = path.split_once('?').map(|x| x.1).unwrap_or("");
    q.split('&')
        .filter(|kv| keys.iter().any(|k| kv.starts_with(&format!("{k}="))))
        .collect::<Vec<_>>()
        .join("&")
}

/// Through `hops` kubecaches, each in front of the one before it.
async fn battery(up: &str, hops: usize) {
    let chain = start_chain(up, hops).await;
    let p = chain.front();
    let kc = p.url.as_str();
    let ns = format!("eq-{}-{hops}", std::process::id() % 100000);
    ensure_namespace(up, &ns).await;
    let mut last = 0;
    for i in 0..7 {
        last = create(up, &ns, &format!("cm{i}"), i).await;
    }
    wait_chain_synced(&chain, "/api/v1/configmaps", "v1/configmaps").await;
    wait_chain_synced(&chain, "/api/v1/namespaces", "v1/namespaces").await;
    // The cache has seen the last write once a NotOlderThan read succeeds.
    let r = get(&format!("{kc}/api/v1/configmaps?resourceVersion={last}")).await;
    assert_eq!(r.status, 200, "{}", r.text());

    let nsp = format!("/api/v1/namespaces/{ns}/configmaps");
    // Any and NotOlderThan, namespaced and cluster-wide, with selectors.
    same_set(up, kc, &format!("{nsp}?resourceVersion=0")).await;
    same_set(up, kc, "/api/v1/configmaps?resourceVersion=0").await;
    same_set(up, kc, &format!("{nsp}?resourceVersion=0&limit=2")).await;
    same_set(up, kc, &format!("{nsp}?resourceVersion={last}")).await;
    same_set(
        up,
        kc,
        &format!("{nsp}?resourceVersion={last}&resourceVersionMatch=NotOlderThan"),
    )
    .await;
    same_set(
        up,
        kc,
        &format!("{nsp}?resourceVersion=0&labelSelector=parity%3Dodd"),
    )
    .await;
    same_set(
        up,
        kc,
        &format!("{nsp}?resourceVersion=0&labelSelector=i%20in%20(1%2C3)%2Cparity"),
    )
    .await;
    same_set(up, kc, &format!("{nsp}?resourceVersion=0&labelSelector=!i")).await;
    stale_pages_like_the_upstreams(up, chain.behind_front(up), &nsp, 7).await;
    same_set(
        up,
        kc,
        &format!("{nsp}?resourceVersion=0&fieldSelector=metadata.name%3Dcm3"),
    )
    .await;
    same_set(
        up,
        kc,
        &format!("/api/v1/configmaps?resourceVersion=0&fieldSelector=metadata.namespace%3D{ns}"),
    )
    .await;
    same_set(up, kc, "/api/v1/namespaces?resourceVersion=0").await;

    // Exact, and the legacy exact of RV + limit, with continue walks.
    same_bytes(
        up,
        kc,
        &format!("{nsp}?resourceVersion={last}&resourceVersionMatch=Exact"),
    )
    .await;
    assert_eq!(
        same_walk(
            up,
            kc,
            &format!("{nsp}?resourceVersion={last}&limit=3"),
            async |_| {}
        )
        .await,
        3
    );
    same_walk(
        up,
        kc,
        &format!("{nsp}?resourceVersion={last}&limit=7"),
        async |_| {},
    )
    .await;
    same_walk(
        up,
        kc,
        &format!("{nsp}?resourceVersion={last}&limit=2&labelSelector=parity%3Deven"),
        async |_| {},
    )
    .await;
    same_walk(
        up,
        kc,
        &format!("/api/v1/configmaps?resourceVersion={last}&limit=4&resourceVersionMatch=Exact"),
        async |_| {},
    )
    .await;

    // A walk stays on its snapshot while objects change between pages.
    let walk_rv = last;
    let mut extra = 100;
    let pages = same_walk(
        up,
        kc,
        &format!("{nsp}?resourceVersion={walk_rv}&limit=2"),
        async |_| {
            extra += 1;
            create(up, &ns, &format!("cm{extra}"), extra).await;
            let d = send(
                Method::DELETE,
                &format!("{up}{nsp}/cm{}", extra - 100),
                None,
            )
            .await;
            assert_eq!(d.status, 200, "{}", d.text());
        },
    )
    .await;
    assert_eq!(pages, 4);

    // Gets.
    same_bytes(up, kc, &format!("{nsp}/cm6?resourceVersion=0")).await;
    same_bytes(up, kc, &format!("{nsp}/nope?resourceVersion=0")).await;
    same_bytes(
        up,
        kc,
        &format!("/api/v1/namespaces/{ns}?resourceVersion=0"),
    )
    .await;

    // Errors, Status for Status.
    let tok = kubecache::request::ContinueToken::after(last as i64, "cm1").encode();
    for path in [
        format!("{nsp}?resourceVersionMatch=Exact"),
        format!("{nsp}?resourceVersionMatch=NotOlderThan&limit=3"),
        format!("{nsp}?resourceVersionMatch=Exact&resourceVersion=0"),
        format!("{nsp}?resourceVersionMatch=Bogus&resourceVersion=1"),
        format!("{nsp}?resourceVersion=0&continue=garbage&limit=1"),
        format!("{nsp}?resourceVersion={last}&continue={tok}&limit=1"),
        format!("{nsp}?resourceVersion=0&labelSelector=a%3D%3D%3Db"),
        format!("{nsp}?resourceVersion=0&labelSelector=a%20in%20b"),
        format!("{nsp}?resourceVersion=0&fieldSelector=spec.foo%3Dx"),
        format!("{nsp}?resourceVersion=0&fieldSelector=abc"),
        format!("{nsp}?resourceVersion=0&fieldSelector=metadata.name%3Da%3Db"),
        format!("{nsp}?resourceVersion=0&fieldSelector=metadata.name%3Da%5Cq"),
        format!("{nsp}?resourceVersion=0&labelSelector=!a%3Db"),
        format!("{nsp}?resourceVersion=0&labelSelector=a%2C"),
        format!("{nsp}?resourceVersion=0&labelSelector=k%3D-v"),
        format!("{nsp}?resourceVersion=0&labelSelector=a%2Fb%2Fc"),
        "/api/v1/pods?resourceVersion=0&fieldSelector=spec.bogus%3Dx".to_string(),
    ] {
        same_bytes(up, kc, &path).await;
    }

    // A version the cache has not seen: both wait 3 s, then 504. Its
    // message names the cache's version, so first the walk's last events
    // must be in (a busy CI machine once read it one event early).
    let rv_of = |r: Resp| r.json()["metadata"]["resourceVersion"].clone();
    let upstream_now = rv_of(get(&format!("{up}{nsp}")).await);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let settled = loop {
        let cached = rv_of(get(&format!("{kc}{nsp}?resourceVersion=0")).await);
        if cached == upstream_now || tokio::time::Instant::now() > deadline {
            break cached;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let far = last + 100_000;
    let (a, b) = both(up, kc, &format!("{nsp}?resourceVersion={far}")).await;
    assert_eq!((a.status.as_u16(), b.status.as_u16()), (504, 504));
    assert_eq!(a.json()["reason"], b.json()["reason"]);
    assert_eq!(a.json()["details"], b.json()["details"]);
    assert_eq!(
        b.headers.get("retry-after").map(|v| v.to_str().unwrap()),
        Some("1")
    );
    assert!(b.json()["message"]
        .as_str()
        .unwrap()
        .contains(&format!("current: {}", settled.as_str().unwrap())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_equal_the_simulators() {
    let sim = SimBuilder::new().start().await;
    within(120, battery(&sim.url, 1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_through_two_kubecaches_equal_the_simulators() {
    let sim = SimBuilder::new().start().await;
    within(120, battery(&sim.url, 2)).await;
}

/// A tree's depth of three: each hop's reflector watches the next one's
/// cache, gzipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_through_three_kubecaches_equal_the_simulators() {
    let sim = SimBuilder::new().start().await;
    within(120, battery(&sim.url, 3)).await;
}

/// The real apiserver's batteries one at a time: each compares
/// cluster-wide lists, which another's writes would change between the
/// two reads.
#[cfg(feature = "real-apiserver")]
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_equal_the_real_apiservers() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let up = real_apiserver();
    within(120, battery(&up, 1)).await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_through_two_kubecaches_equal_the_real_apiservers() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let up = real_apiserver();
    within(120, battery(&up, 2)).await;
}

/// A CRD on the real apiserver: custom resources are unstructured (sorted
/// keys, a list built from a map), which the cache must reproduce exactly,
/// namespaced and cluster-scoped, for a type created after kubecache started.
#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_equal_the_real_apiservers() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let up = real_apiserver();
    within(120, crd_battery(&up, 1)).await;
}

/// The same through two kubecaches: the front one learns the new group
/// from the one behind it, which forwards discovery.
#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_through_two_kubecaches_equal_the_real_apiservers() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let up = real_apiserver();
    within(120, crd_battery(&up, 2)).await;
}

#[cfg(feature = "real-apiserver")]
async fn crd_battery(up: &str, hops: usize) {
    // Started before the CRDs exist: it must discover them later.
    let chain = start_chain(up, hops).await;
    let p = chain.front();
    let kc = p.url.as_str();
    let run = std::process::id() % 100000 * 10 + hops as u32;
    let ns = format!("crd-{run}");
    ensure_namespace(up, &ns).await;
    establish(up, crd("widgets", "Widget", "Namespaced")).await;
    establish(up, crd("gadgets", "Gadget", "Cluster")).await;

    let widgets = format!("/apis/kubecache.test/v1/namespaces/{ns}/widgets");
    let mut last = 0u64;
    for i in 0..5 {
        let w = json!({"apiVersion": "kubecache.test/v1", "kind": "Widget",
                       "metadata": {"name": format!("w{i}"), "labels": {"i": i.to_string(), "zone": if i < 3 {"a"} else {"b"}}},
                       "spec": {"size": i, "nested": {"z": 1, "a": [1, 2]}, "colour": "red"}});
        let r = send(Method::POST, &format!("{up}{widgets}"), Some(w)).await;
        assert_eq!(r.status, 201, "{}", r.text());
        let g = json!({"apiVersion": "kubecache.test/v1", "kind": "Gadget",
                       "metadata": {"name": format!("g{run}-{i}"), "labels": {"run": run.to_string()}},
                       "spec": {"weight": i * 10}});
        let r = send(
            Method::POST,
            &format!("{up}/apis/kubecache.test/v1/gadgets"),
            Some(g),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text());
        last = r.json()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
    }

    // Discovery learns the new group on a miss; the caches then sync.
    for (path, resource) in [
        (
            "/apis/kubecache.test/v1/widgets",
            "kubecache.test/v1/widgets",
        ),
        (
            "/apis/kubecache.test/v1/gadgets",
            "kubecache.test/v1/gadgets",
        ),
    ] {
        let mut synced = false;
        for _ in 0..400 {
            get(&format!("{kc}{path}?resourceVersion=0")).await;
            let r = get(&format!("{kc}/readyz?verbose")).await;
            if r.text()
                .contains(&format!("[+]informer-sync/{resource} ok"))
            {
                synced = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(synced, "{resource} never synced");
    }
    let r = get(&format!(
        "{kc}/apis/kubecache.test/v1/gadgets?resourceVersion={last}"
    ))
    .await;
    assert_eq!(r.status, 200, "{}", r.text());

    let gadgets = "/apis/kubecache.test/v1/gadgets";
    let gadgets_sel = format!("{gadgets}?labelSelector=run%3D{run}");
    same_set(up, kc, &format!("{widgets}?resourceVersion=0")).await;
    same_set(up, kc, "/apis/kubecache.test/v1/widgets?resourceVersion=0").await;
    same_set(up, kc, &format!("{gadgets}?resourceVersion=0")).await;
    same_set(
        up,
        kc,
        &format!("{widgets}?resourceVersion=0&labelSelector=zone%3Da"),
    )
    .await;
    same_set(
        up,
        kc,
        &format!("{widgets}?resourceVersion=0&fieldSelector=metadata.name%3Dw2"),
    )
    .await;
    same_set(up, kc, &format!("{gadgets_sel}&resourceVersion={last}")).await;

    // Exact reads and walks come from the cache's snapshots, byte for byte.
    let widget_rv: u64 = get(&format!("{kc}{widgets}?resourceVersion=0"))
        .await
        .json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    same_bytes(
        up,
        kc,
        &format!("{widgets}?resourceVersion={widget_rv}&resourceVersionMatch=Exact"),
    )
    .await;
    same_walk(
        up,
        kc,
        &format!("{widgets}?resourceVersion={widget_rv}&limit=2"),
        async |_| {},
    )
    .await;
    same_walk(
        up,
        kc,
        &format!("{gadgets_sel}&resourceVersion={last}&limit=2"),
        async |_| {},
    )
    .await;
    same_walk(
        up,
        kc,
        &format!("{gadgets}?resourceVersion={last}&limit=3&resourceVersionMatch=Exact"),
        async |_| {},
    )
    .await;

    // Cluster-scoped built-ins walk the same way.
    let ns_rv = get(&format!("{kc}/api/v1/namespaces?resourceVersion=0"))
        .await
        .json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    same_walk(
        up,
        kc,
        &format!("/api/v1/namespaces?resourceVersion={ns_rv}&limit=1"),
        async |_| {},
    )
    .await;
    same_bytes(
        up,
        kc,
        &format!("/api/v1/namespaces?resourceVersion={ns_rv}&resourceVersionMatch=Exact"),
    )
    .await;

    // Gets, and errors.
    same_bytes(up, kc, &format!("{widgets}/w3?resourceVersion=0")).await;
    same_bytes(up, kc, &format!("{widgets}/nope?resourceVersion=0")).await;
    same_bytes(up, kc, &format!("{gadgets}/g{run}-1?resourceVersion=0")).await;
    // Field-label refusals word themselves per type and version.
    for (path, resource) in [
        ("/apis/apps/v1/replicasets", "apps/v1/replicasets"),
        ("/apis/batch/v1/jobs", "batch/v1/jobs"),
        ("/apis/events.k8s.io/v1/events", "events.k8s.io/v1/events"),
        ("/api/v1/nodes", "v1/nodes"),
    ] {
        wait_chain_synced(&chain, path, resource).await;
    }
    for path in [
        "/apis/apps/v1/replicasets?resourceVersion=0&fieldSelector=status.replicas%3D1",
        "/apis/batch/v1/jobs?resourceVersion=0&fieldSelector=status.active%3D1",
        "/apis/batch/v1/jobs?resourceVersion=0&fieldSelector=status.successful%3D1",
        "/apis/events.k8s.io/v1/events?resourceVersion=0&fieldSelector=source%3Dx",
        "/apis/events.k8s.io/v1/events?resourceVersion=0&fieldSelector=regarding.kind%3DPod",
        "/api/v1/nodes?resourceVersion=0&fieldSelector=metadata.namespace%3Dx",
    ] {
        same_bytes(up, kc, path).await;
    }
    // Accepted: a list, in v1.20's unspecified RV=0 order once other tests
    // have made several nodes.
    same_set(
        up,
        kc,
        "/api/v1/nodes?resourceVersion=0&fieldSelector=spec.unschedulable%3Dfalse",
    )
    .await;
    for path in [
        format!("{gadgets}?resourceVersion=0&fieldSelector=metadata.namespace%3Dx"),
        format!("{widgets}?resourceVersion=0&fieldSelector=spec.size%3D1"),
        format!("{widgets}?resourceVersion=0&labelSelector=zone%20notin%20a"),
        format!("{gadgets}?resourceVersionMatch=Exact"),
    ] {
        same_bytes(up, kc, &path).await;
    }
}
