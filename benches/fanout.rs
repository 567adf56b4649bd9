//! The watch fan-out benchmark: 10,000 watches of all pods through
//! kubecache (as informers open them: from the list's resourceVersion,
//! bookmarks allowed, a client's agent, so compact JSON), then a burst of
//! 1,000 updates to 1,000 pods upstream. For every watcher and every
//! update: the time from the update being sent to the watcher having its
//! event — p50/p99/max — and the time until every watcher has had every
//! event; per update, how soon the first watcher had it (a late first
//! arrival means the event itself came late, not its fan-out); kubecache's
//! CPU and memory along the way.
//!
//! The watchers are raw HTTP/1.1 connections that only look for each
//! event's update number (an annotation the update writes): the client
//! shares the machine's two cores with kubecache and must cost as little
//! as it can. `BENCH_DIRECT=1` runs the same against the apiserver too.
//!
//! `cargo bench --bench fanout` (uses `KUBECACHE_REAL_APISERVER` if set;
//! `BENCH_WATCHERS` default 10,000, `BENCH_UPDATES` default 1,000; needs
//! an open-files limit above the watcher count).

mod support;

use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const AGENT: &str = "kubecache-bench/v1.20.2 (linux/amd64) kubernetes/faecb19";
/// What each update writes; its value is the update's number.
const MARK: &str = "kubecache-bench/update";
const NOT_YET: u32 = u32::MAX;

/// One watcher's arrivals: microseconds since the epoch, per update.
type Arrivals = Vec<u32>;

/// Opens a watch (or fetches a file of events) and records when each
/// update's event arrives, until it has them all or the deadline passes.
/// With a gate, it connects, counts itself open, and asks only once the
/// gate opens (a file's readers all ask at once); without, it asks at once
/// and counts itself open on the response's status line.
async fn watcher(
    addr: String,
    path: String,
    updates: usize,
    epoch: Instant,
    open: Arc<AtomicUsize>,
    deadline: Instant,
    gate: Option<tokio::sync::watch::Receiver<bool>>,
) -> Arrivals {
    let mut arrivals = vec![NOT_YET; updates];
    let mut opened = false;
    let mark_open = |opened: &mut bool| {
        if !*opened {
            *opened = true;
            open.fetch_add(1, Ordering::Relaxed);
        }
    };
    let Ok(mut s) = TcpStream::connect(&addr).await else {
        mark_open(&mut opened);
        return arrivals;
    };
    if let Some(mut gate) = gate {
        mark_open(&mut opened);
        if gate.wait_for(|go| *go).await.is_err() {
            return arrivals;
        }
    }
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: {AGENT}\r\nAccept: application/json\r\n\r\n"
    );
    if s.write_all(req.as_bytes()).await.is_err() {
        mark_open(&mut opened);
        return arrivals;
    }
    let marker = format!("\"{MARK}\":\"");
    let finder = memchr::memmem::Finder::new(marker.as_bytes());
    // Room for a read plus what a marker split across reads left behind.
    // Filled rather than zeroed, so that its pages are made now: calloc's
    // would be faulted in by the reads, and clearing them was a fifth of
    // the machine's CPU during the burst (perf).
    let mut buf = vec![0xffu8; 256 * 1024];
    let keep = marker.len() + 12;
    let (mut carried, mut first, mut have) = (0usize, true, 0usize);
    loop {
        let read = tokio::time::timeout_at(deadline.into(), s.read(&mut buf[carried..])).await;
        let n = match read {
            Ok(Ok(n)) if n > 0 => n,
            _ => break,
        };
        let now = epoch.elapsed().as_micros() as u32;
        let end = carried + n;
        if first {
            first = false;
            mark_open(&mut opened);
            if !buf.starts_with(b"HTTP/1.1 200") {
                break;
            }
        }
        let mut last_whole = 0;
        for at in finder.find_iter(&buf[..end]) {
            let digits = &buf[at + marker.len()..end];
            let Some(len) = digits.iter().position(|b| *b == b'"') else {
                break;
            };
            last_whole = at + marker.len() + len;
            let seq: usize = std::str::from_utf8(&digits[..len])
                .ok()
                .and_then(|d| d.parse().ok())
                .unwrap_or(usize::MAX);
            if let Some(slot) = arrivals.get_mut(seq) {
                if *slot == NOT_YET {
                    *slot = now;
                    have += 1;
                }
            }
        }
        if have == updates {
            break;
        }
        // Carry the tail a marker may have started in.
        let from = end.saturating_sub(keep).max(last_whole);
        buf.copy_within(from..end, 0);
        carried = end - from;
    }
    mark_open(&mut opened);
    arrivals
}

