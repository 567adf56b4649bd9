//! kubecache: a caching read-through proxy for the Kubernetes API.
//!
//! upstream → reflector → store → serve → encode; `sim` is the simulated
//! apiserver used by the demo, the tests and load tests.

pub mod body;
pub mod cache;
pub mod config;
pub mod encode;
#[cfg(test)]
mod fixtures;
pub mod go;
pub mod metrics;
pub mod reflector;
pub mod request;
pub mod resource;
pub mod selector;
pub mod serve;
pub mod sim;
pub mod status;
pub mod store;
pub mod upstream;
