//! Watches served from the cache: the same event sequence as the upstream
//! gives (types, objects, resourceVersions) while objects are created,
//! updated, relabelled and deleted, with and without selectors; many
//! watchers on one upstream watch; resuming; 410 for a position the cache
//! no longer covers; streaming lists; bookmarks and the deadline.

mod common;

use common::*;
use http::Method;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::time::Duration;

fn cm(name: &str, team: &str, data: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": {"team": team}},
           "data": {"v": data}})
}

async fn write(up: &str, method: Method, path: &str, body: Option<Value>) -> Value {
    let r = send(method, &format!("{up}{path}"), body).await;
    assert!(r.status.is_success(), "{path}: {}", r.text());
    r.json()
}

/// Creates, updates, relabels and deletes two configmaps upstream.
async fn script(up: &str, ns: &str) {
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    write(up, Method::POST, &base, Some(cm("a", "x", "1"))).await;
    write(up, Method::POST, &base, Some(cm("b", "y", "1"))).await;
    let mut a = write(up, Method::GET, &format!("{base}/a"), None).await;
    a["data"]["v"] = json!("2");
    let mut a = write(up, Method::PUT, &format!("{base}/a"), Some(a)).await;
    let mut b = write(up, Method::GET, &format!("{base}/b"), None).await;
    b["metadata"]["labels"]["team"] = json!("x");
    write(up, Method::PUT, &format!("{base}/b"), Some(b)).await;
    a["metadata"]["labels"]["team"] = json!("z");
    write(up, Method::PUT, &format!("{base}/a"), Some(a)).await;
    write(up, Method::DELETE, &format!("{base}/b"), None).await;
}

/// The next `n` events other than bookmarks, as (type, rv, object).
async fn events(w: &mut WatchStream, n: usize) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    while out.len() < n {
        let e = w.event(Duration::from_secs(10)).await;
        let kind = e["type"].as_str().unwrap_or_default().to_string();
        if kind == "BOOKMARK" {
            continue;
        }
        let rv = e["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        out.push((kind, rv, e["object"].clone()));
    }
    out
}

/// A simulator, kubecache in front with configmaps synced, and the rv of
/// an RV=0 list of `path` through kubecache: where a test's watches start.
async fn scene(path: &str) -> (SimServer, Proxy, String) {
    let sim = SimBuilder::new().start().await;
    let p = start_proxy(&sim.url).await;
    wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
    let list = get(&format!("{}{path}?resourceVersion=0", p.url))
        .await
        .json();
    let rv = rv_of(&list);
    (sim, p, rv)
}

