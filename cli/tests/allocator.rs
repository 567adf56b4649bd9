//! The `kubecache` command limits glibc's malloc arenas at start (see
//! `cli/src/malloc.rs`), unless the environment chose a number, and says
//! which in its first log line; `kubecache sim` also deepens its tcache.

mod running;

/// `kubecache serve` with these environment variables: its first log line.
fn starting_line(env: &[(&str, &str)]) -> String {
    let kc = running::serve_nowhere(|c| {
        c.envs(env.iter().copied());
    });
    kc.log().lines().next().unwrap_or_default().to_string()
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
    let mut cmd = running::kubecache();
    cmd.args(["sim", "--listen", "127.0.0.1:0", "--pods", "1"])
        .env_remove("GLIBC_TUNABLES")
        .envs(env.iter().copied());
    let sim = running::spawn(cmd, "simulated apiserver serving");
    let environ = std::fs::read(format!("/proc/{}/environ", sim.child.id()));
    drop(sim);
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
