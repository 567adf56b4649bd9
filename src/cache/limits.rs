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
}

impl Default for CacheLimits {
    fn default() -> Self {
        CacheLimits {
            max_type_bytes: None,
            max_total_bytes: None,
            idle_after: Some(DEFAULT_IDLE_AFTER),
        }
    }
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
        }
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
