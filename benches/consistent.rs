//! The consistent-reads benchmark (issue 33): what serving today's reads
//! from the cache, proven fresh, costs and saves.
//!
//! 1. **kubectl's list, 100 at once**: 100 clients each walk all pods as
//!    `kubectl get pods -A` does (resourceVersion unset, `limit=500`,
//!    Tables, following `continue`), at the same moment — straight to the
//!    upstream, then through kubecache (`consistentReads: prove`, its
//!    default). Per walk p50/p99, and the requests the upstream served.
//! 2. **20 WatchList informers**: 20 streaming lists as client-go ≥1.35
//!    starts an informer (`sendInitialEvents=true`, resourceVersion
//!    unset), each read to its initial-events-end bookmark — direct, then
//!    through kubecache; the CPU the upstream burned for them.
//! 3. **What a proof adds**: one consistent list at a time of a quiet type
//!    and of a busy type, against the same page not older than version 1
//!    (which needs no proof) through kubecache.
//!
//! The upstream is the simulator as v1.36 (a process of its own, so its CPU
//! can be read; busy pods churned at `BENCH_CHURN` a second, default 50),
//! and for part 1 also the real v1.20 (`BENCH_REAL=1`; its pods quiet, so
//! their consistent reads are forwarded, shared). `BENCH_PODS` default
//! 10,000; `BENCH_CLIENTS` default 100; `BENCH_INFORMERS` default 20.
//!
//! `cargo bench --bench consistent`

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};
use support::load::{self, Process};
use support::*;

const BIN: &str = env!("CARGO_BIN_EXE_kubecache");

fn start_sim(pods: usize, churn: f64) -> Process {
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
            "--configmaps",
            "500",
            "--churn",
            &churn.to_string(),
        ],
        "simulated apiserver serving",
    )
}

/// kubecache with its defaults (`consistentReads: prove`), pods eager.
fn start_kubecache(upstream: &str) -> Process {
    Process::start(
        BIN,
        &[
            "serve",
            "--upstream",
            upstream,
            "--listen",
            "127.0.0.1:0",
            "--eager",
            "v1/pods,v1/configmaps",
        ],
        "kubecache serving",
    )
}

/// One client's kubectl-style walk of every pod: its time, and pages.
async fn walk(c: &load::HttpClient, base: &str) -> Option<(f64, usize)> {
    let started = Instant::now();
    let mut next: Option<String> = None;
    let mut pages = 0;
    loop {
        let url = match &next {
            None => format!("{base}/api/v1/pods?limit=500"),
            Some(t) => format!("{base}/api/v1/pods?limit=500&continue={}", urlencode(t)),
        };
        let (status, body) = load::get(c, &url, load::TABLE).await?;
        if status != 200 {
            eprintln!(
                "walk: {status}: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            );
            return None;
        }
        pages += 1;
        // The list's metadata comes first: the token is read off it
        // without parsing the rows (the client shares two cores with the
        // servers it measures).
        match continue_token(&body) {
            Some(t) => next = Some(t),
            None => return Some((started.elapsed().as_secs_f64(), pages)),
        }
    }
}

/// A list's `metadata.continue`, if it has one (the first occurrence,
/// which is the list's: its metadata precedes its items).
fn continue_token(body: &[u8]) -> Option<String> {
    const KEY: &[u8] = b"\"continue\":\"";
    let at = body.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let end = body[at..].iter().position(|b| *b == b'"')? + at;
    let t = std::str::from_utf8(&body[at..end]).ok()?;
    (!t.is_empty()).then(|| t.to_string())
}

fn urlencode(s: &str) -> String {
    kubecache::reflector::urlencode(s)
}

/// `clients` walks at once: each walk's seconds.
async fn walks(base: &str, clients: usize) -> Vec<f64> {
    let gate = Arc::new(tokio::sync::Barrier::new(clients));
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (base, gate) = (base.to_string(), gate.clone());
            tokio::spawn(async move {
                let c = load::client();
                gate.wait().await;
                walk(&c, &base).await
            })
        })
        .collect();
    let mut times = vec![];
    for t in tasks {
        if let Some((secs, _)) = t.await.unwrap() {
            times.push(secs);
        }
    }
    times
}

fn summary(what: &str, times: &[f64], clients: usize) -> String {
    let mut t = times.to_vec();
    t.sort_by(f64::total_cmp);
    format!(
        "{what}: {}/{clients} walks, p50 {}, p99 {}, max {}",
        t.len(),
        ms(load::quantile(&t, 0.5)),
        ms(load::quantile(&t, 0.99)),
        ms(t.last().copied().unwrap_or(0.0)),
    )
}

