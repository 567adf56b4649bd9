//! `/readyz` says whether a replica can serve what it is configured to
//! serve: its eager types synced and the upstream accepting kubecache's
//! credentials. A type a client's read started, which the upstream refuses
//! kubecache or fails, is reported and forwarded but never takes the
//! replica out of service; an upstream that is away is reported, and
//! kubecache's cache is current again within seconds of its return.

mod common;

use common::*;
use http::Method;
use kubecache::resource::GroupVersionResource;
use kubecache::serve::ConsistentReads;
use kubecache::upstream::UpstreamConfig;
use serde_json::json;
use std::time::{Duration, Instant};

/// The type of `resource` (`v1/pods`) cached from the start, as the
/// configuration's `eager` list does.
fn eager(p: &Proxy, resource: &str) {
    let (version, plural) = resource.split_once('/').unwrap();
    let gvr = GroupVersionResource::new("", version, plural);
    let discovery = p.cache.discovery();
    let rt = discovery.get(&gvr).expect("the upstream serves it");
    p.cache.start_eager(rt);
}

async fn readyz(p: &Proxy) -> (u16, String) {
    let r = get(&format!("{}/readyz?verbose", p.url)).await;
    (r.status.as_u16(), r.text())
}

/// Polls `/readyz?verbose` until it holds `line`, asserting on the way
/// that readiness never fails.
async fn ready_until(p: &Proxy, line: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        let (status, text) = readyz(p).await;
        assert_eq!(status, 200, "readiness failed:\n{text}");
        if text.contains(line) {
            return text;
        }
        assert!(Instant::now() < deadline, "never {line:?}:\n{text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// kubecache (trust-local) in front of the RBAC apiserver as `token`'s user.
async fn as_user(r: &RbacApiserver, token: &str) -> Proxy {
    let dir = std::env::temp_dir().join(format!("kubecache-ready-{}", unique_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let token_file = dir.join("token");
    std::fs::write(&token_file, token).unwrap();
    let upstream = UpstreamConfig::new(&r.url)
        .unwrap()
        .with_ca_file(&r.ca)
        .unwrap()
        .with_token_file(&token_file)
        .unwrap();
    ProxyBuilder::new(&r.url).upstream(upstream).start().await
}

/// `deploy/base`'s case: kubecache's identity may read pods but not
/// secrets, and someone reads secrets through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_type_the_upstream_refuses_kubecache_is_forwarded_and_never_fails_readiness() {
    within(90, async {
        let r = rbac_apiserver();
        let sfx = unique_suffix();
        let reads = json!(["get", "list", "watch"]);
        grant(
            &r.insecure,
            None,
            &format!("ready-pods-{sfx}"),
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": reads}]),
            ("User", "pod-reader"),
        )
        .await;
        let p = as_user(&r, "pods-token-8c21").await;
        eager(&p, "v1/pods");
        let deadline = Instant::now() + Duration::from_secs(30);
        while readyz(&p).await.0 != 200 {
            assert!(Instant::now() < deadline, "{}", readyz(&p).await.1);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // The read is forwarded as kubecache, and refused as the upstream
        // refuses kubecache's identity.
        let secrets = get(&format!("{}/api/v1/secrets?resourceVersion=0", p.url)).await;
        assert_eq!(secrets.status, 403, "{}", secrets.text());
        assert_eq!(secrets.json()["reason"], "Forbidden");
        let text = ready_until(
            &p,
            "[+]informer-sync/v1/secrets excluded: started by a read, \
             the upstream refuses kubecache its list (403); reads forwarded\n",
            Duration::from_secs(20),
        )
        .await;
        assert!(text.contains("[+]upstream ok\n"), "{text}");
        assert!(text.contains("[+]informer-sync/v1/pods ok\n"), "{text}");
        // For as long as the reflector keeps asking.
        for _ in 0..20 {
            assert_eq!(readyz(&p).await.0, 200);
            let again = get(&format!("{}/api/v1/secrets?resourceVersion=0", p.url)).await;
            assert_eq!(again.status, 403);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
}

/// A wrong `--token-file`: every upstream call is a 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_the_upstream_refuses_fail_readiness_and_say_so() {
    within(60, async {
        let r = rbac_apiserver();
        let p = as_user(&r, "no-such-token-0000").await;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (status, text) = readyz(&p).await;
            if text.contains("[-]upstream failed: reachable, kubecache's credentials refused (401)")
            {
                assert_eq!(status, 500, "{text}");
                assert!(text.ends_with("readyz check failed\n"), "{text}");
                break;
            }
            assert!(Instant::now() < deadline, "{text}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let plain = get(&format!("{}/readyz", p.url)).await;
        assert_eq!(plain.status, 500);
        // The apiserver's `exclude` takes the check out of the count.
        let excluded = get(&format!("{}/readyz?exclude=upstream", p.url)).await;
        assert_eq!(excluded.status, 200, "{}", excluded.text());
    })
    .await;
}

/// An upstream answering 500 to everything: a type a read starts then
/// cannot sync, and is forwarded; readiness holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_type_started_while_the_upstream_fails_does_not_fail_readiness() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        eager(&p, "v1/pods");
        wait_synced(&p, "/api/v1/pods", "v1/pods").await;
        let r = get(&format!("{}/sim/faults?errors=1000000", sim.url)).await;
        assert_eq!(r.status, 200);
        let cms = get(&format!("{}/api/v1/configmaps?resourceVersion=0", p.url)).await;
        assert_eq!(cms.status, 500, "{}", cms.text());
        let text = ready_until(
            &p,
            "[+]informer-sync/v1/configmaps excluded: started by a read, syncing; reads forwarded meanwhile\n",
            Duration::from_secs(10),
        )
        .await;
        ready_until(&p, "[+]upstream ok (reachable, answering 500 for ", Duration::from_secs(10)).await;
        assert!(text.contains("[+]informer-sync/v1/pods ok"), "{text}");
        let r = get(&format!("{}/sim/faults?errors=0", sim.url)).await;
        assert_eq!(r.status, 200);
        // Back: the type syncs and is served from the cache.
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        ready_until(&p, "[+]upstream ok\n", Duration::from_secs(15)).await;
    })
    .await;
}

/// The apiserver killed for a while and restarted: readiness holds and
/// says the upstream is away; RV=0 reads are served from the cache,
/// consistent ones fail as the apiserver's would; once it is back, the
/// cache is current within seconds, not at the end of a grown backoff.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_outage_the_cache_is_current_within_seconds_of_the_upstreams_return() {
    within(90, async {
        let sim = SimBuilder::new().start().await;
        let relay = Relay::start(&sim.url).await;
        let p = ProxyBuilder::new(&relay.url)
            .consistent(ConsistentReads::ServeStale)
            .start()
            .await;
        eager(&p, "v1/configmaps");
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        let cms = "/api/v1/configmaps";
        relay.cut();
        // Long enough for client-go's backoff to grow past 10 s.
        let outage = Instant::now();
        let text = ready_until(&p, "[+]upstream ok (unreachable: ", Duration::from_secs(10)).await;
        assert!(text.contains("[+]informer-sync/v1/configmaps ok ("), "{text}");
        let stale = get(&format!("{}{cms}?resourceVersion=0", p.url)).await;
        assert_eq!(stale.status, 200, "{}", stale.text());
        // serve-stale serves a most-recent read only from a cache that
        // follows the upstream: this one goes upstream, and fails.
        let fresh = get(&format!("{}{cms}", p.url)).await;
        assert_eq!(fresh.status, 503, "{}", fresh.text());
        while outage.elapsed() < Duration::from_secs(15) {
            assert_eq!(readyz(&p).await.0, 200);
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        // Written while kubecache could not see it.
        for i in 0..5 {
            let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": format!("during-outage-{i}"), "namespace": "default"}});
            let r = send(
                Method::POST,
                &format!("{}/api/v1/namespaces/default/configmaps", sim.url),
                Some(obj),
            )
            .await;
            assert_eq!(r.status, 201, "{}", r.text());
        }
        relay.restore().await;
        let back = Instant::now();
        converged(&sim.url, &p, cms, Duration::from_secs(5)).await;
        eprintln!("current {:?} after the upstream came back", back.elapsed());
        ready_until(&p, "[+]upstream ok\n", Duration::from_secs(5)).await;
    })
    .await;
}
