//! The concurrency benchmark: 64 clients at once, each sending a mix of
//! list requests as informers, kubectl and dashboards send them, for a
//! fixed time — straight to the real kube-apiserver, then through
//! kubecache in front of it. Requests per second and latency per kind of
//! request, the CPU each server burned, and the apiserver's own count of
//! the requests it served during each run (from its /metrics): kubecache
//! must not add a single list to the upstream's load.
//!
//! Every request asks for gzip, as Go clients do on their own; the bodies
//! are read to the end but not decompressed (that is the client's cost).
//! kubecache runs with `--consistent-reads serve-stale`, the load-test
//! setting, so the paginated walk (no resourceVersion) is served from the
//! cache as well.
//!
//! `cargo bench --bench concurrency` (uses `KUBECACHE_REAL_APISERVER` if
//! set; `BENCH_CLIENTS` default 64, `BENCH_SECS` per server default 30).

mod support;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;

const AGENT: &str = "kubectl/v1.20.2 (linux/amd64) kubernetes/faecb19";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
const META: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/// One kind of request in the mix.
struct Kind {
    name: &'static str,
    accept: &'static str,
    /// The path for a client's n-th request of this kind.
    path: fn(usize) -> String,
    /// Follows `continue`: each page is one request.
    paged: bool,
}

fn mix(pod: Arc<Vec<(String, String)>>) -> Vec<Kind> {
    // A get's path needs a pod's name; the list is fixed before the run.
    POD_NAMES.set(pod).ok();
    vec![
        Kind {
            name: "pods list RV=0 (informer)",
            accept: "application/json",
            path: |_| "/api/v1/pods?resourceVersion=0".into(),
            paged: false,
        },
        Kind {
            name: "pods list RV=0 as Table (kubectl get -A)",
            accept: TABLE,
            path: |_| "/api/v1/pods?resourceVersion=0".into(),
            paged: false,
        },
        Kind {
            name: "pods list RV=0, metadata only",
            accept: META,
            path: |_| "/api/v1/pods?resourceVersion=0".into(),
            paged: false,
        },
        Kind {
            name: "configmaps list RV=0",
            accept: "application/json",
            path: |_| "/api/v1/configmaps?resourceVersion=0".into(),
            paged: false,
        },
        Kind {
            name: "namespace pods list RV=0 (200 pods)",
            accept: "application/json",
            path: |n| {
                format!(
                    "/api/v1/namespaces/{}/pods?resourceVersion=0",
                    namespace(n % NAMESPACES)
                )
            },
            paged: false,
        },
        Kind {
            name: "pods page, limit=500 (a walk)",
            accept: "application/json",
            path: |_| "/api/v1/pods?limit=500".into(),
            paged: true,
        },
        Kind {
            name: "pod get",
            accept: "application/json",
            path: |n| {
                let names = POD_NAMES.get().unwrap();
                let (ns, name) = &names[n % names.len()];
                format!("/api/v1/namespaces/{ns}/pods/{name}")
            },
            paged: false,
        },
    ]
}

static POD_NAMES: std::sync::OnceLock<Arc<Vec<(String, String)>>> = std::sync::OnceLock::new();

#[derive(Default)]
struct Tally {
    /// Latencies in seconds, per kind.
    times: Vec<Vec<f64>>,
    bytes: Vec<u64>,
    errors: u64,
}

