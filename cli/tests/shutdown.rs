//! SIGTERM, as Kubernetes sends it: `/readyz` fails at once while new
//! connections are still accepted and served for the shutdown delay; then
//! kubecache stops accepting, ends open watches cleanly (an orderly end
//! of the stream, which informers answer by watching again), and exits
//! long before the drain deadline.

#[path = "../../tests/common/mod.rs"]
mod common;
mod running;

use common::*;
use http_body_util::BodyExt;
use std::process::Command;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sigterm_it_accepts_for_the_delay_then_ends_watches_and_exits_before_the_drain_deadline(
) {
    within(120, async {
        let sim = running::sim(50);
        let mut kc = running::serve(
            &sim,
            "eager: [v1/configmaps]\ndrainSeconds: 60\n",
            &["--shutdown-delay-duration", "3s"],
        );
        let url = format!("http://{}", kc.addr);
        let deadline = Instant::now() + Duration::from_secs(30);
        while get(&format!("{url}/readyz")).await.status != 200 {
            assert!(Instant::now() < deadline, "never ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // An informer's watch, served from the cache.
        let watch = request(
            &format!("{url}/api/v1/configmaps?watch=true&resourceVersion=0"),
            "application/json",
        )
        .await;
        assert_eq!(watch.status(), 200);
        let watch_ended = tokio::spawn(async move {
            let mut body = watch.into_body();
            let mut bytes = Vec::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.expect("the watch ends cleanly, not with an error");
                if let Some(d) = frame.data_ref() {
                    bytes.extend_from_slice(d);
                }
            }
            (Instant::now(), bytes)
        });

        let status = Command::new("kill")
            .args(["-TERM", &kc.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let signalled = Instant::now();
        // Readiness fails at once ...
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let r = get(&format!("{url}/readyz?verbose")).await;
            if r.status == 500 {
                assert!(r.text().contains("[-]shutdown failed"), "{}", r.text());
                break;
            }
            assert!(Instant::now() < deadline, "readiness still passing");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // ... while new connections are still served, for the delay.
        let mut served = 0;
        while signalled.elapsed() < Duration::from_millis(2500) {
            let r = get(&format!("{url}/api/v1/configmaps?resourceVersion=0")).await;
            assert_eq!(r.status, 200, "{}", r.text());
            served += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(served >= 5, "{served}");
        // The watch ends cleanly once the delay is over, its events whole.
        let (ended, bytes) = watch_ended.await.unwrap();
        let after = ended.duration_since(signalled);
        assert!(
            after >= Duration::from_millis(2500),
            "ended {after:?} after SIGTERM"
        );
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.ends_with('\n'), "{text}");
        for line in text.lines() {
            let ev: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(ev["type"], "ADDED");
        }
        // And the process is gone well before drainSeconds (60).
        let deadline = Instant::now() + Duration::from_secs(10);
        let code = loop {
            if let Some(code) = kc.child.try_wait().unwrap() {
                break code;
            }
            assert!(Instant::now() < deadline, "still running");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(code.success(), "{code:?}");
        eprintln!(
            "exited {:?} after SIGTERM ({served} requests served during the delay)",
            signalled.elapsed()
        );
    })
    .await;
}
