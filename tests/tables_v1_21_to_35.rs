//! Tables in front of a v1.35 to v1.21 upstream (the simulator as that
//! release): kubecache prints them from its cache as the release does, the
//! same bytes the simulator prints: pods, nodes and deployments (described
//! from an API version those releases do not serve).

mod common;

use common::*;
use kubecache_sim::Personality;
use std::sync::atomic::Ordering;

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// Kubecache's and the simulator's answers to `path`, read back to back
/// until no age ticked over between them (at most a few tries), and how
/// many lists the simulator answered meanwhile.
async fn both(p: &Proxy, s: &SimServer, path: &str) -> (String, String, u64) {
    let mut last = (String::new(), String::new(), 0);
    for _ in 0..5 {
        let before = s.sim.lists.total.load(Ordering::Relaxed);
        let (status, _, kc) = fetch(&format!("{}{path}", p.url), TABLE).await;
        assert_eq!(status, 200, "{kc}");
        let lists = s.sim.lists.total.load(Ordering::Relaxed) - before;
        let (_, _, up) = fetch(&format!("{}{path}", s.url), TABLE).await;
        last = (kc, up, lists);
        if last.0 == last.1 {
            break;
        }
    }
    last
}

async fn pods_and_nodes_through_kubecache_are_the_simulators(release: Personality) {
    let s = SimBuilder::new()
        .personality(release)
        .pods(30)
        .start()
        .await;
    let p = ProxyBuilder::new(&s.url).start().await;
    wait_synced(&p, "/api/v1/pods", "v1/pods").await;
    wait_synced(&p, "/api/v1/nodes", "v1/nodes").await;
    wait_synced(&p, "/apis/apps/v1/deployments", "apps/v1/deployments").await;

    // (Reads at resourceVersion=0: a consistent read may be forwarded to
    // prove the cache fresh, tests/consistent_reads.rs.)
    for path in [
        "/api/v1/pods?resourceVersion=0",
        "/api/v1/nodes?resourceVersion=0",
        "/api/v1/namespaces/team-02/pods?resourceVersion=0",
        "/apis/apps/v1/deployments?resourceVersion=0",
    ] {
        let (kc, up, lists) = both(&p, &s, path).await;
        assert_eq!(kc, up, "{release:?} {path}");
        // Printed from the cache, not forwarded: the simulator answered no
        // list for it.
        assert_eq!(lists, 0, "{release:?} {path} went upstream");
        assert!(
            kc.contains(r#""kind":"Table""#) && kc.contains(r#""rows":[{"#),
            "{path}"
        );
    }
    // Pods' restarts are the string column from v1.22 (kubernetes#100142),
    // v1.20's integer before; a node's kernel version has no architecture
    // before 1.36.
    let (_, _, pods) = fetch(&format!("{}/api/v1/pods?resourceVersion=0", p.url), TABLE).await;
    let restarts = if release == Personality::V1_21 {
        r#"{"name":"Restarts","type":"integer""#
    } else {
        r#"{"name":"Restarts","type":"string""#
    };
    assert!(pods.contains(restarts), "{pods}");
    let (_, _, nodes) = fetch(&format!("{}/api/v1/nodes?resourceVersion=0", p.url), TABLE).await;
    assert!(
        nodes.contains(r#""5.10.205-195.807.amzn2.x86_64","#),
        "{nodes}"
    );
    assert!(!nodes.contains("x86_64 (amd64)"), "{nodes}");
    // Deployments' Selector described from extensions/v1beta1, as printers.go
    // did until 1.36 (kubernetes#136100), not from apps/v1.
    let (_, _, deployments) = fetch(
        &format!("{}/apis/apps/v1/deployments?resourceVersion=0", p.url),
        TABLE,
    )
    .await;
    assert!(
        deployments.contains("will be the ones affected by this deployment.\",\"priority\":1}"),
        "{deployments}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_35() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_35),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_34() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_34),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_33() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_33),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_32() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_32),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_31() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_31),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_30() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_30),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_29() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_29),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_28() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_28),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_27() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_27),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_26() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_26),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_25() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_25),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_24() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_24),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_23() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_23),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_22() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_22),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_pods_and_nodes_through_kubecache_are_the_simulators_as_v1_21() {
    within(
        60,
        pods_and_nodes_through_kubecache_are_the_simulators(Personality::V1_21),
    )
    .await;
}

/// A deployment whose selector does not convert (stored before validation
/// caught it, kubernetes#99139). Up to v1.23 printDeployment returns the
/// conversion's error and the apiserver fails every Table holding it, so
/// kubecache leaves those Tables to the upstream (its JSON still comes from
/// the cache); from v1.24 the cell reads `<invalid>` (#107559), printed
/// from the cache.
async fn a_deployment_whose_selector_does_not_convert(release: Personality) {
    let s = SimBuilder::new().personality(release).pods(5).start().await;
    let p = ProxyBuilder::new(&s.url).start().await;
    wait_synced(&p, "/apis/apps/v1/deployments", "apps/v1/deployments").await;
    let t = s.sim.type_of("apps", "v1", "deployments").unwrap();
    s.sim
        .create(
            t,
            Some("team-01"),
            serde_json::json!({"metadata": {"name": "bad"}, "spec": {
                "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]},
                "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        )
        .unwrap();
    let one = "/apis/apps/v1/namespaces/team-01/deployments/bad?resourceVersion=0";
    for _ in 0..100 {
        if fetch(&format!("{}{one}", p.url), "application/json")
            .await
            .0
            == 200
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let list = "/apis/apps/v1/namespaces/team-01/deployments?resourceVersion=0";
    let lists = || s.sim.lists.total.load(Ordering::Relaxed);
    let before = lists();
    let (status, _, json) = fetch(&format!("{}{list}", p.url), "application/json").await;
    assert_eq!((status, lists() - before), (200, 0), "{json}");
    assert!(json.contains(r#""name":"bad""#));
    if release == Personality::V1_24 {
        let (kc, up, forwarded) = both(&p, &s, list).await;
        assert_eq!(kc, up);
        assert_eq!(forwarded, 0, "printed from the cache");
        assert!(kc.contains(r#""\u003cinvalid\u003e"]"#), "{kc}");
        return;
    }
    for path in [list, one] {
        let before = lists();
        let (status, _, kc) = fetch(&format!("{}{path}", p.url), TABLE).await;
        let forwarded = lists() - before;
        let (up_status, _, up) = fetch(&format!("{}{path}", s.url), TABLE).await;
        assert_eq!((status, &kc), (up_status, &up), "{path}");
        assert!(status >= 500, "{path}: {kc}");
        if path == list {
            assert_eq!(forwarded, 1, "the upstream answered it");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_whose_selector_does_not_convert_fails_v1_23s_tables_upstream() {
    within(
        60,
        a_deployment_whose_selector_does_not_convert(Personality::V1_23),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_whose_selector_does_not_convert_prints_invalid_in_v1_24s_tables() {
    within(
        60,
        a_deployment_whose_selector_does_not_convert(Personality::V1_24),
    )
    .await;
}
