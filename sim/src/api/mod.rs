//! The simulator's HTTP API: what a v1.20-style apiserver answers, decided
//! the way its cacher and etcd3 store decide (RV=0 and NotOlderThan from the
//! per-type cache; RV unset, limits and Exact from "etcd" at the global
//! revision), plus writes, watches, discovery and the fault controls.
//!
//! This part routes a request to the part that answers it (`discovery`,
//! `reads` for gets, lists and watches, `writes`, and `fault_controls` for
//! `/sim/faults`) and applies the faults every request meets: the injected
//! latency, and the injected 500s to all but the fault controls.

mod discovery;
mod fault_controls;
mod json;
mod reads;
mod writes;

use super::Sim;
use http::{Method, Request, Response};
use hyper::body::Incoming;
use kubecache::body::Body;
use kubecache::request::ResourcePath;
use kubecache::serve::respond::status_response;
use kubecache::status::Status;
use std::sync::Arc;

pub async fn handle(sim: Arc<Sim>, req: Request<Incoming>) -> Response<Body> {
    if let Some(latency) = sim.faults.latency() {
        tokio::time::sleep(latency).await;
    }
    let path = req.uri().path().to_string();
    let query = req.uri().query().map(str::to_string);
    if path == "/sim/faults" {
        return fault_controls::faults(&sim, query.as_deref());
    }
    if sim.faults.take_error() {
        return status_response(&Status::internal("injected fault"));
    }
    if let Some(answer) = discovery::answer(&sim, &path) {
        return answer;
    }
    let Some(rp) = ResourcePath::parse(&path) else {
        return status_response(&Status::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
    };
    let Some(t) = sim.type_of(&rp.group, &rp.version, &rp.resource).cloned() else {
        return status_response(&Status::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
    };
    if rp.subresource.is_some() {
        return status_response(&Status::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
    }
    let ns = if rp.is_namespace_object() {
        None
    } else {
        rp.namespace.clone()
    };
    let key = rp.name.as_ref().map(|n| match &ns {
        Some(ns) if t.rt.namespaced => format!("{ns}/{n}"),
        _ => n.clone(),
    });
    if req.method() == Method::GET {
        let (ns, key) = (ns.as_deref(), key.as_deref());
        return reads::read(&sim, req.headers(), &t, &rp, ns, key, query.as_deref()).await;
    }
    let write = writes::Write {
        sim: &sim,
        t: &t,
        ns: ns.as_deref(),
    };
    match (req.method().clone(), rp.name.clone()) {
        (Method::POST, None) => write.create(req).await,
        (Method::PUT, Some(name)) => write.update(&name, req).await,
        (Method::PATCH, Some(name)) => write.patch(&name, req).await,
        (Method::DELETE, Some(name)) => write.delete(key.as_deref().unwrap_or_default(), &name),
        _ => status_response(&Status::method_not_allowed()),
    }
}