/// One client: through the mix in turn (each client from its own place)
/// until the deadline.
async fn client_loop(base: String, kinds: Arc<Vec<Kind>>, id: usize, until: Instant) -> Tally {
    let c = client();
    let mut t = Tally {
        times: vec![Vec::new(); kinds.len()],
        bytes: vec![0; kinds.len()],
        errors: 0,
    };
    let mut n = id;
    let mut token: Option<String> = None;
    while Instant::now() < until {
        let k = n % kinds.len();
        let kind = &kinds[k];
        let mut path = (kind.path)(n / kinds.len());
        if let Some(tok) = token.take().filter(|_| kind.paged) {
            path.push_str(&format!("&continue={tok}"));
        }
        let req = http::Request::builder()
            .uri(format!("{base}{path}"))
            .header("accept", kind.accept)
            .header("accept-encoding", "gzip")
            .header("user-agent", AGENT)
            .body(Full::<Bytes>::default())
            .unwrap();
        let started = Instant::now();
        let answer = async {
            let resp = c.request(req).await.ok()?;
            let status = resp.status();
            let gzipped = resp.headers().contains_key("content-encoding");
            let body = resp.into_body().collect().await.ok()?.to_bytes();
            Some((status, gzipped, body))
        }
        .await;
        let secs = started.elapsed().as_secs_f64();
        match answer {
            Some((status, gzipped, body)) if status.is_success() => {
                t.times[k].push(secs);
                t.bytes[k] = body.len() as u64;
                if kind.paged {
                    token = next_page(&body, gzipped);
                }
            }
            _ => t.errors += 1,
        }
        // A walk stays on its kind until its last page.
        if token.is_none() {
            n += 1;
        }
    }
    t
}

