//! How many malloc arenas the process may have. This is the one module of
//! kubecache with `unsafe` code, earned by the load benchmark
//! (`benches/load.rs`, 2,000 clients, a 1 GiB bound): glibc gives every
//! thread that finds the arenas busy one of its own, up to 8 per core, and
//! each keeps what its thread freed. Under load, tokio's blocking pool ran
//! ~40 threads at once compressing and stitching list bodies, and their
//! arenas held on to it: peak RSS 909–1,323 MiB with glibc's default, of
//! which the bounded parts (bytes in flight, body buffers, objects) were
//! ~400 MiB. With two arenas: see the README's load section.

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
    fn other_tunables_do_not_count_as_a_choice() {
        assert!(!operator_chose(
            false,
            Some("glibc.malloc.trim_threshold=128")
        ));
        assert!(!operator_chose(false, None));
    }
}
