//! Memory: kubecache's resident set after caching 100,000 simulator pods,
//! against the raw JSON bytes of those pods — first as soon as they are
//! cached, then with the history full at its default settings (75 s of
//! events, as the v1.20 cacher keeps): the simulator churns pods (a status
//! and a label change per update, `BENCH_CHURN` updates a second, default
//! 100) while one watcher of all pods follows, as a controller would, for
//! `BENCH_SETTLE` seconds (default 120, past the window). kubecache
//! and the simulator run as their own processes; the pods' cache is
//! started with a list that matches nothing (so no list body is kept).
//!
//! `cargo bench --bench memory` (`BENCH_PODS` pods, default 100,000).

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

fn main() {
    let pods: usize = env_or("BENCH_PODS", 100_000);
    let churn: f64 = env_or("BENCH_CHURN", 100.0);
    let settle: u64 = env_or("BENCH_SETTLE", 120);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim_port = free_port();
    let sim = Command::new(env!("CARGO_BIN_EXE_kubecache"))
        .args(["sim", "--listen", &format!("127.0.0.1:{sim_port}")])
        .args([
            "--pods",
            &pods.to_string(),
            "--namespaces",
            "100",
            "--configmaps",
            "0",
            "--churn",
            &churn.to_string(),
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("starting the simulator");
    let _sim = KillOnDrop(sim);
    let sim_url = format!("http://127.0.0.1:{sim_port}");
    rt.block_on(async {
        let c = client();
        let deadline = Instant::now() + Duration::from_secs(300);
        while get_json(&c, &format!("{sim_url}/version")).await.is_null() {
            assert!(Instant::now() < deadline, "the simulator never answered");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    // The raw bytes: the list as the upstream sends it (its wrapper is noise).
    let raw = {
        let path = std::env::temp_dir().join(format!("kubecache-memory-{sim_port}.json"));
        let (code, size, _) = curl(
            &format!("{sim_url}/api/v1/pods"),
            &["User-Agent: kubecache-bench"],
            Some(&path),
        );
        assert_eq!(code, 200);
        // Generated names can collide at this scale: count what the
        // simulator holds (each list item starts with its metadata).
        let body = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let items = body.windows(13).filter(|w| w == b"{\"metadata\":{").count();
        (size, items)
    };
    let (raw, pods) = raw;

    let kc = Kubecache::start(&sim_url, "forward");
    let base = rt.block_on(async {
        let c = client();
        let deadline = Instant::now() + Duration::from_secs(60);
        while get_json(&c, &format!("{}/version", kc.url)).await.is_null() {
            assert!(Instant::now() < deadline, "kubecache never answered");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        rss(kc.pid()).unwrap_or(0)
    });
    let started = Instant::now();
    rt.block_on(async {
        let c = client();
        let nothing = format!(
            "{}/api/v1/pods?resourceVersion=0&labelSelector=kubecache-bench%3Dnone",
            kc.url
        );
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            get_json(&c, &nothing).await;
            let n = metric(&kc.url, "kubecache_cache_objects{resource=\"v1/pods\"}").await;
            if n as usize >= pods {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "kubecache never cached the pods ({n})"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
    let synced = started.elapsed();
    std::thread::sleep(Duration::from_secs(2));
    let after = rss(kc.pid()).unwrap_or(0);
    let cached = rt.block_on(metric(
        &kc.url,
        "kubecache_cache_bytes{resource=\"v1/pods\"}",
    ));

    // A controller's watch of all pods, from now on, read and discarded:
    // it makes every event's line, as watchers do.
    let rv = rt.block_on(async {
        let one = get_json(
            &client(),
            &format!(
                "{}/api/v1/pods?resourceVersion=0&labelSelector=kubecache-bench%3Dnone",
                kc.url
            ),
        )
        .await;
        one["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("0")
            .to_string()
    });
    let mut watch = Command::new("curl")
        .args(["-sN", "-o", "/dev/null", "-A", "kubecache-bench"])
        .arg(format!(
            "{}/api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds={}",
            kc.url,
            settle + 60
        ))
        .spawn()
        .expect("curl");
    std::thread::sleep(Duration::from_secs(settle));
    let churned = rss(kc.pid()).unwrap_or(0);
    let history = rt.block_on(metric(
        &kc.url,
        "kubecache_cache_history_events{resource=\"v1/pods\"}",
    ));
    let churned_bytes = rt.block_on(metric(
        &kc.url,
        "kubecache_cache_bytes{resource=\"v1/pods\"}",
    ));
    let _ = watch.kill();
    let _ = watch.wait();
    println!(
        "\n{pods} simulator pods: raw JSON {} (the upstream's list body)",
        mb(raw)
    );
    println!(
        "kubecache RSS: {} before, {} after caching them (synced in {synced:.1?})",
        mb(base),
        mb(after)
    );
    println!(
        "RSS ÷ raw JSON: {:.2} (growth alone: {:.2}); the cache's own count of its bytes: {}",
        after as f64 / raw as f64,
        after.saturating_sub(base) as f64 / raw as f64,
        mb(cached as u64)
    );
    println!(
        "after {settle} s of {churn} updates/s with a watcher following: history {history} events, \
         objects {}; RSS {} = {:.2}× the raw JSON",
        mb(churned_bytes as u64),
        mb(churned),
        churned as f64 / raw as f64
    );
}

/// The simulator goes when the benchmark does, panics included.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
