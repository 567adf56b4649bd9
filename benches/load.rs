//! The load benchmark (issue 21, "Reliability"): kubecache as its own
//! process in front of the simulator (10,000 pods, churning), with bounds
//! set as for a container of `BENCH_MEMORY_MIB` (a quarter of it for the
//! cache, a quarter for bytes in flight, as kubecache derives them from a
//! container's limit), in two phases:
//!
//! - **load**: `BENCH_CLIENTS` (2,000) clients at once for `BENCH_SECS`
//!   (60), each on a connection of its own: a quarter are informers (an
//!   RV=0 list, then a watch from its version that ends every 10–30 s and
//!   is resumed from the last version seen, a 410 sending it back to the
//!   list), the rest split evenly over RV=0 lists of a namespace and of all
//!   pods, with and without label selectors, kubectl's Table lists
//!   (`limit=500`, its Accept), gets by name and `limit=500` walks, each
//!   asking for its kind again and again. Every request asks for gzip, as
//!   Go clients do; a 429 is retried after its Retry-After.
//!   Per kind: answered, 429s, errors by status, p50/p90/p99/max.
//! - **idle**: `BENCH_IDLE` (20,000) idle kept-alive connections, held by
//!   two helper processes (this binary again, `BENCH_IDLE_HELPER`) so that
//!   neither needs 20,000 descriptors, plus `BENCH_STALLERS` (100) clients
//!   that each ask for a different selector list matching every pod and
//!   never read it; meanwhile another client's lists (a namespace's, and
//!   all pods gzipped) are timed for `BENCH_IDLE_SECS` (20).
//!
//! Both print kubecache's peak RSS (`VmRSS` sampled, and `VmHWM`) against
//! the bound, its peak descriptors, and a verdict; the process exits 1 if
//! a phase fails. kubecache needs more descriptors than the idle
//! connections: the benchmark raises its own hard limit (root may) for
//! kubecache to inherit, and says so if it could not.
//!
//! `cargo bench -p kubecache-cli --bench load` (`BENCH_PHASE=load|idle`
//! runs one; `BENCH_PODS` 10,000, `BENCH_CHURN` 50 updates/s;
//! `BENCH_KUBECACHE=PATH` serves with another build).

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, SocketAddr};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::load::*;
use support::{cpu_seconds, env_or};

const BIN: &str = env!("CARGO_BIN_EXE_kubecache");

/// The kubecache that serves: `BENCH_KUBECACHE` (another build, to compare
/// with), else this one.
fn serving_bin() -> String {
    std::env::var("BENCH_KUBECACHE").unwrap_or_else(|_| BIN.to_string())
}

fn main() {
    if let Ok(spec) = std::env::var("BENCH_IDLE_HELPER") {
        idle_helper(&spec);
        return;
    }
    let phase: String = env_or("BENCH_PHASE", "all".to_string());
    let pods: usize = env_or("BENCH_PODS", 10_000);
    let churn: f64 = env_or("BENCH_CHURN", 50.0);
    let memory = env_or::<u64>("BENCH_MEMORY_MIB", 1024) * MIB;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = start_sim(BIN, pods, pods / 200, churn);
    println!(
        "simulator: {pods} pods in {} namespaces, {churn} pod updates/s (pid {})",
        pods / 200,
        sim.pid()
    );
    let objects = Arc::new(rt.block_on(objects(&sim.url())));
    let mut ok = true;
    if phase == "all" || phase == "load" {
        ok &= load_phase(&rt, &sim, objects.clone(), memory);
    }
    if phase == "all" || phase == "idle" {
        ok &= idle_phase(&rt, &sim, &objects, memory);
    }
    if !ok {
        std::process::exit(1);
    }
}

