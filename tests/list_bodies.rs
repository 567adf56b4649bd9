//! List bodies kept between events (src/serve/bodies.rs): every
//! representation served twice is the same body (Tables but for their
//! ages), kept once made, the pages of a walk too, and an event upstream
//! is never hidden by a kept body.

mod common;

use common::*;
use flate2::read::GzDecoder;
use http::Method;
use http_body_util::BodyExt;
use serde_json::Value;
use std::io::Read;
use std::time::Duration;

const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";
const META: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// (headers, how to find pod names in the body).
fn variants() -> Vec<(Vec<(&'static str, &'static str)>, &'static str)> {
    vec![
        (vec![("accept", "application/json")], "items"),
        (
            vec![("accept", "application/json"), ("accept-encoding", "gzip")],
            "items",
        ),
        (vec![("user-agent", "curl/8.5.0")], "items"),
        (
            vec![("user-agent", "curl/8.5.0"), ("accept-encoding", "gzip")],
            "items",
        ),
        (vec![("accept", TABLE)], "rows"),
        (vec![("accept", TABLE), ("accept-encoding", "gzip")], "rows"),
        (vec![("accept", META)], "items"),
    ]
}

/// The list's body as JSON, gunzipped if it came compressed.
async fn list(url: &str, headers: &[(&str, &str)]) -> (Vec<u8>, Value) {
    let resp = request_with(url, headers).await;
    assert_eq!(resp.status(), 200);
    let gz = resp.headers().get("content-encoding").is_some();
    let raw = resp
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    let plain = if gz { gunzip(&raw) } else { raw.clone() };
    (raw, serde_json::from_slice(&plain).unwrap())
}

fn gunzip(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    GzDecoder::new(raw).read_to_end(&mut out).unwrap();
    out
}

/// The proxy's cache of pods.
fn pods_cache(p: &Proxy) -> std::sync::Arc<kubecache::cache::TypeCache> {
    p.cache
        .all()
        .into_iter()
        .find(|t| t.rt.gvr.resource == "pods")
        .unwrap()
}

fn names(v: &Value, field: &str) -> Vec<String> {
    v[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let m = if field == "rows" {
                &i["object"]["metadata"]
            } else {
                &i["metadata"]
            };
            m["name"].as_str().unwrap().to_string()
        })
        .collect()
}

