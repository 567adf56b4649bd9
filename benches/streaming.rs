//! The streamed-lists benchmark (issue 35): lists written as clients read
//! them, not built whole first.
//!
//! 1. **Time to first byte** of an RV=0 list of every pod (JSON), at
//!    `BENCH_SIZES` pods (default 10,000 and 100,000; add 1,000,000 for the
//!    issue's figure — the simulator and kubecache then need ~15 GB): each
//!    sample after a pod changed (the simulator churns 2 pods a second and
//!    samples are 1.2 s apart), so no kept body answers it; and the whole
//!    list's time.
//! 2. **Different lists at once**, at the largest size: 10 and 100
//!    clients, each listing every pod with a selector of its own that
//!    matches them all (no two share a body), reading every byte; how many
//!    were answered, kubecache's RSS rise over its idle RSS (sampled every
//!    20 ms, and the kernel's peak after resetting it), the bytes per
//!    second (`BENCH_DIFFERENT`, default `10,100`; empty to skip).
//! 3. **Forwarded lists at once**, at the smallest size: 20 and 100
//!    consistent lists of every pod at once, straight to the simulator and
//!    through a kubecache that forwards them (`--consistent-reads forward`),
//!    then as many WatchList informers' first requests
//!    (`sendInitialEvents=true`, read to their initial-events-end
//!    bookmark): whether any starves the others on the way through.
//!
//! `cargo bench -p kubecache-cli --bench streaming`

mod support;

use http_body_util::BodyExt;
use std::time::{Duration, Instant};
use support::load::{self, Process};

const BIN: &str = env!("CARGO_BIN_EXE_kubecache");

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The simulator as v1.36 (which serves streaming lists), `pods` pods
/// churned 2 a second.
fn start_sim(pods: usize) -> Process {
    Process::start(
        BIN,
        &[
            "sim",
            "--listen",
            "127.0.0.1:0",
            "--version",
            "v1.36",
            "--pods",
            &pods.to_string(),
            "--namespaces",
            &(pods / 200).max(1).to_string(),
            "--churn",
            "2",
        ],
        "simulated apiserver serving",
    )
}

fn start_kubecache(upstream: &str, extra: &[&str]) -> Process {
    let mut args = vec![
        "serve",
        "--upstream",
        upstream,
        "--listen",
        "127.0.0.1:0",
        "--eager",
        "v1/pods",
    ];
    args.extend_from_slice(extra);
    Process::start(BIN, &args, "kubecache serving")
}

/// `n` reads of `url` at once, each read whole (a watch to its
/// initial-events-end bookmark): each one's seconds, and how many failed.
async fn at_once(url: &str, n: usize, watch_list: bool) -> (Vec<f64>, usize) {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let url = url.to_string();
            tokio::spawn(async move {
                let started = Instant::now();
                let c = load::client();
                let resp = c
                    .request(load::get_request(&url, "application/json", false))
                    .await
                    .ok()?;
                if resp.status() != 200 {
                    return None;
                }
                let mut body = resp.into_body();
                // The bookmark's annotation, split across frames or not.
                let end = b"k8s.io/initial-events-end";
                let mut tail: Vec<u8> = Vec::new();
                while let Some(frame) = body.frame().await {
                    if let Some(d) = frame.ok()?.data_ref() {
                        if watch_list {
                            tail.extend_from_slice(d);
                            if tail.windows(end.len()).any(|w| w == end) {
                                break;
                            }
                            let keep = tail.len().saturating_sub(end.len());
                            tail.drain(..keep);
                        }
                    }
                }
                Some(started.elapsed().as_secs_f64())
            })
        })
        .collect();
    let mut times = vec![];
    let mut failed = 0;
    for t in tasks {
        match t.await.ok().flatten() {
            Some(s) => times.push(s),
            None => failed += 1,
        }
    }
    times.sort_by(f64::total_cmp);
    (times, failed)
}

fn summary(times: &[f64], failed: usize) -> String {
    format!(
        "{} read, {failed} failed, p50 {}, max {}",
        times.len(),
        load::ms(load::quantile(times, 0.5)),
        load::ms(times.last().copied().unwrap_or(0.0))
    )
}

/// A list's time to its first body byte, its whole time, and its bytes.
async fn timed(c: &load::HttpClient, url: &str) -> Option<(f64, f64, u64)> {
    let started = Instant::now();
    let resp = c
        .request(load::get_request(url, "application/json", false))
        .await
        .ok()?;
    if resp.status() != 200 {
        return None;
    }
    let mut body = resp.into_body();
    let mut first = None;
    let mut bytes = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.ok()?;
        if let Some(d) = frame.data_ref() {
            if first.is_none() && !d.is_empty() {
                first = Some(started.elapsed().as_secs_f64());
            }
            bytes += d.len() as u64;
        }
    }
    Some((first?, started.elapsed().as_secs_f64(), bytes))
}

