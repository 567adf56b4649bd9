//! The README's first command, `kubecache demo`, as a newcomer runs it:
//! every kubectl line its guide prints works, and what it says is
//! answered from the cache is (the status page's per-type counts), and
//! what it says goes to the simulator does (the request metric).

#[path = "../../tests/common/mod.rs"]
mod common;
mod running;

use common::*;
use serde_json::Value;

/// The guide's kubectl lines under `heading`, as arguments after
/// `kubectl --server URL`.
fn commands(log: &str, heading: &str) -> Vec<Vec<String>> {
    log.lines()
        .skip_while(|l| !l.starts_with(heading))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.trim().strip_prefix("kubectl --server "))
        .map(|rest| {
            rest.split_whitespace()
                .skip(1)
                .map(str::to_string)
                .collect()
        })
        .collect()
}

async fn counts(url: &str) -> (u64, u64) {
    let (_, _, body) = fetch_with(
        &format!("{url}/debug/cache"),
        &[("accept", "application/json")],
    )
    .await;
    let page: Value = serde_json::from_slice(&body).unwrap();
    page["types"]
        .as_array()
        .unwrap()
        .iter()
        .fold((0, 0), |(s, f), t| {
            (
                s + t["served"].as_u64().unwrap(),
                f + t["forwarded"].as_u64().unwrap(),
            )
        })
}

/// Requests the upstream answered, by the request metric.
async fn upstream_answered(url: &str) -> u64 {
    let text = get(&format!("{url}/metrics")).await.text();
    text.lines()
        .filter(|l| {
            l.starts_with("apiserver_request_total{") && l.contains("served_by=\"upstream\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demos_guide_works_and_says_truly_what_the_cache_answers() {
    within(180, async {
        let demo = running::start(
            &[
                "demo",
                "--listen",
                "127.0.0.1:0",
                "--pods",
                "200",
                "--churn",
                "0",
            ],
            "kubecache serving",
        );
        let url = demo.url();
        until("ready", 60, || async {
            get(&format!("{url}/readyz")).await.status == 200
        })
        .await;
        let log = demo.log();
        assert!(log.contains(&format!("kubecache on {url}")), "{log}");
        let cached = commands(&log, "answered from the cache:");
        let forwarded = commands(&log, "forwarded to the simulator:");
        assert!(cached.len() >= 3 && forwarded.len() >= 2, "{log}");
        // Discovery first, so that what follows is only the command's own.
        let cache_dir = std::env::temp_dir().join(format!("kubecache-demo-{}", unique_suffix()));
        let dir = format!("--cache-dir={}", cache_dir.display());
        let run = |args: &[String]| {
            let mut all: Vec<&str> = vec![&dir];
            all.extend(args.iter().map(String::as_str));
            kubectl(&url, &all, None)
        };
        let (ok, _, err) = run(&["api-resources".to_string()]);
        assert!(ok, "{err}");
        for args in &cached {
            let (served, before) = counts(&url).await;
            let (ok, out, err) = tokio::task::block_in_place(|| run(args));
            let watch = args.iter().any(|a| a == "--watch");
            // A watch ends at its request timeout, which kubectl reports.
            assert!(ok || (watch && !out.is_empty()), "{args:?}: {err}");
            let (served_after, after) = counts(&url).await;
            if after != before {
                // Why: the consistent reads' reasons (proof_timeout, …).
                let why: Vec<String> = get(&format!("{url}/metrics"))
                    .await
                    .text()
                    .lines()
                    .filter(|l| l.starts_with("kubecache_consistent_reads_total{"))
                    .map(str::to_string)
                    .collect();
                panic!(
                    "{args:?} went upstream {} time(s): {why:#?}",
                    after - before
                );
            }
            assert!(
                served_after > served,
                "{args:?} was not answered from the cache"
            );
        }
        for args in &forwarded {
            let before = upstream_answered(&url).await;
            let (ok, out, err) = tokio::task::block_in_place(|| run(args));
            assert!(ok && !out.is_empty(), "{args:?}: {err}");
            assert!(
                upstream_answered(&url).await > before,
                "{args:?} was not forwarded"
            );
        }
        let _ = std::fs::remove_dir_all(&cache_dir);
    })
    .await;
}
