//! The side-by-side list benchmark: the same requests, one run, same
//! machine, same data — straight to the real kube-apiserver and through
//! kubecache — with nginx serving the identical list bytes from a file
//! (plain and pre-compressed) as the machine's limit. curl is the client,
//! with its own User-Agent, so both servers indent JSON as they do for
//! curl; one row repeats the list with a client's agent (compact JSON),
//! and one the gzipped list with a pod patched upstream before each request
//! (every request finds a new version, as in a busy cluster).
//!
//! `cargo bench --bench side_by_side` (uses `KUBECACHE_REAL_APISERVER` if
//! set, else builds and starts one; `BENCH_N` requests per case, default 30).

mod support;

use std::path::Path;
use support::*;

const TABLE: &str = "Accept: application/json;as=Table;g=meta.k8s.io;v=v1";
const META: &str = "Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const GZIP: &str = "Accept-Encoding: gzip";
const PROTOBUF: &str = "Accept: application/vnd.kubernetes.protobuf";
const AGENT: &str = "User-Agent: kubectl/v1.20.2 (linux/amd64) kubernetes/faecb19";

struct Case {
    name: &'static str,
    path: String,
    headers: Vec<&'static str>,
    /// Follow `continue` tokens to the end: one walk is one sample.
    walk: bool,
    /// The nginx file serving the same bytes, if any.
    file: Option<&'static str>,
    /// A pod on the apiserver to patch before each sample, so that every
    /// request finds a new version (a cluster's churn).
    event: Option<String>,
}

/// One sample: a request, or a walk of pages.
fn sample(base: &str, c: &Case, scratch: &Path) -> (u16, u64, f64) {
    if !c.walk {
        return curl(&format!("{base}{}", c.path), &c.headers, None);
    }
    let (mut total, mut secs, mut token) = (0u64, 0.0, String::new());
    loop {
        let sep = if token.is_empty() {
            String::new()
        } else {
            format!("&continue={token}")
        };
        let (code, size, t) = curl(&format!("{base}{}{sep}", c.path), &c.headers, Some(scratch));
        total += size;
        secs += t;
        if code != 200 {
            return (code, total, secs);
        }
        let body: serde_json::Value =
            serde_json::from_slice(&std::fs::read(scratch).unwrap()).unwrap_or_default();
        match body["metadata"]["continue"].as_str() {
            Some(t) if !t.is_empty() => token = t.to_string(),
            _ => return (code, total, secs),
        }
    }
}

