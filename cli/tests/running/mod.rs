//! `kubecache` run as its own process by the command's tests: started,
//! its log echoed, and killed when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A child process serving, killed when dropped.
pub struct Running {
    pub child: Child,
    /// Where it serves, as its log said.
    pub addr: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `kubecache ARGS`, waiting for the log line that says it serves.
pub fn start(args: &[&str], serving: &'static str) -> Running {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubecache"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("KUBECACHE_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubecache starts");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
            if !sent && line.contains(serving) {
                let addr = line
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("listen="))
                    .map(str::to_string);
                sent = tx.send(addr).is_ok();
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("it serves")
        .expect("its log names where");
    Running { child, addr }
}
