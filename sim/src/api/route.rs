//! Which part answers a request: the fault controls, the injected 500s
//! (to all but the fault controls), discovery, the OpenAPI document, then
//! the simulated types' reads (a watch of a WebSocket request over
//! WebSocket, as `kubecache::serving::websocket` serves it) and writes; and why a request gets an error
//! instead (`RouteError`: its own, or the part's it went to).

use super::reads::{self, ReadError};
use super::writes::{self, WriteRequestError};
use super::{discovery, fault_controls, logs, openapi};
use crate::faults::FaultCommandError;
use crate::openapi::OpenApiError;
use crate::Sim;
use http::{header, Method, Request, Response};
use hyper::body::Incoming;
use kubecache::body::Body;
use kubecache::request::accept::Accept;
use kubecache::request::{ListOptions, ResourcePath, Shape};
use kubecache::resource::GroupVersionResource;
use kubecache::serving::websocket;
use std::sync::Arc;

/// Why a request gets an error: it reaches no part that answers it, or
/// the part it reaches fails it.
#[derive(Debug, thiserror::Error)]
pub(super) enum RouteError {
    /// One of the 500s switched on at `/sim/faults` (`errors=N`).
    #[error("injected fault")]
    InjectedFault,
    /// One of the 429s switched on at `/sim/faults` (`throttled=N`), asking
    /// to come back after this many seconds.
    #[error("injected throttle")]
    InjectedThrottle(u64),
    #[error("{0:?} is no resource's path")]
    NotAResourcePath(String),
    #[error("the simulator has no resource {0}")]
    UnknownResource(GroupVersionResource),
    /// `/status`, `/scale` and the like are not simulated: the answer says
    /// so, naming what.
    #[error("the kubecache simulator does not simulate {0}")]
    NotSimulated(String),
    #[error("{0} is not allowed on the requested resource")]
    MethodNotAllowed(Method),
    #[error("switching faults")]
    FaultControls(#[from] FaultCommandError),
    /// A get, list or watch, with the `Accept` header its error is
    /// answered in.
    #[error("reading")]
    Read {
        #[source]
        error: ReadError,
        accept: Accept,
    },
    #[error("writing")]
    Write(#[from] WriteRequestError),
    #[error("a pod's log")]
    Logs(#[source] logs::LogError),
    /// The OpenAPI document could not be made from what is checked in.
    #[error("the OpenAPI document")]
    OpenApi(#[source] &'static OpenApiError),
}

/// The answer of the part a request is for, or why there is none.
pub(super) async fn route(
    sim: &Arc<Sim>,
    mut req: Request<Incoming>,
) -> Result<Response<Body>, RouteError> {
    let path = req.uri().path().to_string();
    let query = req.uri().query().map(str::to_string);
    if path == "/sim/faults" {
        return Ok(fault_controls::faults(sim, query.as_deref())?);
    }
    if let Some(secs) = sim.faults.take_throttle() {
        return Err(RouteError::InjectedThrottle(secs));
    }
    if sim.faults.take_error() {
        return Err(RouteError::InjectedFault);
    }
    let accept_text = req
        .headers()
        .get(header::ACCEPT)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    if let Some(answer) = discovery::answer(sim, &path, accept_text.as_deref()) {
        return Ok(answer);
    }
    if let Some(answer) = openapi::answer(&path, accept_text.as_deref()) {
        return answer.map_err(RouteError::OpenApi);
    }
    let rp = ResourcePath::parse(&path).ok_or(RouteError::NotAResourcePath(path))?;
    let Some(t) = sim.type_of(&rp.group, &rp.version, &rp.resource).cloned() else {
        let gvr = GroupVersionResource::new(&rp.group, &rp.version, &rp.resource);
        return Err(RouteError::UnknownResource(gvr));
    };
    if let Some(sub) = &rp.subresource {
        if sub == "log" && t.rt.kind == "Pod" && req.method() == Method::GET {
            let ns = rp.namespace.as_deref().unwrap_or_default();
            let name = rp.name.as_deref().unwrap_or_default();
            return logs::answer(&t, ns, name, query.as_deref()).map_err(RouteError::Logs);
        }
        return Err(RouteError::NotSimulated(format!(
            "the {sub} subresource of {}",
            t.rt.gvr.resource
        )));
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
        let accept = Accept::new(accept_text.as_deref());
        let (ns, key, query) = (ns.as_deref(), key.as_deref(), query.as_deref());
        let watching = Shape::of(&rp, ListOptions::parse(query).watch) == Shape::Watch;
        let answer = reads::read(sim, &accept, &t, &rp, ns, key, query)
            .await
            .map_err(|error| RouteError::Read { error, accept })?;
        // A watch asked for over WebSocket streams over it, as the
        // apiserver's serveWatch streams it (kubecache's own code).
        return Ok(if watching {
            websocket::answer_watch(&mut req, answer, t.rt.gvr.to_string())
        } else {
            answer
        });
    }
    if req.method() == Method::DELETE && key.is_none() {
        let accept = Accept::new(accept_text.as_deref());
        return reads::delete_collection(sim, &t, ns.as_deref(), query.as_deref())
            .map_err(|error| RouteError::Read { error, accept });
    }
    let write = writes::Write {
        sim,
        t: &t,
        ns: ns.as_deref(),
    };
    let answer = match (req.method().clone(), rp.name.clone()) {
        (Method::POST, None) => write.create(req).await,
        (Method::PUT, Some(name)) => write.update(&name, req).await,
        (Method::PATCH, Some(name)) => write.patch(&name, req).await,
        (Method::DELETE, Some(name)) => write.delete(key.as_deref().unwrap_or_default(), &name),
        (method, _) => return Err(RouteError::MethodNotAllowed(method)),
    };
    Ok(answer?)
}
