//! An RV-unset (consistent) read through kubecache always shows a write made
//! just before it, while other writers keep the type busy: 0 stale answers
//! in 1,000 trials; and through two kubecaches, each forwarding it.
//!
//! And answered from the cache (`consistentReads: prove`): 10,000 trials
//! of a write straight upstream, then a consistent get and a list through
//! kubecache, by many writers at once, across a busy type (configmaps,
//! which others write too), a quiet one (secrets: only the trials write
//! them while the upstream's revision moves on with other writers) and a
//! custom resource — 0 stale, against the simulator as a current
//! apiserver (busy types proven by their events, quiet ones by bookmarks)
//! and the real v1.20 (quiet ones forwarded, shared).

mod common;

use common::fixtures::resource_of;
use common::*;
use http::Method;
use kubecache::serve::ConsistentReads;
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Through `hops` kubecaches, each in front of the one before it.
async fn trials(up: &str, n: usize, hops: usize) {
    let chain = start_chain(up, hops).await;
    let p = chain.front();
    let ns = format!("ryw-{}-{hops}", std::process::id() % 100000);
    ensure_namespace(up, &ns).await;
    wait_chain_synced(&chain, "/api/v1/configmaps", "v1/configmaps").await;
    // Background churn on the same type, straight to the upstream.
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let (stop, up, ns) = (stop.clone(), up.to_string(), ns.clone());
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                send(Method::POST, &format!("{up}/api/v1/namespaces/{ns}/configmaps"), Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("bg{i}")}}))).await;
            }
        })
    };
    let mut stale = 0;
    for i in 0..n {
        let name = format!("w{i}");
        let c = send(
            Method::POST,
            &format!("{}/api/v1/namespaces/{ns}/configmaps", p.url),
            Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})),
        )
        .await;
        assert_eq!(c.status, 201, "{}", c.text());
        let got = get(&format!(
            "{}/api/v1/namespaces/{ns}/configmaps/{name}",
            p.url
        ))
        .await;
        let listed = get(&format!(
            "{}/api/v1/namespaces/{ns}/configmaps?fieldSelector=metadata.name%3D{name}",
            p.url
        ))
        .await;
        if got.status != 200 || listed.json()["items"].as_array().map_or(0, Vec::len) != 1 {
            stale += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    churn.await.unwrap();
    assert_eq!(stale, 0, "stale consistent reads");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_reads_see_every_prior_write_on_the_simulator() {
    let sim = SimBuilder::new().start().await;
    within(240, trials(&sim.url, 1000, 1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_reads_through_two_kubecaches_see_every_prior_write_on_the_simulator() {
    let sim = SimBuilder::new().start().await;
    within(240, trials(&sim.url, 300, 2)).await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_reads_see_every_prior_write_on_the_real_apiserver() {
    let up = real_apiserver();
    within(400, trials(&up, 1000, 1)).await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_reads_through_two_kubecaches_see_every_prior_write_on_the_real_apiserver() {
    let up = real_apiserver();
    within(400, trials(&up, 300, 2)).await;
}

/// Where a trial writes: a collection path in the namespace, and the
/// object it writes there.
#[derive(Clone)]
struct Target {
    /// e.g. `/api/v1/namespaces/NS/configmaps`
    collection: String,
    api_version: String,
    kind: String,
}

impl Target {
    /// The type's collection across namespaces: `/api/v1/configmaps`.
    fn all_namespaces(&self) -> String {
        let base = self.collection.split("/namespaces/").next().unwrap();
        format!("{base}/{}", self.collection.rsplit('/').next().unwrap())
    }

    fn object(&self, name: &str) -> serde_json::Value {
        let mut o =
            json!({"apiVersion": self.api_version, "kind": self.kind, "metadata": {"name": name}});
        if self.kind == "Secret" {
            o["data"] = json!({"k": "dg=="});
        }
        if self.kind != "Secret" && self.kind != "ConfigMap" {
            o["spec"] = json!({"n": name});
        }
        o
    }
}

/// What the proven trials found.
#[derive(Default)]
struct Found {
    stale: AtomicU64,
    trials: AtomicU64,
}

/// `trials` write-then-read trials by `writers` writers at once, spread
/// over `targets` (writer i writes `targets[i % len]`), through a
/// kubecache proving consistent reads; other writers keep the busy target
/// busy and the upstream's revision moving meanwhile.
async fn proven_trials(up: &str, targets: Vec<Target>, trials: usize, writers: usize) -> Proxy {
    let p = ProxyBuilder::new(up)
        .consistent(ConsistentReads::Prove)
        .no_consistency_check()
        .start()
        .await;
    for t in &targets {
        get(&format!(
            "{}{}?resourceVersion=0",
            p.url,
            t.all_namespaces()
        ))
        .await;
    }
    for t in &targets {
        wait_synced(&p, &t.all_namespaces(), &resource_of(&t.collection)).await;
    }
    let stop = Arc::new(AtomicBool::new(false));
    // The busy target written by others too, and another type written
    // all the while (events: they hold nothing the upstream runs out of,
    // as a service's IP): the upstream's revision never stands still.
    let background: Vec<_> = [
        targets[0].clone(),
        Target {
            collection: targets[0].collection.replace("configmaps", "events"),
            api_version: "v1".into(),
            kind: "Event".into(),
        },
    ]
    .into_iter()
    .enumerate()
    .map(|(n, t)| {
        let (stop, up) = (stop.clone(), up.to_string());
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let mut o = t.object(&format!("bg{n}-{i}"));
                if t.kind == "Event" {
                    let ns = t.collection.split('/').nth(4).unwrap_or("default").to_string();
                    o = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": format!("bg{n}-{i}")},
                        "involvedObject": {"kind": "ConfigMap", "namespace": ns, "name": "x"},
                        "reason": "Test", "message": "the revision moves on", "type": "Normal"});
                }
                send(Method::POST, &format!("{up}{}", t.collection), Some(o)).await;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    })
    .collect();
    let found = Arc::new(Found::default());
    let per_writer = trials.div_ceil(writers);
    let runs: Vec<_> = (0..writers)
        .map(|w| {
            let t = targets[w % targets.len()].clone();
            let (up, url, found) = (up.to_string(), p.url.clone(), found.clone());
            tokio::spawn(async move {
                for i in 0..per_writer {
                    let name = format!("ryw-{w}-{i}");
                    let c = send(
                        Method::POST,
                        &format!("{up}{}", t.collection),
                        Some(t.object(&name)),
                    )
                    .await;
                    assert_eq!(c.status, 201, "{}", c.text());
                    let got = get(&format!("{url}{}/{name}", t.collection)).await;
                    let listed = get(&format!(
                        "{url}{}?fieldSelector=metadata.name%3D{name}",
                        t.collection
                    ))
                    .await;
                    let items = if listed.status == 200 {
                        listed.json()["items"].as_array().map_or(0, Vec::len)
                    } else {
                        0
                    };
                    if got.status != 200 || items != 1 {
                        eprintln!(
                            "stale: {} get {} list {} ({items} items)",
                            name, got.status, listed.status
                        );
                        found.stale.fetch_add(1, Ordering::Relaxed);
                    }
                    found.trials.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for r in runs {
        r.await.unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for b in background {
        b.await.unwrap();
    }
    let n = found.trials.load(Ordering::Relaxed);
    assert!(n as usize >= trials, "{n} trials");
    assert_eq!(
        found.stale.load(Ordering::Relaxed),
        0,
        "stale consistent reads in {n} trials"
    );
    p
}

fn targets(ns: &str, custom: (&str, &str, &str)) -> Vec<Target> {
    let (group, plural, kind) = custom;
    vec![
        Target {
            collection: format!("/api/v1/namespaces/{ns}/configmaps"),
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
        },
        Target {
            collection: format!("/api/v1/namespaces/{ns}/secrets"),
            api_version: "v1".into(),
            kind: "Secret".into(),
        },
        Target {
            collection: format!("/apis/{group}/v1/namespaces/{ns}/{plural}"),
            api_version: format!("{group}/v1"),
            kind: kind.into(),
        },
    ]
}

/// How the proxy answered each target's reads: served, forwarded.
fn report(p: &Proxy, targets: &[Target]) -> Vec<(String, u64, u64)> {
    targets
        .iter()
        .map(|t| {
            let r = resource_of(&t.collection);
            let tc = type_cache(p, &r).unwrap();
            let served = tc.tally().served();
            let forwarded = tc.tally().forwarded();
            eprintln!(
                "{r}: {served} served from the cache, {forwarded} forwarded ({})",
                tc.freshness_mode().why
            );
            (r, served, forwarded)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_proven_consistent_reads_see_every_prior_write_on_a_current_simulator() {
    let sim = SimBuilder::new()
        .personality(kubecache_sim::Personality::V1_36)
        .custom_resource()
        .start()
        .await;
    let ns = "default";
    let t = targets(ns, kubecache_sim::WIDGETS);
    // Half the writers on the busy type, a quarter each on the others.
    let t = vec![t[0].clone(), t[1].clone(), t[0].clone(), t[2].clone()];
    let p = within(900, proven_trials(&sim.url, t.clone(), 10_000, 48)).await;
    // Served from the cache, not forwarded, on every target.
    for (r, served, forwarded) in report(&p, &t[..2]).into_iter().chain(report(&p, &t[3..])) {
        assert!(
            served > 0 && forwarded * 20 <= served,
            "{r}: {served} served, {forwarded} forwarded"
        );
    }
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_proven_consistent_reads_see_every_prior_write_on_the_real_apiserver() {
    let up = real_apiserver();
    let ns = format!("ryw-proven-{}", std::process::id() % 100000);
    ensure_namespace(&up, &ns).await;
    establish(&up, crd("ryws", "Ryw", "Namespaced")).await;
    let t = targets(&ns, ("kubecache.test", "ryws", "Ryw"));
    let t = vec![t[0].clone(), t[1].clone(), t[0].clone(), t[2].clone()];
    let p = within(900, proven_trials(&up, t.clone(), 10_000, 48)).await;
    report(&p, &t);
    // What the trials made goes, so that the tests after these list no
    // more than they would have.
    for path in [
        format!("/api/v1/namespaces/{ns}/configmaps"),
        format!("/api/v1/namespaces/{ns}/secrets"),
        format!("/api/v1/namespaces/{ns}/events"),
        format!("/apis/kubecache.test/v1/namespaces/{ns}/ryws"),
    ] {
        let r = send(Method::DELETE, &format!("{up}{path}"), None).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }
}
