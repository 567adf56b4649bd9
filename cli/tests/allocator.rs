//! The `kubecache` command limits glibc's malloc arenas at start (see
//! `cli/src/malloc.rs`), unless the environment chose a number, and says
//! which in its first log line; `kubecache sim` also deepens its tcache.

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

/// The environment `kubecache sim` runs with once it has started (it
/// runs itself again with the simulator's tunables first): read from
/// /proc once it has written its first log line.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn sim_tunables(env: &[(&str, &str)]) -> Option<String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubecache"))
        .args(["sim", "--listen", "127.0.0.1:0", "--pods", "1"])
        .env("NO_COLOR", "1")
        .env("KUBECACHE_LOG", "info")
        .env_remove("GLIBC_TUNABLES")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the simulator starts");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let first = BufReader::new(stderr).lines().map_while(Result::ok).next();
        let _ = tx.send(first);
    });
    let line = rx.recv_timeout(Duration::from_secs(30));
    let environ = std::fs::read(format!("/proc/{}/environ", child.id()));
    let _ = child.kill();
    let _ = child.wait();
    line.expect("a log line within 30 s")
        .expect("the simulator writes a log line");
    let environ = environ.expect("its environment");
    // glibc (2.36) ends each tunable it reads with a NUL in place: the
    // variable's pieces that follow it are tunables of its own.
    let mut parts = environ
        .split(|b| *b == 0)
        .skip_while(|kv| !kv.starts_with(b"GLIBC_TUNABLES="));
    let first = parts.next()?.strip_prefix(b"GLIBC_TUNABLES=")?;
    let pieces: Vec<String> = std::iter::once(first)
        .chain(parts.take_while(|p| p.starts_with(b"glibc.")))
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    Some(pieces.join(":"))
}

/// Generating a million pods was malloc-bound with glibc's default
/// tcache (see `cli/src/malloc.rs`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_simulator_runs_with_a_deeper_malloc_tcache_added_to_the_operators_tunables() {
    assert_eq!(
        sim_tunables(&[]).as_deref(),
        Some("glibc.malloc.tcache_count=1024")
    );
    assert_eq!(
        sim_tunables(&[("GLIBC_TUNABLES", "glibc.malloc.arena_max=4")]).as_deref(),
        Some("glibc.malloc.arena_max=4:glibc.malloc.tcache_count=1024")
    );
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn an_operators_tcache_count_is_left_as_it_is_by_the_simulator() {
    assert_eq!(
        sim_tunables(&[("GLIBC_TUNABLES", "glibc.malloc.tcache_count=7")]).as_deref(),
        Some("glibc.malloc.tcache_count=7")
    );
}
