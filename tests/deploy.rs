//! The manifests in deploy/ render offline with kubectl's kustomize, their
//! kubecache configs and kubeconfig load with kubecache's own loaders, and
//! the real apiserver accepts every object (server-side dry run).
#![cfg(feature = "real-apiserver")]

use std::path::Path;
use std::process::Command;

fn kubectl() -> String {
    std::env::var("KUBECTL").expect("KUBECTL=path to kubectl (see .ci/run)")
}

fn render(overlay: &str) -> String {
    let out = Command::new(kubectl())
        .args(["kustomize", &format!("deploy/{overlay}")])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run kubectl kustomize");
    assert!(
        out.status.success(),
        "kustomize {overlay}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn objects(yaml: &str) -> Vec<serde_yaml::Value> {
    serde_yaml::Deserializer::from_str(yaml)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

fn kinds(objs: &[serde_yaml::Value]) -> Vec<String> {
    let mut k: Vec<String> = objs
        .iter()
        .map(|o| o["kind"].as_str().unwrap().to_string())
        .collect();
    k.sort();
    k
}

/// Every file a ConfigMap carries, by key.
fn config_files(objs: &[serde_yaml::Value]) -> Vec<(String, String)> {
    objs.iter()
        .filter(|o| o["kind"] == "ConfigMap")
        .flat_map(|o| {
            o["data"]
                .as_mapping()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.as_str().unwrap().into(), v.as_str().unwrap().into()))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn dry_run(yaml: &str) {
    let up = std::env::var("KUBECACHE_REAL_APISERVER").expect("KUBECACHE_REAL_APISERVER");
    // Server-side dry run needs the namespace to exist for real.
    let ns = Command::new(kubectl())
        .args(["--server", &up, "create", "namespace", "kubecache"])
        .output()
        .unwrap();
    assert!(
        ns.status.success() || String::from_utf8_lossy(&ns.stderr).contains("AlreadyExists"),
        "{}",
        String::from_utf8_lossy(&ns.stderr)
    );
    let mut child = Command::new(kubectl())
        .args(["--server", &up, "apply", "--dry-run=server", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(yaml.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "dry run refused: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn load_config(text: &str) -> kubecache::config::FileConfig {
    let dir = std::env::temp_dir().join(format!("kubecache-deploy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("kubecache.yaml");
    std::fs::write(&p, text).unwrap();
    kubecache::config::FileConfig::load(&p).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_standalone_overlay_renders_loads_and_is_accepted() {
    let yaml = render("standalone");
    let objs = objects(&yaml);
    assert_eq!(
        kinds(&objs),
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "ConfigMap",
            "Deployment",
            "Namespace",
            "NetworkPolicy",
            "Service",
            "ServiceAccount"
        ]
    );
    let files = config_files(&objs);
    let cfg = load_config(&files[0].1);
    assert_eq!(cfg.listen.as_deref(), Some("0.0.0.0:8001"));
    assert!(
        cfg.upstream.is_none() && cfg.kubeconfig.is_none(),
        "in-cluster"
    );
    // The shared proxy must not be able to read Secrets for its clients.
    let role = objs.iter().find(|o| o["kind"] == "ClusterRole").unwrap();
    let text = serde_yaml::to_string(role).unwrap();
    assert!(!text.contains("secrets") && !text.contains("'*'"), "{text}");
    dry_run(&yaml);
}

#[test]
fn the_sidecar_overlay_points_its_app_at_kubecache_on_loopback() {
    let yaml = render("sidecar");
    let objs = objects(&yaml);
    let files = config_files(&objs);
    let cfg = files.iter().find(|(k, _)| k == "kubecache.yaml").unwrap();
    assert_eq!(
        load_config(&cfg.1).listen.as_deref(),
        Some("127.0.0.1:8001")
    );
    let kc = files.iter().find(|(k, _)| k == "kubeconfig").unwrap();
    let dir = std::env::temp_dir().join(format!("kubecache-sidecar-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("kubeconfig"), &kc.1).unwrap();
    let up =
        kubecache::upstream::kubeconfig::from_kubeconfig(Path::new(&dir.join("kubeconfig")), None)
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(up.url, "http://127.0.0.1:8001");
    dry_run(&yaml);
}
