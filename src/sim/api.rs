//! The simulator's HTTP API: what a v1.20-style apiserver answers, decided
//! the way its cacher and etcd3 store decide (RV=0 and NotOlderThan from the
//! per-type cache; RV unset, limits and Exact from "etcd" at the global
//! revision), plus writes, watches, discovery and the fault controls.

use super::faults::{FaultCommand, GARBAGE_LINE};
use super::{Sim, SimType, WriteError};
use crate::encode::json::{self, ListMeta};
use crate::request::options::ModeError;
use crate::request::{ContinueToken, ListOptions, ReadMode, ResourcePath};
use crate::selector::field::FieldRules;
use crate::selector::{FieldSelector, LabelSelector};
use crate::serve::read::FRESHNESS_WAIT;
use crate::serve::{json_response, status_response};
use crate::status::Status;
use crate::store::page::{read_page, PageRequest};
use crate::store::{Entry, Event, EventType, Snapshot};
use crate::upstream::{channel_body, full_body, Body};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use rand::Rng;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::Receiver;

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
            watch(&sim, &t, ns.as_deref(), rp.name.as_deref(), &opts)
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

fn selected(sel: &Selection, ns: Option<&str>, name: Option<&str>, e: &Entry) -> bool {
    ns.is_none_or(|ns| e.namespace.as_deref() == Some(ns))
        && name.is_none_or(|n| &*e.name == n)
        && sel.labels.matches(|k| e.label(k))
        && sel.fields.matches(|f| e.field(f))
}

fn watch(
    sim: &Arc<Sim>,
    t: &Arc<SimType>,
    ns: Option<&str>,
    name: Option<&str>,
    opts: &ListOptions,
) -> Response<Body> {
    let sel = match selection(t, opts) {
        Ok(s) => s,
        Err(s) => return status_response(&s),
    };
    let rv = opts.resource_version.clone().unwrap_or_default();
    let timeout = match opts.timeout_seconds {
        Some(s) if s > 0 => Duration::from_secs(s as u64),
        _ => Duration::from_secs(rand::thread_rng().gen_range(1800..3600)),
    };
    let start: Result<(Vec<Bytes>, Receiver<Arc<Event>>), Status> = if rv.is_empty() || rv == "0" {
        let (snap, rx) = t.store.snapshot_and_subscribe();
        let initial = snap
            .items
            .values()
            .filter(|e| selected(&sel, ns, name, e))
            .map(|e| json::watch_event("ADDED", &t.codec.object_bytes(e)))
            .collect();
        Ok((initial, rx))
    } else {
        match rv.parse::<u64>() {
            Err(_) => Err(Status::bad_request(format!(
                "invalid resource version: {rv}"
            ))),
            Ok(n) => match t.store.events_since(n) {
                Some((past, rx)) => {
                    let lines = past
                        .iter()
                        .filter_map(|ev| event_line(t, &sel, ns, name, ev))
                        .collect();
                    Ok((lines, rx))
                }
                None => {
                    let s = Status::expired(format!(
                        "too old resource version: {n} ({})",
                        t.store.oldest()
                    ));
                    let body = s.to_bytes();
                    // The Status without its trailing newline is the event's object.
                    let line = json::watch_event("ERROR", &body[..body.len() - 1]);
                    let (tx, body) = channel_body(1);
                    let _ = tx.try_send(line);
                    return watch_response(body);
                }
            },
        }
    };
    let (initial, rx) = match start {
        Ok(s) => s,
        Err(s) => return status_response(&s),
    };
    let (tx, body) = channel_body(64);
    let stream = WatchStream {
        sim: sim.clone(),
        t: t.clone(),
        sel,
        ns: ns.map(str::to_string),
        name: name.map(str::to_string),
        bookmarks: opts.allow_watch_bookmarks,
        deadline: tokio::time::Instant::now() + timeout,
    };
    tokio::spawn(stream.run(initial, rx, tx));
    watch_response(body)
}

/// One open watch: its selection, deadline and the fault switches it obeys.
struct WatchStream {
    sim: Arc<Sim>,
    t: Arc<SimType>,
    sel: Selection,
    ns: Option<String>,
    name: Option<String>,
    bookmarks: bool,
    deadline: tokio::time::Instant,
}

impl WatchStream {
    /// The cacher's schedule: about once a minute, and 2 s before the
    /// deadline so a client resumes from as late as possible.
    fn next_bookmark(&self) -> Option<tokio::time::Instant> {
        let now = tokio::time::Instant::now();
        let before_deadline = self.deadline.checked_sub(Duration::from_secs(2))?;
        let at = (now + BOOKMARK_EVERY).min(before_deadline);
        (self.bookmarks && at > now).then_some(at)
    }

    async fn run(
        self,
        initial: Vec<Bytes>,
        mut rx: Receiver<Arc<Event>>,
        tx: tokio::sync::mpsc::Sender<Bytes>,
    ) {
        let mut drops = self.sim.faults.drops();
        let mut stall = self.sim.faults.stall();
        let mut pending: std::collections::VecDeque<Bytes> = initial.into();
        let mut bookmark_at = self.next_bookmark();
        loop {
            let stalled = *stall.borrow_and_update();
            if !stalled {
                while let Some(line) = pending.pop_front() {
                    let line = if self.sim.faults.take_garbage() {
                        Bytes::from_static(GARBAGE_LINE)
                    } else {
                        line
                    };
                    if tx.send(line).await.is_err() {
                        return;
                    }
                }
            }
            let bookmark = async {
                match bookmark_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = tokio::time::sleep_until(self.deadline) => return,
                _ = drops.changed() => return,
                _ = stall.changed() => {}
                _ = bookmark, if !stalled => {
                    bookmark_at = self.next_bookmark();
                    // Like the cacher, no bookmark for a type that has seen no event.
                    if self.t.store.rv() > 1 {
                        let obj = json::bookmark_object(&self.t.codec, self.t.store.rv());
                        pending.push_back(json::watch_event("BOOKMARK", &obj));
                    }
                }
                ev = rx.recv(), if !stalled => match ev {
                    Ok(ev) => pending.extend(event_line(
                        &self.t,
                        &self.sel,
                        self.ns.as_deref(),
                        self.name.as_deref(),
                        &ev,
                    )),
                    // Lagged or closed: end the stream; the client re-watches.
                    Err(_) => return,
                },
            }
        }
    }
}

const BOOKMARK_EVERY: Duration = Duration::from_secs(60);

/// An event as a filtered watch sees it: leaving the selection is a
/// DELETED, entering it an ADDED, like the apiserver's cache watcher.
fn event_line(
    t: &SimType,
    sel: &Selection,
    ns: Option<&str>,
    name: Option<&str>,
    ev: &Event,
) -> Option<Bytes> {
    let now = selected(sel, ns, name, &ev.entry);
    let before = ev.prev.as_ref().is_some_and(|p| selected(sel, ns, name, p));
    let kind = match (ev.kind, before, now) {
        (EventType::Deleted, _, true) => "DELETED",
        (EventType::Added, _, true) => "ADDED",
        (EventType::Modified, true, true) => "MODIFIED",
        (EventType::Modified, false, true) => "ADDED",
        (EventType::Modified, true, false) => "DELETED",
        _ => return None,
    };
    Some(json::watch_event(kind, &t.codec.object_bytes(&ev.entry)))
}

fn watch_response(body: Body) -> Response<Body> {
    json_response(StatusCode::OK, body)
}
