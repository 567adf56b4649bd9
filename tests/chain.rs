//! kubecache in front of kubecache. The batteries of `equivalence`,
//! `watch`, `bookmarks`, `clients` and `read_your_writes` run through two
//! hops; this file holds what only a chain has: watch streams gzipped
//! between kubecaches (`Kubecache-Watch-Encoding: gzip`) and only there,
//! decoding to the events an uncompressed stream carries — changes,
//! initial events, bookmarks, the 410 ERROR event, the clean end at the
//! deadline — each as soon as it is written; forwarded watches left as the
//! apiserver answers them; a relist upstream reaching the far end; and
//! the bytes compression saves between two hops on pod churn.

mod common;

use bytes::BytesMut;
use common::*;
use http::Method;
use http_body_util::BodyExt;
use kubecache::upstream::watch_gzip::Gunzip;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// What a downstream kubecache's reflector sends beside its watch.
const DOWNSTREAM: [(&str, &str); 3] = [
    ("accept", "application/json"),
    ("accept-encoding", "gzip"),
    ("kubecache-watch-encoding", "gzip"),
];

fn cm(name: &str, data: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": {"chain": "yes"}},
           "data": {"v": data}})
}

async fn write(up: &str, method: Method, path: &str, body: Option<Value>) -> Value {
    let r = send(method, &format!("{up}{path}"), body).await;
    assert!(r.status.is_success(), "{path}: {}", r.text());
    r.json()
}

/// A watch read to its end: its head, and its lines once decoded.
struct Read {
    status: u16,
    headers: http::HeaderMap,
    lines: Vec<String>,
    /// The gzip stream's trailer was read (a gzipped stream only).
    trailer: bool,
}

/// Reads a watch to its end (within `limit`), decoding it if gzipped.
async fn read_watch(url: &str, headers: &[(&str, &str)], limit: Duration) -> Read {
    let resp = request_with(url, headers).await;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let gzipped = headers.get("content-encoding").is_some_and(|v| v == "gzip");
    let mut gunzip = Gunzip::default();
    let mut body = resp.into_body();
    let mut plain = BytesMut::new();
    let deadline = tokio::time::Instant::now() + limit;
    while let Some(frame) = tokio::time::timeout_at(deadline, body.frame())
        .await
        .unwrap_or_else(|_| panic!("{url}: not ended within {limit:?}"))
    {
        let Ok(data) = frame.unwrap().into_data() else {
            continue;
        };
        if gzipped {
            gunzip.push(&data, &mut plain, 64 << 20).unwrap();
        } else {
            plain.extend_from_slice(&data);
        }
    }
    let text = String::from_utf8(plain.to_vec()).unwrap();
    Read {
        status,
        headers,
        lines: text.lines().map(str::to_string).collect(),
        trailer: gzipped && gunzip.ended(),
    }
}

/// Creates, updates and deletes configmaps in `ns`, upstream.
async fn changes(up: &str, ns: &str) {
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    for name in ["a", "b", "c"] {
        write(up, Method::POST, &base, Some(cm(name, "1"))).await;
    }
    let mut a = write(up, Method::GET, &format!("{base}/a"), None).await;
    a["data"]["v"] = json!("2");
    write(up, Method::PUT, &format!("{base}/a"), Some(a)).await;
    write(up, Method::DELETE, &format!("{base}/b"), None).await;
}

/// One kubecache in front of `up`, configmaps synced, and a namespace of
/// the test's own with its list's rv (taken upstream).
async fn one_hop(up: &str, tag: &str) -> (Proxy, String, String) {
    let p = start_proxy(up).await;
    let ns = format!("{tag}-{}", unique_suffix());
    ensure_namespace(up, &ns).await;
    wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
    let rv = get(&format!("{up}/api/v1/namespaces/{ns}/configmaps"))
        .await
        .json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    (p, ns, rv)
}

