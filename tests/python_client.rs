//! The official Python client (PyPI `kubernetes`, installed by `.ci/run`
//! into `.venv`; `KUBECACHE_PYTHON` names its interpreter) through
//! kubecache with consistent reads proven and answered from the cache:
//! a get and a list right after a write made straight upstream see it,
//! and its list-then-watch sees the next write — in front of the
//! simulator as v1.36 and of the real v1.20. The script:
//! `tests/data/python_client.py`.

mod common;

use common::*;
use kubecache::serve::ConsistentReads;
use serde_json::{json, Value};

fn python() -> String {
    std::env::var("KUBECACHE_PYTHON")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python").to_string())
}

async fn python_reads_its_writes(up: &str) {
    let p = start_proxy_with(up, ConsistentReads::Prove).await;
    let ns = format!("py-{}", unique_suffix());
    ensure_namespace(up, &ns).await;
    wait_synced(&p, "/api/v1/configmaps", "v1/configmaps").await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/python_client.py");
    let (url, up, ns2) = (p.url.clone(), up.to_string(), ns.clone());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python())
            .args([script, &url, &up, &ns2])
            .output()
            .expect("the Python client's interpreter (KUBECACHE_PYTHON)")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(got["get"], json!(["py-1", true]), "{got}");
    assert_eq!(got["list"], got["list_direct"], "{got}");
    assert!(
        got["list"].as_array().unwrap().contains(&json!("py-1")),
        "{got}"
    );
    assert_eq!(got["list_version_not_older"], true, "{got}");
    let watch = got["watch"].as_array().unwrap();
    assert!(watch.contains(&json!(["ADDED", "py-2"])), "{got}");
    let tc = type_cache(&p, "v1/configmaps").unwrap();
    let proven = tc.proofs.proven.load(std::sync::atomic::Ordering::Relaxed);
    let unproven = tc
        .proofs
        .unproven
        .load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "proven {proven}, not proven {unproven} ({})",
        tc.freshness_mode().why
    );
    assert!(
        proven + unproven >= 2,
        "its consistent reads went through proofs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_reads_its_writes_through_kubecache_in_front_of_a_current_simulator() {
    let sim = SimBuilder::new()
        .personality(kubecache_sim::Personality::V1_36)
        .start()
        .await;
    within(60, python_reads_its_writes(&sim.url)).await;
}

#[cfg(feature = "real-apiserver")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_reads_its_writes_through_kubecache_in_front_of_the_real_apiserver() {
    within(60, python_reads_its_writes(&real_apiserver())).await;
}
