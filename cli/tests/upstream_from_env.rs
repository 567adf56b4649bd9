//! `kubecache serve` with no upstream flag finds its upstream as client-go
//! tools do — the files KUBECONFIG lists, merged; else ~/.kube/config; else
//! the pod's service account — and reaches the real apiserver's TLS port
//! through each. Each kubecache runs as a child process with an
//! environment of its own, so that no test changes this process's.
#![cfg(feature = "real-apiserver")]

#[path = "../../tests/common/mod.rs"]
mod common;
mod running;

use common::*;
use running::Running;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The real apiserver's secure URL, its port and its RUN folder.
fn secure() -> (String, u16, PathBuf) {
    let url = std::env::var("KUBECACHE_REAL_APISERVER_SECURE")
        .expect("KUBECACHE_REAL_APISERVER_SECURE=https://127.0.0.1:6443 (see .ci/run)");
    let port = url.rsplit(':').next().unwrap().parse().unwrap();
    let run = PathBuf::from(
        std::env::var("KUBECACHE_REAL_APISERVER_RUN")
            .expect("KUBECACHE_REAL_APISERVER_RUN=the real apiserver's RUN dir (see .ci/run)"),
    );
    (url, port, run)
}

fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kubecache-env-{name}-{}", unique_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A kubecache serving, stopped when dropped.
/// `kubecache serve --listen 127.0.0.1:0` run by `cmd` (the binary, or a
/// wrapper that executes it) with no KUBECONFIG, an empty HOME and no
/// in-cluster variables but those `env` sets.
fn serve(mut cmd: Command, env: &[(&str, &std::ffi::OsStr)]) -> Running {
    cmd.env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env("HOME", folder("empty-home"))
        .env("NO_COLOR", "1")
        .env("KUBECACHE_LOG", "info");
    for (k, v) in env {
        cmd.env(k, v);
    }
    running::spawn(cmd, "kubecache serving")
}

/// `kubecache serve` on a port of its choosing.
fn kubecache() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubecache"));
    cmd.args(["serve", "--listen", "127.0.0.1:0"]);
    cmd
}

/// Reads through `s` that need the proxy's credentials, passthrough and
/// cached, are served by the real apiserver.
async fn reaches_the_secure_port(s: &Running) {
    let v = get(&format!("{}/version", s.url())).await;
    assert_eq!(v.status, 200, "{}", v.text());
    assert_eq!(v.json()["gitVersion"], "v1.20.2");
    let r = get(&format!("{}/api/v1/namespaces?resourceVersion=0", s.url())).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["kind"], "NamespaceList");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubeconfig_list_is_merged_and_its_first_current_context_used() {
    let (url, _, run) = secure();
    let dir = folder("list");
    std::fs::create_dir_all(dir.join("b")).unwrap();
    std::fs::copy(run.join("token"), dir.join("b/token")).unwrap();
    // The first file sets the context and its user; the second the cluster
    // (its CA's path relative to its own folder) and a context and users of
    // the same names, which the merge drops: any other reading of the two
    // is refused by the apiserver or reaches nothing.
    let a = dir.join("a.yaml");
    let b = dir.join("b/b.yaml");
    std::fs::write(
        &a,
        "apiVersion: v1\nkind: Config\ncurrent-context: good\n\
         contexts: [{name: good, context: {cluster: real, user: admin}}]\n\
         users: [{name: admin, user: {tokenFile: b/token}}]\n",
    )
    .unwrap();
    std::fs::copy(run.join("certs/apiserver.crt"), dir.join("b/ca.crt")).unwrap();
    std::fs::write(
        &b,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: bad\n\
             contexts: [{{name: bad, context: {{cluster: real, user: stranger}}}}, \
             {{name: good, context: {{cluster: nowhere, user: stranger}}}}]\n\
             clusters: [{{name: real, cluster: {{server: '{url}', certificate-authority: ca.crt}}}}, \
             {{name: nowhere, cluster: {{server: 'https://127.0.0.1:1'}}}}]\n\
             users: [{{name: admin, user: {{token: wrong}}}}, {{name: stranger, user: {{token: wrong}}}}]\n"
        ),
    )
    .unwrap();
    let list = std::env::join_paths([&a, &b]).unwrap();
    let s = serve(kubecache(), &[("KUBECONFIG", &list)]);
    within(60, reaches_the_secure_port(&s)).await;
    // The second file's own current-context is refused: the merge did pick.
    let mut bad = kubecache();
    bad.args(["--context", "bad"]);
    let s = serve(bad, &[("KUBECONFIG", &list)]);
    let r = get(&format!("{}/version", s.url())).await;
    assert_eq!(r.status, 401, "{}", r.text());
}