/// The same watches read plain and gzipped, from a kubecache in front of
/// `up`: the gzipped ones decode to the same lines, end with the gzip
/// trailer where the plain ones end, and carry the gzip headers.
async fn gzipped_watches_decode_to_the_plain_ones(up: &str) {
    let (p, ns, rv) = one_hop(up, "chain-gzip").await;
    let base = format!("{}/api/v1/namespaces/{ns}/configmaps", p.url);
    // Changes after rv with the bookmark before the deadline; the state as
    // initial events; a position the cache never held (410 ERROR event);
    // initial events at a version it never reaches (504 ERROR event).
    let queries = [
        format!("watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=4"),
        "watch=1&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=4".to_string(),
        format!("watch=1&resourceVersion={rv}&labelSelector=chain%3Dyes&timeoutSeconds=4"),
        "watch=1&resourceVersion=1".to_string(),
        "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=999999999".to_string(),
    ];
    let mut reads = Vec::new();
    for q in &queries {
        let url = format!("{base}?{q}");
        let plain = tokio::spawn({
            let url = url.clone();
            async move {
                read_watch(
                    &url,
                    &[("accept", "application/json")],
                    Duration::from_secs(10),
                )
                .await
            }
        });
        let gzipped =
            tokio::spawn(
                async move { read_watch(&url, &DOWNSTREAM, Duration::from_secs(10)).await },
            );
        reads.push((q, plain, gzipped));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    changes(up, &ns).await;
    for (q, plain, gzipped) in reads {
        let (plain, gzipped) = (plain.await.unwrap(), gzipped.await.unwrap());
        assert_eq!((plain.status, gzipped.status), (200, 200), "{q}");
        assert!(!plain.lines.is_empty(), "{q}: no events");
        assert_eq!(gzipped.lines, plain.lines, "{q}");
        assert!(gzipped.trailer, "{q}: the gzip stream did not end whole");
        assert_eq!(gzipped.headers["content-encoding"], "gzip", "{q}");
        assert!(plain.headers.get("content-encoding").is_none(), "{q}");
        assert_eq!(
            gzipped.headers["content-type"], plain.headers["content-type"],
            "{q}"
        );
    }
    // What each query saw, so that the comparison above compared something.
    let bookmarked = read_watch(
        &format!("{base}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=3"),
        &DOWNSTREAM,
        Duration::from_secs(10),
    )
    .await;
    let kinds: Vec<String> = bookmarked
        .lines
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        kinds,
        ["ADDED", "ADDED", "ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
    );
    let expired = read_watch(
        &format!("{base}?watch=1&resourceVersion=1"),
        &DOWNSTREAM,
        Duration::from_secs(10),
    )
    .await;
    let e: Value = serde_json::from_str(&expired.lines[0]).unwrap();
    assert_eq!(
        (e["type"].as_str(), e["object"]["code"].as_i64()),
        (Some("ERROR"), Some(410))
    );
    assert_eq!(expired.lines.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzipped_watches_decode_to_the_plain_ones_on_the_simulator() {
    let sim = SimBuilder::new().start().await;
    within(60, gzipped_watches_decode_to_the_plain_ones(&sim.url)).await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzipped_watches_decode_to_the_plain_ones_on_the_real_apiserver() {
    within(
        60,
        gzipped_watches_decode_to_the_plain_ones(&real_apiserver()),
    )
    .await;
}

/// Each event of a gzipped watch can be decoded as soon as it is
/// written, without waiting for the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_gzipped_event_decodes_without_waiting_for_the_next() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let up = sim.url.as_str();
        let (p, ns, rv) = one_hop(up, "chain-flush").await;
        let url = format!(
            "{}/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion={rv}",
            p.url
        );
        let resp = request_with(&url, &DOWNSTREAM).await;
        assert_eq!(resp.headers()["content-encoding"], "gzip");
        let mut body = resp.into_body();
        let mut gunzip = Gunzip::default();
        let mut plain = BytesMut::new();
        let base = format!("/api/v1/namespaces/{ns}/configmaps");
        for (i, name) in ["one", "two", "three"].into_iter().enumerate() {
            write(up, Method::POST, &base, Some(cm(name, "x"))).await;
            // Nothing else is written until this event has been decoded.
            while plain.iter().filter(|b| **b == b'\n').count() <= i {
                let frame = tokio::time::timeout(Duration::from_secs(5), body.frame())
                    .await
                    .unwrap_or_else(|_| panic!("event {i} not decodable within 5 s"))
                    .unwrap()
                    .unwrap();
                if let Ok(data) = frame.into_data() {
                    gunzip.push(&data, &mut plain, 1 << 20).unwrap();
                }
            }
            let last = String::from_utf8(plain.to_vec()).unwrap();
            let e: Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
            assert_eq!(e["object"]["metadata"]["name"], name);
        }
    })
    .await;
}

/// Clients other than a kubecache keep the apiserver's uncompressed
/// lines, Accept-Encoding: gzip or not, as the apiserver answers them
/// (which never compresses a watch).
async fn only_a_kubecache_gets_a_gzipped_watch(up: &str, compare_upstream: bool) {
    let (p, ns, rv) = one_hop(up, "chain-plain").await;
    let path =
        format!("/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=2");
    write(
        up,
        Method::POST,
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        Some(cm("x", "1")),
    )
    .await;
    let plain_client = [("accept", "application/json"), ("accept-encoding", "gzip")];
    let only_header = [
        ("accept", "application/json"),
        ("kubecache-watch-encoding", "gzip"),
    ];
    let cached = read_watch(
        &format!("{}{path}", p.url),
        &plain_client,
        Duration::from_secs(10),
    )
    .await;
    let without_gzip = read_watch(
        &format!("{}{path}", p.url),
        &only_header,
        Duration::from_secs(10),
    )
    .await;
    for r in [&cached, &without_gzip] {
        assert_eq!(r.status, 200);
        assert!(
            r.headers.get("content-encoding").is_none(),
            "{:?}",
            r.headers
        );
        assert_eq!(r.lines.len(), 1, "{:?}", r.lines);
        serde_json::from_str::<Value>(&r.lines[0]).unwrap();
    }
    if compare_upstream {
        let direct = read_watch(
            &format!("{up}{path}"),
            &plain_client,
            Duration::from_secs(10),
        )
        .await;
        assert!(direct.headers.get("content-encoding").is_none());
        assert_eq!(direct.lines, cached.lines);
        let direct = read_watch(&format!("{up}{path}"), &DOWNSTREAM, Duration::from_secs(10)).await;
        assert!(
            direct.headers.get("content-encoding").is_none(),
            "the apiserver ignores the header"
        );
        assert_eq!(direct.lines, cached.lines);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_kubecache_gets_a_gzipped_watch_from_the_simulators_cache() {
    let sim = SimBuilder::new().start().await;
    within(60, only_a_kubecache_gets_a_gzipped_watch(&sim.url, false)).await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_kubecache_gets_a_gzipped_watch_as_the_real_apiserver_answers() {
    within(
        60,
        only_a_kubecache_gets_a_gzipped_watch(&real_apiserver(), true),
    )
    .await;
}

/// A watch kubecache forwards (a consistent one: RV unset) is the
/// apiserver's answer whatever the downstream's header says: same status
/// line and headers, uncompressed.
#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarded_watch_is_the_apiservers_whatever_the_header() {
    let up = real_apiserver();
    within(60, async {
        let (p, ns, _) = one_hop(&up, "chain-fwd").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps?watch=1&timeoutSeconds=2");
        let base = format!("/api/v1/namespaces/{ns}/configmaps");
        let (direct_url, forwarded_url) = (format!("{up}{path}"), format!("{}{path}", p.url));
        let (direct, forwarded, _) = tokio::join!(
            read_watch(&direct_url, &DOWNSTREAM, Duration::from_secs(10)),
            read_watch(&forwarded_url, &DOWNSTREAM, Duration::from_secs(10)),
            async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                write(&up, Method::POST, &base, Some(cm("f", "1"))).await;
            }
        );
        let without_date = |h: &http::HeaderMap| {
            let mut v: Vec<String> = h
                .iter()
                .filter(|(k, _)| *k != "date" && !k.as_str().starts_with("audit-id"))
                .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap()))
                .collect();
            v.sort();
            v
        };
        assert_eq!(forwarded.status, direct.status);
        assert_eq!(
            without_date(&forwarded.headers),
            without_date(&direct.headers)
        );
        assert!(forwarded.headers.get("content-encoding").is_none());
        assert_eq!(forwarded.lines, direct.lines);
        assert_eq!(forwarded.lines.len(), 1);
    })
    .await;
}