/// The page's continue token, if another page follows: read off the
/// list's metadata at the head of the body, so that the client's own CPU
/// (on the same two cores) goes to receiving, not to parsing.
fn next_page(body: &[u8], gzipped: bool) -> Option<String> {
    let mut head = vec![0u8; 4096];
    let n = if gzipped {
        let mut z = flate2::read::GzDecoder::new(body);
        let mut n = 0;
        while n < head.len() {
            match std::io::Read::read(&mut z, &mut head[n..]) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
        n
    } else {
        let n = body.len().min(head.len());
        head[..n].copy_from_slice(&body[..n]);
        n
    };
    let head = std::str::from_utf8(&head[..n]).ok()?;
    let meta = &head[..head.find("\"items\"")?];
    let token = meta.split("\"continue\":\"").nth(1)?.split('"').next()?;
    (!token.is_empty()).then(|| token.to_string())
}

struct Run {
    tally: Tally,
    secs: f64,
    /// CPU seconds of the server(s) that answered.
    cpu: f64,
    upstream_lists: f64,
    upstream_gets: f64,
}

async fn run(
    base: &str,
    kinds: &Arc<Vec<Kind>>,
    clients: usize,
    secs: u64,
    upstream: &str,
    pids: &[u32],
) -> Run {
    let lists_before = upstream_count(upstream, "LIST").await;
    let gets_before = upstream_count(upstream, "GET").await;
    let cpu_before: f64 = pids.iter().filter_map(|p| cpu_seconds(*p)).sum();
    let started = Instant::now();
    let until = started + Duration::from_secs(secs);
    let mut tasks = tokio::task::JoinSet::new();
    for id in 0..clients {
        tasks.spawn(client_loop(base.to_string(), kinds.clone(), id, until));
    }
    let mut tally = Tally {
        times: vec![Vec::new(); kinds.len()],
        bytes: vec![0; kinds.len()],
        errors: 0,
    };
    while let Some(t) = tasks.join_next().await {
        let t = t.unwrap();
        for (k, v) in t.times.into_iter().enumerate() {
            tally.times[k].extend(v);
            tally.bytes[k] = tally.bytes[k].max(t.bytes[k]);
        }
        tally.errors += t.errors;
    }
    let secs = started.elapsed().as_secs_f64();
    let cpu = pids.iter().filter_map(|p| cpu_seconds(*p)).sum::<f64>() - cpu_before;
    // The apiserver counts a request when it is done: give the last a moment.
    tokio::time::sleep(Duration::from_millis(500)).await;
    Run {
        tally,
        secs,
        cpu,
        upstream_lists: upstream_count(upstream, "LIST").await - lists_before,
        upstream_gets: upstream_count(upstream, "GET").await - gets_before,
    }
}

/// The apiserver's own count of the pod and configmap requests it served
/// with `verb` (its controllers make others of their own).
async fn upstream_count(upstream: &str, verb: &str) -> f64 {
    let verb = format!("verb=\"{verb}\"");
    let mut n = 0.0;
    for resource in ["resource=\"pods\"", "resource=\"configmaps\""] {
        n += metric_with(upstream, "apiserver_request_total", &[resource, &verb]).await;
    }
    n
}

fn main() {
    let clients: usize = env_or("BENCH_CLIENTS", 64);
    let secs: u64 = env_or("BENCH_SECS", 30);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ra = RealApiserver::start_or_env();
    rt.block_on(load(&ra.url));
    let kc = Kubecache::start(&ra.url, "serve-stale");
    let pods = NAMESPACES * PER_NAMESPACE;
    rt.block_on(kc.wait_cached("/api/v1/pods?resourceVersion=0", pods));
    rt.block_on(kc.wait_cached("/api/v1/configmaps?resourceVersion=0", pods));
    let names = rt.block_on(async {
        let list = get_json(
            &client(),
            &format!("{}/api/v1/pods?resourceVersion=0", kc.url),
        )
        .await;
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .step_by(97)
            .map(|p| {
                let m = &p["metadata"];
                (
                    m["namespace"].as_str().unwrap().to_string(),
                    m["name"].as_str().unwrap().to_string(),
                )
            })
            .collect::<Vec<_>>()
    });
    let kinds = Arc::new(mix(Arc::new(names)));
    let ra_pid: Vec<u32> = ra.pid().into_iter().collect();

    // Warm both (the apiserver's watch cache, kubecache's kept bodies).
    rt.block_on(run(&ra.url, &kinds, 4, 3, &ra.url, &[]));
    rt.block_on(run(&kc.url, &kinds, 4, 3, &ra.url, &[]));
    let direct = rt.block_on(run(&ra.url, &kinds, clients, secs, &ra.url, &ra_pid));
    let cached = rt.block_on(run(&kc.url, &kinds, clients, secs, &ra.url, &[kc.pid()]));

    println!(
        "\n{clients} clients, {secs} s each side, {pods} pods + {pods} configmaps; every request gzip; p50 / p99\n"
    );
    println!("| request | apiserver: count, p50 / p99 | kubecache: count, p50 / p99 | bytes (gzip) apiserver / kubecache |");
    println!("|---|---|---|---|");
    for (k, kind) in kinds.iter().enumerate() {
        let a = Sample(direct.tally.times[k].clone());
        let b = Sample(cached.tally.times[k].clone());
        println!(
            "| {} | {}, {} / {} | {}, {} / {} | {} / {} |",
            kind.name,
            a.0.len(),
            ms(a.quantile(0.5)),
            ms(a.quantile(0.99)),
            b.0.len(),
            ms(b.quantile(0.5)),
            ms(b.quantile(0.99)),
            mb(direct.tally.bytes[k]),
            mb(cached.tally.bytes[k]),
        );
    }
    let total = |r: &Run| r.tally.times.iter().map(Vec::len).sum::<usize>();
    let all = |r: &Run| Sample(r.tally.times.iter().flatten().copied().collect());
    let (a, b) = (total(&direct), total(&cached));
    println!(
        "\n| | apiserver | kubecache | ratio |\n|---|---|---|---|\n\
         | requests/s | {:.1} | {:.1} | {:.1}× |\n\
         | p99, all requests | {} | {} | |\n\
         | errors | {} | {} | |\n\
         | server CPU seconds per 1,000 requests | {:.1} | {:.1} | |\n\
         | pod/configmap LISTs the apiserver served during the run | {} | {} | |\n\
         | pod/configmap GETs the apiserver served during the run | {} | {} | |",
        a as f64 / direct.secs,
        b as f64 / cached.secs,
        (b as f64 / cached.secs) / (a as f64 / direct.secs),
        ms(all(&direct).quantile(0.99)),
        ms(all(&cached).quantile(0.99)),
        direct.tally.errors,
        cached.tally.errors,
        direct.cpu / a as f64 * 1000.0,
        cached.cpu / b as f64 * 1000.0,
        direct.upstream_lists,
        cached.upstream_lists,
        direct.upstream_gets,
        cached.upstream_gets,
    );
}
