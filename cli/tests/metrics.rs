//! `/metrics` as an operator scrapes it: every family with HELP and TYPE,
//! the apiserver's names and latency buckets, cache and upstream told
//! apart, open watches counted while they are open, and the process's own
//! CPU, memory and descriptors — values that move as requests are served.

#[path = "../../tests/common/mod.rs"]
mod common;
mod running;

use common::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The scrape: each sample line's value by its name and labels.
async fn scrape(url: &str) -> (String, BTreeMap<String, f64>) {
    let text = get(&format!("{url}/metrics")).await.text();
    let samples = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect();
    (text, samples)
}

fn family_has_help_and_type(text: &str, family: &str, kind: &str) -> bool {
    text.lines()
        .any(|l| l.starts_with(&format!("# HELP {family} ")))
        && text.lines().any(|l| l == format!("# TYPE {family} {kind}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_have_help_type_the_apiservers_buckets_and_values_that_move() {
    within(120, async {
        let sim = running::sim(100);
        let kc = running::serve(&sim, "eager: [v1/pods]\n", &[]);
        let url = format!("http://{}", kc.addr);
        let deadline = Instant::now() + Duration::from_secs(30);
        while get(&format!("{url}/readyz")).await.status != 200 {
            assert!(Instant::now() < deadline, "never ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for _ in 0..3 {
            assert_eq!(get(&format!("{url}/api/v1/pods?resourceVersion=0")).await.status, 200);
        }
        // Forwarded: /version is not cached.
        assert_eq!(get(&format!("{url}/version")).await.status, 200);
        // Gzipped (the list is over the 128 KiB threshold).
        let (status, _, _) = fetch_with(
            &format!("{url}/api/v1/pods?resourceVersion=0&limit=0"),
            &[("accept", "application/json"), ("accept-encoding", "gzip")],
        )
        .await;
        assert_eq!(status, 200);
        let watch = request(
            &format!("{url}/api/v1/namespaces/default/pods?watch=true&resourceVersion=0"),
            "application/json",
        )
        .await;
        assert_eq!(watch.status(), 200);

        let (text, m) = scrape(&url).await;
        for (family, kind) in [
            ("apiserver_request_total", "counter"),
            ("apiserver_request_duration_seconds", "histogram"),
            ("apiserver_longrunning_requests", "gauge"),
            ("apiserver_watch_cache_initializations_total", "counter"),
            ("kubecache_cache_objects", "gauge"),
            ("kubecache_cache_bytes", "gauge"),
            ("kubecache_bytes_in_flight", "gauge"),
            ("apiserver_watch_cache_resource_version", "gauge"),
            ("kubecache_cache_lag_seconds", "gauge"),
            ("kubecache_reflector_state", "gauge"),
            ("kubecache_upstream_requests_total", "counter"),
            ("kubecache_gzip_bytes_total", "counter"),
            ("process_cpu_seconds_total", "counter"),
            ("process_resident_memory_bytes", "gauge"),
            ("process_open_fds", "gauge"),
        ] {
            assert!(family_has_help_and_type(&text, family, kind), "{family} {kind}:\n{text}");
        }
        // Every family the scrape has, described.
        for l in text.lines().filter(|l| l.starts_with("# TYPE ")) {
            let family = l.split(' ').nth(2).unwrap();
            assert!(
                text.contains(&format!("# HELP {family} ")),
                "{family} has no HELP"
            );
        }
        let lists = r#"verb="LIST",resource="pods",code="200",served_by="cache""#;
        // Three lists and the gzipped one.
        assert_eq!(m[&format!("apiserver_request_total{{{lists}}}")], 4.0, "{text}");
        let buckets: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.starts_with("apiserver_request_duration_seconds_bucket{")
                    && l.contains(r#"verb="LIST",resource="pods",served_by="cache""#)
            })
            .map(|l| l.split("le=\"").nth(1).unwrap().split('"').next().unwrap())
            .collect();
        assert_eq!(
            buckets,
            [
                "0.005", "0.025", "0.05", "0.1", "0.2", "0.4", "0.6", "0.8", "1", "1.25", "1.5",
                "2", "3", "4", "5", "6", "8", "10", "15", "20", "30", "45", "60", "+Inf"
            ]
        );
        let count = r#"apiserver_request_duration_seconds_count{verb="LIST",resource="pods",served_by="cache"}"#;
        assert_eq!(m[count], 4.0);
        assert!(
            m.keys().any(|k| k.starts_with("apiserver_request_total{")
                && k.contains(r#"served_by="upstream""#)),
            "{text}"
        );
        let open = r#"apiserver_longrunning_requests{verb="WATCH",resource="pods"}"#;
        assert_eq!(m[open], 1.0, "{text}");
        assert_eq!(m[r#"kubecache_cache_objects{resource="v1/pods"}"#], 100.0);
        assert!(m[r#"apiserver_watch_cache_resource_version{resource="v1/pods"}"#] > 0.0);
        assert!(m[r#"kubecache_cache_lag_seconds{resource="v1/pods"}"#] < 60.0);
        assert_eq!(m[r#"kubecache_reflector_state{resource="v1/pods",state="watching"}"#], 1.0);
        assert_eq!(m[r#"kubecache_reflector_state{resource="v1/pods",state="listing"}"#], 0.0);
        assert!(m[r#"kubecache_upstream_requests_total{verb="GET",code="200"}"#] >= 3.0, "{text}");
        let (gz_in, gz_out) = (
            m[r#"kubecache_gzip_bytes_total{direction="in"}"#],
            m[r#"kubecache_gzip_bytes_total{direction="out"}"#],
        );
        assert!(gz_in > 128.0 * 1024.0 && gz_out > 0.0 && gz_out < gz_in, "{gz_in} {gz_out}");
        assert!(m["process_resident_memory_bytes"] > 1e6);
        assert!(m["process_open_fds"] >= 3.0);
        let cpu = m["process_cpu_seconds_total"];

        // A consistent list of the quiet pods in front of the simulator as
        // v1.20: no proof, forwarded (shared), each counted so.
        assert_eq!(get(&format!("{url}/api/v1/pods?limit=10")).await.status, 200);
        let (text, m) = scrape(&url).await;
        for (family, kind) in [
            ("kubecache_consistent_reads_total", "counter"),
            ("kubecache_freshness_proof_duration_seconds", "histogram"),
            ("kubecache_coalesced_reads_total", "counter"),
        ] {
            assert!(family_has_help_and_type(&text, family, kind), "{family} {kind}:\n{text}");
        }
        let forwarded = r#"kubecache_consistent_reads_total{resource="v1/pods",served_by="upstream",reason="no_proof"}"#;
        assert_eq!(m[forwarded], 1.0, "{text}");
        assert_eq!(m[r#"kubecache_coalesced_reads_total{role="began"}"#], 1.0, "{text}");
        let proof_buckets: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.starts_with("kubecache_freshness_proof_duration_seconds_bucket{")
                    && l.contains(r#"outcome="no_proof""#)
            })
            .map(|l| l.split("le=\"").nth(1).unwrap().split('"').next().unwrap())
            .collect();
        assert_eq!(
            proof_buckets,
            [
                "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "0.75",
                "1", "1.25", "1.5", "2.5", "+Inf"
            ]
        );

        // The watch closed: no longer open. More lists: counted.
        drop(watch);
        assert_eq!(get(&format!("{url}/api/v1/pods?resourceVersion=0")).await.status, 200);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (_, m) = scrape(&url).await;
            if m[open] == 0.0 {
                assert_eq!(m[&format!("apiserver_request_total{{{lists}}}")], 5.0);
                assert!(m["process_cpu_seconds_total"] >= cpu);
                break;
            }
            assert!(Instant::now() < deadline, "the closed watch is still counted");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
}
