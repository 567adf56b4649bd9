//! Helpers for the integration tests, which each include this module
//! (`mod common; use common::*;`): the servers (`servers`), certificates
//! and HTTPS clients (`certs`), an HTTP client
//! (`http_client`), watches and convergence (`watch`), a WebSocket client
//! (`websocket`), Table comparison
//! (`tables`), kubectl (`kubectl`), objects made upstream (`upstream`),
//! a relay that can be cut like a killed apiserver
//! (`relay`), scratch names and scripts (`scratch`), a scenario's time limit
//! (`within`), and realistic objects of every type (`fixtures`).

// Each test binary uses only part of the helpers: what one leaves unused,
// and the re-exports below of what it does not use, are not worth a warning.
#![allow(dead_code)]

mod certs;
pub mod fixtures;
mod http_client;
mod kubectl;
mod relay;
mod scratch;
mod servers;
mod tables;
mod timeouts;
mod upstream;
mod watch;
mod websocket;

#[allow(unused_imports)]
pub use self::{
    certs::*, http_client::*, kubectl::*, relay::*, scratch::*, servers::*, tables::*, timeouts::*,
    upstream::*, watch::*, websocket::*,
};