/// Requests kubecache made of the upstream so far (its own and forwarded).
async fn upstream_requests(kc: &str) -> f64 {
    metric(kc, "kubecache_upstream_requests_total").await
}

/// Part 1 against `up` (with kubecache `kc` in front of it).
async fn kubectl_lists(up: &str, kc: &str, clients: usize, apiserver_metrics: bool) {
    // The apiserver's own count of its pod lists, when it has one.
    let lists = async |base: &str| {
        metric_with(
            base,
            "apiserver_request_total",
            &["verb=\"LIST\"", "resource=\"pods\""],
        )
        .await
    };
    let before = if apiserver_metrics {
        lists(up).await
    } else {
        0.0
    };
    let direct = walks(up, clients).await;
    let direct_lists = if apiserver_metrics {
        lists(up).await - before
    } else {
        f64::NAN
    };
    println!("  {}", summary("direct", &direct, clients));
    if apiserver_metrics {
        println!("    the apiserver served {direct_lists} pod lists");
    }
    let before = if apiserver_metrics {
        lists(up).await
    } else {
        0.0
    };
    let asked = upstream_requests(kc).await;
    let served = metric_with(
        kc,
        "kubecache_consistent_reads_total",
        &["served_by=\"cache\""],
    )
    .await;
    let through = walks(kc, clients).await;
    let asked = upstream_requests(kc).await - asked;
    let served = metric_with(
        kc,
        "kubecache_consistent_reads_total",
        &["served_by=\"cache\""],
    )
    .await
        - served;
    println!("  {}", summary("through kubecache", &through, clients));
    println!(
        "    kubecache asked the upstream {asked} times (probes, side watches, shared reads, its watches' restarts); {served} consistent reads answered from the cache"
    );
    if apiserver_metrics {
        println!(
            "    the apiserver served {} pod lists",
            lists(up).await - before
        );
    }
}

/// Part 2: `n` streaming lists at once, each read to its end bookmark.
async fn informers(base: &str, n: usize) -> (f64, usize) {
    let started = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let base = base.to_string();
            tokio::spawn(async move {
                let c = load::client();
                let url = format!(
                    "{base}/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=60"
                );
                let resp = c.request(load::get_request(&url, "application/json", false)).await.ok()?;
                let mut body = resp.into_body();
                let mut seen = 0usize;
                let mut buf: Vec<u8> = Vec::new();
                use http_body_util::BodyExt;
                while let Some(Ok(frame)) = body.frame().await {
                    let Ok(data) = frame.into_data() else { continue };
                    buf.extend_from_slice(&data);
                    while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = buf.drain(..=nl).collect();
                        const END: &[u8] = b"k8s.io/initial-events-end";
                        if line.windows(END.len()).any(|w| w == END) {
                            return Some(seen);
                        }
                        seen += 1;
                    }
                }
                None
            })
        })
        .collect();
    let mut objects = 0;
    for t in tasks {
        objects += t.await.unwrap().unwrap_or(0);
    }
    (started.elapsed().as_secs_f64(), objects)
}

