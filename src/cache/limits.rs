//! What the cache may hold: the bytes of objects per type and across all
//! types, and how long a type nobody reads is kept. A type that would pass
//! a limit is let go and its reads forwarded (its reflector tries again
//! later); a type idle for long is let go and started again by the next
//! read. Never an out-of-memory kill: the cache gives way first.

use crate::reflector::Overflow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheLimits {
    /// The objects' bytes (as the upstream sent them) one type may cache.
    pub max_type_bytes: Option<usize>,
    /// The objects' bytes all types together may cache.
    pub max_total_bytes: Option<usize>,
    /// A type that is not eager, not watched and not read for this long is
    /// let go.
    pub idle_after: Option<Duration>,
    /// The bytes all types' kept list bodies and gzip pieces may hold
    /// together.
    pub max_kept_bytes: usize,
}

impl Default for CacheLimits {
    fn default() -> Self {
        CacheLimits {
            max_type_bytes: None,
            max_total_bytes: None,
            idle_after: Some(DEFAULT_IDLE_AFTER),
            max_kept_bytes: DEFAULT_KEPT,
        }
    }
}

/// Kept bodies' bytes without a memory limit to derive them from: room
/// for the indented and gzipped forms of a 10,000-pod list.
pub const DEFAULT_KEPT: usize = 256 << 20;

/// A sixteenth of the container's memory limit (256 MiB of `deploy/`'s
/// 4 GiB, where a quarter goes to objects and a quarter to bytes in
/// flight), at least 16 MiB; else [`DEFAULT_KEPT`].
pub fn default_kept(memory_limit: Option<usize>) -> usize {
    memory_limit.map_or(DEFAULT_KEPT, |m| (m / 16).max(16 << 20))
}

/// A type read once by a dashboard in the morning is not worth a watch and
/// its memory all day.
pub const DEFAULT_IDLE_AFTER: Duration = Duration::from_secs(3600);

/// The default cap of all types' objects: the cache takes about twice its
/// objects' bytes in memory (benches/memory: 1.5–2.1×), and bytes in flight
/// to clients take up to a quarter of the limit (`serve::limits`): a
/// quarter for the objects leaves room for both and for the rest.
pub fn default_total(memory_limit: Option<usize>) -> Option<usize> {
    memory_limit.map(|m| m / 4)
}

/// The bytes every type's cache holds, as each last reported them.
#[derive(Debug, Default)]
pub struct CachedBytes {
    total: AtomicUsize,
}

impl CachedBytes {
    pub fn total(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    /// One type's cache went from `before` to `after` bytes.
    pub fn changed(&self, before: usize, after: usize) {
        if after >= before {
            self.total.fetch_add(after - before, Ordering::Relaxed);
        } else {
            self.total.fetch_sub(before - after, Ordering::Relaxed);
        }
    }

    /// Whether a type holding `now` bytes may hold `bytes`.
    pub fn room(&self, limits: &CacheLimits, now: usize, bytes: usize) -> Result<(), Overflow> {
        if let Some(limit) = limits.max_type_bytes.filter(|l| bytes > *l) {
            return Err(Overflow {
                bytes,
                limit,
                which: "per-type",
            });
        }
        if let Some(limit) = limits.max_total_bytes {
            let others = self.total().saturating_sub(now);
            if others + bytes > limit {
                return Err(Overflow {
                    bytes: others + bytes,
                    limit,
                    which: "total",
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_type: Option<usize>, total: Option<usize>) -> CacheLimits {
        CacheLimits {
            max_type_bytes: per_type,
            max_total_bytes: total,
            idle_after: None,
            max_kept_bytes: DEFAULT_KEPT,
        }
    }

    #[test]
    fn kept_bodies_take_a_sixteenth_of_the_memory_limit_and_at_least_16_mib() {
        assert_eq!(default_kept(Some(4 << 30)), 256 << 20);
        assert_eq!(default_kept(Some(1 << 30)), 64 << 20);
        assert_eq!(default_kept(Some(128 << 20)), 16 << 20);
        assert_eq!(default_kept(None), DEFAULT_KEPT);
    }

    #[test]
    fn a_type_may_grow_to_its_own_limit_and_no_further() {
        let c = CachedBytes::default();
        let l = limits(Some(100), None);
        assert_eq!(c.room(&l, 0, 100), Ok(()));
        let e = c.room(&l, 0, 101).unwrap_err();
        assert_eq!((e.bytes, e.limit, e.which), (101, 100, "per-type"));
    }

    #[test]
    fn the_total_counts_the_other_types_and_this_ones_new_size() {
        let c = CachedBytes::default();
        c.changed(0, 60); // another type
        c.changed(0, 30); // this one, now
        let l = limits(None, Some(100));
        assert_eq!(c.room(&l, 30, 40), Ok(()), "60 + 40");
        let e = c.room(&l, 30, 41).unwrap_err();
        assert_eq!((e.bytes, e.limit, e.which), (101, 100, "total"));
        c.changed(30, 0);
        assert_eq!(c.total(), 60);
        assert_eq!(c.room(&l, 0, 40), Ok(()));
    }

    #[test]
    fn without_limits_anything_fits() {
        let c = CachedBytes::default();
        c.changed(0, usize::MAX / 2);
        assert_eq!(c.room(&CacheLimits::default(), 0, usize::MAX / 2), Ok(()));
    }

    #[test]
    fn the_default_total_is_a_quarter_of_the_memory_limit() {
        assert_eq!(default_total(Some(4 << 30)), Some(1 << 30));
        assert_eq!(default_total(None), None);
    }
}
