//! The narrow side of a type's cache that a reflector writes through, as
//! kube-runtime's `reflector::store::Writer`: the reflector learns only
//! what to list and watch and how to decode it, and hands over every
//! change through one entry point, [`Writer::apply`] — a whole list, an
//! event, progress, a proof of freshness, letting go. Readers of the
//! cache never see it.

use super::Condition;
use crate::encode::codec::{Entry, Snapshot, TypeCodec};
use crate::metrics::TypeTally;
use crate::resource::GroupVersionResource;
use crate::store::{EventType, StoreError};
use std::sync::Arc;

/// One change to a type's cache.
pub enum Update {
    /// A whole list at `rv`, decoded with `codec` (a first list teaches
    /// it the type's list style): it replaces the state at once, and the
    /// type can be served from then on.
    Listed {
        codec: TypeCodec,
        entries: Vec<Arc<Entry>>,
        rv: u64,
    },
    /// One event, newer than everything before it.
    Event(EventType, Arc<Entry>),
    /// A bookmark on the reflector's own watch: nothing changed up to `rv`.
    Progress(u64),
    /// A proof of freshness (`freshness`): nothing changed up to `rv`,
    /// provided the state still descends from the list of `epoch` and has
    /// applied every event through `through` — the events a side watch saw
    /// before its bookmark at `rv`. Otherwise nothing is applied
    /// ([`StoreError::NotYet`]).
    Proven { epoch: u64, through: u64, rv: u64 },
    /// Lets everything go: the type is not cached (its reads are
    /// forwarded, its watchers ended) until a list is applied again.
    Released,
}

pub trait Writer: Send + Sync + 'static {
    /// The type reflected.
    fn resource(&self) -> &GroupVersionResource;

    /// The codec to decode the upstream's objects with.
    fn codec(&self) -> Arc<TypeCodec>;

    /// Applies one change: the only way the reflector (or a proof of
    /// freshness) changes the cache.
    fn apply(&self, update: Update) -> Result<(), StoreError>;

    /// Whether its state came from a snapshot the upstream has not listed
    /// since: the first list is then a consistent one, so the cache never
    /// goes back from it.
    fn restored(&self) -> bool {
        false
    }

    /// The type's tallies, where the reflector's recording functions
    /// (`metrics::reflector_*`) count what it did.
    fn tally(&self) -> &TypeTally;

    /// What the reflector is doing now.
    fn report(&self, condition: Condition);

    /// The state written so far, to compare with the upstream's
    /// (`consistency`).
    fn snapshot(&self) -> Snapshot;

    /// Whether the type's cache may hold `bytes` of objects.
    fn room(&self, bytes: usize) -> Result<(), Overflow>;

    /// The bytes of objects it holds now.
    fn cached_bytes(&self) -> usize;
}

/// A type's cache that would pass a limit of the cache's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{bytes} bytes of objects would pass the {which} limit of {limit}")]
pub struct Overflow {
    pub bytes: usize,
    pub limit: usize,
    /// `per-type` or `total`.
    pub which: &'static str,
}