struct Outcome {
    /// Latency of every (watcher, update) delivered, in seconds.
    latencies: Vec<f64>,
    first: Vec<f64>,
    /// From the first update sent to the last event delivered.
    all_delivered: f64,
    sending: f64,
    connecting: f64,
    cpu_burst: Option<f64>,
    rss_idle: Option<u64>,
    rss_before: Option<u64>,
    rss_after: Option<u64>,
}

type Readers = Vec<tokio::task::JoinHandle<Arrivals>>;

/// Opens `n` readers of `path` (in waves, as a fleet of clients starting
/// would) and waits until all are open; how long that took.
fn open_all(
    rt: &tokio::runtime::Runtime,
    addr: &str,
    path: &str,
    n: usize,
    updates: usize,
    epoch: Instant,
    gate: Option<tokio::sync::watch::Receiver<bool>>,
) -> (Readers, f64) {
    let open = Arc::new(AtomicUsize::new(0));
    let deadline = epoch + Duration::from_secs(300);
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        tasks.push(rt.spawn(watcher(
            addr.to_string(),
            path.to_string(),
            updates,
            epoch,
            open.clone(),
            deadline,
            gate.clone(),
        )));
        if i % 500 == 499 {
            while open.load(Ordering::Relaxed) + 200 < i {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
    while open.load(Ordering::Relaxed) < n {
        let opened = open.load(Ordering::Relaxed);
        assert!(Instant::now() < deadline, "only {opened} readers opened");
        std::thread::sleep(Duration::from_millis(10));
    }
    (tasks, epoch.elapsed().as_secs_f64())
}

/// Every reader's arrivals against when each update was sent: the
/// latencies, and when the last event arrived.
fn collect(rt: &tokio::runtime::Runtime, tasks: Readers, sent: &[u32]) -> Collected {
    let mut latencies = Vec::with_capacity(tasks.len() * sent.len());
    let mut first = vec![NOT_YET; sent.len()];
    let mut last = 0u32;
    for t in tasks {
        let arrivals = rt.block_on(t).unwrap();
        for (seq, at) in arrivals.into_iter().enumerate() {
            if at != NOT_YET {
                last = last.max(at);
                first[seq] = first[seq].min(at);
                latencies.push(at.saturating_sub(sent[seq]) as f64 / 1e6);
            }
        }
    }
    let first = first
        .iter()
        .zip(sent)
        .filter(|(at, _)| **at != NOT_YET)
        .map(|(at, sent)| at.saturating_sub(*sent) as f64 / 1e6)
        .collect();
    Collected {
        latencies,
        first,
        last,
    }
}

struct Collected {
    latencies: Vec<f64>,
    /// Per update, the latency of the first watcher to have it: how soon
    /// the event was out at all (for kubecache, in its cache).
    first: Vec<f64>,
    last: u32,
}

/// The machine's limit for the same bytes: nginx sending a file of the
/// same 1,000 event lines to as many readers, all asking at once.
fn run_static(
    rt: &tokio::runtime::Runtime,
    nginx: &Nginx,
    watchers: usize,
    updates: usize,
) -> Outcome {
    let addr = nginx.url.trim_start_matches("http://").to_string();
    let epoch = Instant::now();
    let (go, gate) = tokio::sync::watch::channel(false);
    let (tasks, connecting) = open_all(
        rt,
        &addr,
        "/events.json",
        watchers,
        updates,
        epoch,
        Some(gate),
    );
    let at = epoch.elapsed().as_micros() as u32;
    go.send(true).unwrap();
    let sent = vec![at; updates];
    let Collected {
        latencies,
        first,
        last,
    } = collect(rt, tasks, &sent);
    Outcome {
        latencies,
        first,
        all_delivered: last.saturating_sub(at) as f64 / 1e6,
        sending: 0.0,
        connecting,
        cpu_burst: None,
        rss_idle: None,
        rss_before: None,
        rss_after: None,
    }
}

/// Sends one update per target, 16 at a time, each setting the update's
/// number; when each was sent (microseconds since `epoch`).
fn burst(upstream: &str, targets: Vec<(String, String)>, round: &str, epoch: Instant) -> Vec<u32> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let c = client();
    let gate = Arc::new(tokio::sync::Semaphore::new(16));
    let updates = targets.into_iter().enumerate().map(|(seq, (ns, name))| {
        let (c, gate) = (c.clone(), gate.clone());
        let url = format!("{upstream}/api/v1/namespaces/{ns}/pods/{name}");
        let patch = json!({"metadata": {"annotations": {
            MARK: seq.to_string(),
            "kubecache-bench/round": round,
        }}});
        async move {
            let _permit = gate.acquire().await.unwrap();
            let at = epoch.elapsed().as_micros() as u32;
            let (s, body) = send(&c, "PATCH", &url, "application/merge-patch+json", &patch).await;
            assert_eq!(s, 200, "{body}");
            at
        }
    });
    rt.block_on(futures::future::join_all(updates))
}

/// What a run is: the server watched, the upstream updated, the pods.
struct Setup<'a> {
    base: &'a str,
    upstream: &'a str,
    /// The watched server's process, for its CPU and memory.
    pid: Option<u32>,
    watchers: usize,
    targets: &'a [(String, String)],
    round: usize,
}