/// Resets the kernel's peak RSS of `pid` (`VmHWM`) to its current RSS.
fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// `clients` different lists of every pod at once: (answered, refused,
/// RSS rise in bytes, bytes read, seconds).
async fn different_lists(kc: &Process, clients: usize) -> (usize, usize, u64, u64, f64) {
    let idle = load::status_bytes(kc.pid(), "VmRSS").unwrap_or(0);
    let reset = reset_peak(kc.pid());
    let sampler = load::Sampler::start(kc.pid(), Duration::from_millis(20));
    let base = kc.url();
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|i| {
            let url = format!("{base}/api/v1/pods?resourceVersion=0&labelSelector=!absent-{i}");
            tokio::spawn(async move {
                let c = load::client();
                let resp = c
                    .request(load::get_request(&url, "application/json", false))
                    .await
                    .ok()?;
                let status = resp.status().as_u16();
                let mut body = resp.into_body();
                let mut bytes = 0u64;
                while let Some(frame) = body.frame().await {
                    if let Some(d) = frame.ok()?.data_ref() {
                        bytes += d.len() as u64;
                    }
                }
                Some((status, bytes))
            })
        })
        .collect();
    let (mut answered, mut refused, mut bytes) = (0, 0, 0);
    for t in tasks {
        match t.await.ok().flatten() {
            Some((200, b)) => {
                answered += 1;
                bytes += b;
            }
            Some((429, _)) => refused += 1,
            _ => {}
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let peak = if reset {
        sampler.peak_rss()
    } else {
        sampler.sampled_peak_rss()
    };
    (answered, refused, peak.saturating_sub(idle), bytes, secs)
}

fn main() {
    let sizes: Vec<usize> = std::env::var("BENCH_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000]);
    let samples: usize = env_or("BENCH_SAMPLES", 5);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let largest = *sizes.iter().max().unwrap_or(&0);
    let smallest = *sizes.iter().min().unwrap_or(&0);
    let different: Vec<usize> = std::env::var("BENCH_DIFFERENT")
        .unwrap_or_else(|_| "10,100".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    for &pods in &sizes {
        let sim = start_sim(pods);
        let kc = start_kubecache(&sim.url(), &[]);
        rt.block_on(load::wait_pods_synced(
            &kc.url(),
            Duration::from_secs(60 + pods as u64 / 1_000),
        ));
        println!("{pods} pods (the simulator churning 2 a second)");
        let url = format!("{}/api/v1/pods?resourceVersion=0", kc.url());
        let c = load::client();
        let mut ttfb = vec![];
        let mut whole = vec![];
        let mut size = 0;
        for _ in 0..samples {
            std::thread::sleep(Duration::from_millis(1_200));
            if let Some((first, all, bytes)) = rt.block_on(timed(&c, &url)) {
                ttfb.push(first);
                whole.push(all);
                size = bytes;
            }
        }
        ttfb.sort_by(f64::total_cmp);
        whole.sort_by(f64::total_cmp);
        println!(
            "  1. RV=0 list ({} MB), {} samples: first byte p50 {}, max {}; whole list p50 {}",
            size >> 20,
            ttfb.len(),
            load::ms(load::quantile(&ttfb, 0.5)),
            load::ms(ttfb.last().copied().unwrap_or(0.0)),
            load::ms(load::quantile(&whole, 0.5)),
        );
        if pods == largest {
            for &clients in &different {
                let (answered, refused, rise, bytes, secs) =
                    rt.block_on(different_lists(&kc, clients));
                println!(
                    "  2. {clients} different lists at once: {answered} answered, {refused} refused; RSS rise {} MB; {} MB/s ({} MB in {})",
                    rise >> 20,
                    (bytes as f64 / secs) as u64 >> 20,
                    bytes >> 20,
                    load::ms(secs)
                );
            }
        }
        if pods == smallest && env_or("BENCH_FORWARDED", 1) == 1 {
            let fw = start_kubecache(&sim.url(), &["--consistent-reads", "forward"]);
            rt.block_on(load::wait_pods_synced(&fw.url(), Duration::from_secs(120)));
            for n in [20, 100] {
                for (what, query, watch_list) in [
                    ("consistent lists", "", false),
                    (
                        "WatchList informers",
                        "?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan",
                        true,
                    ),
                ] {
                    let direct = format!("{}/api/v1/pods{query}", sim.url());
                    let through = format!("{}/api/v1/pods{query}", fw.url());
                    let (d, df) = rt.block_on(at_once(&direct, n, watch_list));
                    let (t, tf) = rt.block_on(at_once(&through, n, watch_list));
                    println!(
                        "  3. {n} forwarded {what} at once: direct {}; through kubecache {}",
                        summary(&d, df),
                        summary(&t, tf)
                    );
                }
            }
        }
        drop(kc);
        drop(sim);
    }
}
