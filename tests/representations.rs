//! Representations from the cache against the real apiserver: metadata-only
//! gets, lists and watches equal the apiserver's byte for byte (built-in
//! types and custom resources), and unusual Accept headers get the same
//! status through kubecache as directly.
#![cfg(feature = "real-apiserver")]

mod common;

use common::*;
use http::Method;
use serde_json::{json, Value};
use std::time::Duration;

const META_V1: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const META_LIST_V1: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const META_LIST_V1BETA1: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1";

/// Held by each test that writes widgets: a list's resourceVersion is the
/// type's across namespaces, so another test's write between the two reads
/// of a comparison would tell them apart (CI saw it once).
static WIDGETS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The same answer directly and through kubecache.
async fn same(up: &str, kc: &str, path: &str, accept: &str) -> (u16, String) {
    let a = fetch(&format!("{up}{path}"), accept).await;
    let b = fetch(&format!("{kc}{path}"), accept).await;
    assert_eq!(b, a, "{path} with {accept}");
    (a.0, a.2)
}

/// v1.20 leaves remainingItemCount out of PartialObjectMetadataList; kubecache
/// keeps it, as current apiservers do. Equal otherwise.
async fn same_metadata_page(up: &str, kc: &str, path: &str, accept: &str) -> Value {
    let a = fetch(&format!("{up}{path}"), accept).await;
    let b = fetch(&format!("{kc}{path}"), accept).await;
    assert_eq!((a.0, &a.1), (b.0, &b.1), "{path}");
    let (va, mut vb): (Value, Value) = (
        serde_json::from_str(&a.2).unwrap(),
        serde_json::from_str(&b.2).unwrap(),
    );
    assert!(va["metadata"].get("remainingItemCount").is_none());
    assert!(vb["metadata"]["remainingItemCount"].is_number(), "{}", b.2);
    vb["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("remainingItemCount");
    assert_eq!(
        serde_json::to_string(&vb).unwrap(),
        serde_json::to_string(&va).unwrap()
    );
    vb
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_reads_equal_the_real_apiservers() {
    let up = real_apiserver();
    within(90, async {
        let _alone = WIDGETS.lock().await;
        establish(&up, crd("widgets", "Widget", "Namespaced")).await;
        let p = start_proxy(&up).await;
        let kc = p.url.clone();
        let ns = format!("meta-{}", unique_suffix());
        ensure_namespace(&up, &ns).await;
        let cms = format!("/api/v1/namespaces/{ns}/configmaps");
        let widgets = format!("/apis/kubecache.test/v1/namespaces/{ns}/widgets");
        for i in 0..3 {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm{i}"), "labels": {"i": i.to_string()},
                             "annotations": {"z": "1", "a": "2"},
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u-1", "controller": true}],
                             "finalizers": ["x.io/f"]},
                "data": {"k": "v"}});
            assert_eq!(send(Method::POST, &format!("{up}{cms}"), Some(cm)).await.status, 201);
            let w = json!({"apiVersion": "kubecache.test/v1", "kind": "Widget",
                "metadata": {"name": format!("w{i}"), "labels": {"i": i.to_string()},
                             "annotations": {"z": "1", "a": "2"},
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u-1", "blockOwnerDeletion": true}]},
                "spec": {"size": i}});
            assert_eq!(send(Method::POST, &format!("{up}{widgets}"), Some(w)).await.status, 201);
        }
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        wait_synced(&p, "/apis/kubecache.test/v1/widgets", "kubecache.test/v1/widgets").await;
        converged(&up, &p, &cms, Duration::from_secs(10)).await;
        converged(&up, &p, &widgets, Duration::from_secs(10)).await;
        for base in [&cms, &widgets] {
            let one = if base == &cms { "cm1" } else { "w1" };
            // Gets, v1 and v1beta1; a missing object's 404.
            same(&up, &kc, &format!("{base}/{one}?resourceVersion=0"), META_V1).await;
            same(&up, &kc, &format!("{base}/{one}?resourceVersion=0"),
                 "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1").await;
            same(&up, &kc, &format!("{base}/nope?resourceVersion=0"), META_V1).await;
            // Whole lists (RV=0: one page), label-selected and empty ones.
            for query in ["resourceVersion=0&labelSelector=i%3D1", "resourceVersion=0&labelSelector=i%3D9"] {
                same(&up, &kc, &format!("{base}?{query}"), META_LIST_V1).await;
                same(&up, &kc, &format!("{base}?{query}"), META_LIST_V1BETA1).await;
            }
            // A page of a paginated list at an exact version the cache holds.
            let rv = get(&format!("{kc}{base}?resourceVersion=0")).await.json()["metadata"]["resourceVersion"]
                .as_str().unwrap().to_string();
            let page = same_metadata_page(&up, &kc,
                &format!("{base}?resourceVersion={rv}&resourceVersionMatch=Exact&limit=2"),
                META_LIST_V1).await;
            assert_eq!(page["items"].as_array().unwrap().len(), 2);
            // The wrong metadata form for the request: the apiserver's 406
            // (v1.20 answers a custom resource's get with a 500).
            let (code, _) = same(&up, &kc, &format!("{base}/{one}?resourceVersion=0"), META_LIST_V1).await;
            assert_eq!(code, if base == &cms { 406 } else { 500 });
            let (code, _) = same(&up, &kc, &format!("{base}?resourceVersion=0"), META_V1).await;
            assert_eq!(code, 406);
        }
        // A metadata watch: the same events as upstream's.
        let rv = get(&format!("{up}{cms}")).await.json()["metadata"]["resourceVersion"]
            .as_str().unwrap().to_string();
        let path = format!("{cms}?watch=1&resourceVersion={rv}");
        let mut direct = LineWatch::open(&format!("{up}{path}"), META_V1).await;
        let mut cached = LineWatch::open(&format!("{kc}{path}"), META_V1).await;
        let mut cm = get(&format!("{up}{cms}/cm0")).await.json();
        cm["metadata"]["labels"]["i"] = json!("changed");
        assert_eq!(send(Method::PUT, &format!("{up}{cms}/cm0"), Some(cm)).await.status, 200);
        assert_eq!(send(Method::DELETE, &format!("{up}{cms}/cm2"), None).await.status, 200);
        for _ in 0..2 {
            let (a, b) = (direct.line().await, cached.line().await);
            assert_eq!(b, a);
            assert!(a.contains("\"kind\":\"PartialObjectMetadata\""), "{a}");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusual_accept_headers_get_the_apiservers_answer() {
    let up = real_apiserver();
    within(60, async {
        let _alone = WIDGETS.lock().await;
        establish(&up, crd("widgets", "Widget", "Namespaced")).await;
        let p = start_proxy(&up).await;
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        wait_synced(
            &p,
            "/apis/kubecache.test/v1/widgets",
            "kubecache.test/v1/widgets",
        )
        .await;
        // Built-in resources pass go-restful's check first; custom
        // resources do not, and have no protobuf.
        // A namespace of its own, one object of each: lists other tests
        // do not write to.
        let ns = format!("accept-{}", unique_suffix());
        ensure_namespace(&up, &ns).await;
        let cms = format!("/api/v1/namespaces/{ns}/configmaps");
        let widgets = format!("/apis/kubecache.test/v1/namespaces/{ns}/widgets");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        assert_eq!(
            send(Method::POST, &format!("{up}{cms}"), Some(cm))
                .await
                .status,
            201
        );
        let w =
            json!({"apiVersion": "kubecache.test/v1", "kind": "Widget", "metadata": {"name": "a"}});
        assert_eq!(
            send(Method::POST, &format!("{up}{widgets}"), Some(w))
                .await
                .status,
            201
        );
        converged(&up, &p, &cms, Duration::from_secs(10)).await;
        converged(&up, &p, &widgets, Duration::from_secs(10)).await;
        for base in [&cms, &widgets] {
            let path = format!("{base}?resourceVersion=0");
            for accept in [
            "text/html",
            "application/json;q=abc",
            "application/json;q=0",
            "application/json;q=0.5, application/yaml;q=0.9",
            "Application/JSON",
            "application",
            "application/json/extra",
            "*",
            "application/*;q=0.2",
            "application/json;as=Table",
            "application/json;as=Foo;g=meta.k8s.io;v=v1",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v2",
            "application/json;v=v1;as=PartialObjectMetadataList;g=meta.k8s.io",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1;q=0.1, text/plain",
            "application/json;stream=watch",
            "application/json;sv=v9",
            ",,, ;;",
            "application/json;;;=;a==b",
            "application/vnd.kubernetes.protobuf, application/json;q=0.5",
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
        ] {
            let direct = fetch(&format!("{up}{path}"), accept).await;
            let cached = fetch(&format!("{}{path}", p.url), accept).await;
            assert_eq!((cached.0, &cached.1), (direct.0, &direct.1), "{path} {accept}");
            let listed = |b: &str| {
                serde_json::from_str::<Value>(b)
                    .ok()
                    .filter(|v| v["items"].is_array())
                    // Items only: an RV=0 list's version is any the
                    // cache has, and other tests write meanwhile.
                    .map(|v| item_set(&v).1)
            };
            match (direct.0, listed(&direct.2)) {
                // v1.20's RV=0 order is unspecified: the same item set.
                (200, Some(items)) => assert_eq!(listed(&cached.2), Some(items), "{path} {accept}"),
                (200, None) if direct.1 != "application/json" => {}
                _ => assert_eq!(cached.2, direct.2, "{path} {accept}"),
            }
        }
        }
        // A Table asked in protobuf: v1.20's 406 is v1.36.2's, byte for
        // byte (recorded in ../shared/reference/apiserver-v1.36), and
        // kubecache's (above).
        let table_pb = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io";
        let (_, _, direct) = fetch_with(
            &format!("{up}{cms}"),
            &[("accept", table_pb), ("user-agent", "curl/8.14.1")],
        )
        .await;
        let recorded = {
            use std::io::Read;
            let gz = std::fs::read(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../shared/reference/apiserver-v1.36/status/table-protobuf-406.body.gz"
            ))
            .unwrap();
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(&gz[..])
                .read_to_end(&mut out)
                .unwrap();
            out
        };
        assert_eq!(
            String::from_utf8_lossy(&direct),
            String::from_utf8_lossy(&recorded)
        );
        // Errors escape as Go's JSON does (`<` is \u003c), in both the
        // compact and the indented fallback form.
        for accept in [
            "application/json",
            "application/json;as=Table;g=meta.k8s.io;v=v1",
        ] {
            let path = format!("{cms}?resourceVersion=0&labelSelector=a%3D%3Cb");
            let (code, body) = same(&up, &p.url, &path, accept).await;
            assert_eq!(code, 400);
            assert!(body.contains("\\u003c"), "{body}");
        }
    })
    .await;
}
