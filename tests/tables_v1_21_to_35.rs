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
