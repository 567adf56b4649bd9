//! Who a request is served as: the slot the authenticate phase fills.

/// The identity a request is answered and forwarded with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Identity {
    /// Not authenticated (yet): nothing is read or forwarded for it.
    #[default]
    Unauthenticated,
    /// kubecache's own upstream identity, which serves every client alike
    /// as `kubectl proxy` does: whoever can reach kubecache reads and
    /// writes with it (the only mode built so far; README, "Known
    /// differences and gaps").
    Proxy,
}