fn measure(base: &str, c: &Case, n: usize, scratch: &Path) -> (Sample, u64) {
    for _ in 0..2 {
        sample(base, c, scratch);
    }
    // What the first requests set going in the background (kubecache's gzip
    // pieces, ~1.6 s for these 10k pods) finishes, as it would between a
    // client's lists: the samples are of the settled state.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let mut times = Vec::with_capacity(n);
    let mut bytes = 0;
    for i in 0..n {
        if let Some(pod) = &c.event {
            let patch = format!(r#"{{"metadata":{{"annotations":{{"bench/n":"{i}"}}}}}}"#);
            let out = std::process::Command::new("curl")
                .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PATCH"])
                .args([
                    "-H",
                    "Content-Type: application/merge-patch+json",
                    "-d",
                    &patch,
                    pod,
                ])
                .output()
                .expect("curl");
            assert_eq!(out.stdout, b"200", "patching {pod}");
            // The event reaches kubecache's cache within milliseconds.
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        let (code, size, secs) = sample(base, c, scratch);
        assert_eq!(code, 200, "{base}{} answered {code}", c.path);
        bytes = size;
        times.push(secs);
    }
    (Sample(times), bytes)
}

fn main() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let n: usize = env_or("BENCH_N", 30);
    let ra = RealApiserver::start_or_env();
    let apiserver_rss_empty = ra.pid().and_then(rss);
    let loaded_now = rt.block_on(load(&ra.url));
    let apiserver_rss_loaded = ra.pid().and_then(rss);

    // Serve-stale: kubectl's plain gets and paginated lists (no
    // resourceVersion) come from the cache too, as in a load test.
    let kc = Kubecache::start(&ra.url, "serve-stale");
    let pods = NAMESPACES * PER_NAMESPACE;
    // What holding the same objects costs each: kubecache's growth from
    // caching them (no list body kept yet), the apiserver's from loading.
    rt.block_on(async {
        while get_json(&client(), &format!("{}/version", kc.url))
            .await
            .is_null()
        {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    });
    let kc_rss_empty = rss(kc.pid());
    rt.block_on(async {
        kc.wait_cached_quietly("/api/v1/pods", "v1/pods", pods)
            .await;
        kc.wait_cached_quietly("/api/v1/configmaps", "v1/configmaps", pods)
            .await;
    });
    let kc_rss_cached = rss(kc.pid());
    rt.block_on(kc.wait_cached("/api/v1/pods?resourceVersion=0", pods));
    let ns = namespace(7);
    let one: serde_json::Value = rt.block_on(async {
        get_json(
            &client(),
            &format!("{}/api/v1/namespaces/{ns}/pods?limit=1", ra.url),
        )
        .await
    });
    let name = one["items"][0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();

    // The identical list bytes for nginx: what curl gets (indented), what a
    // client gets (compact), each also pre-compressed at level 1.
    let work = support::repo().join("target/bench-side-by-side");
    let www = work.join("www");
    std::fs::create_dir_all(&www).unwrap();
    let scratch = work.join("page.json");
    for (file, headers) in [("pods.json", vec![]), ("pods-compact.json", vec![AGENT])] {
        let path = www.join(file);
        curl(
            &format!("{}/api/v1/pods?resourceVersion=0", kc.url),
            &headers,
            Some(&path),
        );
        let raw = std::fs::read(&path).unwrap();
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(1));
        std::io::Write::write_all(&mut z, &raw).unwrap();
        std::fs::write(www.join(format!("{file}.gz")), z.finish().unwrap()).unwrap();
    }
    let nginx = Nginx::start(&www);
    if nginx.is_none() {
        eprintln!("nginx not found (apt-get install nginx-light): its column stays empty");
    }

    let all = "/api/v1/pods?resourceVersion=0".to_string();
    let cases = [
        Case {
            name: "pods list RV=0, JSON (curl: indented)",
            path: all.clone(),
            headers: vec![],
            walk: false,
            file: Some("/pods.json"),
            event: None,
        },
        Case {
            name: "pods list RV=0, JSON (client agent: compact)",
            path: all.clone(),
            headers: vec![AGENT],
            walk: false,
            file: Some("/pods-compact.json"),
            event: None,
        },
        Case {
            name: "pods list RV=0, JSON (client agent), a pod changed before each",
            path: all.clone(),
            headers: vec![AGENT],
            walk: false,
            file: None,
            event: Some(format!("{}/api/v1/namespaces/{ns}/pods/{name}", ra.url)),
        },
        Case {
            name: "pods list RV=0, gzip (curl)",
            path: all.clone(),
            headers: vec![GZIP],
            walk: false,
            file: Some("/pods.json"),
            event: None,
        },
        Case {
            name: "pods list RV=0, gzip (client agent)",
            path: all.clone(),
            headers: vec![GZIP, AGENT],
            walk: false,
            file: Some("/pods-compact.json"),
            event: None,
        },
        Case {
            name: "pods list RV=0, gzip (client agent), a pod changed before each",
            path: all.clone(),
            headers: vec![GZIP, AGENT],
            walk: false,
            file: None,
            event: Some(format!("{}/api/v1/namespaces/{ns}/pods/{name}", ra.url)),
        },
        Case {
            name: "pods list RV=0, Table",
            path: all.clone(),
            headers: vec![TABLE],
            walk: false,
            file: None,
            event: None,
        },
        Case {
            name: "pods list RV=0, PartialObjectMetadataList",
            path: all.clone(),
            headers: vec![META],
            walk: false,
            file: None,
            event: None,
        },
        Case {
            name: "pods list RV=0, protobuf",
            path: all.clone(),
            headers: vec![PROTOBUF],
            walk: false,
            file: None,
            event: None,
        },
        Case {
            name: "pods list RV=0, protobuf, gzip",
            path: all.clone(),
            headers: vec![PROTOBUF, GZIP],
            walk: false,
            file: None,
            event: None,
        },
        Case {
            name: "namespace list, 200 pods",
            path: format!("/api/v1/namespaces/{ns}/pods?resourceVersion=0"),
            headers: vec![],
            walk: false,
            file: None,
            event: None,
        },
        Case {
            name: "paginated walk, limit=500 (20 pages)",
            path: "/api/v1/pods?limit=500".into(),
            headers: vec![AGENT],
            walk: true,
            file: None,
            event: None,
        },
        Case {
            name: "single get",
            path: format!("/api/v1/namespaces/{ns}/pods/{name}"),
            headers: vec![],
            walk: false,
            file: None,
            event: None,
        },
    ];

    let forwarded_before = rt.block_on(metric(&kc.url, "kubecache_forwarded_requests_total"));
    println!("\n{pods} pods + {pods} configmaps; {n} samples per case; curl; p50 / p99\n");
    println!("| case | apiserver | kubecache | apiserver ÷ kubecache (p50) | bytes apiserver / kubecache | nginx, same bytes |");
    println!("|---|---|---|---|---|---|");
    for c in &cases {
        let (a, ab) = measure(&ra.url, c, n, &scratch);
        let (k, kb) = measure(&kc.url, c, n, &scratch);
        let static_ref = match (&nginx, c.file) {
            (Some(ng), Some(f)) => {
                let headers: Vec<&str> = c.headers.iter().copied().filter(|h| *h == GZIP).collect();
                let file_case = Case {
                    name: "",
                    path: f.into(),
                    headers,
                    walk: false,
                    file: None,
                    event: None,
                };
                let (s, sb) = measure(&ng.url, &file_case, n, &scratch);
                format!(
                    "{} / {} ({})",
                    ms(s.quantile(0.5)),
                    ms(s.quantile(0.99)),
                    mb(sb)
                )
            }
            _ => "—".into(),
        };
        println!(
            "| {} | {} / {} | {} / {} | {:.1}× | {} / {} | {} |",
            c.name,
            ms(a.quantile(0.5)),
            ms(a.quantile(0.99)),
            ms(k.quantile(0.5)),
            ms(k.quantile(0.99)),
            a.quantile(0.5) / k.quantile(0.5),
            mb(ab),
            mb(kb),
            static_ref,
        );
    }
    let forwarded =
        rt.block_on(metric(&kc.url, "kubecache_forwarded_requests_total")) - forwarded_before;
    println!("\nrequests kubecache forwarded upstream during its runs: {forwarded}");
    if let (Some(e), Some(c)) = (kc_rss_empty, kc_rss_cached) {
        println!(
            "kubecache RSS growth from caching the {pods} pods and {pods} configmaps: {} ({} → {})",
            mb(c.saturating_sub(e)),
            mb(e),
            mb(c)
        );
    }
    match (loaded_now, apiserver_rss_empty, apiserver_rss_loaded) {
        (true, Some(e), Some(l)) => println!(
            "apiserver RSS growth from loading them: {} ({} → {})",
            mb(l.saturating_sub(e)),
            mb(e),
            mb(l)
        ),
        _ => println!("apiserver RSS growth: not measured (it was loaded before this run; FRESH=1 up to measure)"),
    }
    if let (Some(a), Some(k)) = (apiserver_rss_loaded, rss(kc.pid())) {
        println!(
            "RSS: apiserver {} (loaded, its own watch cache warm), kubecache {}",
            mb(a),
            mb(k)
        );
        // What of kubecache's RSS its own gauges account for.
        let gauge = |name| rt.block_on(metric(&kc.url, name)) as u64;
        println!(
            "kubecache's gauges at the end: cached objects {}, kept list bodies {}, idle body buffers {}, bytes in flight {}",
            mb(gauge("kubecache_cache_bytes")),
            mb(gauge("kubecache_list_bodies_kept_bytes")),
            mb(gauge("kubecache_body_buffers_idle_bytes")),
            mb(gauge("kubecache_bytes_in_flight "))
        );
    }
}
