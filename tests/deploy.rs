//! The manifests in deploy/ render offline with kubectl's kustomize, their
//! kubecache configs and kubeconfig load with kubecache's own loaders, and
//! the real apiserver accepts every object (server-side dry run).
#![cfg(feature = "real-apiserver")]

mod common;

use common::{kubectl, real_apiserver};
use kubecache::serve::auth::AuthMode;
use std::path::Path;

/// Offline: kustomize reads only the files under deploy/.
fn render(overlay: &str) -> String {
    let dir = format!("{}/deploy/{overlay}", env!("CARGO_MANIFEST_DIR"));
    let (ok, out, err) = kubectl(&real_apiserver(), &["kustomize", &dir], None);
    assert!(ok, "kustomize {overlay}: {err}");
    out
}

fn objects(yaml: &str) -> Vec<serde_json::Value> {
    serde_saphyr::from_multiple(yaml).unwrap()
}

fn kinds(objs: &[serde_json::Value]) -> Vec<String> {
    let mut k: Vec<String> = objs
        .iter()
        .map(|o| o["kind"].as_str().unwrap().to_string())
        .collect();
    k.sort();
    k
}

/// Every file a ConfigMap carries, by key.
fn config_files(objs: &[serde_json::Value]) -> Vec<(String, String)> {
    objs.iter()
        .filter(|o| o["kind"] == "ConfigMap")
        .flat_map(|o| {
            o["data"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().into()))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn dry_run(yaml: &str) {
    let up = real_apiserver();
    // Server-side dry run needs the namespace to exist for real.
    let (ok, _, err) = kubectl(&up, &["create", "namespace", "kubecache"], None);
    assert!(ok || err.contains("AlreadyExists"), "{err}");
    // The manifests are for current clusters; v1.20 is asked about what
    // it can know. policy/v1 PodDisruptionBudgets are served from 1.21
    // (v1beta1 has the fields used); a native sidecar (`restartPolicy:
    // Always`, and probes, which only it may have among init containers)
    // is from 1.28: v1.20 checks the rest of it as a plain init container,
    // and the tests check those fields themselves.
    let mut objs = objects(yaml);
    for o in &mut objs {
        if o["kind"] == "PodDisruptionBudget" && o["apiVersion"] == "policy/v1" {
            o["apiVersion"] = "policy/v1beta1".into();
        }
        if let Some(inits) = o
            .pointer_mut("/spec/template/spec/initContainers")
            .and_then(|v| v.as_array_mut())
        {
            for c in inits {
                let c = c.as_object_mut().unwrap();
                if c.remove("restartPolicy").is_some() {
                    for probe in ["startupProbe", "readinessProbe", "livenessProbe"] {
                        c.remove(probe);
                    }
                }
            }
        }
    }
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objs});
    let (ok, _, err) = kubectl(
        &up,
        &["apply", "--dry-run=server", "-f", "-"],
        Some(&list.to_string()),
    );
    assert!(ok, "dry run refused: {err}");
}