/// The reflector of a kubecache in front of a kubecache asks for gzip and
/// reads it; in front of the apiserver, which ignores the ask, it reads
/// the plain stream; with the ask turned off it gets the plain stream.
async fn the_downstream_reflector_reads_either_stream(up: &str) {
    let a = start_proxy(up).await;
    let b = start_proxy(&a.url).await;
    let b_plain = ProxyBuilder::new(&a.url).upstream_gzip(false).start().await;
    let ns = format!("chain-refl-{}", unique_suffix());
    ensure_namespace(up, &ns).await;
    for p in [&a, &b, &b_plain] {
        wait_synced(p, "/api/v1/configmaps", "v1/configmaps").await;
    }
    changes(up, &ns).await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    converged_items(up, &b, &path, Duration::from_secs(10)).await;
    converged_items(up, &b_plain, &path, Duration::from_secs(10)).await;
    let stats = |p: &Proxy| {
        let t = type_cache(p, "v1/configmaps").unwrap();
        let s = t.tally();
        (s.watches(), s.gzipped_watches(), s.watch_bytes())
    };
    let (watches, gzipped, bytes) = stats(&b);
    assert!(
        watches >= 1 && gzipped == watches && bytes > 0,
        "{:?}",
        stats(&b)
    );
    let (watches, gzipped, _) = stats(&a);
    assert!(watches >= 1 && gzipped == 0, "{:?}", stats(&a));
    let (watches, gzipped, _) = stats(&b_plain);
    assert!(watches >= 1 && gzipped == 0, "{:?}", stats(&b_plain));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_downstream_reflector_reads_either_stream_on_the_simulator() {
    let sim = SimBuilder::new().start().await;
    within(60, the_downstream_reflector_reads_either_stream(&sim.url)).await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_downstream_reflector_reads_either_stream_on_the_real_apiserver() {
    within(
        60,
        the_downstream_reflector_reads_either_stream(&real_apiserver()),
    )
    .await;
}

/// The simulator compacts its history and drops every watch with changes
/// meanwhile: the kubecache next to it relists, the one in front of that
/// finds its position gone (410) and relists through it, and both end
/// with the simulator's state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_upstream_reaches_the_far_end_of_the_chain() {
    within(90, async {
        let sim = SimBuilder::new().start().await;
        let up = sim.url.as_str();
        let chain = start_chain(up, 2).await;
        wait_chain_synced(&chain, "/api/v1/configmaps", "v1/configmaps").await;
        let lists = |p: &Proxy| type_cache(p, "v1/configmaps").unwrap().tally().lists();
        let before: Vec<u64> = chain.hops.iter().map(lists).collect();
        let ns = "default";
        changes(up, ns).await;
        let r = get(&format!("{up}/sim/faults?expire=true")).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let base = format!("/api/v1/namespaces/{ns}/configmaps");
        write(up, Method::POST, &base, Some(cm("after-expiry", "1"))).await;
        for p in &chain.hops {
            converged(up, p, "/api/v1/configmaps", Duration::from_secs(30)).await;
        }
        let after: Vec<u64> = chain.hops.iter().map(lists).collect();
        assert!(
            after[0] > before[0],
            "the first hop did not relist: {before:?} {after:?}"
        );
    })
    .await;
}

/// Bytes on the wire between two kubecaches while the simulator churns
/// its pods (status flips and label moves, `churn_once`), with and without
/// gzipped watches: two front kubecaches, each behind a counting relay,
/// follow one kubecache in front of the simulator. Prints the numbers;
/// `KUBECACHE_CHAIN_SECONDS` (default 10) sets how long the churn runs,
/// `KUBECACHE_CHAIN_CHURN` (default 50) its updates per second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzipped_watches_carry_a_fraction_of_the_bytes_on_pod_churn() {
    let seconds: u64 = std::env::var("KUBECACHE_CHAIN_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let per_sec: u64 = std::env::var("KUBECACHE_CHAIN_CHURN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    within(seconds + 120, async {
        let sim = SimBuilder::new().pods(2000).start().await;
        let a = start_proxy(&sim.url).await;
        wait_synced(&a, "/api/v1/pods", "v1/pods").await;
        let (relay_gzip, relay_plain) = (Relay::start(&a.url).await, Relay::start(&a.url).await);
        // Without consistency checks: their pages (gzipped or not) would
        // pass the relays at random times within the run.
        let b_gzip = ProxyBuilder::new(&relay_gzip.url)
            .no_consistency_check()
            .start()
            .await;
        let b_plain = ProxyBuilder::new(&relay_plain.url)
            .upstream_gzip(false)
            .no_consistency_check()
            .start()
            .await;
        // Started by a read of an empty namespace, so that the relays
        // carry the reflectors' lists and not a client's forwarded one.
        for b in [&b_gzip, &b_plain] {
            wait_synced(b, "/api/v1/namespaces/none/pods", "v1/pods").await;
        }
        let listed = (relay_gzip.down_bytes(), relay_plain.down_bytes());
        let watched = |b: &Proxy| {
            type_cache(b, "v1/pods")
                .unwrap()
                .tally().watch_bytes()
        };
        let body_before = (watched(&b_gzip), watched(&b_plain));
        // A churn step that changes nothing (the pod already so) makes no
        // event: the events are the versions the simulator made.
        let revision = sim.sim.revision();
        let started = Instant::now();
        let mut step = 0u64;
        let every = Duration::from_secs_f64(1.0 / per_sec as f64);
        let mut tick = tokio::time::interval(every);
        while started.elapsed() < Duration::from_secs(seconds) {
            tick.tick().await;
            step += 1;
            sim.sim.churn_once(step);
        }
        let events = sim.sim.revision() - revision;
        // Both fronts hold every change before the bytes are read.
        let path = "/api/v1/pods";
        converged(&sim.url, &b_gzip, path, Duration::from_secs(30)).await;
        converged(&sim.url, &b_plain, path, Duration::from_secs(30)).await;
        let wire = (
            relay_gzip.down_bytes() - listed.0,
            relay_plain.down_bytes() - listed.1,
        );
        let body = (
            watched(&b_gzip) - body_before.0,
            watched(&b_plain) - body_before.1,
        );
        let ratio = wire.0 as f64 / wire.1 as f64;
        println!(
            "chain churn: {step} pod updates asked, {events} made, in {seconds} s; between the hops, the watch \
             (wire, headers and framing included): gzip {} bytes, plain {} bytes ({:.1}% of \
             plain, {:.0} vs {:.0} bytes per event); watch bodies {} vs {}; the reflectors' \
             lists of 2,000 pods: {} bytes gzipped, {} plain",
            wire.0,
            wire.1,
            ratio * 100.0,
            wire.0 as f64 / events as f64,
            wire.1 as f64 / events as f64,
            body.0,
            body.1,
            listed.0,
            listed.1,
        );
        assert!(
            events > step / 2 && wire.1 > events * 1000,
            "the plain watch carried too little: {wire:?} for {events} events"
        );
        assert!(ratio < 0.25, "gzip saved too little: {wire:?}");
        assert!(
            (listed.0 as f64) < listed.1 as f64 * 0.35,
            "the gzipped list saved too little: {listed:?}"
        );
    })
    .await;
}

/// The front kubecache's own endpoints: it probes the upstream through
/// the kubecache behind it (`GET /api`, forwarded), and its readiness
/// counts its own caches only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_front_kubecache_is_live_and_ready_through_the_one_behind() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let chain = start_chain(&sim.url, 2).await;
        wait_chain_synced(&chain, "/api/v1/configmaps", "v1/configmaps").await;
        let front = &chain.front().url;
        for path in ["/livez", "/readyz", "/healthz"] {
            let r = get(&format!("{front}{path}")).await;
            assert_eq!(
                (r.status.as_u16(), r.text().as_str()),
                (200, "ok"),
                "{path}"
            );
        }
        let verbose = get(&format!("{front}/readyz?verbose")).await.text();
        assert!(verbose.contains("[+]upstream ok"), "{verbose}");
        assert!(
            verbose.contains("[+]informer-sync/v1/configmaps ok"),
            "{verbose}"
        );
        // Discovery, forwarded twice, is the simulator's.
        for path in ["/api", "/apis", "/api/v1"] {
            let (a, b) = (
                get(&format!("{}{path}", sim.url)).await,
                get(&format!("{front}{path}")).await,
            );
            assert_eq!((b.status, b.text()), (a.status, a.text()), "{path}");
        }
    })
    .await;
}

