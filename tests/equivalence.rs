//! For a battery of list and get requests, the answer through kubecache
//! equals the upstream's own: same items (in the same order where the
//! upstream promises one), same list metadata, same Status for errors.
//! Runs against the simulator always, and against the real kube-apiserver
//! with `--features real-apiserver` (KUBECACHE_REAL_APISERVER=http://…).

mod common;

use common::*;
use http::Method;
use serde_json::json;
use std::time::Duration;

fn cm(name: &str, i: usize) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": {"i": i.to_string(), "parity": if i % 2 == 0 {"even"} else {"odd"}}},
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

fn url_keep(path: &str, keys: &[&str]) -> String {
    let q = path.split_once('?').map(|x| x.1).unwrap_or("");
    q.split('&')
        .filter(|kv| keys.iter().any(|k| kv.starts_with(&format!("{k}="))))
        .collect::<Vec<_>>()
        .join("&")
}

async fn battery(up: &str) {
    let p = start_proxy(up).await;
    let kc = p.url.as_str();
    let ns = format!("eq-{}", std::process::id() % 100000);
    ensure_namespace(up, &ns).await;
    let mut last = 0;
    for i in 0..7 {
        last = create(up, &ns, &format!("cm{i}"), i).await;
    }
    wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
    wait_synced(&p, "/api/v1/namespaces", "v1/namespaces").await;
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

    // A version the cache has not seen: both wait 3 s, then 504.
    let settled = get(&format!("{kc}{nsp}?resourceVersion=0")).await.json()["metadata"]
        ["resourceVersion"]
        .clone();
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
    tokio::time::timeout(Duration::from_secs(120), battery(&sim.url))
        .await
        .expect("battery timed out");
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_equal_the_real_apiservers() {
    let up = std::env::var("KUBECACHE_REAL_APISERVER")
        .expect("KUBECACHE_REAL_APISERVER=http://127.0.0.1:8080 (see .ci/run)");
    tokio::time::timeout(Duration::from_secs(120), battery(&up))
        .await
        .expect("battery timed out");
}