fn run(rt: &tokio::runtime::Runtime, setup: Setup) -> Outcome {
    let Setup {
        base,
        upstream,
        pid,
        watchers,
        targets,
        round,
    } = setup;
    let updates = targets.len();
    let addr = base.trim_start_matches("http://").to_string();
    let rss_idle = pid.and_then(rss);
    // Watch from the list's version, as an informer does after its list.
    let rv = rt.block_on(async {
        let list = get_json(
            &client(),
            &format!(
                "{base}/api/v1/namespaces/{}/pods?resourceVersion=0",
                namespace(0)
            ),
        )
        .await;
        list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string()
    });
    let path = format!(
        "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion={rv}&timeoutSeconds=600"
    );
    // Every run writes values the pods have never had: an update that
    // changes nothing makes no event.
    let round = format!(
        "{round}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let epoch = Instant::now();
    let (tasks, connecting) = open_all(rt, &addr, &path, watchers, updates, epoch, None);
    std::thread::sleep(Duration::from_secs(2));
    let rss_before = pid.and_then(rss);
    let cpu_before = pid.and_then(cpu_seconds);

    // The burst, from its own thread so the watchers' work cannot delay it.
    let sent = {
        let (upstream, targets) = (upstream.to_string(), targets.to_vec());
        std::thread::spawn(move || burst(&upstream, targets, &round, epoch))
            .join()
            .unwrap()
    };
    let first_sent = *sent.iter().min().unwrap();
    let sending = (*sent.iter().max().unwrap() - first_sent) as f64 / 1e6;

    let Collected {
        latencies,
        first,
        last,
    } = collect(rt, tasks, &sent);
    let cpu_burst = match (cpu_before, pid.and_then(cpu_seconds)) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let rss_after = pid.and_then(rss);
    Outcome {
        latencies,
        first,
        all_delivered: last.saturating_sub(first_sent) as f64 / 1e6,
        sending,
        connecting,
        cpu_burst,
        rss_idle,
        rss_before,
        rss_after,
    }
}

fn report(name: &str, o: &Outcome, watchers: usize, updates: usize) {
    let s = Sample(o.latencies.clone());
    let first = Sample(o.first.clone());
    let opt_mb = |v: Option<u64>| v.map_or("—".into(), mb);
    println!(
        "| {name} | {} of {} | {} / {} / {} | {} / {} | {:.2} s | {:.2} s | {:.1} s | {} | {} → {} → {} |",
        o.latencies.len(),
        watchers * updates,
        ms(s.quantile(0.5)),
        ms(s.quantile(0.99)),
        ms(s.quantile(1.0)),
        ms(first.quantile(0.5)),
        ms(first.quantile(1.0)),
        o.all_delivered,
        o.sending,
        o.connecting,
        o.cpu_burst.map_or("—".into(), |c| format!("{c:.1} s")),
        opt_mb(o.rss_idle),
        opt_mb(o.rss_before),
        opt_mb(o.rss_after),
    );
}

fn main() {
    let watchers: usize = env_or("BENCH_WATCHERS", 10_000);
    let updates: usize = env_or("BENCH_UPDATES", 1_000);
    let direct = std::env::var("BENCH_DIRECT").is_ok_and(|v| v == "1");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ra = RealApiserver::start_or_env();
    rt.block_on(load(&ra.url));
    let kc = Kubecache::start(&ra.url, "forward");
    let pods = NAMESPACES * PER_NAMESPACE;
    rt.block_on(kc.wait_cached("/api/v1/pods?resourceVersion=0", pods));
    let list = rt.block_on(get_json(
        &client(),
        &format!("{}/api/v1/pods?resourceVersion=0", kc.url),
    ));
    let items = list["items"].as_array().unwrap();
    let chosen: Vec<&serde_json::Value> = items
        .iter()
        .step_by((items.len() / updates).max(1))
        .take(updates)
        .collect();
    let targets: Vec<(String, String)> = chosen
        .iter()
        .map(|p| {
            let m = &p["metadata"];
            (
                m["namespace"].as_str().unwrap().to_string(),
                m["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // The same events as a file, for nginx: each pod as its update leaves
    // it (near enough: the update's managed-fields entry is left out).
    let www = support::repo().join("target/bench-fanout/www");
    std::fs::create_dir_all(&www).unwrap();
    let mut events = Vec::new();
    for (seq, pod) in chosen.iter().enumerate() {
        let mut pod = (*pod).clone();
        let notes = pod["metadata"]
            .as_object_mut()
            .unwrap()
            .entry("annotations")
            .or_insert_with(|| json!({}));
        notes[MARK] = json!(seq.to_string());
        notes["kubecache-bench/round"] = json!("1-0000000000000000000");
        serde_json::to_writer(&mut events, &json!({"type": "MODIFIED", "object": pod})).unwrap();
        events.push(b'\n');
    }
    std::fs::write(www.join("events.json"), &events).unwrap();
    let nginx = Nginx::start(&www);
    assert_eq!(targets.len(), updates, "not enough pods to update");
    let size = rt.block_on(async {
        let (ns, name) = &targets[0];
        let c = client();
        let req = http::Request::builder()
            .uri(format!("{}/api/v1/namespaces/{ns}/pods/{name}", kc.url))
            .header("user-agent", AGENT)
            .body(http_body_util::Full::default())
            .unwrap();
        let resp = c.request(req).await.unwrap();
        http_body_util::BodyExt::collect(resp.into_body())
            .await
            .unwrap()
            .to_bytes()
            .len()
    });

    println!(
        "\n{watchers} watchers of all pods, {updates} updates (merge patches of an annotation) to {updates} pods of ~{} KB; each update sent to the apiserver, 16 at a time\n",
        size / 1000
    );
    println!("| watching | events delivered | latency p50 / p99 / max | the first watcher to have each event: p50 / max | until every watcher had every event | sending the updates took | opening the watchers took | server CPU during the burst | server RSS: idle → watchers open → after |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let o = run(
        &rt,
        Setup {
            base: &kc.url,
            upstream: &ra.url,
            pid: Some(kc.pid()),
            watchers,
            targets: &targets,
            round: 1,
        },
    );
    report("through kubecache", &o, watchers, updates);
    let terminated = rt.block_on(metric(&kc.url, "apiserver_terminated_watchers_total"));
    match &nginx {
        Some(ng) => {
            let o = run_static(&rt, ng, watchers, updates);
            report(
                "nginx sending the same event lines from a file (the machine's limit)",
                &o,
                watchers,
                updates,
            );
        }
        None => eprintln!("nginx not found (apt-get install nginx-light): no machine-limit row"),
    }
    if direct {
        let o = run(
            &rt,
            Setup {
                base: &ra.url,
                upstream: &ra.url,
                pid: ra.pid(),
                watchers,
                targets: &targets,
                round: 2,
            },
        );
        report("the apiserver itself", &o, watchers, updates);
    }
    println!(
        "\nwatchers kubecache cut off for falling behind: {}",
        terminated as u64
    );
}
