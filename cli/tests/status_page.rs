//! `/debug/cache` as an operator opens it: an HTML page with no external
//! assets, rendered by a real browser (headless Chromium, Debian's
//! `chromium`), whose table holds a row per cached type; the same as JSON
//! for scripts. The screenshot is kept under the target directory and its
//! path printed, as CI's artifact.

#[path = "../../tests/common/mod.rs"]
mod common;
mod running;

use common::*;
use std::process::Command;
use std::time::{Duration, Instant};

/// Chromium, headless, on `url` with `args`: its standard output.
fn chromium(args: &[&str], url: &str) -> String {
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg("--disable-dev-shm-usage")
        .arg(format!(
            "--user-data-dir={}",
            std::env::temp_dir()
                .join(format!("kubecache-chromium-{}", std::process::id()))
                .display()
        ))
        .args(args)
        .arg(url)
        .output()
        .expect("chromium runs (Debian's chromium; .ci/run installs it)");
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_renders_in_a_browser_with_a_row_per_cached_type() {
    within(180, async {
        let sim = running::sim(200);
        let kc = running::serve(&sim, "eager: [v1/pods, v1/configmaps]\n", &[]);
        let url = format!("http://{}", kc.addr);
        let deadline = Instant::now() + Duration::from_secs(30);
        while get(&format!("{url}/readyz")).await.status != 200 {
            assert!(Instant::now() < deadline, "never ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // A type started by a read, reads served and one forwarded.
        for path in [
            "/api/v1/pods?resourceVersion=0",
            "/api/v1/pods?resourceVersion=0",
            "/api/v1/pods",
            "/api/v1/nodes?resourceVersion=0",
        ] {
            assert_eq!(get(&format!("{url}{path}")).await.status, 200, "{path}");
        }

        // JSON, for scripts.
        let r = send_with(
            http::Method::GET,
            &format!("{url}/debug/cache"),
            &[("accept", "application/json")],
            bytes::Bytes::new(),
        )
        .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.headers["content-type"], "application/json");
        let page = r.json();
        let types = page["types"].as_array().unwrap();
        let pods = types
            .iter()
            .find(|t| t["resource"] == "v1/pods")
            .expect("pods");
        assert_eq!(pods["state"], "watching");
        assert_eq!(pods["objects"], 200);
        assert_eq!(pods["eager"], true);
        assert!(pods["resourceVersion"].as_u64().unwrap() > 0);
        assert!(pods["lagSeconds"].as_f64().unwrap() < 60.0);
        assert_eq!(pods["served"], 2, "{pods}");
        assert_eq!(
            pods["forwarded"], 1,
            "a consistent list goes upstream: {pods}"
        );
        assert!(types
            .iter()
            .any(|t| t["resource"] == "v1/nodes" && t["eager"] == false));

        // HTML, in a browser.
        let dom = chromium(&["--dump-dom"], &format!("{url}/debug/cache"));
        assert!(dom.contains("<table id=\"types\">"), "{dom}");
        for resource in ["v1/pods", "v1/configmaps", "v1/nodes"] {
            assert!(
                dom.contains(&format!(
                    "<tr data-resource=\"{resource}\" class=\"watching\">"
                )),
                "no row for {resource}: {dom}"
            );
        }
        assert!(dom.contains("data-objects=\"200\""), "{dom}");
        let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("debug-cache.png");
        let _ = std::fs::remove_file(&shot);
        chromium(
            &[
                "--window-size=1280,600",
                &format!("--screenshot={}", shot.display()),
            ],
            &format!("{url}/debug/cache"),
        );
        let png = std::fs::read(&shot).expect("the screenshot");
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        println!("status page screenshot (CI artifact): {}", shot.display());
    })
    .await;
}
