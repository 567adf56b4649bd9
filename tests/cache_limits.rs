//! What the cache may hold (`cache::limits`): a type too large for its
//! limit, or for the total, is let go and its reads forwarded — never an
//! out-of-memory kill — and cached again once it fits; a type nobody reads
//! or watches is let go after its idle time and started again by the next
//! read.

mod common;

use common::*;
use http::Method;
use kubecache::cache::CacheLimits;
use kubecache::reflector::Condition;
use kubecache::serve::state::ConsistentReads;
use serde_json::json;
use std::time::Duration;

const CONFIGMAPS: &str = "/api/v1/configmaps";
const PODS: &str = "/api/v1/pods";

/// The bytes of the objects of an RV=0 list of `path` upstream.
async fn objects_bytes(up: &str, path: &str) -> usize {
    let list = get(&format!("{up}{path}?resourceVersion=0")).await.json();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| serde_json::to_vec(i).unwrap().len())
        .sum()
}

/// kubecache in front of `sim` with `limits`, configmaps synced; a type let
/// go for its size lists again after `retry`.
async fn proxy_with(sim: &SimServer, limits: CacheLimits, retry: Duration) -> Proxy {
    let p = ProxyBuilder::new(&sim.url)
        .cache_limits(limits, retry)
        .start()
        .await;
    wait_synced(&p, CONFIGMAPS, "v1/configmaps").await;
    p
}

fn assert_configmaps_cached(p: &Proxy) {
    assert_served_with(
        p,
        ConsistentReads::Forward,
        "/api/v1/configmaps?resourceVersion=0",
        "",
    );
}

fn too_large(p: &Proxy, resource: &str) -> bool {
    type_cache(p, resource).is_some_and(|t| matches!(t.condition(), Condition::TooLarge(_)))
}

