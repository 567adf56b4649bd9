//! kubecache: a caching read-through proxy for the Kubernetes API.
//!
//! A request's path through it (`serve::handle`):
//!
//! ```text
//! parse (request::Request::parse)
//!   → admit (serve::auth) → kubecache's own endpoints (serve::health)
//!   → authenticate, impersonate (serve::auth, with access: TokenReview,
//!     client certificates, Impersonate-*)
//!   → decide (serve::route::route: cache | forward, with why), a cached
//!     read authorized first (access: SubjectAccessReview)
//!       cache:   serve::read → cache (kept bodies) → store → encode
//!       forward: serve::passthrough → upstream, as the client
//!   → respond (serve::respond; errors → Status in serve::errors)
//! ```
//!
//! and the cache's, beside it: `upstream` → `reflector` (list, watch,
//! relist) → `cache::TypeCache` (through `reflector::Writer`) → `store`;
//! a consistent read waits for `freshness` to prove its type's cache
//! fresh (a probe upstream, then the cache reaching what it read).
//!
//! Layers from the bottom up (each imports only those below it; checked by
//! `tests/layers.rs`): `go`, `resource`, `metrics`, `body`, `flight`;
//! `status`, `selector`; `request`; `store`; `encode`; `upstream`;
//! `reflector`, `access`; `freshness`; `cache`; `serve`; `config`,
//! `serving`. The simulated apiserver is the `kubecache-sim` crate, which
//! uses `serving` (the part of `serve` another server may build on), never
//! `serve` itself; the `kubecache` command is `kubecache-cli`.

pub mod access;
pub mod body;
pub mod cache;
pub mod config;
pub mod encode;
#[cfg(test)]
mod fixtures;
pub mod flight;
pub mod freshness;
pub mod go;
pub mod metrics;
pub mod reflector;
pub mod request;
pub mod resource;
pub mod selector;
pub mod serve;
pub mod serving;
pub mod status;
pub mod store;
pub mod upstream;