fn rv_of(list: &Value) -> String {
    list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Through `hops` kubecaches, each in front of the one before it.
async fn same_events_as_upstream(up: &str, hops: usize) {
    let chain = start_chain(up, hops).await;
    let p = chain.front();
    let ns = format!("watch-{}", unique_suffix());
    ensure_namespace(up, &ns).await;
    wait_chain_synced(&chain, "/api/v1/configmaps", "v1/configmaps").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let list = get(&format!("{up}{path}")).await.json();
    let rv = rv_of(&list);
    let mut streams = Vec::new();
    for (query, count) in [
        (format!("watch=1&resourceVersion={rv}"), 6),
        (
            format!("watch=1&resourceVersion={rv}&labelSelector=team%3Dx"),
            5,
        ),
        (
            format!("watch=1&resourceVersion={rv}&fieldSelector=metadata.name%3Da"),
            3,
        ),
    ] {
        let direct = WatchStream::open(&format!("{up}{path}?{query}")).await;
        let cached = WatchStream::open(&format!("{}{path}?{query}", p.url)).await;
        streams.push((query, count, direct, cached));
    }
    script(up, &ns).await;
    for (query, count, mut direct, mut cached) in streams {
        let a = events(&mut direct, count).await;
        let b = events(&mut cached, count).await;
        let brief = |v: &[(String, String, Value)]| -> Vec<String> {
            v.iter()
                .map(|(t, rv, o)| format!("{t} {rv} {}", o["metadata"]["name"]))
                .collect()
        };
        assert_eq!(brief(&a), brief(&b), "{query}");
        assert_eq!(a, b, "{query}");
    }
    // A legacy /watch/ path for one object.
    let legacy = format!("/api/v1/watch/namespaces/{ns}/configmaps/a?resourceVersion={rv}");
    let mut direct = WatchStream::open(&format!("{up}{legacy}")).await;
    let mut cached = WatchStream::open(&format!("{}{legacy}", p.url)).await;
    assert_eq!(events(&mut direct, 3).await, events(&mut cached, 3).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_equal_the_simulators() {
    let sim = SimBuilder::new().start().await;
    within(60, same_events_as_upstream(&sim.url, 1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_through_two_kubecaches_equal_the_simulators() {
    let sim = SimBuilder::new().start().await;
    within(60, same_events_as_upstream(&sim.url, 2)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_through_three_kubecaches_equal_the_simulators() {
    let sim = SimBuilder::new().start().await;
    within(60, same_events_as_upstream(&sim.url, 3)).await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_equal_the_real_apiservers() {
    let up = real_apiserver();
    within(60, same_events_as_upstream(&up, 1)).await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_through_two_kubecaches_equal_the_real_apiservers() {
    let up = real_apiserver();
    within(60, same_events_as_upstream(&up, 2)).await;
}

/// `?watch` on a named object is a get to `up` and through kubecache in
/// front of it: the object, not a stream of events.
async fn a_named_watch_is_a_get(up: &str) {
    let ns = format!("named-watch-{}", unique_suffix());
    ensure_namespace(up, &ns).await;
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    write(up, Method::POST, &base, Some(cm("a", "x", "1"))).await;
    let p = start_proxy(up).await;
    wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
    for server in [up, p.url.as_str()] {
        let r = get(&format!("{server}{base}/a?watch=1")).await;
        assert_eq!(r.status, 200, "{server}: {}", r.text());
        let obj = r.json();
        assert_eq!(obj["kind"], "ConfigMap", "{server}: {obj}");
        assert_eq!(obj["metadata"]["name"], "a", "{server}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_objects_watch_parameter_is_ignored_as_the_simulator_ignores_it() {
    let sim = SimBuilder::new().start().await;
    within(60, a_named_watch_is_a_get(&sim.url)).await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_objects_watch_parameter_is_ignored_as_the_real_apiserver_ignores_it() {
    let up = real_apiserver();
    within(60, a_named_watch_is_a_get(&up)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_watchers_cost_one_upstream_watch() {
    within(120, async {
        let (sim, p, rv) = scene("/api/v1/configmaps").await;
        let upstream_watches = sim.sim.watches_served.load(Ordering::Relaxed);
        let mut watchers = Vec::new();
        for _ in 0..1000 {
            watchers.push(
                WatchStream::open(&format!(
                    "{}/api/v1/configmaps?watch=1&resourceVersion={rv}",
                    p.url
                ))
                .await,
            );
        }
        let ns = "default";
        script(&sim.url, ns).await;
        let first = events(&mut watchers[0], 6).await;
        for w in watchers.iter_mut().skip(1) {
            assert_eq!(events(w, 6).await, first);
        }
        assert_eq!(
            sim.sim.watches_served.load(Ordering::Relaxed),
            upstream_watches
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_resumes_from_its_last_version_without_loss_or_repeats() {
    within(60, async {
        let path = "/api/v1/namespaces/default/configmaps";
        let (sim, p, rv) = scene(path).await;
        let mut all =
            WatchStream::open(&format!("{}{path}?watch=1&resourceVersion={rv}", p.url)).await;
        let mut first =
            WatchStream::open(&format!("{}{path}?watch=1&resourceVersion={rv}", p.url)).await;
        script(&sim.url, "default").await;
        let expected = events(&mut all, 6).await;
        // Read three, hang up, resume from the third's version.
        let head = events(&mut first, 3).await;
        drop(first);
        let mut resumed = WatchStream::open(&format!(
            "{}{path}?watch=1&resourceVersion={}",
            p.url, head[2].1
        ))
        .await;
        let tail = events(&mut resumed, 3).await;
        assert_eq!([head, tail].concat(), expected);
        assert!(matches!(
            resumed.next(Duration::from_millis(300)).await,
            WatchLine::Silent
        ));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positions_the_cache_no_longer_covers_get_a_410_event() {
    within(60, async {
        let path = "/api/v1/configmaps";
        let (sim, p, rv) = scene(path).await;
        let mut open =
            WatchStream::open(&format!("{}{path}?watch=1&resourceVersion={rv}", p.url)).await;
        // Missed writes, then a compaction: kubecache's reflector relists
        // a changed state, so the open watch cannot continue seamlessly.
        get(&format!("{}/sim/faults?stallWatches=true", sim.url)).await;
        script(&sim.url, "default").await;
        get(&format!(
            "{}/sim/faults?stallWatches=false&expire=true",
            sim.url
        ))
        .await;
        let e = open.event(Duration::from_secs(15)).await;
        assert_eq!(e["type"], "ERROR", "{e}");
        assert_eq!(e["object"]["code"], 410);
        assert_eq!(e["object"]["reason"], "Expired");
        assert!(
            e["object"]["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("too old resource version: {rv} (")),
            "{e}"
        );
        assert!(matches!(
            open.next(Duration::from_secs(5)).await,
            WatchLine::End
        ));
        // A new watch from before the relist is refused the same way.
        let mut late =
            WatchStream::open(&format!("{}{path}?watch=1&resourceVersion={rv}", p.url)).await;
        let e = late.event(Duration::from_secs(5)).await;
        assert_eq!(e["object"]["code"], 410, "{e}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_and_delete_missed_before_a_relist_end_open_watches_with_a_410() {
    within(60, async {
        let path = "/api/v1/namespaces/default/configmaps";
        let (sim, p, rv) = scene(path).await;
        let mut open =
            WatchStream::open(&format!("{}{path}?watch=1&resourceVersion={rv}", p.url)).await;
        // A pair that leaves no trace in a list: the relist finds the same
        // objects at the same versions, yet the watch missed two events.
        get(&format!("{}/sim/faults?stallWatches=true", sim.url)).await;
        write(&sim.url, Method::POST, path, Some(cm("ghost", "x", "1"))).await;
        write(&sim.url, Method::DELETE, &format!("{path}/ghost"), None).await;
        get(&format!(
            "{}/sim/faults?stallWatches=false&expire=true",
            sim.url
        ))
        .await;
        let tc = type_cache(&p, "v1/configmaps").unwrap();
        eventually("the relist", Duration::from_secs(10), || {
            tc.tally().lists() >= 2
        })
        .await;
        write(&sim.url, Method::POST, path, Some(cm("after", "x", "1"))).await;
        let e = open.event(Duration::from_secs(15)).await;
        assert_eq!(e["type"], "ERROR", "the watch went on past a gap: {e}");
        assert_eq!(e["object"]["code"], 410, "{e}");
        assert!(matches!(
            open.next(Duration::from_secs(5)).await,
            WatchLine::End
        ));
    })
    .await;
}

/// Every event up to and including the `n`th that is not a periodic
/// bookmark (the initial-events-end bookmark counts), as (type, rv, object).
async fn events_with_end_bookmark(w: &mut WatchStream, n: usize) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    while out.len() < n {
        let e = w.event(Duration::from_secs(10)).await;
        let end = &e["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"];
        if e["type"] == "BOOKMARK" && end.is_null() {
            continue;
        }
        let rv = e["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default();
        out.push((
            e["type"].as_str().unwrap_or_default().to_string(),
            rv.to_string(),
            e["object"].clone(),
        ));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_lists_equal_a_current_apiservers() {
    within(60, async {
        // The simulator answering sendInitialEvents like a current apiserver.
        let sim = SimBuilder::new().watch_list().start().await;
        let up = sim.url.clone();
        let p = start_proxy(&up).await;
        let ns = "streaming";
        ensure_namespace(&up, ns).await;
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        write(&up, Method::POST, &path, Some(cm("pre", "x", "0"))).await;
        converged(&up, &p, &path, Duration::from_secs(10)).await;
        let list = get(&format!("{up}{path}")).await.json();
        let rv = rv_of(&list);
        let streaming = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
        let mut streams = Vec::new();
        for (query, count) in [
            // The pre-existing configmap, the end bookmark, six changes.
            (format!("{streaming}&resourceVersion={rv}"), 8),
            (format!("{streaming}&resourceVersion=0"), 8),
            (format!("{streaming}&resourceVersion=0&labelSelector=team%3Dx"), 7),
            // No initial events: only the changes.
            (format!("watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&resourceVersion={rv}"), 6),
        ] {
            let direct = WatchStream::open(&format!("{up}{path}?{query}")).await;
            let cached = WatchStream::open(&format!("{}{path}?{query}", p.url)).await;
            streams.push((query, count, direct, cached));
        }
        script(&up, ns).await;
        for (query, count, mut direct, mut cached) in streams {
            let a = events_with_end_bookmark(&mut direct, count).await;
            let b = events_with_end_bookmark(&mut cached, count).await;
            assert_eq!(a, b, "{query}");
            if query.contains("sendInitialEvents=true") {
                assert_eq!((a[0].0.as_str(), &a[0].2["metadata"]["name"]), ("ADDED", &json!("pre")), "{query}");
                let (kind, mark_rv, mark) = &a[1];
                assert_eq!(mark["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
                assert_eq!((kind.as_str(), mark["kind"].as_str()), ("BOOKMARK", Some("ConfigMap")), "{query}");
                assert!(mark_rv.parse::<u64>().unwrap() >= rv.parse::<u64>().unwrap(), "{query}");
            }
        }
        // The invalid combinations: the same 422s.
        for query in [
            "watch=1&sendInitialEvents=true",
            "watch=1&sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=5",
            "watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=5",
            "watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&continue=abc",
        ] {
            let a = get(&format!("{up}{path}?{query}")).await;
            let b = get(&format!("{}{path}?{query}", p.url)).await;
            assert_eq!((a.status, a.text()), (b.status, b.text()), "{query}");
            assert_eq!(a.status, 422, "{query}: {}", a.text());
        }
        // A version not reached within the wait: a 200 stream carrying one
        // ERROR event with the 504 Timeout Status, then its end.
        let far = rv.parse::<u64>().unwrap() + 1_000_000;
        let query = format!("watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion={far}");
        let mut direct = WatchStream::open(&format!("{up}{path}?{query}")).await;
        let mut cached = WatchStream::open(&format!("{}{path}?{query}", p.url)).await;
        let (a, b) = (direct.event(Duration::from_secs(10)).await, cached.event(Duration::from_secs(10)).await);
        assert_eq!((a["type"].as_str(), a["object"]["code"].as_i64()), (Some("ERROR"), Some(504)), "{a}");
        assert_eq!(a["object"]["reason"], b["object"]["reason"]);
        assert!(b["object"]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Timeout: Too large resource version: {far}, current: ")), "{b}");
        assert!(matches!(cached.next(Duration::from_secs(5)).await, WatchLine::End));
        assert!(matches!(direct.next(Duration::from_secs(5)).await, WatchLine::End));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bookmark_comes_just_before_the_deadline_then_a_clean_end() {
    within(60, async {
        let (_sim, p, rv) = scene("/api/v1/configmaps").await;
        let started = std::time::Instant::now();
        let mut w = WatchStream::open(&format!(
            "{}/api/v1/configmaps?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=3",
            p.url
        ))
        .await;
        let b = w.event(Duration::from_secs(5)).await;
        assert_eq!(b["type"], "BOOKMARK", "{b}");
        assert_eq!(b["object"]["metadata"]["resourceVersion"], rv.as_str());
        assert!(matches!(w.next(Duration::from_secs(5)).await, WatchLine::End));
        assert!(started.elapsed() >= Duration::from_secs(3));
        // Without allowWatchBookmarks there are none.
        let mut quiet = WatchStream::open(&format!(
            "{}/api/v1/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=3",
            p.url
        ))
        .await;
        assert!(matches!(quiet.next(Duration::from_secs(5)).await, WatchLine::End));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_watcher_is_cut_off_without_holding_back_the_others() {
    within(120, async {
        let path = "/api/v1/namespaces/default/configmaps";
        let (sim, p, rv) = scene(path).await;
        let url = format!("{}{path}?watch=1&resourceVersion={rv}", p.url);
        let mut stalled = WatchStream::open(&url).await;
        let mut live = WatchStream::open(&url).await;
        // More backlog than a watcher may hold, in objects too big for
        // socket buffers to hide: 4,000 events of 16 KiB.
        const N: usize = 4000;
        let t = sim.sim.type_of("", "v1", "configmaps").unwrap().clone();
        let big = "x".repeat(16 * 1024);
        let writer = {
            let sim = sim.sim.clone();
            tokio::task::spawn_blocking(move || {
                for i in 0..N {
                    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": format!("big-{i}"), "namespace": "default"},
                                     "data": {"v": big}});
                    sim.create(&t, Some("default"), obj).unwrap();
                }
            })
        };
        let mut seen = 0;
        let mut last = 0u64;
        while seen < N {
            let e = live.event(Duration::from_secs(30)).await;
            assert_eq!(e["type"], "ADDED", "{}", e["type"]);
            let v: u64 = e["object"]["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
            assert!(v > last, "out of order");
            last = v;
            seen += 1;
        }
        writer.await.unwrap();
        // The stalled one was cut off: it ends before delivering everything.
        let mut got = 0;
        loop {
            match stalled.next(Duration::from_secs(30)).await {
                WatchLine::Event(_) => got += 1,
                WatchLine::End => break,
                WatchLine::Silent => panic!("the stalled watcher was never closed"),
            }
        }
        assert!(got < N, "a stalled watcher got all {got} events");
    })
    .await;
}

/// A raw HTTP/1.1 exchange: the header lines but `Date`, and the chunks
/// of a chunked body, read until the server closes.
#[cfg(feature = "real-apiserver")]
async fn raw_chunks(base: &str, path: &str) -> (Vec<String>, Vec<String>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, mut body) = text.split_once("\r\n\r\n").unwrap();
    let headers = head
        .split("\r\n")
        .filter(|l| !l.starts_with("Date:"))
        .map(str::to_string)
        .collect();
    let mut chunks = Vec::new();
    loop {
        let (size, rest) = body.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size, 16).unwrap();
        if size == 0 {
            break;
        }
        chunks.push(rest[..size].to_string());
        body = &rest[size + 2..];
    }
    (headers, chunks)
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_framing_equals_the_real_apiservers() {
    let up = real_apiserver();
    within(60, async {
        let p = start_proxy(&up).await;
        let ns = format!("framing-{}", unique_suffix());
        ensure_namespace(&up, &ns).await;
        let base = format!("/api/v1/namespaces/{ns}/configmaps");
        for name in ["a", "b", "c"] {
            write(&up, Method::POST, &base, Some(cm(name, "x", "1"))).await;
        }
        wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
        converged(&up, &p, &base, Duration::from_secs(10)).await;
        let path = format!("{base}?watch=1&resourceVersion=0&timeoutSeconds=1");
        let (direct, cached) = tokio::join!(raw_chunks(&up, &path), raw_chunks(&p.url, &path));
        // The same status line and headers, spelled the same way.
        assert_eq!(cached.0, direct.0);
        // The same events (the v1.20 cacher sends the state in no
        // particular order, and flushes only when it has nothing queued,
        // so several events can share a chunk)…
        let events = |chunks: &[String]| {
            let mut lines: Vec<String> = chunks.concat().lines().map(str::to_string).collect();
            lines.sort();
            lines
        };
        assert_eq!(events(&cached.1), events(&direct.1));
        assert_eq!(events(&direct.1).len(), 3);
        // …and kubecache flushes each event as soon as it has it: one JSON
        // document and a newline per chunk.
        for chunk in &cached.1 {
            assert!(chunk.ends_with('\n'), "{chunk:?}");
            serde_json::from_str::<Value>(chunk).unwrap();
        }
    })
    .await;
}

/// The reflectors read on the cache's own runtime: with every thread that
/// serves clients held up (here the only one, never yielding), events
/// still reach the cache, so watchers find them there once they run.
#[test]
fn events_reach_the_cache_while_the_serving_runtime_is_held_up() {
    // The upstream runs apart too, so that only the serving side is held.
    let upstream_rt = tokio::runtime::Runtime::new().unwrap();
    let up = upstream_rt.block_on(SimBuilder::new().start());
    let serving = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    serving.block_on(async {
        let p = start_proxy(&up.url).await;
        wait_synced(&p, "/api/v1/pods", "v1/pods").await;
        let pods = p
            .cache
            .all()
            .into_iter()
            .find(|t| t.rt.gvr.resource == "pods")
            .unwrap();
        let before = pods.store.rv();
        up.sim.churn_once(1);
        let upstream_rv = up.sim.revision();
        assert!(upstream_rv > before);
        // Blocks the serving runtime's thread: no await until it is seen.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while pods.store.rv() < upstream_rv && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(pods.store.rv(), upstream_rv, "before {before}");
    });
}
