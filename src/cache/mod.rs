//! The cache: one watch cache per resource type (`type_cache`), the
//! registry that starts them and the discovery they come from
//! (`registry`), and what is kept of the bodies answered from them
//! (`bodies`).

pub mod bodies;
pub mod limits;
pub mod registry;
pub mod snapshot;
pub mod type_cache;

pub use limits::CacheLimits;
pub use registry::{Cache, CacheError};
pub use type_cache::TypeCache;
