//! kubecache's own endpoints: `/livez`, `/readyz`, `/healthz` (with
//! `?verbose`, in the apiserver's `[+]name ok` format) and `/metrics`.

use super::state::ServeState;
use crate::body::{self, Body};
use crate::reflector::Condition;
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

/// One line of a health report: a check and whether it passed, with what
/// it saw when that is worth saying.
struct Check {
    name: String,
    passed: bool,
    /// Reported but not counted: a type a client's read started, or a
    /// check `?exclude=` names (the apiserver's word for both).
    excluded: bool,
    detail: Option<String>,
}

impl Check {
    fn new(name: impl Into<String>, passed: bool) -> Self {
        Check {
            name: name.into(),
            passed,
            excluded: false,
            detail: None,
        }
    }

    fn saying(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    fn excluded(mut self) -> Self {
        self.excluded = true;
        self
    }

    fn line(&self) -> String {
        let name = &self.name;
        match (self.excluded, self.passed, &self.detail) {
            (true, _, Some(d)) => format!("[+]{name} excluded: {d}\n"),
            (true, _, None) => format!("[+]{name} excluded: ok\n"),
            (false, true, None) => format!("[+]{name} ok\n"),
            (false, true, Some(d)) => format!("[+]{name} ok ({d})\n"),
            (false, false, None) => format!("[-]{name} failed: reason withheld\n"),
            (false, false, Some(d)) => format!("[-]{name} failed: {d}\n"),
        }
    }
}

/// The checks behind `/readyz`: shutdown; the upstream, which fails
/// readiness only when it refuses kubecache's credentials (an unreachable
/// upstream does not: every replica shares it, and cached reads that need
/// no freshness are still served — see docs/operations.md); and one informer-sync
/// per type, of which only the eager types' count. A type a client's read
/// started is reported, excluded until it syncs: one the upstream refuses
/// kubecache (403, 404) is forwarded for good, and would otherwise take
/// the replica out of service for a read anyone may make.
fn ready_checks(state: &ServeState) -> Vec<Check> {
    let mut checks = vec![Check::new(
        "shutdown",
        !state.shutting_down.load(Ordering::Acquire),
    )];
    let seen = state.cache.upstream_health().current();
    let reach = &seen.reach;
    let mut upstream = Check::new("upstream", !reach.credentials_refused());
    if !reach.is_ok() {
        let secs = seen.since.elapsed().as_secs();
        upstream = upstream.saying(format!("{} for {secs}s", reach.describe()));
    }
    checks.push(upstream);
    // What the upstream can prove of consistent reads (informative).
    checks.push(Check::new("consistent-reads", true).saying(state.upstream_consistency()));
    // Whose representations kubecache writes (informative).
    checks.push(Check::new("representations", true).saying(state.representations()));
    let mut types: Vec<Check> = state
        .cache
        .all()
        .into_iter()
        .map(|tc| {
            let check = Check::new(format!("informer-sync/{}", tc.rt.gvr), tc.is_synced());
            let how = match tc.condition() {
                // Not counted even for an eager type: its reads are
                // forwarded, and no restart would make it fit.
                Condition::TooLarge(o) => {
                    return check
                        .saying(format!("too large to cache ({o}); reads forwarded"))
                        .excluded()
                }
                Condition::Refused(code) => Some(format!(
                    "the upstream refuses kubecache its list ({code}); reads forwarded"
                )),
                _ if !tc.is_synced() => Some("syncing; reads forwarded meanwhile".into()),
                Condition::Failing(_) => {
                    Some("failing, retrying; reads that need freshness forwarded".into())
                }
                _ => None,
            };
            match how {
                Some(how) if !tc.is_eager() && !tc.is_synced() => {
                    check.saying(format!("started by a read, {how}")).excluded()
                }
                Some(how) => check.saying(how),
                None => check,
            }
        })
        .collect();
    types.extend(
        state
            .cache
            .all()
            .into_iter()
            .filter(|tc| tc.is_synced())
            .map(|tc| {
                let mode = state.consistent_mode(&tc);
                Check::new(format!("consistent-reads/{}", tc.rt.gvr), true)
                    .saying(format!("{}: {}", mode.name, mode.why))
            }),
    );
    types.sort_by(|a, b| a.name.cmp(&b.name));
    checks.extend(types);
    checks
}

fn report(name: &str, mut checks: Vec<Check>, query: &Query) -> Response<Body> {
    for c in &mut checks {
        if query.exclude.contains(&c.name) {
            c.excluded = true;
            c.detail = None;
        }
    }
    let ok = checks.iter().all(|c| c.passed || c.excluded);
    if !query.verbose && ok {
        return text(StatusCode::OK, "ok".into());
    }
    let mut body: String = checks.iter().map(Check::line).collect();
    if ok {
        body.push_str(&format!("{name} check passed\n"));
        text(StatusCode::OK, body)
    } else {
        body.push_str(&format!("{name} check failed\n"));
        text(StatusCode::INTERNAL_SERVER_ERROR, body)
    }
}

/// A health endpoint's query: `verbose`, and the checks to `exclude`.
#[derive(Default)]
struct Query {
    verbose: bool,
    exclude: Vec<String>,
}

impl Query {
    fn parse(query: Option<&str>) -> Self {
        let mut q = Query::default();
        for (k, v) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
            match &*k {
                "verbose" => q.verbose = true,
                "exclude" => q.exclude.push(v.into_owned()),
                _ => {}
            }
        }
        q
    }
}

/// Answers kubecache's health endpoints, which anyone may read (as the
/// apiserver lets `system:unauthenticated` read its own); `None` for
/// everything else.
pub fn probe(state: &ServeState, path: &str, query: Option<&str>) -> Option<Response<Body>> {
    let query = Query::parse(query);
    match path {
        "/livez" => Some(report("livez", vec![Check::new("ping", true)], &query)),
        "/readyz" | "/healthz" => Some(report(&path[1..], ready_checks(state), &query)),
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
    let in_flight = &state.limits.in_flight;
    crate::metrics::bytes_in_flight(in_flight.used(), in_flight.limit());
    crate::metrics::collect_process();
    for tc in state.cache.all() {
        crate::metrics::type_state(
            &tc.rt.gvr.to_string(),
            tc.activity.lag(),
            tc.condition().name(),
        );
    }
    let rendered = state
        .prometheus
        .as_ref()
        .map(|p| p.render())
        .unwrap_or_default();
    text(StatusCode::OK, rendered)
}
