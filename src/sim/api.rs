//! The simulator's HTTP API: what a v1.20-style apiserver answers, decided
//! the way its cacher and etcd3 store decide (RV=0 and NotOlderThan from the
//! per-type cache; RV unset, limits and Exact from "etcd" at the global
//! revision), plus writes, watches, discovery and the fault controls.

use super::faults::{FaultCommand, GARBAGE_LINE};
use super::{Sim, SimType, WriteError};
use crate::encode::json::{self, ListMeta};
use crate::encode::Repr;
use crate::request::options::{ModeError, WatchFrom};
use crate::request::{ContinueToken, ListOptions, ReadMode, ResourcePath};
use crate::selector::field::FieldRules;
use crate::selector::{FieldSelector, LabelSelector};
use crate::serve::read::FRESHNESS_WAIT;
use crate::serve::watch::{self, Interference, Start, WatchSpec};
use crate::serve::{json_response, status_response};
use crate::status::Status;
use crate::store::page::{read_page, PageRequest};
use crate::store::{Entry, Snapshot};
use crate::upstream::{full_body, Body};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{json, Value};
use std::sync::Arc;

fn respond(code: StatusCode, body: Bytes) -> Response<Body> {
    json_response(code, full_body(body))
}

fn value(code: StatusCode, v: Value) -> Response<Body> {
    let mut b = serde_json::to_vec(&v).unwrap_or_default();
    b.push(b'\n');
    respond(code, Bytes::from(b))
}

pub async fn handle(sim: Arc<Sim>, req: Request<Incoming>) -> Response<Body> {
    if let Some(latency) = sim.faults.latency() {
        tokio::time::sleep(latency).await;
    }
    let path = req.uri().path().to_string();
    let query = req.uri().query().map(str::to_string);
    if path == "/sim/faults" {
        return faults(&sim, query.as_deref());
    }
    if sim.faults.take_error() {
        return status_response(&Status::internal("injected fault"));
    }
    match path.as_str() {
        "/healthz" | "/readyz" | "/livez" => {
            return respond(StatusCode::OK, Bytes::from_static(b"ok"))
        }
        "/version" => {
            return value(
                StatusCode::OK,
                json!({"major": "1", "minor": "20", "gitVersion": "v1.20.2-kubecache-sim", "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.19", "compiler": "gc", "platform": "linux/amd64"}),
            )
        }
        "/api" => {
            return value(
                StatusCode::OK,
                json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]}),
            )
        }
        "/apis" => return value(StatusCode::OK, group_list(&sim)),
        _ => {}
    }
    if let Some(list) = resource_list(&sim, &path) {
        return value(StatusCode::OK, list);
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
    let opts = ListOptions::parse(query.as_deref());
    let key = rp.name.as_ref().map(|n| match &ns {
        Some(ns) if t.rt.namespaced => format!("{ns}/{n}"),
        _ => n.clone(),
    });
    match (req.method().clone(), rp.name.clone()) {
        (Method::GET, _) if opts.watch || rp.legacy_watch => {
            watch(&sim, &t, ns.as_deref(), rp.name.as_deref(), &opts).await
        }
        (Method::GET, Some(name)) => {
            get(&t, key.as_deref().unwrap_or_default(), &name, &opts).await
        }
        (Method::GET, None) => list(&sim, &t, ns.as_deref(), &opts).await,
        (Method::POST, None) => match read_body(req).await {
            Ok(obj) => write_result(
                &t,
                sim.create(&t, ns.as_deref(), obj),
                StatusCode::CREATED,
                None,
            ),
            Err(s) => status_response(&s),
        },
        (Method::PUT, Some(name)) => match read_body(req).await {
            Ok(obj) => write_result(&t, sim.update(&t, obj), StatusCode::OK, Some(&name)),
            Err(s) => status_response(&s),
        },
        (Method::DELETE, Some(name)) => write_result(
            &t,
            sim.delete(&t, key.as_deref().unwrap_or_default()),
            StatusCode::OK,
            Some(&name),
        ),
        _ => status_response(&Status::method_not_allowed()),
    }
}

/// `/sim/faults?key=value&…`: all commands are checked before any applies.
fn faults(sim: &Sim, query: Option<&str>) -> Response<Body> {
    let commands: Result<Vec<FaultCommand>, String> =
        url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .map(|(k, v)| FaultCommand::parse(&k, &v))
            .collect();
    match commands {
        Ok(cs) => {
            for c in &cs {
                sim.fault(c);
            }
            value(StatusCode::OK, sim.faults.describe())
        }
        Err(m) => status_response(&Status::bad_request(m)),
    }
}

fn group_list(sim: &Sim) -> Value {
    let mut groups: Vec<&str> = sim
        .types
        .keys()
        .map(|g| g.group.as_str())
        .filter(|g| !g.is_empty())
        .collect();
    groups.dedup();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups.iter().map(|g| json!({
        "name": g,
        "versions": [{"groupVersion": format!("{g}/v1"), "version": "v1"}],
        "preferredVersion": {"groupVersion": format!("{g}/v1"), "version": "v1"}
    })).collect::<Vec<_>>()})
}

