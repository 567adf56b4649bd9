//! Watches over WebSocket as a browser opens them: a page served from a
//! local origin (a small HTTP server of the test's own) whose script does
//! `new WebSocket(url, ["base64.binary.k8s.io"])`, run in a real browser
//! (headless Chromium, Debian's `chromium`, as `cli/tests/status_page.rs`
//! runs it). The script collects the messages and the close and reports
//! them back to the page's server (and into the page, which `--dump-dom`
//! prints: the page's load waits for the report). The events through
//! kubecache (from its cache) are compared with the same watch opened on
//! the simulator and, with `real-apiserver`, on the real apiserver; and in
//! authorize mode the browser authenticates with its token in the
//! protocol, as it must (a browser cannot set `Authorization`).

mod common;

use base64::Engine;
use common::*;
use http::{Method, Response, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The page: opens the WebSocket, keeps every message (text as it is,
/// binary in base64) and the close, and reports them when the server
/// closes or after 2.5 s without a message (v1.20 does not close at the
/// watch's timeout).
const PAGE: &str = r#"<!doctype html>
<html><head><title>waiting</title></head><body>
<pre id="report"></pre>
<script>
const got = [];
const ws = new WebSocket(TARGET, PROTOCOLS);
ws.binaryType = "arraybuffer";
let done = false;
function report(how) {
  if (done) return;
  done = true;
  const r = {how: how, protocol: ws.protocol, messages: got};
  document.title = "reported " + got.length;
  document.getElementById("report").textContent = JSON.stringify(r);
  fetch("/report", {method: "POST", body: JSON.stringify(r)});
  if (how !== "closed") ws.close();
}
let quiet;
function arm() { clearTimeout(quiet); quiet = setTimeout(() => report("quiet"), 2500); }
arm();
ws.onmessage = (e) => {
  arm();
  if (typeof e.data === "string") {
    got.push({text: e.data});
  } else {
    let s = "";
    new Uint8Array(e.data).forEach((b) => { s += String.fromCharCode(b); });
    got.push({binary: btoa(s)});
  }
};
ws.onclose = (e) => { got.push({close: e.code}); report("closed"); };
ws.onerror = () => got.push({error: true});
</script>
<img src="/hold" alt="">
</body></html>
"#;

/// The page's server: the page for one WebSocket URL and its
/// subprotocols, `/hold` (answered once the report is in, so that the
/// page's load — and Chromium's `--dump-dom` — waits for it), `/report`.
struct PageServer {
    url: String,
    report: Arc<Mutex<Option<Value>>>,
}

impl PageServer {
    async fn start(target: &str, protocols: &[&str]) -> PageServer {
        let page = PAGE
            .replace("TARGET", &json!(target).to_string())
            .replace("PROTOCOLS", &json!(protocols).to_string());
        let report: Arc<Mutex<Option<Value>>> = Arc::new(Mutex::new(None));
        let reported = Arc::new(tokio::sync::Notify::new());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (r, n) = (report.clone(), reported.clone());
        let handler = move |req: http::Request<hyper::body::Incoming>| {
            let (page, report, reported) = (page.clone(), r.clone(), n.clone());
            async move {
                let ok = |ct: &str, body: String| {
                    let mut resp = Response::new(kubecache::body::full(body));
                    resp.headers_mut()
                        .insert("content-type", ct.parse().unwrap());
                    resp
                };
                match (req.method().clone(), req.uri().path()) {
                    (Method::GET, "/") => ok("text/html; charset=utf-8", page),
                    (Method::GET, "/hold") => {
                        let wait = reported.notified();
                        if report.lock().unwrap().is_none() {
                            let _ = tokio::time::timeout(Duration::from_secs(30), wait).await;
                        }
                        ok(
                            "image/svg+xml",
                            "<svg xmlns='http://www.w3.org/2000/svg'/>".into(),
                        )
                    }
                    (Method::POST, "/report") => {
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        *report.lock().unwrap() = Some(serde_json::from_slice(&body).unwrap());
                        reported.notify_waiters();
                        ok("text/plain", "thanks".into())
                    }
                    _ => {
                        let mut resp = Response::new(kubecache::body::empty());
                        *resp.status_mut() = StatusCode::NOT_FOUND;
                        resp
                    }
                }
            }
        };
        tokio::spawn(kubecache::serve::listener::serve_http(
            listener,
            None,
            handler,
            std::future::pending(),
            Duration::from_secs(1),
        ));
        PageServer {
            url: format!("http://{addr}/"),
            report,
        }
    }
}

/// What the browser saw of the watch: the protocol it agreed, its
/// messages (text, or binary in base64) and its close code, as the page
/// reported them (and the page's DOM agreeing).
#[derive(Debug)]
struct Seen {
    protocol: String,
    events: Vec<String>,
    close: Option<i64>,
}

/// Chromium, headless, on a page that watches `target` with `protocols`.
async fn browser_watch(target: &str, protocols: &[&str]) -> Seen {
    let page = PageServer::start(target, protocols).await;
    let profile = std::env::temp_dir().join(format!("kubecache-ws-chromium-{}", unique_suffix()));
    let out = tokio::process::Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(&page.url)
        .kill_on_drop(true)
        .output()
        .await
        .expect("chromium runs (Debian's chromium; .ci/run installs it)");
    let _ = std::fs::remove_dir_all(&profile);
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let report = page
        .report
        .lock()
        .unwrap()
        .clone()
        .unwrap_or_else(|| panic!("the page never reported; its DOM: {dom}"));
    let messages = report["messages"].as_array().unwrap();
    assert!(
        dom.contains(&format!("<title>reported {}</title>", messages.len())),
        "{dom}"
    );
    assert!(
        messages.iter().all(|m| m.get("error").is_none()),
        "{report}"
    );
    Seen {
        protocol: report["protocol"].as_str().unwrap().to_string(),
        events: messages
            .iter()
            .filter_map(|m| {
                m["text"]
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| m["binary"].as_str().map(|b| format!("binary {b}")))
            })
            .collect(),
        close: messages.iter().find_map(|m| m["close"].as_i64()),
    }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

async fn services(up: &str, ns: &str, names: &[&str]) {
    ensure_namespace(up, ns).await;
    for name in names {
        let body = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"ports": [{"port": 80, "targetPort": 8080}], "selector": {"app": name}}});
        let r = send(
            Method::POST,
            &format!("{up}/api/v1/namespaces/{ns}/services"),
            Some(body),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
}

const WATCH: &str = "/api/v1/namespaces/x/services?watch=1&resourceVersion=0&timeoutSeconds=2";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_watching_through_kubecache_gets_what_the_simulator_sends_it() {
    within(120, async {
        let sim = SimBuilder::new().start().await;
        services(&sim.url, "x", &["web", "db"]).await;
        let p = start_proxy(&sim.url).await;
        wait_synced(&p, "/api/v1/services", "v1/services").await;
        let ws = |base: &str| format!("{}{WATCH}", base.replace("http://", "ws://"));
        let through = browser_watch(&ws(&p.url), &["base64.binary.k8s.io"]).await;
        let direct = browser_watch(&ws(&sim.url), &["base64.binary.k8s.io"]).await;
        for seen in [&through, &direct] {
            assert_eq!(seen.protocol, "base64.binary.k8s.io", "{seen:?}");
            assert_eq!(seen.events.len(), 2, "{seen:?}");
            // The watch's close at its timeout, 1000, as the browser saw it.
            assert_eq!(seen.close, Some(1000), "{seen:?}");
            for e in &seen.events {
                let event: Value = serde_json::from_str(e).unwrap();
                assert_eq!(event["type"], "ADDED");
                assert!(e.ends_with('\n'), "one line of the stream: {e:?}");
            }
        }
        assert_eq!(sorted(through.events), sorted(direct.events));
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_in_authorize_mode_authenticates_with_its_token_in_the_protocol() {
    within(120, async {
        let up = ReviewingSim::start(SimBuilder::new()).await;
        services(&up.sim_url, "x", &["web"]).await;
        let p = up.proxy().start().await;
        let entry = format!(
            "base64url.bearer.authorization.k8s.io.{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("alice-token")
        );
        let protocols = [entry.as_str(), "base64.binary.k8s.io"];
        let base = p.url.replace("http://", "ws://");
        // Cached (the first read starts the cache; it serves once synced).
        let mut cached = None;
        for _ in 0..20 {
            let seen = browser_watch(&format!("{base}{WATCH}"), &protocols).await;
            assert_eq!(seen.protocol, "base64.binary.k8s.io", "{seen:?}");
            let ready = get(&format!("{}/readyz?verbose", p.url)).await.text();
            if ready.contains("[+]informer-sync/v1/services ok") {
                cached = Some(browser_watch(&format!("{base}{WATCH}"), &protocols).await);
                break;
            }
        }
        let cached = cached.expect("services never synced");
        assert_eq!(cached.protocol, "base64.binary.k8s.io");
        assert_eq!(cached.events.len(), 1, "{cached:?}");
        assert_eq!(cached.close, Some(1000));
        // Forwarded: the simulator got the token as Authorization.
        let forwarded = "/api/v1/namespaces/x/services?watch=1&timeoutSeconds=2";
        let seen = browser_watch(&format!("{base}{forwarded}"), &protocols).await;
        assert_eq!(seen.protocol, "base64.binary.k8s.io");
        assert_eq!(sorted(seen.events), sorted(cached.events));
        let upstream = up.seen("services?watch=1&timeoutSeconds=2");
        assert_eq!(upstream.len(), 1, "{upstream:?}");
        assert_eq!(
            upstream[0].authorization.as_deref(),
            Some("Bearer alice-token")
        );
        assert_eq!(
            upstream[0].protocol.as_deref(),
            Some("base64.binary.k8s.io")
        );
    })
    .await
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_watching_through_kubecache_gets_what_the_real_apiserver_sends_it() {
    within(120, async {
        let up = real_apiserver();
        let ns = format!("x-{}", unique_suffix());
        services(&up, &ns, &["web", "db", "cache"]).await;
        let p = start_proxy(&up).await;
        wait_synced(&p, "/api/v1/services", "v1/services").await;
        converged(
            &up,
            &p,
            &format!("/api/v1/namespaces/{ns}/services"),
            Duration::from_secs(10),
        )
        .await;
        let watch = WATCH.replace("/namespaces/x/", &format!("/namespaces/{ns}/"));
        let ws = |base: &str| format!("{}{watch}", base.replace("http://", "ws://"));
        let through = browser_watch(&ws(&p.url), &["base64.binary.k8s.io"]).await;
        let direct = browser_watch(&ws(&up), &["base64.binary.k8s.io"]).await;
        assert_eq!(direct.protocol, "base64.binary.k8s.io");
        assert_eq!(through.protocol, direct.protocol);
        assert_eq!(direct.events.len(), 3, "{direct:?}");
        assert_eq!(sorted(through.events), sorted(direct.events));
        // kubecache closes at timeoutSeconds as current apiservers do;
        // v1.20 leaves a WebSocket watch open (docs/differences.md).
        assert_eq!(through.close, Some(1000));
    })
    .await
}
