//! `kubecache serve` refuses to start, exit 64 and one line saying why,
//! where it would serve other machines' clients with its own identity:
//! on an address that is not loopback (trust-local is loopback only);
//! in authorize mode, in front of an upstream that would not check the
//! client credentials it forwards (plain http), or off loopback without
//! TLS; or with a serving certificate or client CA that cannot serve.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `kubecache serve` with these flags: its exit code and stderr. One
/// that starts after all is stopped after 10 s, and fails the test.
fn serve(flags: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubecache"))
        .arg("serve")
        .args(["--upstream", "http://127.0.0.1:1"])
        .args(flags)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubecache runs");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("kubecache serve {flags:?} started");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status.code(), stderr)
}

#[test]
fn serving_every_client_as_kubecache_is_refused_off_loopback() {
    for (flags, words) in [
        (
            &["--listen", "0.0.0.0:0"][..],
            "which the plain-http upstream http://127.0.0.1:1 does not check",
        ),
        (
            &["--listen", "[::]:0", "--auth-mode", "trust-local"][..],
            "only on a loopback address, not [::]:0",
        ),
        (
            &["--listen", "127.0.0.1:0", "--auth-mode", "authorize"][..],
            "forwards each client's own credentials",
        ),
        (
            &["--listen", "127.0.0.1:0", "--anonymous-auth=false"][..],
            "go with --auth-mode authorize",
        ),
        (
            &["--listen", "127.0.0.1:0", "--client-ca-file", "/ca.crt"][..],
            "go with --auth-mode authorize",
        ),
    ] {
        let (code, stderr) = serve(flags);
        assert_eq!(code, Some(64), "{flags:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{flags:?}: {stderr}");
        assert!(stderr.starts_with("kubecache: "), "{stderr}");
        assert!(stderr.contains(words), "{flags:?}: {stderr}");
    }
    // A serving certificate that cannot serve is found before binding.
    for (flags, words) in [
        (
            &[
                "--listen",
                "127.0.0.1:0",
                "--tls-cert-file",
                "/nonexistent/c.pem",
            ][..],
            "give --tls-cert-file and --tls-private-key-file together",
        ),
        (
            &[
                "--listen",
                "127.0.0.1:0",
                "--tls-cert-file",
                "/nonexistent/c.pem",
                "--tls-private-key-file",
                "/nonexistent/k.pem",
            ][..],
            "serving TLS: reading /nonexistent/c.pem",
        ),
    ] {
        let (code, stderr) = serve(flags);
        assert_eq!(code, Some(64), "{flags:?}: {stderr}");
        assert!(stderr.contains(words), "{flags:?}: {stderr}");
    }
    let (code, stderr) = serve(&["--listen", "127.0.0.1:0", "--auth-mode", "none"]);
    assert_eq!(code, Some(64), "{stderr}");
    assert!(stderr.contains("none"), "{stderr}");
}

/// A flag mistyped or given a value it does not take: exit 64 before
/// anything binds, with clap's whole message — the suggestion, the allowed
/// values, the usage.
#[test]
fn a_mistyped_flag_or_value_gets_the_suggestion_and_the_allowed_values() {
    let (code, stderr) = serve(&["--upstrem", "http://127.0.0.1:1"]);
    assert_eq!(code, Some(64), "{stderr}");
    assert!(
        stderr.starts_with("kubecache: unexpected argument '--upstrem' found"),
        "{stderr}"
    );
    assert!(
        stderr.contains("tip: a similar argument exists: '--upstream'"),
        "{stderr}"
    );
    assert!(stderr.contains("Usage: kubecache serve"), "{stderr}");
    let (code, stderr) = serve(&["--listen", "127.0.0.1:0", "--consistent-reads", "fresh"]);
    assert_eq!(code, Some(64), "{stderr}");
    assert!(
        stderr.contains("[possible values: prove, forward, serve-stale]"),
        "{stderr}"
    );
}

/// Every flag of every command says what it is for.
#[test]
fn every_flag_has_help_text() {
    for command in ["serve", "sim", "demo", "probe"] {
        let out = Command::new(env!("CARGO_BIN_EXE_kubecache"))
            .args([command, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = help.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            if !t.starts_with('-') {
                continue;
            }
            // Its text is on the same line after the flag, or on the next;
            // clap's `[default: …]` and `[possible values: …]` are not it.
            let prose = |text: &str| {
                let text = text.split('[').next().unwrap_or("");
                text.split_whitespace()
                    .any(|w| !w.starts_with('<') && !w.starts_with('-'))
            };
            let after: Vec<&str> = t
                .split_whitespace()
                .skip_while(|w| w.starts_with('-') || w.starts_with('<'))
                .collect();
            let same_line = prose(&after.join(" "));
            let next = lines.get(i + 1).map(|l| l.trim_start()).unwrap_or("");
            let next_line = !next.starts_with('-') && prose(next);
            assert!(
                same_line || next_line,
                "kubecache {command}: {line} has no help"
            );
        }
    }
}
