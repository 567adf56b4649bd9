//! How many malloc arenas the process may have. This is the one module of
//! kubecache with `unsafe` code, earned by the load benchmark
//! (`benches/load.rs`, 2,000 clients, a 1 GiB bound): glibc gives every
//! thread that finds the arenas busy one of its own, up to 8 per core, and
//! each keeps what its thread freed. Under load, tokio's blocking pool ran
//! ~40 threads at once compressing and stitching list bodies, and their
//! arenas held on to it: peak RSS 909–1,323 MiB with glibc's default, of
//! which the bounded parts (bytes in flight, body buffers, objects) were
//! ~400 MiB. With two arenas: see docs/benchmarks.md, "Load".

/// The arenas kubecache asks for when the operator has not chosen: the
/// main one and one more, so that the threads allocating at once do not
/// all wait on one lock.
pub const ARENAS: i32 = 2;

/// Limits glibc's arenas to `max`, unless the operator chose a number in
/// the environment (`MALLOC_ARENA_MAX`, or `glibc.malloc.arena_max` in
/// `GLIBC_TUNABLES`), which glibc has read already. Must run before any
/// thread but the main one starts: an arena made before the call stays.
/// True if the limit was set here.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn limit_arenas(max: i32) -> bool {
    if operator_chose(
        std::env::var_os("MALLOC_ARENA_MAX").is_some(),
        std::env::var("GLIBC_TUNABLES").ok().as_deref(),
    ) {
        return false;
    }
    // SAFETY: mallopt takes two integers and only sets one of malloc's
    // parameters, which glibc reads under its own lock when a thread next
    // needs an arena; no pointer or memory of ours is involved.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, max) == 1 }
}

/// Other allocators (musl's, a non-Linux libc) have no per-thread arenas
/// to limit.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn limit_arenas(_max: i32) -> bool {
    false
}

/// How many freed blocks of each size glibc's per-thread cache (tcache)
/// keeps for the simulator; glibc's default is 7. Generating a pod makes
/// and frees thousands of small blocks; past the cache's 7, glibc put
/// them in its small bins, which hand back the oldest free block first:
/// one left anywhere in a heap of gigabytes, cold in cache and TLB, so
/// each pod took longer the more were generated before it (the profile:
/// _int_malloc moving small-bin blocks into the tcache). 200,000 pods
/// took 44 s with the default, 15 s with 1,024 (14.9 s under jemalloc),
/// at the same RSS; 65,535 took 19 s and 18% more memory.
pub const SIM_TCACHE_COUNT: u32 = 1024;

/// Runs this process again (same arguments, same pid) with the
/// simulator's tcache, which glibc reads only from the environment at
/// start (`GLIBC_TUNABLES`; there is no `mallopt` for it). Returns only
/// when it is not done: the operator set a tcache count, this is not
/// glibc, or the exec failed (then the simulator runs as it is, slower
/// to generate many objects).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn rerun_with_sim_tcache() {
    use std::os::unix::process::CommandExt;
    let Some(tunables) = with_tcache_count(
        std::env::var("GLIBC_TUNABLES").ok().as_deref(),
        SIM_TCACHE_COUNT,
    ) else {
        return;
    };
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env("GLIBC_TUNABLES", tunables)
        .exec();
    eprintln!("kubecache: running again with a larger malloc tcache failed: {err}");
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn rerun_with_sim_tcache() {}

/// `tunables` with glibc's tcache count set to `count`, or `None` when
/// it sets one already (the operator's, or this process's own after it
/// ran itself again).
fn with_tcache_count(tunables: Option<&str>, count: u32) -> Option<String> {
    const KEY: &str = "glibc.malloc.tcache_count=";
    match tunables {
        Some(t) if t.split(':').any(|kv| kv.starts_with(KEY)) => None,
        Some(t) if !t.is_empty() => Some(format!("{t}:{KEY}{count}")),
        _ => Some(format!("{KEY}{count}")),
    }
}

fn operator_chose(arena_max_set: bool, tunables: Option<&str>) -> bool {
    arena_max_set
        || tunables.is_some_and(|t| {
            t.split(':')
                .any(|kv| kv.starts_with("glibc.malloc.arena_max="))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operators_malloc_arena_max_is_left_alone() {
        assert!(operator_chose(true, None));
    }

    #[test]
    fn an_operators_arena_max_tunable_is_left_alone() {
        assert!(operator_chose(
            false,
            Some("glibc.malloc.trim_threshold=128:glibc.malloc.arena_max=4")
        ));
    }

    #[test]
    fn the_simulators_tcache_count_is_added_to_the_operators_tunables() {
        assert_eq!(
            with_tcache_count(None, 1024).as_deref(),
            Some("glibc.malloc.tcache_count=1024")
        );
        assert_eq!(
            with_tcache_count(Some("glibc.malloc.arena_max=4"), 1024).as_deref(),
            Some("glibc.malloc.arena_max=4:glibc.malloc.tcache_count=1024")
        );
    }

    /// Also what stops the simulator from running itself again forever.
    #[test]
    fn a_tcache_count_already_set_is_left_alone() {
        assert_eq!(
            with_tcache_count(Some("glibc.malloc.tcache_count=7"), 1024),
            None
        );
        assert_eq!(
            with_tcache_count(
                Some("glibc.malloc.arena_max=2:glibc.malloc.tcache_count=1024"),
                1024
            ),
            None
        );
    }

    #[test]
    fn other_tunables_do_not_count_as_a_choice() {
        assert!(!operator_chose(
            false,
            Some("glibc.malloc.trim_threshold=128")
        ));
        assert!(!operator_chose(false, None));
    }
}
