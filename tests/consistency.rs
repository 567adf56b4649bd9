//! The consistency check (`reflector::consistency`): a cache that silently
//! lost an event is found different from its upstream at its own
//! resourceVersion and relisted; against the real apiserver, the check's
//! paginated metadata-only list at `resourceVersionMatch=Exact` finds a
//! synced cache the same.

mod common;

use common::*;
use http::Method;
use serde_json::json;
use std::sync::atomic::Ordering;
use std::time::Duration;

const CONFIGMAPS: &str = "/api/v1/configmaps";

fn configmaps(p: &Proxy) -> std::sync::Arc<kubecache::cache::TypeCache> {
    type_cache(p, "v1/configmaps").expect("configmaps cache")
}

async fn create_configmap(up: &str, ns: &str, name: &str) {
    let r = send(
        Method::POST,
        &format!("{up}/api/v1/namespaces/{ns}/configmaps"),
        Some(json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": ns}, "data": {"k": "v"}})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_that_silently_lost_an_event_is_found_different_and_relisted() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = ProxyBuilder::new(&sim.url)
            .consistency_check(Duration::from_millis(500))
            .start()
            .await;
        wait_synced(&p, CONFIGMAPS, "v1/configmaps").await;
        let tc = configmaps(&p);
        eventually("a watch is served", Duration::from_secs(10), || {
            sim.sim.watches_served.load(Ordering::Relaxed) > 0
        })
        .await;
        // The creation's event never reaches kubecache, and nothing after
        // it tells the reflector so: only a comparison finds it missing,
        // once the cache's resourceVersion has passed it (another object's
        // event), as a comparison at the cache's own version must.
        let r = get(&format!("{}/sim/faults?loseWatchEvents=1", sim.url)).await;
        assert_eq!(r.status, 200, "{}", r.text());
        create_configmap(&sim.url, "default", "lost").await;
        create_configmap(&sim.url, "default", "seen").await;
        converged(&sim.url, &p, CONFIGMAPS, Duration::from_secs(20)).await;
        assert_eq!(tc.tally().lists(), 2, "one relist");
    })
    .await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_apiservers_exact_list_finds_a_synced_cache_the_same_page_by_page() {
    use kubecache::reflector::consistency::{check, Outcome};
    within(120, async {
        let up = real_apiserver();
        let ns = format!("consistency-{}", unique_suffix());
        ensure_namespace(&up, &ns).await;
        // More than one page of the check's limit=500.
        let creates = (0..520).map(|i| {
            let up = up.clone();
            let ns = ns.clone();
            async move { create_configmap(&up, &ns, &format!("cm-{i:03}")).await }
        });
        use futures::StreamExt;
        futures::stream::iter(creates)
            .buffer_unordered(16)
            .collect::<Vec<()>>()
            .await;
        let p = ProxyBuilder::new(&up).start().await;
        wait_synced(&p, CONFIGMAPS, "v1/configmaps").await;
        let tc = configmaps(&p);
        let client = kubecache::upstream::Upstream::new(
            &kubecache::upstream::UpstreamConfig::new(&up).unwrap(),
        )
        .unwrap();
        // Its pages plain, and gzipped (over 128 KiB, the apiserver compresses).
        for gzip in [false, true] {
            match check(&client, &*tc, gzip).await.unwrap() {
                Outcome::Consistent { objects, .. } => {
                    assert_eq!(objects, tc.store.len(), "every cached configmap compared");
                    assert!(objects > 520);
                }
                other => panic!("a synced cache found {other:?} (gzip: {gzip})"),
            }
        }
    })
    .await;
}
