//! An upstream in trouble — failing requests, dropped, stalled, garbled or
//! expired watches — never leaves kubecache serving a wrong or half-built
//! cache: reads are forwarded until a type syncs, the reflector resumes or
//! relists, and the cache converges to the upstream's state.

mod common;

use common::*;
use http::Method;
use serde_json::json;
use std::sync::atomic::Ordering;
use std::time::Duration;

const CONFIGMAPS: &str = "/api/v1/configmaps";

async fn fault(sim: &SimServer, query: &str) {
    let r = get(&format!("{}/sim/faults?{query}", sim.url)).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

/// Creates, updates and deletes configmaps straight on the simulator.
async fn write_some(sim: &SimServer, tag: &str) {
    let base = format!("{}/api/v1/namespaces/default/configmaps", sim.url);
    for i in 0..3 {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": format!("{tag}-{i}"), "namespace": "default"},
                         "data": {"i": i.to_string()}});
        let r = send(Method::POST, &base, Some(obj.clone())).await;
        assert_eq!(r.status, 201, "{}", r.text());
        let mut updated = r.json();
        updated["data"]["i"] = json!("changed");
        let r = send(Method::PUT, &format!("{base}/{tag}-{i}"), Some(updated)).await;
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let r = send(Method::DELETE, &format!("{base}/{tag}-0"), None).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

async fn synced_proxy(b: ProxyBuilder) -> Proxy {
    let p = b.start().await;
    wait_synced(&p, CONFIGMAPS, "v1/configmaps").await;
    p
}

/// Writes made while the reflector's watch is stalled (so only a resumed
/// watch brings them), then `faults` switched on with the watch dropped:
/// returns once a re-watch has failed.
async fn fail_a_rewatch(
    sim: &SimServer,
    p: &Proxy,
    tag: &str,
    faults: &str,
) -> std::sync::Arc<kubecache::cache::TypeCache> {
    let tc = stats(p);
    let errors = tc.tally().errors();
    fault(sim, "stallWatches=true").await;
    write_some(sim, tag).await;
    fault(
        sim,
        &format!("{faults}&dropWatches=true&stallWatches=false"),
    )
    .await;
    eventually("a re-watch fails", Duration::from_secs(20), || {
        tc.tally().errors() > errors
    })
    .await;
    tc
}

fn stats(p: &Proxy) -> std::sync::Arc<kubecache::cache::TypeCache> {
    type_cache(p, "v1/configmaps").expect("configmaps cache")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_are_forwarded_until_a_failing_upstream_lets_the_cache_sync() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        // The next three upstream requests fail with 500.
        fault(&sim, "errors=3").await;
        let path = "/api/v1/configmaps?resourceVersion=0";
        for _ in 0..3 {
            let r = get(&format!("{}{path}", p.url)).await;
            match r.status.as_u16() {
                500 => assert_eq!(r.json()["reason"], "InternalError", "{}", r.text()),
                200 => assert_eq!(r.json()["items"].as_array().unwrap().len(), 10),
                other => panic!("{other}: {}", r.text()),
            }
        }
        wait_synced(&p, CONFIGMAPS, "v1/configmaps").await;
        let (a, b) = (
            get(&format!("{}{path}", sim.url)).await,
            get(&format!("{}{path}", p.url)).await,
        );
        assert_eq!(item_set(&a.json()), item_set(&b.json()));
        assert_eq!(item_set(&b.json()).1.len(), 10);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_watches_are_resumed_without_a_relist() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = synced_proxy(ProxyBuilder::new(&sim.url)).await;
        let tc = stats(&p);
        for round in 0..3 {
            let watches = tc.tally().watches();
            // The reflector's watch has reached the simulator, so the drop
            // reaches it (sent any sooner, it could overtake the request).
            eventually(
                "the simulator serves the watch",
                Duration::from_secs(10),
                || sim.sim.watches_served.load(Ordering::Relaxed) > round,
            )
            .await;
            fault(&sim, "dropWatches=true").await;
            eventually("the reflector re-watches", Duration::from_secs(10), || {
                tc.tally().watches() > watches
            })
            .await;
            write_some(&sim, &format!("drop{round}")).await;
            converged(&sim.url, &p, CONFIGMAPS, Duration::from_secs(10)).await;
        }
        // Resuming from the last rv kept the history: no relist was needed.
        assert_eq!(tc.tally().lists(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_rewatch_backs_off_and_recovers() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = synced_proxy(ProxyBuilder::new(&sim.url)).await;
        // Two failures, shared by the re-watches and the probes of the
        // upstream's health the first failure sets off.
        let tc = fail_a_rewatch(&sim, &p, "fail", "errors=2").await;
        converged(&sim.url, &p, CONFIGMAPS, Duration::from_secs(20)).await;
        assert_eq!(tc.tally().lists(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_rewatch_waits_as_long_as_the_upstream_asked() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = synced_proxy(ProxyBuilder::new(&sim.url)).await;
        // Every request is a 429 asking for 3 s until the first re-watch
        // has met one; then the upstream is well at once, and the probe of
        // its health finds so within a second: only the Retry-After keeps
        // the reflector from asking again before 3 s.
        let tc = fail_a_rewatch(
            &sim,
            &p,
            "throttled",
            "throttled=100000&retryAfterSeconds=3",
        )
        .await;
        let throttled_at = std::time::Instant::now();
        fault(&sim, "throttled=0").await;
        converged(&sim.url, &p, CONFIGMAPS, Duration::from_secs(10)).await;
        let waited = throttled_at.elapsed();
        assert!(
            waited >= Duration::from_millis(2900),
            "asked again {waited:?} after a Retry-After of 3 s"
        );
        assert_eq!(tc.tally().lists(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_watch_relists_into_a_buffer_and_readers_never_see_it_half_built() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = synced_proxy(ProxyBuilder::new(&sim.url)).await;
        let tc = stats(&p);
        let before = get(&format!("{}{CONFIGMAPS}?resourceVersion=0", p.url)).await;
        let before = item_set(&before.json());
        // A slow upstream keeps the relist in flight while we read.
        fault(&sim, "latencyMs=300&expire=true").await;
        let reads = async {
            let mut n = 0;
            while tc.tally().lists() < 2 {
                let r = get(&format!("{}{CONFIGMAPS}?resourceVersion=0", p.url)).await;
                assert_eq!(r.status, 200, "{}", r.text());
                // The old state or the relisted one (same objects at a
                // later rv), never a partial list.
                assert_eq!(item_set(&r.json()).1, before.1, "a read during the relist");
                n += 1;
            }
            n
        };
        let n = reads.await;
        assert!(n > 0, "no read happened while relisting");
        fault(&sim, "latencyMs=0").await;
        write_some(&sim, "expired").await;
        converged(&sim.url, &p, CONFIGMAPS, Duration::from_secs(10)).await;
        // Exact reads from before the relist are gone with the old history.
        let r = get(&format!(
            "{}{CONFIGMAPS}?resourceVersion={}&resourceVersionMatch=Exact",
            p.url, before.0
        ))
        .await;
        assert_eq!(r.status, 410, "{}", r.text());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_made_while_the_watch_was_expired_reach_the_cache() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = synced_proxy(ProxyBuilder::new(&sim.url)).await;
        let tc = stats(&p);
        // Stall first so the events between the compaction and the relist
        // cannot arrive by the old watch.
        fault(&sim, "stallWatches=true").await;
        write_some(&sim, "lost").await;
        fault(&sim, "stallWatches=false&expire=true").await;
        converged(&sim.url, &p, CONFIGMAPS, Duration::from_secs(15)).await;
        assert!(tc.tally().lists() >= 2);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_that_stalls_once_is_resumed_and_one_that_stalls_again_leads_to_a_relist() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let proxy = ProxyBuilder::new(&sim.url).watch_timeout(1, Duration::from_millis(500));
        let p = synced_proxy(proxy).await;
        let tc = stats(&p);
        let watches = tc.tally().watches();
        // One stall: the watch is still open past its timeout, given up,
        // and the re-watch (the stall over) picks up where it was.
        fault(&sim, "stallWatches=true").await;
        write_some(&sim, "stalled").await;
        eventually(
            "the reflector gives up on the watch open past its timeout",
            Duration::from_secs(10),
            || tc.tally().watches() > watches,
        )
        .await;
        fault(&sim, "stallWatches=false").await;
        converged(&sim.url, &p, CONFIGMAPS, Duration::from_secs(10)).await;
        assert_eq!(tc.tally().lists(), 1);
        // A stall that lasts: the re-watch stalls too, and only a relist
        // brings what was written meanwhile.
        fault(&sim, "stallWatches=true").await;
        write_some(&sim, "lasting").await;
        eventually(
            "a relist after the re-watch stalled too",
            Duration::from_secs(15),
            || tc.tally().lists() >= 2,
        )
        .await;
        converged(&sim.url, &p, CONFIGMAPS, Duration::from_secs(10)).await;
        fault(&sim, "stallWatches=false").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_watch_event_makes_the_reflector_relist_not_corrupt() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = synced_proxy(ProxyBuilder::new(&sim.url)).await;
        let tc = stats(&p);
        fault(&sim, "garbageWatchEvents=1").await;
        write_some(&sim, "garbled").await;
        converged(&sim.url, &p, CONFIGMAPS, Duration::from_secs(15)).await;
        assert!(tc.tally().errors() >= 1);
        assert!(tc.tally().lists() >= 2);
    })
    .await;
}

/// The simulator's own faults, seen by a plain watch client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulators_watch_faults_look_like_an_apiserver_in_trouble() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let list = get(&format!("{}{CONFIGMAPS}", sim.url)).await.json();
        let rv = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        let watch_url = format!("{}{CONFIGMAPS}?watch=1&resourceVersion={rv}", sim.url);

        let mut w = WatchStream::open(&watch_url).await;
        fault(&sim, "garbageWatchEvents=1").await;
        write_some(&sim, "seen").await;
        let first = w.event(Duration::from_secs(5)).await;
        assert!(first.get("undecodable").is_some(), "{first}");
        assert_eq!(w.event(Duration::from_secs(5)).await["type"], "MODIFIED");
        while let WatchLine::Event(_) = w.next(Duration::from_millis(300)).await {}

        fault(&sim, "stallWatches=true").await;
        write_some(&sim, "stalled").await;
        assert!(matches!(
            w.next(Duration::from_millis(300)).await,
            WatchLine::Silent
        ));
        fault(&sim, "stallWatches=false").await;
        assert_eq!(w.event(Duration::from_secs(5)).await["type"], "ADDED");

        fault(&sim, "dropWatches=true").await;
        loop {
            match w.next(Duration::from_secs(5)).await {
                WatchLine::End => break,
                WatchLine::Event(_) => continue,
                WatchLine::Silent => panic!("a dropped watch stayed open"),
            }
        }

        fault(&sim, "expire=true").await;
        let mut w = WatchStream::open(&watch_url).await;
        let e = w.event(Duration::from_secs(5)).await;
        assert_eq!(e["type"], "ERROR", "{e}");
        assert_eq!(e["object"]["code"], 410, "{e}");
        assert!(matches!(
            w.next(Duration::from_secs(5)).await,
            WatchLine::End
        ));

        let bad = get(&format!("{}/sim/faults?stallWatches=maybe", sim.url)).await;
        assert_eq!(bad.status, 400, "{}", bad.text());
        assert_eq!(bad.json()["reason"], "BadRequest");
    })
    .await;
}