/// Has the pods' gzip pieces made (a gzip list asks for them), so that
/// kept gzip bodies are stitched from the start and not remade once when
/// the pieces are there.
async fn pieces_made(p: &Proxy) {
    let tc = pods_cache(p);
    let gz = [("accept", "application/json"), ("accept-encoding", "gzip")];
    list(&format!("{}/api/v1/pods?resourceVersion=0", p.url), &gz).await;
    while tc.pieces.fills() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_bodies_are_reused_until_an_event_and_never_hide_it() {
    within(60, async {
        // Enough pods that every form is over the gzip threshold.
        let sim = SimBuilder::new().pods(300).start().await;
        let p = start_proxy(&sim.url).await;
        wait_synced(&p, "/api/v1/pods", "v1/pods").await;
        pieces_made(&p).await;
        let url = format!("{}/api/v1/pods?resourceVersion=0", p.url);
        let mut before = Vec::new();
        for (headers, field) in variants() {
            let (a, va) = list(&url, &headers).await;
            let (b, _) = list(&url, &headers).await;
            // A Table's ages move on with the clock.
            if field != "rows" {
                assert_eq!(a, b, "{headers:?}: the same body twice");
            }
            assert_eq!(names(&va, field).len(), 300, "{headers:?}");
            before.push(va);
        }
        assert!(p.cache.body_budget().used() > 0, "bodies were kept");

        // One pod goes away upstream; once the cache has the event, no
        // representation still shows it.
        let gone = names(&before[0], "items")[0].clone();
        let ns = before[0]["items"][0]["metadata"]["namespace"]
            .as_str()
            .unwrap()
            .to_string();
        let r = send(
            Method::DELETE,
            &format!("{}/api/v1/namespaces/{ns}/pods/{gone}", sim.url),
            None,
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text());
        loop {
            let (_, v) = list(&url, &[("accept", "application/json")]).await;
            if !names(&v, "items").contains(&gone) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for ((headers, field), old) in variants().into_iter().zip(&before) {
            let (_, v) = list(&url, &headers).await;
            let now = names(&v, field);
            assert_eq!(now.len(), 299, "{headers:?}");
            assert!(
                !now.contains(&gone),
                "{headers:?} still shows the deleted pod"
            );
            assert_ne!(
                v["metadata"]["resourceVersion"],
                old["metadata"]["resourceVersion"]
            );
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_bodies_stay_within_their_configured_budget_and_the_rest_are_made_per_request() {
    within(60, async {
        let sim = SimBuilder::new().pods(300).start().await;
        // Room for the compact list (~1.4 MB) and not much more.
        let budget = 2 << 20;
        let limits = kubecache::cache::CacheLimits {
            max_kept_bytes: budget,
            ..Default::default()
        };
        let p = ProxyBuilder::new(&sim.url)
            .cache_limits(limits, Duration::from_secs(600))
            .start()
            .await;
        wait_synced(&p, "/api/v1/pods", "v1/pods").await;
        let url = format!("{}/api/v1/pods?resourceVersion=0", p.url);
        for (headers, field) in variants() {
            for _ in 0..2 {
                let (_, v) = list(&url, &headers).await;
                assert_eq!(names(&v, field).len(), 300, "{headers:?}");
                let used = p.cache.body_budget().used();
                assert!(used <= budget, "{headers:?}: {used} kept of {budget}");
            }
        }
        assert!(p.cache.body_budget().used() > 0, "what fits is kept");
    })
    .await;
}

/// Walks `first` page by page: each page's raw body and its items' names.
async fn walk(base: &str, first: &str, headers: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<String>)> {
    let mut pages = Vec::new();
    let mut path = first.to_string();
    loop {
        let (raw, v) = list(&format!("{base}{path}"), headers).await;
        pages.push((raw, names(&v, "items")));
        match v["metadata"]["continue"].as_str() {
            Some(c) if !c.is_empty() => path = format!("{first}&continue={c}"),
            _ => return pages,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_of_a_walk_are_kept_for_the_next_walker_until_an_event() {
    within(60, async {
        let sim = SimBuilder::new().pods(300).start().await;
        let p = ProxyBuilder::new(&sim.url)
            .consistent(kubecache::serve::ConsistentReads::ServeStale)
            .start()
            .await;
        wait_synced(&p, "/api/v1/pods", "v1/pods").await;
        pieces_made(&p).await;
        let gz = [("accept", "application/json"), ("accept-encoding", "gzip")];
        let first = walk(&p.url, "/api/v1/pods?limit=100", &gz).await;
        assert_eq!(first.len(), 3);
        let kept = p.cache.body_budget().used();
        assert!(kept > 0, "the pages were kept");
        let second = walk(&p.url, "/api/v1/pods?limit=100", &gz).await;
        assert_eq!(first, second, "the second walker gets the same pages");
        assert_eq!(
            p.cache.body_budget().used(),
            kept,
            "and nothing new was kept"
        );

        // A pod goes away: the next walk no longer shows it.
        let gone = &first[0].1[0];
        let pod = get(&format!("{}/api/v1/pods?resourceVersion=0", p.url))
            .await
            .json()["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["metadata"]["name"] == gone.as_str())
            .cloned()
            .unwrap();
        let r = send(
            Method::DELETE,
            &format!(
                "{}/api/v1/namespaces/{}/pods/{gone}",
                sim.url,
                pod["metadata"]["namespace"].as_str().unwrap()
            ),
            None,
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text());
        loop {
            let (_, v) = list(&format!("{}/api/v1/pods?resourceVersion=0", p.url), &[]).await;
            if !names(&v, "items").contains(gone) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let after: Vec<String> = walk(&p.url, "/api/v1/pods?limit=100", &gz)
            .await
            .into_iter()
            .flat_map(|(_, n)| n)
            .collect();
        assert_eq!(after.len(), 299);
        assert!(!after.contains(gone), "a kept page hid the deletion");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzipped_lists_after_events_are_stitched_and_are_the_plain_list() {
    within(90, async {
        let sim = SimBuilder::new().pods(300).start().await;
        let p = start_proxy_with(&sim.url, kubecache::serve::ConsistentReads::ServeStale).await;
        wait_synced(&p, "/api/v1/pods", "v1/pods").await;
        let tc = pods_cache(&p);
        let plain = [("accept", "application/json")];
        let gz = [("accept", "application/json"), ("accept-encoding", "gzip")];
        for step in 0..20 {
            // One event at a time; read once the cache has it, so that
            // both forms are of the same snapshot.
            let rv = tc.store.rv();
            sim.sim.churn_once(step);
            while tc.store.rv() == rv {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let all = format!("{}/api/v1/pods?resourceVersion=0", p.url);
            let (z, _) = list(&all, &gz).await;
            let (json, _) = list(&all, &plain).await;
            assert!(gunzip(&z) == json, "step {step}: the gzipped list differs");
            // A namespace's run and a walk's pages start mid-list.
            let ns = format!("{}/api/v1/namespaces/default/pods?resourceVersion=0", p.url);
            let (z, _) = list(&ns, &gz).await;
            let (json, _) = list(&ns, &plain).await;
            if z != json {
                assert!(
                    gunzip(&z) == json,
                    "step {step}: a namespace's list differs"
                );
            }
            let zpages = walk(&p.url, "/api/v1/pods?limit=120", &gz).await;
            let pages = walk(&p.url, "/api/v1/pods?limit=120", &plain).await;
            assert_eq!(zpages.len(), pages.len());
            for ((z, _), (json, _)) in zpages.iter().zip(&pages) {
                assert!(gunzip(z) == *json, "step {step}: a page differs");
            }
        }
        let (stitched, whole) = tc.pieces.counts();
        assert!(
            stitched > 40 && whole < stitched / 4,
            "stitched {stitched}, compressed whole {whole}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_list_kept_compressed_whole_is_stitched_once_the_pieces_are_made() {
    within(90, async {
        let sim = SimBuilder::new().pods(300).start().await;
        let p = start_proxy(&sim.url).await;
        wait_synced(&p, "/api/v1/pods", "v1/pods").await;
        let tc = pods_cache(&p);
        let all = format!("{}/api/v1/pods?resourceVersion=0", p.url);
        let gz = [("accept", "application/json"), ("accept-encoding", "gzip")];
        let (json, _) = list(&all, &[("accept", "application/json")]).await;
        // No event comes: the first body is compressed whole and kept, and
        // the pieces are made meanwhile.
        let rv = tc.store.rv();
        let (first, _) = list(&all, &gz).await;
        assert_eq!(tc.pieces.counts(), (0, 1));
        while tc.pieces.fills() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (second, _) = list(&all, &gz).await;
        let (third, _) = list(&all, &gz).await;
        assert_eq!(tc.store.rv(), rv, "the simulator made an event");
        // Stitched once, then kept (on the real apiserver's pods, with their
        // managed fields, a quarter smaller than the whole level-2 body).
        assert_eq!(tc.pieces.counts(), (1, 1));
        assert_eq!(third, second);
        assert!(gunzip(&first) == json && gunzip(&second) == json);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_of_exactly_the_gzip_threshold_goes_out_plain_and_one_byte_more_gzipped() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        let cms = "/api/v1/namespaces/edge/configmaps";
        let cm = |pad: usize| {
            serde_json::json!({"metadata": {"name": "big", "namespace": "edge"}, "data": {"pad": "x".repeat(pad)}})
        };
        let r = send(Method::POST, &format!("{}{cms}", sim.url), Some(cm(120_000))).await;
        assert_eq!(r.status, 201, "{}", r.text());
        let list_url = format!("{}{cms}?resourceVersion=0", p.url);
        let plain = [("accept", "application/json")];
        let gz = [("accept", "application/json"), ("accept-encoding", "gzip")];
        let tc = p
            .cache
            .all()
            .into_iter()
            .find(|t| t.rt.gvr.resource == "configmaps")
            .unwrap();
        let mut pad = 120_000i64;
        for target in [131_072usize, 131_073] {
            // Resize the object until the list is exactly `target` bytes
            // (its versions' digits may move it a little each time).
            let mut body = Vec::new();
            for _ in 0..10 {
                (body, _) = list(&list_url, &plain).await;
                if body.len() == target {
                    break;
                }
                pad += target as i64 - body.len() as i64;
                assert!(pad > 0, "the list is {} bytes without its pad", body.len());
                let r = send(
                    Method::PUT,
                    &format!("{}{cms}/big", sim.url),
                    Some(cm(pad as usize)),
                )
                .await;
                assert_eq!(r.status, 200, "{}", r.text());
                // Wait for this very write: a bookmark or another
                // configmap's event may move the cache's version first, and
                // a list read then still holds the old pad, so the resize
                // oscillates (CI once drove the pad below zero that way).
                let written: u64 = r.json()["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|v| v.parse().ok())
                    .expect("the write's resourceVersion");
                while tc.store.rv() < written {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            assert_eq!(body.len(), target);
            let resp = request_with(&list_url, &gz).await;
            let encoded = resp.headers().get("content-encoding").cloned();
            let raw = resp.into_body().collect().await.unwrap().to_bytes().to_vec();
            if target == 131_072 {
                assert_eq!(encoded, None, "a body of exactly the threshold goes out plain");
                assert_eq!(raw, body);
            } else {
                assert_eq!(encoded.unwrap(), "gzip");
                assert_eq!(gunzip(&raw), body);
            }
        }
    })
    .await;
}

/// Bodies of `recycle::MIN` and more are made in the buffers of the bodies
/// an event let go (src/encode/recycle.rs). After events that shrink the
/// list and grow it, each is still exactly the upstream's, with nothing of
/// the body that was there before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_bodies_made_in_reused_buffers_are_exactly_the_upstreams() {
    use kubecache::encode::recycle;
    within(120, async {
        let sim = SimBuilder::new().pods(2500).start().await;
        let p = start_proxy(&sim.url).await;
        wait_synced(&p, "/api/v1/pods", "v1/pods").await;
        let path = "/api/v1/pods?resourceVersion=0";
        let compact = [("accept", "application/json")];
        let curl = [("user-agent", "curl/8.5.0")];
        let reused_before = recycle::reused();
        let (_, upstream) = list(&format!("{}{path}", sim.url), &compact).await;
        for round in 0..4 {
            let m = &upstream["items"][round * 7]["metadata"];
            let pod = format!(
                "{}/api/v1/namespaces/{}/pods/{}",
                sim.url,
                m["namespace"].as_str().unwrap(),
                m["name"].as_str().unwrap()
            );
            let r = match round {
                0 => None,
                // Shorter than the body before, then longer.
                1 | 3 => Some(send(Method::DELETE, &pod, None).await),
                _ => {
                    let mut obj = get(&pod).await.json();
                    obj["metadata"]["annotations"]["long"] = Value::from("x".repeat(60_000));
                    Some(send(Method::PUT, &pod, Some(obj)).await)
                }
            };
            if let Some(r) = r {
                assert_eq!(r.status, 200, "round {round}: {}", r.text());
            }
            converged(&sim.url, &p, "/api/v1/pods", Duration::from_secs(30)).await;
            let (_, _, want) = fetch_with(&format!("{}{path}", sim.url), &compact).await;
            let (status, _, got) = fetch_with(&format!("{}{path}", p.url), &compact).await;
            assert_eq!(status, 200);
            assert!(
                got.len() >= recycle::MIN,
                "{} bytes: not a big body",
                got.len()
            );
            assert!(
                got == want,
                "round {round}: kubecache's {} bytes are not the simulator's {}",
                got.len(),
                want.len()
            );
            // The indented form is the biggest body; the simulator has none.
            let (status, _, pretty) = fetch_with(&format!("{}{path}", p.url), &curl).await;
            assert_eq!(status, 200);
            let pretty: Value = serde_json::from_slice(&pretty).unwrap();
            assert!(
                pretty == serde_json::from_slice::<Value>(&got).unwrap(),
                "round {round}"
            );
        }
        assert!(
            recycle::reused() > reused_before,
            "no body was made in a buffer handed back"
        );
    })
    .await;
}
