//! The bytes all types' kept bodies and gzip pieces may hold together.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The bytes all types' kept bodies may take together.
#[derive(Debug)]
pub struct Budget {
    limit: AtomicUsize,
    used: AtomicUsize,
}

/// 256 MiB: room for the indented and gzipped forms of a 10,000-pod list.
pub const DEFAULT_BUDGET: usize = 256 << 20;

impl Default for Budget {
    fn default() -> Self {
        Budget::with_limit(DEFAULT_BUDGET)
    }
}

impl Budget {
    pub fn with_limit(bytes: usize) -> Self {
        Budget {
            limit: AtomicUsize::new(bytes),
            used: AtomicUsize::new(0),
        }
    }

    pub fn set_limit(&self, bytes: usize) {
        self.limit.store(bytes, Ordering::Relaxed);
    }

    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Whether anything more can be kept at all.
    pub(crate) fn has_room(&self) -> bool {
        self.used() < self.limit.load(Ordering::Relaxed)
    }

    pub(crate) fn take(&self, n: usize) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                (u + n <= limit).then_some(u + n)
            })
            .is_ok()
    }

    pub(crate) fn give_back(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}