fn load_phase(rt: &tokio::runtime::Runtime, sim: &Process, o: Arc<Objects>, memory: u64) -> bool {
    let clients: usize = env_or("BENCH_CLIENTS", 2000);
    let secs: f64 = env_or("BENCH_SECS", 60.0);
    let limit = raise_open_files(clients as u64 * 2 + 1000);
    let bounds = Bounds {
        memory,
        max_connections: clients * 2 + 500,
        idle_timeout: None,
    };
    let kc = start_kubecache(&serving_bin(), &sim.url(), bounds);
    let base = kc.url();
    rt.block_on(wait_pods_synced(&base, Duration::from_secs(120)));
    // Warm up: the first Table list prints every row, the first gzip list
    // sets the pods' pieces going; a run should not time those once-only costs.
    rt.block_on(run_mix(&base, o.clone(), 16, 3.0));
    std::thread::sleep(Duration::from_secs(2));
    let settled = status_bytes(kc.pid(), "VmRSS").unwrap_or(0);
    let sampler = Sampler::start(kc.pid(), Duration::from_millis(100));
    let cpu = cpu_seconds(kc.pid()).unwrap_or(0.0);
    let until = Instant::now() + Duration::from_secs_f64(secs);
    // What the bounded parts hold meanwhile: answers in flight, kept list
    // bodies (256 MiB at most), big bodies' idle buffers (128 MiB), objects.
    let gauges = rt.spawn(sample_gauges(
        base.clone(),
        [
            "kubecache_bytes_in_flight ",
            "kubecache_list_bodies_kept_bytes",
            "kubecache_body_buffers_idle_bytes",
            "kubecache_cache_bytes",
        ]
        .map(String::from)
        .to_vec(),
        until,
        Duration::from_millis(250),
    ));
    let report = rt.block_on(run_mix(&base, o, clients, secs));
    let gauges = rt.block_on(gauges).unwrap();
    let cpu = cpu_seconds(kc.pid()).unwrap_or(0.0) - cpu;
    let peak = sampler.peak_rss();
    let fds = sampler.peak_fds();
    drop(sampler);
    // An absent series sums to -0.
    let cut = rt.block_on(metric(&base, "apiserver_terminated_watchers_total")) + 0.0;
    let forwarded = rt.block_on(metric(&base, "kubecache_forwarded_requests_total")) + 0.0;
    let accept_failed = kc
        .log
        .accept_failed
        .load(std::sync::atomic::Ordering::Relaxed);

    println!(
        "\n## load: {clients} clients ({} informers watching) for {:.0} s; bench open-files limit {limit}\n",
        report.watchers, report.secs
    );
    print!("{}", report.table());
    println!(
        "\nanswered {} requests, {:.0}/s; {} 429s with Retry-After; {} other errors",
        report.answered(),
        report.per_second(),
        report.throttled(),
        report.errors()
    );
    println!(
        "kubecache: RSS {} settled before the run, peak {} (bound {}: cache {}, bytes in flight {}); \
         peak open descriptors {fds} (max connections {}); {cpu:.1} CPU s; \
         {accept_failed} accept errors logged; {cut} watchers cut off for lagging; \
         {forwarded} requests forwarded upstream in all\n\
         sampled every 250 ms, mean / highest: bytes in flight {} / {}, kept list bodies {} / {}, \
         idle body buffers {} / {}, cached objects {} / {}",
        mib(settled),
        mib(peak),
        mib(memory),
        mib(bounds.cache_bytes()),
        mib(bounds.bytes_in_flight()),
        bounds.max_connections,
        mib(gauges[0].1 as u64),
        mib(gauges[0].0 as u64),
        mib(gauges[1].1 as u64),
        mib(gauges[1].0 as u64),
        mib(gauges[2].1 as u64),
        mib(gauges[2].0 as u64),
        mib(gauges[3].1 as u64),
        mib(gauges[3].0 as u64),
    );
    let pass = report.errors() == 0 && peak < memory && accept_failed == 0 && report.answered() > 0;
    println!(
        "load: {} (no errors but 429s with Retry-After: {}; RSS under the bound: {}; no accept errors: {})",
        if pass { "PASS" } else { "FAIL" },
        report.errors() == 0,
        peak < memory,
        accept_failed == 0
    );
    pass
}