fn resource_list(sim: &Sim, path: &str) -> Option<Value> {
    let (group, version) = match path
        .trim_end_matches('/')
        .split('/')
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["", "api", v] => (String::new(), v.to_string()),
        ["", "apis", g, v] => (g.to_string(), v.to_string()),
        _ => return None,
    };
    let resources: Vec<Value> = sim
        .types
        .values()
        .filter(|t| t.rt.gvr.group == group && t.rt.gvr.version == version)
        .map(|t| json!({"name": t.rt.gvr.resource, "singularName": "", "namespaced": t.rt.namespaced, "kind": t.rt.kind, "verbs": t.rt.verbs}))
        .collect();
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

async fn read_body(req: Request<Incoming>) -> Result<Value, Status> {
    let body = req
        .into_body()
        .collect()
        .await
        .map_err(|e| Status::bad_request(e.to_string()))?
        .to_bytes();
    let v: Value = serde_json::from_slice(&body).map_err(|e| {
        Status::bad_request(format!(
            "the body of the request was in an unknown format: {e}"
        ))
    })?;
    if !v.get("metadata").is_some_and(Value::is_object) {
        return Err(Status::bad_request("metadata must be an object"));
    }
    Ok(v)
}

fn write_result(
    t: &SimType,
    r: Result<Arc<Entry>, WriteError>,
    ok: StatusCode,
    name: Option<&str>,
) -> Response<Body> {
    let (g, res) = (&t.rt.gvr.group, &t.rt.gvr.resource);
    match r {
        Ok(e) => respond(ok, json::object(&t.codec, &e)),
        Err(WriteError::AlreadyExists) => {
            status_response(&Status::already_exists(g, res, name.unwrap_or("")))
        }
        Err(WriteError::NotFound) => {
            status_response(&Status::not_found(g, res, name.unwrap_or("")))
        }
        Err(WriteError::Conflict) => status_response(&Status::conflict(g, res, name.unwrap_or(""))),
        Err(WriteError::BadBody(m)) => status_response(&Status::bad_request(m)),
    }
}

async fn get(t: &SimType, key: &str, name: &str, opts: &ListOptions) -> Response<Body> {
    let snap = match opts.get_mode() {
        Ok(ReadMode::NotOlderThan(rv)) => match t.store.wait_for(rv, FRESHNESS_WAIT).await {
            Ok(_) => t.store.current(),
            Err(have) => return status_response(&Status::too_large_resource_version(rv, have)),
        },
        Ok(_) => t.store.current(),
        Err(ModeError::Reject(s)) => return status_response(&s),
        Err(ModeError::Forward(_)) => {
            return status_response(&Status::bad_request("invalid resourceVersion"))
        }
    };
    match snap.items.get(key) {
        Some(e) => respond(StatusCode::OK, json::object(&t.codec, e)),
        None => status_response(&Status::not_found(
            &t.rt.gvr.group,
            &t.rt.gvr.resource,
            name,
        )),
    }
}

struct Selection {
    labels: LabelSelector,
    fields: FieldSelector,
}

fn selection(t: &SimType, opts: &ListOptions) -> Result<Selection, Status> {
    let labels = LabelSelector::parse(&opts.label_selector)
        .map_err(|e| Status::bad_request(e.to_string()))?;
    let fields = FieldSelector::parse(&opts.field_selector)
        .and_then(|f| {
            f.convert(FieldRules::BuiltIn {
                group: &t.rt.gvr.group,
                version: &t.rt.gvr.version,
                kind: &t.rt.kind,
            })
        })
        .map_err(|e| Status::bad_request(e.to_string()))?;
    Ok(Selection { labels, fields })
}

