//! The README's quick start, followed word for word against the real
//! apiserver as a user with a kubeconfig would follow it: its shell block
//! is run by bash as it stands, with three differences a test needs — the
//! `cargo install` line is not run (this test's `kubecache` is that
//! build, first on PATH beside the CI's kubectl), port 8001 is a free one,
//! and HOME holds a kubeconfig for the real apiserver's TLS port.
#![cfg(feature = "real-apiserver")]

#[path = "../../tests/common/mod.rs"]
mod common;

use common::*;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

const MARKER: &str = "<!-- quickstart:";
const INSTALL: &str = "cargo install --locked --path cli";

/// The shell block after the quick start's marker in the README.
fn quick_start() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("the README");
    let after = &readme[readme.find(MARKER).expect("the quick start's marker")..];
    let block = after
        .split_once("```sh\n")
        .and_then(|(_, b)| b.split_once("\n```"))
        .expect("a sh block after the marker")
        .0;
    block.to_string()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readmes_quick_start_works_word_for_word_against_the_real_apiserver() {
    let block = quick_start();
    assert!(block.contains(INSTALL), "{block}");
    assert!(block.contains("127.0.0.1:8001"), "{block}");
    let up = real_apiserver();
    let ns = format!("quickstart-{}", unique_suffix());
    fixtures::create(
        &up,
        "/api/v1/namespaces",
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    )
    .await;
    let spec = serde_json::json!({"containers": fixtures::containers(&["c"])});
    let pod = fixtures::pod("first-pod", spec, serde_json::json!({}));
    fixtures::create(&up, &format!("/api/v1/namespaces/{ns}/pods"), pod).await;

    // A user's machine: a kubeconfig for the apiserver's TLS port in HOME,
    // and the two commands on PATH.
    let secure = std::env::var("KUBECACHE_REAL_APISERVER_SECURE")
        .expect("KUBECACHE_REAL_APISERVER_SECURE=https://127.0.0.1:6443 (see .ci/run)");
    let run = PathBuf::from(std::env::var("KUBECACHE_REAL_APISERVER_RUN").expect("(see .ci/run)"));
    let token = std::fs::read_to_string(run.join("token")).unwrap();
    let home = std::env::temp_dir().join(format!("kubecache-quickstart-{}", unique_suffix()));
    let bin = home.join("bin");
    std::fs::create_dir_all(home.join(".kube")).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        home.join(".kube/config"),
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: mine\n\
             contexts: [{{name: mine, context: {{cluster: c, user: me}}}}]\n\
             clusters: [{{name: c, cluster: {{server: '{secure}', certificate-authority: '{}'}}}}]\n\
             users: [{{name: me, user: {{token: '{}'}}}}]\n",
            run.join("certs/apiserver.crt").display(),
            token.trim()
        ),
    )
    .unwrap();
    let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into());
    let kubectl = which(&kubectl);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kubecache"), bin.join("kubecache")).unwrap();
    std::os::unix::fs::symlink(kubectl, bin.join("kubectl")).unwrap();

    let port = free_port();
    // If a line fails, bash exits at once: the trap stops what the block
    // started in the background, which would otherwise hold the output's
    // pipes open (and, once the block's own `kill` has, finds nothing
    // to stop, which must not fail the script).
    let script = format!(
        "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n{}",
        block
            .replace(INSTALL, "")
            .replace("127.0.0.1:8001", &format!("127.0.0.1:{port}"))
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = within(
        180,
        tokio::task::spawn_blocking(move || {
            Command::new("bash")
                .args(["-e", "-c", &script])
                .env("HOME", &home)
                .env("PATH", path)
                .env_remove("KUBECONFIG")
                .env("NO_COLOR", "1")
                .env_remove("KUBECACHE_LOG_FORMAT")
                .output()
                .unwrap()
        }),
    )
    .await
    .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "the quick start failed:\n{stdout}\n{stderr}"
    );
    // What each command shows: readiness checked in detail, the pods
    // through kubecache, and the status page's JSON last.
    assert!(stdout.contains("[+]informer-sync/v1/pods ok"), "{stdout}");
    assert!(stdout.contains("readyz check passed"), "{stdout}");
    assert!(
        stdout.contains(&ns) && stdout.contains("first-pod"),
        "{stdout}"
    );
    let page = stdout
        .find("{\"version\"")
        .map(|i| &stdout[i..])
        .unwrap_or_default();
    let page: Value = serde_json::from_str(page.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let pods = page["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["resource"] == "v1/pods")
        .unwrap_or_else(|| panic!("no pods on the status page: {page}"));
    // kubectl's plain list came from the cache once proven fresh, as the
    // README says — or, the pods being quiet and the upstream v1.20 (which
    // cannot prove a quiet type), was forwarded, and the page says why.
    let served = pods["served"].as_u64().unwrap();
    let forwarded = pods["forwarded"].as_u64().unwrap();
    match pods["consistentReads"].as_str().unwrap() {
        "forwarded" => {
            assert!(forwarded >= 1, "{pods}");
            assert!(
                pods["consistentReadsWhy"]
                    .as_str()
                    .unwrap()
                    .contains("v1.20"),
                "{pods}"
            );
        }
        _ => assert!(served >= 1, "{pods}"),
    }
    assert!(stderr.contains("kubecache serving"), "{stderr}");
}

/// The executable a command name runs, as the shell would find it.
fn which(cmd: &str) -> PathBuf {
    if cmd.contains('/') {
        return PathBuf::from(cmd);
    }
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| PathBuf::from(d).join(cmd))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{cmd} is not on PATH"))
}