/// A kubeconfig for the secure port with the apiserver's token and CA.
fn admin_kubeconfig(path: &Path) {
    let (url, _, run) = secure();
    let token = std::fs::read_to_string(run.join("token")).unwrap();
    std::fs::write(
        path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: x\n\
             contexts: [{{name: x, context: {{cluster: c, user: u}}}}]\n\
             clusters: [{{name: c, cluster: {{server: '{url}', certificate-authority: '{}'}}}}]\n\
             users: [{{name: u, user: {{token: '{}'}}}}]\n",
            run.join("certs/apiserver.crt").display(),
            token.trim()
        ),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_kubeconfig_the_homes_kube_config_is_read() {
    let home = folder("home");
    std::fs::create_dir_all(home.join(".kube")).unwrap();
    admin_kubeconfig(&home.join(".kube/config"));
    let s = serve(kubecache(), &[("HOME", home.as_os_str())]);
    within(60, reaches_the_secure_port(&s)).await;
}

/// Whether the service account folder exists on this machine, which the
/// in-cluster test must leave as it found it.
fn service_account_exists() -> bool {
    Path::new("/var/run/secrets/kubernetes.io/serviceaccount").exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_pod_the_service_account_is_used() {
    let (_, port, run) = secure();
    let before = service_account_exists();
    // What the kubelet mounts: the token (here with the newline `echo`
    // leaves, which client-go trims), the cluster's CA, the namespace.
    let sa = folder("service-account");
    std::fs::copy(run.join("token"), sa.join("token")).unwrap();
    std::fs::copy(run.join("certs/apiserver.crt"), sa.join("ca.crt")).unwrap();
    std::fs::write(sa.join("namespace"), "default").unwrap();
    // kube-client reads the service account at its fixed path only: the
    // kubecache runs in a mount namespace of its own, where a tmpfs over
    // /run (the target of /var/run) holds the folder, bound to `sa`.
    // Nothing is made or mounted on the machine itself.
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-euc",
        r#"run=$(readlink -f /var/run)
mount -t tmpfs kubecache-test "$run"
mkdir -p /var/run/secrets/kubernetes.io/serviceaccount
mount --bind "$SA" /var/run/secrets/kubernetes.io/serviceaccount
exec "$KUBECACHE" serve --listen 127.0.0.1:0"#,
    ]);
    let port = port.to_string();
    let s = serve(
        cmd,
        &[
            ("SA", sa.as_os_str()),
            ("KUBECACHE", env!("CARGO_BIN_EXE_kubecache").as_ref()),
            ("KUBERNETES_SERVICE_HOST", "127.0.0.1".as_ref()),
            ("KUBERNETES_SERVICE_PORT", port.as_ref()),
        ],
    );
    within(60, reaches_the_secure_port(&s)).await;
    drop(s);
    assert_eq!(
        service_account_exists(),
        before,
        "the machine's own /var/run changed"
    );
}

/// `kubecache serve ARGS` with `env`, expected to refuse its configuration:
/// its one line.
fn refused(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubecache"));
    cmd.arg("serve")
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env("HOME", folder("empty-home"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(64), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn what_is_not_found_or_not_readable_is_one_line_and_exit_64() {
    // Nothing to go by.
    let e = refused(&[], &[]);
    assert!(
        e.contains(".kube/config") && e.contains("KUBERNETES_SERVICE_HOST"),
        "{e}"
    );
    // KUBECONFIG's files that do not exist are skipped, as client-go skips
    // them; the message says which were looked for.
    let dir = folder("refused");
    let missing = dir.join("missing.yaml");
    let e = refused(&[], &[("KUBECONFIG", missing.as_os_str())]);
    assert!(e.contains("missing.yaml"), "{e}");
    // A file that does not parse is named.
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, "current-context: x\ncontexts: [oops\n").unwrap();
    let list = std::env::join_paths([&missing, &bad]).unwrap();
    let e = refused(&[], &[("KUBECONFIG", &list)]);
    assert!(e.contains("bad.yaml") && e.contains("line 2"), "{e}");
    // --context needs a kubeconfig.
    let e = refused(&["--context", "x"], &[]);
    assert!(e.contains("--context"), "{e}");
    // What is picked from a kubeconfig must be in it.
    let kc = dir.join("kc.yaml");
    admin_kubeconfig(&kc);
    let e = refused(
        &["--kubeconfig", kc.to_str().unwrap(), "--cluster", "zz"],
        &[],
    );
    assert!(
        e.contains("kc.yaml") && e.contains(r#"no cluster "zz""#),
        "{e}"
    );
    let e = refused(
        &["--kubeconfig", kc.to_str().unwrap(), "--context", "zz"],
        &[],
    );
    assert!(e.contains(r#"no context "zz""#), "{e}");
}
