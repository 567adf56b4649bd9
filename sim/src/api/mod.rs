//! The simulator's HTTP API: what a v1.20-style apiserver answers, decided
//! the way its cacher and etcd3 store decide (RV=0 and NotOlderThan from the
//! per-type cache; RV unset, limits and Exact from "etcd" at the global
//! revision), plus writes, watches, discovery and the fault controls.
//!
//! Every request meets the injected latency first; `route` then takes it
//! to the part that answers it (`discovery`, `openapi` for `/openapi/v2`,
//! `reads` for gets, lists and watches, `writes`, and `fault_controls` for
//! `/sim/faults`). What goes
//! wrong in each part is its own error, and `errors` answers each with the
//! apiserver's Status.

mod discovery;
mod errors;
mod fault_controls;
mod json;
mod logs;
mod openapi;
mod reads;
mod route;
mod writes;

use super::Sim;
use http::{Request, Response};
use hyper::body::Incoming;
use kubecache::body::Body;
use std::sync::Arc;

pub async fn handle(sim: Arc<Sim>, req: Request<Incoming>) -> Response<Body> {
    if let Some(latency) = sim.faults.latency() {
        tokio::time::sleep(latency).await;
    }
    route::route(&sim, req)
        .await
        .unwrap_or_else(|e| errors::respond(&e, sim.personality.representations()))
}
