//! kubecache's own endpoints: `/livez`, `/readyz`, `/healthz` (with
//! `?verbose`, in the apiserver's `[+]name ok` format) and `/metrics`.

use super::state::ServeState;
use crate::body::{self, Body};
use http::{header, HeaderValue, Response, StatusCode};
use std::sync::atomic::Ordering;

fn text(status: StatusCode, content: String) -> Response<Body> {
    let mut r = Response::new(body::full(content));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r.headers_mut().insert(
        "X-Content-Type-Options",
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// The checks behind `/readyz`: shutdown, then one informer-sync per type.
fn ready_checks(state: &ServeState) -> Vec<(String, bool)> {
    let mut checks = vec![(
        "shutdown".to_string(),
        !state.shutting_down.load(Ordering::Acquire),
    )];
    let mut types: Vec<_> = state
        .cache
        .all()
        .into_iter()
        .map(|tc| (format!("informer-sync/{}", tc.rt.gvr), tc.is_synced()))
        .collect();
    types.sort();
    checks.extend(types);
    checks
}

fn report(name: &str, checks: Vec<(String, bool)>, verbose: bool) -> Response<Body> {
    let ok = checks.iter().all(|(_, ok)| *ok);
    if !verbose && ok {
        return text(StatusCode::OK, "ok".into());
    }
    let mut body = String::new();
    for (check, passed) in &checks {
        if *passed {
            body.push_str(&format!("[+]{check} ok\n"));
        } else {
            body.push_str(&format!("[-]{check} failed: reason withheld\n"));
        }
    }
    if ok {
        body.push_str(&format!("{name} check passed\n"));
        text(StatusCode::OK, body)
    } else {
        body.push_str(&format!("{name} check failed\n"));
        text(StatusCode::INTERNAL_SERVER_ERROR, body)
    }
}

/// Answers kubecache's health endpoints, which anyone may read (as the
/// apiserver lets `system:unauthenticated` read its own); `None` for
/// everything else.
pub fn probe(state: &ServeState, path: &str, query: Option<&str>) -> Option<Response<Body>> {
    let verbose = query
        .is_some_and(|q| url::form_urlencoded::parse(q.as_bytes()).any(|(k, _)| k == "verbose"));
    match path {
        "/livez" => Some(report("livez", vec![("ping".into(), true)], verbose)),
        "/readyz" | "/healthz" => Some(report(&path[1..], ready_checks(state), verbose)),
        _ => None,
    }
}

/// Whether `path` is kubecache's `/metrics` (when it exports them; else
/// the upstream's is forwarded). Read only by whom the apiserver would let
/// read its own.
pub fn is_metrics(state: &ServeState, path: &str) -> bool {
    path == "/metrics" && state.prometheus.is_some()
}

/// `/metrics`, in Prometheus's text format.
pub fn metrics(state: &ServeState) -> Response<Body> {
    let rendered = state
        .prometheus
        .as_ref()
        .map(|p| p.render())
        .unwrap_or_default();
    text(StatusCode::OK, rendered)
}