async fn list(sim: &Sim, t: &SimType, ns: Option<&str>, opts: &ListOptions) -> Response<Body> {
    if let Err(s) = opts.validate_list() {
        return status_response(&s);
    }
    let sel = match selection(t, opts) {
        Ok(s) => s,
        Err(s) => return status_response(&s),
    };
    let mode = match opts.list_mode() {
        Ok(m) => m,
        Err(ModeError::Reject(s)) => return status_response(&s),
        Err(ModeError::Forward(_)) => {
            return status_response(&Status::bad_request("invalid resourceVersion"))
        }
    };
    let limit = opts.limit.max(0) as usize;
    let etcd_now = || Snapshot {
        rv: sim.revision(),
        items: t.store.current().items,
    };
    let (snap, start, paged) = match mode {
        ReadMode::Any => (t.store.current(), None, false),
        ReadMode::NotOlderThan(rv) if limit == 0 => {
            match t.store.wait_for(rv, FRESHNESS_WAIT).await {
                Ok(_) => (t.store.current(), None, false),
                Err(have) => return status_response(&Status::too_large_resource_version(rv, have)),
            }
        }
        ReadMode::NotOlderThan(rv) => {
            if rv > sim.revision() {
                return status_response(&Status::too_large_resource_version(rv, sim.revision()));
            }
            (etcd_now(), None, true)
        }
        ReadMode::MostRecent => (etcd_now(), None, true),
        ReadMode::Exact(rv) => {
            if rv > sim.revision() {
                return status_response(&Status::too_large_resource_version(rv, sim.revision()));
            }
            match t.store.snapshot_at(rv) {
                Some(s) => (s, None, true),
                None => {
                    return status_response(&Status::expired(
                        "The resourceVersion for the provided list is too old.",
                    ))
                }
            }
        }
        ReadMode::Continue(ContinueToken { rv, start }) if rv < 0 => {
            (etcd_now(), Some(start), true)
        }
        ReadMode::Continue(ContinueToken { rv, start }) => match t.store.snapshot_at(rv as u64) {
            Some(s) => (s, Some(start), true),
            None => {
                let mut s = Status::expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.");
                s.metadata.continue_token = Some(ContinueToken { rv: -1, start }.encode());
                return status_response(&s);
            }
        },
    };
    let prefix = ns
        .filter(|_| t.rt.namespaced)
        .map(|n| format!("{n}/"))
        .unwrap_or_default();
    let page = read_page(
        &snap.items,
        &PageRequest {
            prefix: &prefix,
            start: start.as_deref(),
            limit: if paged { limit } else { 0 },
            labels: &sel.labels,
            fields: &sel.fields,
        },
    );
    let meta = ListMeta::of_page(snap.rv, &page);
    respond(StatusCode::OK, json::list(&t.codec, &meta, &page.items))
}

async fn watch(
    sim: &Arc<Sim>,
    t: &Arc<SimType>,
    ns: Option<&str>,
    name: Option<&str>,
    opts: &ListOptions,
) -> Response<Body> {
    sim.watches_served
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let sel = match selection(t, opts) {
        Ok(s) => s,
        Err(s) => return status_response(&s),
    };
    let start = if sim.watch_list {
        match streaming_start(t, opts).await {
            Ok(s) => s,
            Err(resp) => return resp,
        }
    } else {
        // v1.20: an unset resourceVersion watches from the cache's state
        // like "0", and sendInitialEvents is not known.
        let rv = opts.resource_version.clone().unwrap_or_default();
        if rv.is_empty() || rv == "0" {
            Start::State
        } else {
            match rv.parse::<u64>() {
                Ok(n) => Start::After(n),
                Err(_) => {
                    return status_response(&Status::bad_request(format!(
                        "invalid resource version: {rv}"
                    )))
                }
            }
        }
    };
    let spec = WatchSpec {
        start,
        repr: Repr::Json,
        selection: watch::Selection {
            labels: sel.labels,
            fields: sel.fields,
            namespace: ns.map(str::to_string),
            name: name.map(str::to_string),
        },
        bookmarks: opts.allow_watch_bookmarks,
        timeout: watch::timeout(opts.timeout_seconds),
        // The v1.20 cacher bookmarks only types that have seen an event
        // since it started; every simulated type starts at revision 1.
        bookmarks_after: 1,
    };
    let faults = sim.clone();
    let interference = Interference {
        drops: Some(sim.faults.drops()),
        stall: Some(sim.faults.stall()),
        garble: Some((Arc::new(move || faults.faults.take_garbage()), GARBAGE_LINE)),
    };
    watch::serve(
        t.clone(),
        t.codec.clone(),
        spec,
        interference,
        t.rt.gvr.to_string(),
    )
}

/// Where a watch starts on a current apiserver (the WatchList feature):
/// its watch-option validation, and a `sendInitialEvents` watch from a
/// version the cache has not reached waits for it, then fails inside the
/// stream.
async fn streaming_start(t: &SimType, opts: &ListOptions) -> Result<Start, Response<Body>> {
    opts.validate_watch().map_err(|s| status_response(&s))?;
    let from = opts.watch_from().map_err(|e| match e {
        ModeError::Reject(s) => status_response(&s),
        ModeError::Forward(_) => status_response(&Status::bad_request(format!(
            "invalid resource version: {}",
            opts.resource_version.as_deref().unwrap_or_default()
        ))),
    })?;
    Ok(match from {
        // The simulator's store is its etcd: its state is the latest.
        WatchFrom::Latest(i) | WatchFrom::Any(i) => i.into(),
        WatchFrom::After(rv) => Start::After(rv),
        WatchFrom::AtLeast(rv) => {
            if let Err(have) = t.store.wait_for(rv, FRESHNESS_WAIT).await {
                let s = Status::too_large_resource_version(rv, have);
                return Err(watch::error_response(&s));
            }
            Start::InitialEvents
        }
    })
}