/// Part 3: `n` consistent lists of `path`, one at a time, and as many of
/// the same page not needing a proof (not older than version 1, which the
/// cache always passes): each one's seconds.
async fn one_at_a_time(kc: &str, path: &str, n: usize) -> (Vec<f64>, Vec<f64>) {
    let c = load::client();
    let mut proven = vec![];
    let mut any = vec![];
    for _ in 0..n {
        let t = Instant::now();
        let (s, _) = load::get(&c, &format!("{kc}{path}?limit=500"), "application/json")
            .await
            .unwrap();
        assert_eq!(s, 200);
        proven.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let (s, _) = load::get(
            &c,
            &format!("{kc}{path}?resourceVersion=1&resourceVersionMatch=NotOlderThan&limit=500"),
            "application/json",
        )
        .await
        .unwrap();
        assert_eq!(s, 200);
        any.push(t.elapsed().as_secs_f64());
        // Reads a little apart, as a person's or a controller's.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (proven, any)
}

fn quantiles(v: &[f64]) -> String {
    let mut t = v.to_vec();
    t.sort_by(f64::total_cmp);
    format!(
        "p50 {}, p99 {}, max {}",
        ms(load::quantile(&t, 0.5)),
        ms(load::quantile(&t, 0.99)),
        ms(t.last().copied().unwrap_or(0.0))
    )
}

fn main() {
    let pods: usize = env_or("BENCH_PODS", 10_000);
    let clients: usize = env_or("BENCH_CLIENTS", 100);
    let n_informers: usize = env_or("BENCH_INFORMERS", 20);
    let churn: f64 = env_or("BENCH_CHURN", 50.0);
    let rt = tokio::runtime::Runtime::new().unwrap();
    if env_or("BENCH_SIM", 1) == 1 {
        simulator_parts(&rt, pods, clients, n_informers, churn);
    }
    if std::env::var("BENCH_REAL").is_ok_and(|v| v == "1") {
        let ra = RealApiserver::start_or_env();
        rt.block_on(support::load(&ra.url));
        let kc = start_kubecache(&ra.url);
        rt.block_on(load::wait_pods_synced(&kc.url(), Duration::from_secs(120)));
        println!(
            "1'. the real v1.20 ({} pods, quiet): {clients} kubectl get pods -A walks at once",
            NAMESPACES * PER_NAMESPACE
        );
        rt.block_on(kubectl_lists(&ra.url, &kc.url(), clients, true));
    }
}

fn simulator_parts(
    rt: &tokio::runtime::Runtime,
    pods: usize,
    clients: usize,
    n_informers: usize,
    churn: f64,
) {
    let sim = start_sim(pods, churn);
    let kc = start_kubecache(&sim.url());
    rt.block_on(load::wait_pods_synced(&kc.url(), Duration::from_secs(120)));
    println!("consistent reads, the simulator as v1.36 ({pods} pods churned {churn}/s), kubecache's defaults");

    println!("1. {clients} kubectl get pods -A walks at once (limit=500, Tables)");
    rt.block_on(kubectl_lists(&sim.url(), &kc.url(), clients, false));

    println!("2. {n_informers} WatchList informers at once (sendInitialEvents=true, resourceVersion unset)");
    let cpu = || cpu_seconds(sim.pid()).unwrap_or(0.0);
    // What the upstream burns meanwhile anyway (its churn, kubecache's
    // watch of it): taken off both.
    let before = cpu();
    std::thread::sleep(Duration::from_secs(10));
    let idle_rate = (cpu() - before) / 10.0;
    let before = cpu();
    let (secs, objects) = rt.block_on(informers(&sim.url(), n_informers));
    let direct_cpu = (cpu() - before - idle_rate * secs).max(0.0);
    println!(
        "  direct: {objects} objects in {}, the upstream burned {direct_cpu:.2} s of CPU for them (less {:.2} s/s it burns anyway)",
        ms(secs),
        idle_rate
    );
    let before = cpu();
    let (secs, objects) = rt.block_on(informers(&kc.url(), n_informers));
    let through_cpu = (cpu() - before - idle_rate * secs).max(0.0);
    println!(
        "  through kubecache: {objects} objects in {}, the upstream burned {through_cpu:.2} s of CPU for them ({:.1}% of direct)",
        ms(secs),
        100.0 * through_cpu / direct_cpu.max(1e-9)
    );

    println!("3. what a proof adds: 50 consistent lists (limit=500) one at a time, against the same page at resourceVersion=1 (NotOlderThan: no proof)");
    for (what, path) in [
        ("busy (pods)", "/api/v1/pods"),
        ("quiet (configmaps)", "/api/v1/configmaps"),
    ] {
        let (proven, any) = rt.block_on(one_at_a_time(&kc.url(), path, 50));
        println!(
            "  {what}: consistent {}; unproven {}",
            quantiles(&proven),
            quantiles(&any)
        );
    }
    let spells: usize = env_or("BENCH_SPELLS", 10);
    println!("3'. the first consistent list of the quiet type after a quiet spell (its side watches stopped): {spells} times");
    let from_cache = || {
        rt.block_on(metric_with(
            &kc.url(),
            "kubecache_consistent_reads_total",
            &["resource=\"v1/configmaps\"", "served_by=\"cache\""],
        ))
    };
    let served_before = from_cache();
    let first: Vec<f64> = (0..spells)
        .map(|_| {
            // Longer than side watches go on once proofs stop being wanted.
            std::thread::sleep(Duration::from_secs(7));
            let (proven, _) = rt.block_on(one_at_a_time(&kc.url(), "/api/v1/configmaps", 1));
            proven[0]
        })
        .collect();
    println!(
        "  quiet (configmaps), first after a spell: {}; {} of {spells} answered from the cache (the rest forwarded, their proofs past the bound)",
        quantiles(&first),
        from_cache() - served_before
    );
    drop(kc);
    drop(sim);
}
