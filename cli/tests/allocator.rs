//! The `kubecache` command limits glibc's malloc arenas at start (see
//! `cli/src/malloc.rs`), unless the environment chose a number, and says
//! which in its first log line.

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