/// The drain ends a gzipped watch as it ends a plain one, at an event
/// boundary; the gzip trailer follows, so the downstream reads a whole
/// stream and watches again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drain_ends_a_gzipped_watch_whole() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let up = sim.url.as_str();
        let (mut p, ns, rv) = one_hop(up, "chain-drain").await;
        let url = format!(
            "{}/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion={rv}",
            p.url
        );
        let reading =
            tokio::spawn(
                async move { read_watch(&url, &DOWNSTREAM, Duration::from_secs(20)).await },
            );
        tokio::time::sleep(Duration::from_millis(200)).await;
        changes(up, &ns).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        p.begin_stop();
        let read = reading.await.unwrap();
        assert_eq!(read.headers["content-encoding"], "gzip");
        assert!(read.trailer, "the stream ended without its trailer");
        let kinds: Vec<String> = read
            .lines
            .iter()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(kinds, ["ADDED", "ADDED", "ADDED", "MODIFIED", "DELETED"]);
    })
    .await;
}

/// Three hops, the middle one forwarding (configmaps too large for it):
/// the front's reflector asks through it, the hop behind it gzips, and
/// the middle one passes the gzipped stream on as it came, which the
/// front decodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzipped_watch_passes_through_a_hop_that_forwards_it() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let up = sim.url.as_str();
        let a = start_proxy(up).await;
        wait_synced(&a, "/api/v1/configmaps", "v1/configmaps").await;
        let too_small = kubecache::cache::CacheLimits {
            max_type_bytes: Some(1),
            ..Default::default()
        };
        let b = ProxyBuilder::new(&a.url)
            .cache_limits(too_small, Duration::from_secs(3600))
            .start()
            .await;
        let c = start_proxy(&b.url).await;
        wait_synced(&c, "/api/v1/configmaps", "v1/configmaps").await;
        let ns = format!("chain-through-{}", unique_suffix());
        ensure_namespace(up, &ns).await;
        changes(up, &ns).await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        converged_items(up, &c, &path, Duration::from_secs(10)).await;
        let ready = get(&format!("{}/readyz?verbose", b.url)).await.text();
        assert!(
            ready.contains("informer-sync/v1/configmaps excluded: too large"),
            "{ready}"
        );
        let cached = type_cache(&c, "v1/configmaps").unwrap();
        let stats = cached.tally();
        let (watches, gzipped) = (stats.watches(), stats.gzipped_watches());
        assert!(watches >= 1 && gzipped == watches, "{gzipped} of {watches}");
    })
    .await;
}
