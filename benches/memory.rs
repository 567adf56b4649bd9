//! Memory and scale: kubecache's resident set after caching `BENCH_OBJECTS`
//! simulator pods or configmaps (`BENCH_KIND`), against the raw JSON bytes
//! of those objects; how long the sync took against the upstream's own
//! time to send the whole list; then an RV=0 list of them all through
//! kubecache and the per-page cost of a `limit=500` walk. For pods, then
//! with the history full at its default settings (75 s of events, as the
//! v1.20 cacher keeps): the simulator churns pods (a status and a label
//! change per update, `BENCH_CHURN` updates a second, default 100) while
//! one watcher of all pods follows, as a controller would, for
//! `BENCH_SETTLE` seconds (default 120, past the window; 0 skips it).
//! kubecache and the simulator run as their own processes; the type's
//! cache is started with a list that matches nothing (so no list body is
//! kept before the memory is read).
//!
//! `cargo bench --bench memory` (`BENCH_KIND` pods or configmaps, default
//! pods; `BENCH_OBJECTS`, default 100,000).

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

fn main() {
    let kind: String = env_or("BENCH_KIND", "pods".to_string());
    assert!(
        kind == "pods" || kind == "configmaps",
        "BENCH_KIND is pods or configmaps"
    );
    let objects: usize = env_or("BENCH_OBJECTS", env_or("BENCH_PODS", 100_000));
    let churn: f64 = if kind == "pods" {
        env_or("BENCH_CHURN", 100.0)
    } else {
        0.0
    };
    let settle: u64 = if kind == "pods" {
        env_or("BENCH_SETTLE", 120)
    } else {
        0
    };
    let (pods, configmaps) = if kind == "pods" {
        (objects, 0)
    } else {
        (0, objects)
    };
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
            &configmaps.to_string(),
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
        let deadline = Instant::now() + Duration::from_secs(1800);
        while get_json(&c, &format!("{sim_url}/version")).await.is_null() {
            assert!(Instant::now() < deadline, "the simulator never answered");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    // The raw bytes: the list as the upstream sends it (its wrapper is noise).
    let raw = raw_list(&format!("{sim_url}/api/v1/{kind}"));
    let (raw, objects, upstream_list) = raw;
    let resource = format!("v1/{kind}");

    // Room for the whole list at once, in flight and cached: the bench
    // measures the cache, not its limits.
    let room = (raw * 4).to_string();
    // serve-stale, the load-test setting: the walk (no resourceVersion)
    // is served from the cache too, not forwarded.
    let kc = Kubecache::start_with(
        &sim_url,
        "serve-stale",
        &["--max-bytes-in-flight", &room, "--max-cache-bytes", &room],
    );
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
        let nothing = nothing_url(&kc.url, &kind);
        let objects_metric = format!("kubecache_cache_objects{{resource=\"{resource}\"}}");
        let deadline = Instant::now() + Duration::from_secs(1800);
        loop {
            get_json(&c, &nothing).await;
            let n = metric(&kc.url, &objects_metric).await;
            if n as usize >= objects {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "kubecache never cached the {kind} ({n})"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let synced = started.elapsed();
    std::thread::sleep(Duration::from_secs(2));
    let after = rss(kc.pid()).unwrap_or(0);
    let bytes_metric = format!("kubecache_cache_bytes{{resource=\"{resource}\"}}");
    let cached = rt.block_on(metric(&kc.url, &bytes_metric));

    // Reads of it all: an RV=0 list (the first makes and keeps its body
    // if it fits the kept bodies' budget; the next ones reuse it), then a
    // walk of limit=500 pages at one snapshot.
    let agent = ["User-Agent: kubecache-bench", "Accept: application/json"];
    let list_url = format!("{}/api/v1/{kind}?resourceVersion=0", kc.url);
    let lists: Vec<f64> = (0..3)
        .map(|_| {
            let (code, _, secs) = curl(&list_url, &agent, None);
            assert_eq!(code, 200);
            secs
        })
        .collect();
    let (pages, walk) = rt.block_on(async {
        let c = client();
        let started = Instant::now();
        let mut pages = 0usize;
        let mut cont = String::new();
        loop {
            // Read whole, not parsed: the walk's cost is the server's.
            let (status, body) = get_bytes(
                &c,
                &format!("{}/api/v1/{kind}?limit=500&continue={cont}", kc.url),
            )
            .await;
            assert_eq!(status, 200);
            pages += 1;
            match continue_of(&body) {
                Some(next) => cont = next,
                None => break,
            }
        }
        (pages, started.elapsed())
    });

    let churned = (settle > 0).then(|| {
        // A controller's watch of all pods, from now on, read and
        // discarded: it makes every event's line, as watchers do.
        let rv = rt.block_on(async {
            let one = get_json(&client(), &nothing_url(&kc.url, &kind)).await;
            one["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or("0")
                .to_string()
        });
        let mut watch = Command::new("curl")
            .args(["-sN", "-o", "/dev/null", "-A", "kubecache-bench"])
            .arg(format!(
                "{}/api/v1/{kind}?watch=1&resourceVersion={rv}&timeoutSeconds={}",
                kc.url,
                settle + 60
            ))
            .spawn()
            .expect("curl");
        std::thread::sleep(Duration::from_secs(settle));
        let churned = rss(kc.pid()).unwrap_or(0);
        let history = rt.block_on(metric(
            &kc.url,
            &format!("kubecache_cache_history_events{{resource=\"{resource}\"}}"),
        ));
        let churned_bytes = rt.block_on(metric(&kc.url, &bytes_metric));
        let _ = watch.kill();
        let _ = watch.wait();
        (churned, history, churned_bytes)
    });
    println!(
        "\n{objects} simulator {kind}: raw JSON {} (the upstream's list body, sent in {upstream_list:.1} s)",
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
        "RV=0 list of all {objects} through kubecache: {} (first, then kept)",
        lists
            .iter()
            .map(|s| format!("{:.0} ms", s * 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "limit=500 walk: {pages} pages in {walk:.1?}, {:.2} ms a page",
        walk.as_secs_f64() * 1e3 / pages as f64
    );
    if let Some((churned, history, churned_bytes)) = churned {
        println!(
            "after {settle} s of {churn} updates/s with a watcher following: history {history} events, \
             objects {}; RSS {} = {:.2}× the raw JSON",
            mb(churned_bytes as u64),
            mb(churned),
            churned as f64 / raw as f64
        );
    }
}

/// The upstream's list at `url`: its size, the items in it and the
/// seconds it took, read as it streams. Generated names can collide at
/// this scale, so the items the simulator holds are counted (each starts
/// with its metadata). Not written to a file first: 1,000,000 pods' 4.8
/// GB did not fit the disk (the file stopped at 2.7 GB), and reading it
/// back took as much memory again.
fn raw_list(url: &str) -> (u64, usize, f64) {
    use std::io::Read;
    const ITEM: &[u8] = b"{\"metadata\":{";
    let mut curl = Command::new("curl")
        .args(["-s", "-o", "-", "-w", "%{stderr}%{http_code} %{time_total}"])
        .args(["-H", "User-Agent: kubecache-bench", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("curl");
    let mut out = curl.stdout.take().unwrap();
    let (mut size, mut items) = (0u64, 0usize);
    let mut buf = vec![0u8; 1 << 20];
    // The last bytes of the piece before, for an item's start cut in two.
    let mut window: Vec<u8> = Vec::with_capacity(buf.len() + ITEM.len());
    loop {
        let n = out.read(&mut buf).expect("reading curl's output");
        if n == 0 {
            break;
        }
        size += n as u64;
        window.extend_from_slice(&buf[..n]);
        items += window.windows(ITEM.len()).filter(|w| *w == ITEM).count();
        window.drain(..window.len() - (ITEM.len() - 1).min(window.len()));
    }
    let done = curl.wait_with_output().expect("curl");
    let told = String::from_utf8_lossy(&done.stderr);
    let mut f = told.split_whitespace();
    assert_eq!(f.next(), Some("200"), "curl: {told}");
    assert!(done.status.success(), "curl: {:?}", done.status);
    let secs = f.next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
    (size, items, secs)
}

/// A list's continue token, from its metadata at the head of the body.
fn continue_of(body: &[u8]) -> Option<String> {
    let head = &body[..body.len().min(4096)];
    let at = head.windows(12).position(|w| w == b"\"continue\":\"")? + 12;
    let len = head[at..].iter().position(|b| *b == b'"')?;
    (len > 0).then(|| String::from_utf8_lossy(&head[at..at + len]).into_owned())
}

/// A list of `kind` that matches nothing: it starts the type's cache
/// without making a body worth keeping.
fn nothing_url(base: &str, kind: &str) -> String {
    format!("{base}/api/v1/{kind}?resourceVersion=0&labelSelector=kubecache-bench%3Dnone")
}

/// The simulator goes when the benchmark does, panics included.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