fn forwarded_as(p: &Proxy, path: &str) -> String {
    let uri: http::Uri = path.parse().unwrap();
    let request = kubecache::request::Request::parse(&Method::GET, &uri, &http::HeaderMap::new());
    use kubecache::serve::route::{decide, Route};
    match decide(&p.cache, ConsistentReads::Forward, &request) {
        Err(Route::Forward(r)) => r.as_str().to_string(),
        Ok(_) => "served from the cache".into(),
        Err(Route::Refused(e)) => format!("refused: {e:?}"),
        Err(Route::Answered(_)) => "answered".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_type_too_large_for_its_limit_is_forwarded_while_smaller_ones_are_cached() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let (cms, pods) = (
            objects_bytes(&sim.url, CONFIGMAPS).await,
            objects_bytes(&sim.url, PODS).await,
        );
        assert!(cms * 2 < pods, "configmaps {cms} B, pods {pods} B");
        let limits = CacheLimits {
            max_type_bytes: Some(cms * 2),
            ..Default::default()
        };
        let p = proxy_with(&sim, limits, Duration::from_secs(600)).await;
        let r = get(&format!("{}{PODS}?resourceVersion=0", p.url)).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["items"].as_array().unwrap().len(), 20);
        eventually("pods are let go", Duration::from_secs(10), || {
            too_large(&p, "v1/pods")
        })
        .await;
        assert_eq!(
            forwarded_as(&p, "/api/v1/pods?resourceVersion=0"),
            "too_large"
        );
        let again = get(&format!("{}{PODS}?resourceVersion=0", p.url)).await;
        assert_eq!(item_set(&again.json()).1.len(), 20, "forwarded, whole");
        assert_configmaps_cached(&p);
        let ready = get(&format!("{}/readyz?verbose", p.url)).await;
        assert_eq!(ready.status, 200, "{}", ready.text());
        // As many bytes as had come when the list was given up (it is not
        // held whole first): past the limit, at most the whole list.
        let text = ready.text();
        let said = text
            .split("[+]informer-sync/v1/pods excluded: too large to cache (")
            .nth(1)
            .unwrap_or_else(|| panic!("{text}"));
        let (n, rest) = said.split_once(' ').unwrap();
        let n: usize = n.parse().unwrap();
        assert!(n > cms * 2 && n <= pods, "{n} bytes of {pods}: {text}");
        assert!(
            rest.starts_with(&format!(
                "bytes of objects would pass the per-type limit of {}); reads forwarded",
                cms * 2
            )),
            "{text}"
        );
        assert_eq!(p.cache.cached_bytes(), cms, "only configmaps are held");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_type_that_would_pass_the_total_is_the_one_forwarded() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let cms = objects_bytes(&sim.url, CONFIGMAPS).await;
        let limits = CacheLimits {
            max_total_bytes: Some(cms + 1000),
            ..Default::default()
        };
        let p = proxy_with(&sim, limits, Duration::from_secs(600)).await;
        get(&format!("{}{PODS}?resourceVersion=0", p.url)).await;
        eventually("pods are let go", Duration::from_secs(10), || {
            too_large(&p, "v1/pods")
        })
        .await;
        let Condition::TooLarge(o) = type_cache(&p, "v1/pods").unwrap().condition() else {
            unreachable!()
        };
        assert_eq!((o.which, o.limit), ("total", cms + 1000));
        assert_configmaps_cached(&p);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_type_that_grows_past_its_limit_ends_its_watches_and_returns_once_it_fits() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let cms = objects_bytes(&sim.url, CONFIGMAPS).await;
        let limits = CacheLimits {
            max_type_bytes: Some(cms + 5_000),
            ..Default::default()
        };
        let p = proxy_with(&sim, limits, Duration::from_secs(1)).await;
        let list = get(&format!("{}{CONFIGMAPS}?resourceVersion=0", p.url))
            .await
            .json();
        let rv = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        let mut w = WatchStream::open(&format!(
            "{}{CONFIGMAPS}?watch=true&resourceVersion={rv}",
            p.url
        ))
        .await;
        let base = format!("{}/api/v1/namespaces/default/configmaps", sim.url);
        let big = "x".repeat(4_000);
        for i in 0..2 {
            let r = send(
                Method::POST,
                &base,
                Some(json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": format!("big-{i}"), "namespace": "default"},
                            "data": {"big": big}})),
            )
            .await;
            assert_eq!(r.status, 201, "{}", r.text());
        }
        // The first fits and is sent; past the second, the type is let go
        // and the watch ends (its client watches again: forwarded).
        assert_eq!(w.event(Duration::from_secs(10)).await["type"], "ADDED");
        loop {
            match w.next(Duration::from_secs(10)).await {
                WatchLine::End => break,
                WatchLine::Silent => panic!("the watch was not ended"),
                WatchLine::Event(e) => assert_ne!(e["type"], "ERROR", "{e}"),
            }
        }
        assert!(too_large(&p, "v1/configmaps"));
        assert_eq!(
            forwarded_as(&p, "/api/v1/configmaps?resourceVersion=0"),
            "too_large"
        );
        assert_eq!(p.cache.cached_bytes(), 0);
        // Once the objects fit again, the next try caches the type.
        for i in 0..2 {
            let r = send(Method::DELETE, &format!("{base}/big-{i}"), None).await;
            assert_eq!(r.status, 200, "{}", r.text());
        }
        eventually(
            "configmaps are cached again",
            Duration::from_secs(10),
            || type_cache(&p, "v1/configmaps").is_some_and(|t| t.is_synced()),
        )
        .await;
        converged(&sim.url, &p, CONFIGMAPS, Duration::from_secs(10)).await;
        assert_configmaps_cached(&p);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_type_nobody_reads_is_let_go_and_a_watched_one_is_kept() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let limits = CacheLimits {
            idle_after: Some(Duration::from_secs(1)),
            ..Default::default()
        };
        let p = proxy_with(&sim, limits, Duration::from_secs(600)).await;
        wait_synced(&p, PODS, "v1/pods").await;
        let mut w =
            WatchStream::open(&format!("{}{PODS}?watch=true&resourceVersion=0", p.url)).await;
        eventually("configmaps are let go", Duration::from_secs(10), || {
            type_cache(&p, "v1/configmaps").is_none()
        })
        .await;
        assert!(
            type_cache(&p, "v1/pods").is_some_and(|t| t.is_synced()),
            "watched: kept"
        );
        // The next read starts it again.
        wait_synced(&p, CONFIGMAPS, "v1/configmaps").await;
        converged(&sim.url, &p, CONFIGMAPS, Duration::from_secs(10)).await;
        // Once its watch is gone, so is the watched type; and with every
        // type let go, the cache holds nothing.
        drop(w.next(Duration::from_millis(1)).await);
        drop(w);
        // A closed watch is noticed when something is written to it, as
        // on the apiserver.
        let r = send(
            Method::POST,
            &format!("{}/api/v1/namespaces/default/pods", sim.url),
            Some(json!({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": "poke", "namespace": "default"},
                        "spec": {"containers": [{"name": "c", "image": "i"}]}})),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text());
        // A type is taken out of the registry, then its bytes let go.
        eventually("every type is let go", Duration::from_secs(10), || {
            p.cache.all().is_empty() && p.cache.cached_bytes() == 0
        })
        .await;
    })
    .await;
}
