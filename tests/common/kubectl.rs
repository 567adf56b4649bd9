//! The real kubectl (KUBECTL, installed by .ci/run), aimed at a server.

/// Runs the real kubectl (KUBECTL, installed by .ci/run) against `server`,
/// ignoring any kubeconfig of the machine: (success, stdout, stderr).
pub fn kubectl(server: &str, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let mut cmd = kubectl_command(server);
    cmd.arg("--request-timeout=30s").args(args);
    let out = if let Some(input) = stdin {
        use std::io::Write;
        let mut child = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    } else {
        cmd.output().unwrap()
    };
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The real kubectl aimed at `server`, ignoring any kubeconfig of the
/// machine.
pub fn kubectl_command(server: &str) -> std::process::Command {
    let bin = std::env::var("KUBECTL").expect("KUBECTL=path/to/kubectl (see .ci/run)");
    let mut cmd = std::process::Command::new(bin);
    cmd.args(["--server", server])
        .env("KUBECONFIG", "/dev/null");
    cmd
}
