//! `kubecache probe`, the exec probe of a sidecar that listens on the pod's
//! loopback (where the kubelet's HTTP probes cannot reach): exit 0 on a
//! 200, 1 on anything else or no answer, 64 for a URL it will not ask.

mod running;

use std::process::Command;

fn probe(url: &str) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kubecache"))
        .args(["probe", url, "--timeout", "5s"])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

#[test]
fn a_probe_passes_on_200_and_fails_otherwise() {
    let sim = running::sim(20);
    let kc = running::serve(&sim, "eager: [v1/pods]\n", &[]);
    let base = format!("http://{}", kc.addr);
    let (code, out) = probe(&format!("{base}/livez"));
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("200 OK"), "{out}");
    // Readiness once the pods are synced.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while probe(&format!("{base}/readyz")).0 != Some(0) {
        assert!(std::time::Instant::now() < deadline, "never ready");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // Not a health path: 404, a failure.
    let (code, out) = probe(&format!("{base}/no-such-path"));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("404"), "{out}");
    drop(kc);
    let (code, out) = probe(&format!("{base}/livez"));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("connecting"), "{out}");
}

#[test]
fn a_probe_asks_only_plain_http_on_loopback() {
    for url in [
        "http://10.0.0.1:8001/readyz",
        "https://127.0.0.1:8001/readyz",
        "127.0.0.1:8001",
    ] {
        let (code, out) = probe(url);
        assert_eq!(code, Some(64), "{url}: {out}");
    }
}