fn load_config(text: &str) -> kubecache::config::Settings {
    // One file per call: the tests run in parallel in one process.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("kubecache-deploy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("kubecache-{call}.yaml"));
    std::fs::write(&p, text).unwrap();
    kubecache::config::Settings::load(&p).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_standalone_overlay_renders_loads_and_is_accepted() {
    let yaml = render("standalone");
    let objs = objects(&yaml);
    assert_eq!(
        kinds(&objs),
        [
            "ClusterRole",
            "ClusterRole",
            "ClusterRoleBinding",
            "ClusterRoleBinding",
            "ConfigMap",
            "Deployment",
            "HorizontalPodAutoscaler",
            "Namespace",
            "NetworkPolicy",
            "PodDisruptionBudget",
            "Service",
            "ServiceAccount"
        ]
    );
    let of = |kind: &str| objs.iter().find(|o| o["kind"] == kind).unwrap();
    let pod = &of("Deployment")["spec"]["template"];
    assert_eq!(
        pod["spec"]["securityContext"]["seccompProfile"]["type"], "RuntimeDefault",
        "the restricted Pod Security level"
    );
    assert_eq!(
        pod["metadata"]["annotations"]["prometheus.io/scrape"],
        "true"
    );
    let container = &pod["spec"]["containers"][0];
    assert_eq!(container["startupProbe"]["httpGet"]["path"], "/livez");
    assert_eq!(
        pod["spec"]["topologySpreadConstraints"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(of("PodDisruptionBudget")["spec"]["maxUnavailable"], 1);
    assert_eq!(of("HorizontalPodAutoscaler")["spec"]["minReplicas"], 2);
    let files = config_files(&objs);
    let cfg = load_config(&files[0].1);
    assert_eq!(cfg.listen.as_deref(), Some("0.0.0.0:8443"));
    // Serving other pods, each as itself, over TLS from the Secret.
    assert_eq!(cfg.auth_mode, Some(AuthMode::Authorize));
    assert_eq!(
        cfg.tls_cert_file.as_deref(),
        Some(Path::new("/etc/kubecache/tls/tls.crt"))
    );
    assert!(
        cfg.upstream.is_none() && cfg.kubeconfig.is_none(),
        "in-cluster"
    );
    let role = |name: &str| {
        let r = objs
            .iter()
            .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == name)
            .unwrap();
        serde_json::to_string(r).unwrap()
    };
    // What it caches for everyone: read-only, no Secrets, no wildcard.
    let reader = role("kubecache-reader");
    assert!(
        !reader.contains("secrets") && !reader.contains("\"*\""),
        "{reader}"
    );
    // What authorize mode needs: the reviews, impersonation, Secrets.
    let authorize = role("kubecache-authorize");
    for needed in [
        "tokenreviews",
        "subjectaccessreviews",
        "impersonate",
        "secrets",
    ] {
        assert!(authorize.contains(needed), "{needed}: {authorize}");
    }
    assert!(!authorize.contains("\"*\""), "{authorize}");
    let deployment = objs.iter().find(|o| o["kind"] == "Deployment").unwrap();
    let volumes =
        serde_json::to_string(&deployment["spec"]["template"]["spec"]["volumes"]).unwrap();
    assert!(volumes.contains("kubecache-tls"), "{volumes}");
    // SIGTERM: served for the delay, then drained, all before the kill.
    let grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        .as_u64()
        .unwrap();
    let delay = cfg.shutdown_delay_duration.unwrap().0.as_secs();
    let drain = cfg.drain_seconds.unwrap();
    assert!(
        delay > 0 && grace > delay + drain,
        "{grace} <= {delay} + {drain}"
    );
    dry_run(&yaml);
}

#[test]
fn the_edge_overlay_persists_its_snapshot_on_a_claim_and_serves_it_offline() {
    let yaml = render("edge");
    let objs = objects(&yaml);
    let kinds = kinds(&objs);
    assert!(
        kinds.contains(&"PersistentVolumeClaim".to_string()),
        "{kinds:?}"
    );
    assert!(
        !kinds.contains(&"HorizontalPodAutoscaler".to_string()),
        "one replica per site: {kinds:?}"
    );
    let cfg = load_config(&config_files(&objs)[0].1);
    assert_eq!(
        cfg.snapshot_dir.as_deref(),
        Some(Path::new("/var/lib/kubecache"))
    );
    assert_eq!(cfg.serve_stale_when_offline, Some(true));
    let deployment = objs.iter().find(|o| o["kind"] == "Deployment").unwrap();
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(deployment["spec"]["strategy"]["type"], "Recreate");
    let pod = &deployment["spec"]["template"]["spec"];
    let mounts = serde_json::to_string(&pod["containers"][0]["volumeMounts"]).unwrap();
    assert!(mounts.contains("/var/lib/kubecache"), "{mounts}");
    let volumes = serde_json::to_string(&pod["volumes"]).unwrap();
    assert!(
        volumes.contains("kubecache-snapshot") && volumes.contains("kubecache-tls"),
        "{volumes}"
    );
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    assert_eq!(pod["securityContext"]["fsGroup"], 65532);
    assert_eq!(
        pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"],
        true
    );
    dry_run(&yaml);
}

#[test]
fn the_sidecar_overlay_points_its_app_at_kubecache_on_loopback() {
    let yaml = render("sidecar");
    let objs = objects(&yaml);
    let files = config_files(&objs);
    let cfg = files.iter().find(|(k, _)| k == "kubecache.yaml").unwrap();
    let cfg = load_config(&cfg.1);
    assert_eq!(cfg.listen.as_deref(), Some("127.0.0.1:8001"));
    assert_eq!(cfg.auth_mode, Some(AuthMode::TrustLocal));
    let kc = files.iter().find(|(k, _)| k == "kubeconfig").unwrap();
    let dir = std::env::temp_dir().join(format!("kubecache-sidecar-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("kubeconfig"), &kc.1).unwrap();
    let up =
        kubecache::upstream::kubeconfig::from_kubeconfig(Path::new(&dir.join("kubeconfig")), None)
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(up.url, "http://127.0.0.1:8001");
    // A native sidecar, started before the app and probed on loopback by
    // `kubecache probe` (cli/tests/probe.rs).
    let pod = &objs.iter().find(|o| o["kind"] == "Deployment").unwrap()["spec"]["template"]["spec"];
    let sidecar = &pod["initContainers"][0];
    assert_eq!(sidecar["name"], "kubecache");
    assert_eq!(sidecar["restartPolicy"], "Always");
    assert_eq!(
        sidecar["startupProbe"]["exec"]["command"],
        serde_json::json!([
            "/usr/local/bin/kubecache",
            "probe",
            "http://127.0.0.1:8001/livez"
        ])
    );
    assert_eq!(
        sidecar["readinessProbe"]["exec"]["command"][2],
        "http://127.0.0.1:8001/readyz"
    );
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    assert!(
        pod["containers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["name"] != "kubecache"),
        "kubecache is not among the app's containers"
    );
    dry_run(&yaml);
}

/// The image recipe agrees with the manifests that run it. No container
/// registry can be reached from this machine kind, so the Dockerfile is
/// not built here (docs/operations.md, "Deploying"); its build step is the release
/// build CI's benchmarks make, and this checks the rest.
#[test]
fn the_dockerfile_runs_kubecache_as_the_manifests_expect() {
    let text = std::fs::read_to_string(format!("{}/Dockerfile", env!("CARGO_MANIFEST_DIR")))
        .expect("a Dockerfile at the top");
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let froms: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("FROM "))
        .copied()
        .collect();
    assert!(froms.len() >= 2, "multi-stage: {froms:?}");
    for f in &froms {
        let image = f.split_whitespace().nth(1).unwrap();
        assert!(
            image == "scratch" || image.contains(':'),
            "{image} is not pinned to a tag"
        );
    }
    let last = froms.last().unwrap();
    assert!(
        last.contains("distroless") && last.contains("nonroot"),
        "{last}"
    );
    // The runtime stage: what comes after its FROM.
    let runtime = &lines[lines.iter().position(|l| l == last).unwrap()..];
    let user = runtime
        .iter()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("a USER");
    let objs = objects(&render("standalone"));
    let deployment = objs.iter().find(|o| o["kind"] == "Deployment").unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let run_as = container["securityContext"]["runAsUser"].as_u64().unwrap();
    assert_eq!(
        user,
        format!("{run_as}:{run_as}"),
        "numeric, as runAsNonRoot checks"
    );
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    let port = container["ports"][0]["containerPort"].as_u64().unwrap();
    assert!(
        runtime.contains(&format!("EXPOSE {port}").as_str()),
        "{runtime:?}"
    );
    // The manifests pass their own args; the image's default is the same.
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let cmd = format!("CMD {}", serde_json::to_string(&args).unwrap());
    assert!(
        runtime.iter().any(|l| l.replace(", ", ",") == cmd),
        "{cmd} in {runtime:?}"
    );
    assert!(runtime.contains(&r#"ENTRYPOINT ["/usr/local/bin/kubecache"]"#));
    // Stripped, its debug info split off and linked.
    assert!(text.contains("objcopy --only-keep-debug") && text.contains("--strip-all"));
    assert!(text.contains("--add-gnu-debuglink"));
    assert!(text.contains("cargo build --release --locked"));
}
