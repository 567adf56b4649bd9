//! The simulated apiserver (`kubecache sim`): discovery, get/list/watch with
//! the apiserver's semantics over its own store and history, create, update,
//! patch and delete with its update rules, realistic generated objects,
//! churn, and fault injection. It is the demo's upstream, a test double
//! with the real one's rules, and a load generator. Where it and a real
//! apiserver disagree, the real one is right. Reads negotiate `Accept` as
//! kubecache does (JSON, Tables, PartialObjectMetadata[List], the
//! apiserver's 406s), with JSON its only serializer: no YAML or protobuf
//! (see `api`); patches are applied as v1.20 applies them (see `patch`).
//! Its OpenAPI document is v1.20's for its types, which kubectl validates
//! manifests against and explains from (see `openapi`). A watch of a
//! WebSocket request streams over WebSocket, with kubecache's own code
//! (`kubecache::serving::websocket`).

pub mod api;
pub mod faults;
pub mod generate;
mod managed;
pub mod openapi;
pub mod patch;
mod simulator;

pub use simulator::{Personality, Sim, SimOptions, SimType, WriteError, WIDGETS};

use std::sync::Arc;
use std::time::Duration;

/// Serves the simulator on `listener` until `shutdown`.
pub async fn run(
    sim: Arc<Sim>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) {
    kubecache::serving::serve_http(
        listener,
        None,
        move |req| api::handle(sim.clone(), req),
        shutdown,
        Duration::from_secs(5),
    )
    .await
}
