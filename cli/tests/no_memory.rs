//! A response body the allocator cannot give memory for fails its own
//! request — the apiserver's overload answer, 429 with `Retry-After` —
//! and never the process. Memory is taken away for real: the running
//! kubecache's address-space limit (`RLIMIT_AS`, set with prlimit(2)) is
//! put just above what it holds, so that a list's compact body still fits
//! and its indented form does not. Before bodies were had fallibly, such an
//! allocation aborted the process (exit 134) and every client with it.

#[path = "../../tests/common/mod.rs"]
mod common;
mod running;

use common::*;
use std::time::{Duration, Instant};

/// The process's address space (`VmSize`), in bytes.
fn vm_size(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmSize in /proc/PID/status");
    kib * 1024
}

/// Sets the process's soft address-space limit (the hard one stays
/// unlimited, so that the soft one can be lifted again unprivileged).
fn limit_address_space(pid: u32, bytes: u64) {
    let limits = Some((bytes, rlimit::INFINITY));
    rlimit::prlimit(pid as i32, rlimit::Resource::AS, limits, None)
        .expect("prlimit on our own child");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_the_allocator_refuses_memory_for_is_answered_429_and_kubecache_serves_on() {
    within(240, async {
        let sim = running::sim(10_000);
        let mut kc = running::serve(&sim, "eager: [v1/pods]\n", &[]);
        let url = format!("http://{}", kc.addr);
        let deadline = Instant::now() + Duration::from_secs(120);
        while get(&format!("{url}/readyz")).await.status != 200 {
            assert!(Instant::now() < deadline, "never ready");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let all = get(&format!("{url}/api/v1/pods?resourceVersion=0")).await;
        assert_eq!(all.status, 200);
        let compact = all.body.len() as u64;
        assert!(compact > 30 << 20, "{compact} bytes: too few pods to tell");
        // Threads and arenas that serving indented bodies makes, made now,
        // with bodies too small to be pooled for the list's own.
        for round in 0..3 {
            let lists = (0..8).map(|i| {
                let url = url.clone();
                async move {
                    let ns = format!("ns-{:02}", (round * 8 + i) % 50);
                    let r = get(&format!(
                        "{url}/api/v1/namespaces/{ns}/pods?resourceVersion=0&pretty=true"
                    ))
                    .await;
                    assert_eq!(r.status, 200, "{}", r.text());
                }
            });
            futures::future::join_all(lists).await;
        }

        // The compact body fits; its indented form (1.5× and more) does not.
        let pid = kc.child.id();
        let held = vm_size(pid);
        limit_address_space(pid, held + compact + compact / 2);
        let pretty = get(&format!("{url}/api/v1/pods?resourceVersion=0&pretty=true")).await;
        assert_eq!(pretty.status, 429, "{}", pretty.text());
        assert_eq!(
            pretty
                .headers
                .get("retry-after")
                .map(|v| v.to_str().unwrap()),
            Some("1")
        );
        let status = pretty.json();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "TooManyRequests");
        assert_eq!(status["details"]["retryAfterSeconds"], 1);
        let message = status["message"].as_str().unwrap();
        assert!(message.contains("could not get the memory"), "{message}");

        // The process lives and serves, under the same limit.
        assert!(kc.child.try_wait().unwrap().is_none(), "kubecache exited");
        assert_eq!(get(&format!("{url}/readyz")).await.status, 200);
        let ns = get(&format!(
            "{url}/api/v1/namespaces/ns-07/pods?resourceVersion=0"
        ))
        .await;
        assert_eq!(ns.status, 200);
        let gz = fetch_with(
            &format!("{url}/api/v1/pods?resourceVersion=0&limit=0"),
            &[("accept", "application/json"), ("accept-encoding", "gzip")],
        )
        .await;
        assert_eq!(gz.0, 200);
        let metrics = get(&format!("{url}/metrics")).await.text();
        let failures = metrics
            .lines()
            .find_map(|l| l.strip_prefix("kubecache_body_allocation_failures_total "))
            .and_then(|v| v.trim().parse::<f64>().ok());
        assert!(failures.is_some_and(|n| n >= 1.0), "{failures:?}");

        // Given the memory back, the same list is answered.
        limit_address_space(pid, rlimit::INFINITY);
        let pretty = get(&format!("{url}/api/v1/pods?resourceVersion=0&pretty=true")).await;
        assert_eq!(pretty.status, 200, "{}", pretty.text());
        assert!(pretty.body.len() as u64 > compact);
        drop(sim);
    })
    .await;
}
