//! `kubecache` run as its own process by the command's tests: started,
//! its log kept (and echoed, for a failing test's output), and killed
//! when dropped.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A child process serving, killed when dropped.
pub struct Running {
    pub child: Child,
    /// Where it serves, as its log said.
    pub addr: String,
    /// Everything it has logged so far.
    pub log: Arc<Mutex<String>>,
}

impl Running {
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Its URL, HTTPS when `--tls-cert-file` was given.
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme(), self.addr)
    }

    fn scheme(&self) -> &'static str {
        if self.log().contains("scheme=https") {
            "https"
        } else {
            "http"
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `kubecache` binary, logging at info without colour.
pub fn kubecache() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubecache"));
    cmd.env("NO_COLOR", "1").env("KUBECACHE_LOG", "info");
    cmd
}

/// Runs `kubecache ARGS`, waiting for the log line that says it serves.
pub fn start(args: &[&str], serving: &'static str) -> Running {
    let mut cmd = kubecache();
    cmd.args(args);
    spawn(cmd, serving)
}

/// The address a serving line names: `listen=ADDR` in text, the `listen`
/// field in JSON.
fn listen_of(line: &str) -> Option<String> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("listen="))
        .map(str::to_string)
        .or_else(|| {
            let v: serde_json::Value = serde_json::from_str(line).ok()?;
            v.get("listen")?.as_str().map(str::to_string)
        })
}

/// `kubecache serve` in front of nothing (port 1: it serves all the same,
/// forwarding), with none of the environment's choices of log format or
/// allocator, set up further by `setup`.
pub fn serve_nowhere(setup: impl FnOnce(&mut Command)) -> Running {
    let mut cmd = kubecache();
    cmd.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        "http://127.0.0.1:1",
    ])
    .env_remove("KUBECACHE_LOG_FORMAT")
    .env_remove("MALLOC_ARENA_MAX")
    .env_remove("GLIBC_TUNABLES");
    setup(&mut cmd);
    spawn(cmd, "kubecache serving")
}

/// `kubecache sim` with `pods` pods.
pub fn sim(pods: usize) -> Running {
    sim_as(pods, "v1.20")
}

/// `kubecache sim` with `pods` pods, as kube-apiserver `version` (`v1.20`
/// or `v1.36`).
pub fn sim_as(pods: usize, version: &str) -> Running {
    let pods = pods.to_string();
    start(
        &[
            "sim",
            "--listen",
            "127.0.0.1:0",
            "--pods",
            &pods,
            "--version",
            version,
        ],
        "simulated apiserver serving",
    )
}

/// `kubecache serve` in front of `upstream`, with `config` (YAML) as its
/// configuration file, and `flags`.
pub fn serve(upstream: &Running, config: &str, flags: &[&str]) -> Running {
    let dir = std::env::temp_dir().join(format!(
        "kubecache-test-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("kubecache.yaml");
    std::fs::write(&file, config).unwrap();
    let upstream = format!("http://{}", upstream.addr);
    let mut args = vec![
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "--config",
        file.to_str().unwrap(),
    ];
    args.extend(flags);
    start(&args, "kubecache serving")
}

/// Runs `cmd` (its standard streams are set here) and waits up to 30 s
/// for the log line containing `serving`, which names the address
/// (`listen=`); panics with the log if it ends or is silent before.
pub fn spawn(mut cmd: Command, serving: &'static str) -> Running {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubecache starts");
    let stderr = child.stderr.take().unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let seen = log.clone();
    std::thread::spawn(move || {
        let mut sent = false;
        // Read to the end, so that the child never blocks on its log.
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
            {
                let mut seen = seen.lock().unwrap();
                seen.push_str(&line);
                seen.push('\n');
            }
            if !sent && line.contains(serving) {
                sent = tx.send(listen_of(&line)).is_ok();
            }
        }
        let _ = tx.send(None);
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(Some(addr)) => Running { child, addr, log },
        _ => panic!("kubecache did not start serving:\n{}", log.lock().unwrap()),
    }
}
