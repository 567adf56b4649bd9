//! The `kubecache` command limits glibc's malloc arenas at start (see
//! `cli/src/malloc.rs`), unless the environment chose a number, and says
//! which in its first log line.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

/// `kubecache serve` with these environment variables: its first log line
/// (it is killed once it has written it).
fn starting_line(env: &[(&str, &str)]) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubecache"))
        // Nothing listens on port 1: serve starts all the same, forwarding.
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "http://127.0.0.1:1",
        ])
        .env("NO_COLOR", "1")
        .env("KUBECACHE_LOG", "info")
        .env_remove("MALLOC_ARENA_MAX")
        .env_remove("GLIBC_TUNABLES")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubecache starts");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let first = BufReader::new(stderr).lines().map_while(Result::ok).next();
        let _ = tx.send(first);
    });
    let line = rx.recv_timeout(Duration::from_secs(30));
    let _ = child.kill();
    let _ = child.wait();
    line.expect("a log line within 30 s")
        .expect("kubecache writes a log line")
}

#[test]
fn by_default_the_arenas_are_limited_to_two_and_the_start_says_so() {
    let line = starting_line(&[]);
    assert!(line.contains("kubecache starting"), "{line}");
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        assert!(line.contains("malloc_arenas=2 "), "{line}");
    }
    assert!(line.contains("blocking_threads="), "{line}");
}

#[test]
fn an_operators_malloc_arena_max_is_left_as_it_is() {
    let line = starting_line(&[("MALLOC_ARENA_MAX", "8")]);
    assert!(
        line.contains("malloc_arenas=as the environment sets"),
        "{line}"
    );
}

#[test]
fn an_operators_arena_max_tunable_is_left_as_it_is() {
    let line = starting_line(&[("GLIBC_TUNABLES", "glibc.malloc.arena_max=8")]);
    assert!(
        line.contains("malloc_arenas=as the environment sets"),
        "{line}"
    );
}