/// A helper process's idle connections, held until its stdin closes.
struct Helper {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Helper {
    fn start(addr: SocketAddr, n: usize, source: IpAddr) -> Helper {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env("BENCH_IDLE_HELPER", format!("{addr} {n} {source}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting a helper");
        let out = BufReader::new(child.stdout.take().unwrap());
        Helper { child, out }
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.out.read_line(&mut l).unwrap();
        l.trim().to_string()
    }

    /// (connections opened, failed, the first failure).
    fn ready(&mut self) -> (usize, usize, String) {
        let l = self.line();
        let mut f = l.splitn(4, ' ').skip(1);
        let opened = f.next().and_then(|v| v.parse().ok()).unwrap_or(0);
        let failed = f.next().and_then(|v| v.parse().ok()).unwrap_or(0);
        (opened, failed, f.next().unwrap_or("").to_string())
    }

    fn still_open(&mut self) -> usize {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "check").unwrap();
        stdin.flush().unwrap();
        let l = self.line();
        l.strip_prefix("open ")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// `BENCH_IDLE_HELPER="ADDR N SOURCE"`: opens N idle connections to ADDR
/// from SOURCE, says `ready OPENED FAILED FIRST_ERROR`, answers each
/// `check` line with `open N`, and exits when its stdin closes.
fn idle_helper(spec: &str) {
    let mut f = spec.split_whitespace();
    let addr: SocketAddr = f.next().unwrap().parse().unwrap();
    let n: usize = f.next().unwrap().parse().unwrap();
    let source: IpAddr = f.next().unwrap().parse().unwrap();
    raise_open_files(n as u64 + 256);
    let idle = hold_idle(addr, n, Some(source));
    let mut out = std::io::stdout();
    writeln!(
        out,
        "ready {} {} {}",
        idle.streams.len(),
        idle.failed,
        idle.first_error.clone().unwrap_or_default()
    )
    .unwrap();
    out.flush().unwrap();
    for line in std::io::stdin().lock().lines().map_while(Result::ok) {
        if line == "check" {
            writeln!(out, "open {}", idle.still_open()).unwrap();
            out.flush().unwrap();
        }
    }
}

fn idle_phase(rt: &tokio::runtime::Runtime, sim: &Process, o: &Objects, memory: u64) -> bool {
    let mut idle: usize = env_or("BENCH_IDLE", 20_000);
    let stallers: usize = env_or("BENCH_STALLERS", 100);
    let secs: u64 = env_or("BENCH_IDLE_SECS", 20);
    // kubecache holds every connection, its upstream's, and its files.
    let needed = (idle + stallers) as u64 + 1000;
    let limit = raise_open_files(needed);
    if limit < needed {
        // What kubecache's own descriptors leave (listener, epoll, its
        // upstream's connections, the probes': ~30).
        let fit = (limit as usize).saturating_sub(stallers + 150);
        println!(
            "\nthe open-files limit is {limit} and this process may not raise it \
             (CAP_SYS_RESOURCE): {fit} idle connections instead of {idle}"
        );
        idle = fit;
    }
    let bounds = Bounds {
        memory,
        max_connections: idle + stallers + 50,
        // Longer than the phase: idle connections are to stay open.
        idle_timeout: Some(Duration::from_secs(600)),
    };
    let kc = start_kubecache(&serving_bin(), &sim.url(), bounds);
    let base = kc.url();
    rt.block_on(wait_pods_synced(&base, Duration::from_secs(120)));
    let sampler = Sampler::start(kc.pid(), Duration::from_millis(250));
    let before = status_bytes(kc.pid(), "VmRSS").unwrap_or(0);

    let opening = Instant::now();
    let halves = [idle / 2, idle - idle / 2];
    let mut helpers: Vec<Helper> = halves
        .iter()
        .enumerate()
        .map(|(i, n)| Helper::start(kc.addr, *n, format!("127.0.0.{}", i + 2).parse().unwrap()))
        .collect();
    let (mut opened, mut failed, mut first_error) = (0, 0, String::new());
    for h in &mut helpers {
        let (o, f, e) = h.ready();
        opened += o;
        failed += f;
        if first_error.is_empty() {
            first_error = e;
        }
    }
    let opening = opening.elapsed();
    std::thread::sleep(Duration::from_secs(1));
    let with_idle = status_bytes(kc.pid(), "VmRSS").unwrap_or(0);
    let fds_idle = fd_count(kc.pid()).unwrap_or(0);

    let (stalled, namespace, all, list_size, in_flight) = rt.block_on(async {
        // The size of one selector list that matches every pod, as the
        // stallers ask for them (uncompressed).
        let c = client();
        let one = get(
            &c,
            &format!("{base}/api/v1/pods?resourceVersion=0&labelSelector=!absent-size"),
            "application/json",
        )
        .await
        .map_or(0, |(_, b)| b.len());
        drop(c);
        let until = Instant::now() + Duration::from_secs(secs);
        let ns = tokio::spawn(probe(
            format!(
                "{base}/api/v1/namespaces/{}/pods?resourceVersion=0",
                o.namespaces[0]
            ),
            until,
            Duration::from_millis(100),
        ));
        let all = tokio::spawn(probe(
            format!("{base}/api/v1/pods?resourceVersion=0"),
            until,
            Duration::from_millis(500),
        ));
        let mut asks = tokio::task::JoinSet::new();
        for i in 0..stallers {
            let path = format!("/api/v1/pods?resourceVersion=0&labelSelector=!absent-{i}");
            let addr = kc.addr;
            asks.spawn(async move { ask_and_stall(addr, &path).await });
        }
        let mut stalled = Vec::new();
        while let Some(r) = asks.join_next().await {
            stalled.push(r.unwrap());
        }
        let ns = ns.await.unwrap();
        let all = all.await.unwrap();
        let in_flight = metric(&base, "kubecache_bytes_in_flight ").await;
        (stalled, ns, all, one, in_flight)
    });
    let peak = sampler.peak_rss();
    let fds = sampler.peak_fds();
    let still_open: usize = helpers.iter_mut().map(Helper::still_open).sum();
    drop(sampler);
    drop(helpers);

    let (mut answered, mut refused, mut bad) = (0, 0, Vec::new());
    for s in &stalled {
        match s {
            Ok(s) if s.status == 200 => answered += 1,
            Ok(s) if s.status == 429 && s.retry_after => refused += 1,
            Ok(s) => bad.push(format!("{} (Retry-After: {})", s.status, s.retry_after)),
            Err(e) => bad.push(e.to_string()),
        }
    }
    drop(stalled);
    let accept_failed = kc
        .log
        .accept_failed
        .load(std::sync::atomic::Ordering::Relaxed);
    let limit_reached = kc
        .log
        .limit_reached
        .load(std::sync::atomic::Ordering::Relaxed);

    println!(
        "\n## idle: {idle} idle connections (two processes) + {stallers} clients that never read, {secs} s\n"
    );
    println!(
        "idle connections: {opened} opened in {opening:.1?} ({failed} failed{}), {still_open} still open at the end",
        if first_error.is_empty() {
            String::new()
        } else {
            format!(": {first_error}")
        }
    );
    println!(
        "kubecache RSS: {} before, {} with the idle connections ({:.1} KiB each); {fds_idle} descriptors",
        mib(before),
        mib(with_idle),
        with_idle.saturating_sub(before) as f64 / 1024.0 / opened.max(1) as f64
    );
    println!(
        "clients that never read (each a different {:.1} MB list): {answered} answered and left unread, \
         {refused} refused 429 with Retry-After{}; {} counted in flight at the end",
        list_size as f64 / 1e6,
        if bad.is_empty() {
            String::new()
        } else {
            format!(", other: {}", bad.join("; "))
        },
        mib(in_flight as u64)
    );
    println!(
        "meanwhile, a namespace's pods (RV=0): {}",
        namespace.summary()
    );
    println!("meanwhile, all pods (RV=0, gzip): {}", all.summary());
    println!(
        "kubecache: peak RSS {} (bound {}: bytes in flight {}); peak descriptors {fds} (max connections {}); \
         {accept_failed} accept errors, {limit_reached} times at the connection limit",
        mib(peak),
        mib(memory),
        mib(bounds.bytes_in_flight()),
        bounds.max_connections
    );
    let ns_ok = namespace.statuses.keys().all(|s| *s == 200) && !namespace.times.is_empty();
    let all_ok = all.statuses.keys().all(|s| *s == 200 || *s == 429);
    let pass = failed == 0
        && still_open == opened
        && bad.is_empty()
        && answered > 0
        && ns_ok
        && all_ok
        && peak < memory
        && accept_failed == 0;
    println!(
        "idle: {} (every idle connection opened and still open: {}; stallers answered 200 or 429 with \
         Retry-After: {}; the namespace list always answered: {ns_ok}; all pods answered or 429: {all_ok}; \
         RSS under the bound: {}; no accept errors: {})",
        if pass { "PASS" } else { "FAIL" },
        failed == 0 && still_open == opened,
        bad.is_empty() && answered > 0,
        peak < memory,
        accept_failed == 0
    );
    pass
}
