//! `/debug/cache`: what each cached type is doing — its reflector's state,
//! what it holds, how far behind the upstream it may be, who watches it,
//! how often it answered and how often reads went upstream, its last
//! error — as an HTML page with no external assets (for a person at a
//! browser) or as JSON (`Accept: application/json`, for scripts). Read only
//! by whom the apiserver would let read `/debug/*`, as `/metrics`.

use super::state::ServeState;
use crate::body::{self, Body};
use crate::cache::TypeCache;
use http::{header, HeaderValue, Response, StatusCode};
use serde::Serialize;
use std::fmt::Write as _;

pub const PATH: &str = "/debug/cache";

/// What the page shows.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Page {
    version: &'static str,
    upstream: String,
    /// The upstream's reachability and whether it accepts kubecache.
    upstream_state: String,
    /// Reads are answered from the last known state, with a Warning: the
    /// upstream is unreachable and `--serve-stale-when-offline` is on.
    serving_stale: bool,
    /// The upstream's version, as last read from its `/version`.
    upstream_version: Option<String>,
    /// The `consistentReads` setting and what the upstream can prove.
    consistent_reads: String,
    /// Whose representations kubecache's own follow.
    representations: String,
    types: Vec<TypeRow>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TypeRow {
    resource: String,
    state: &'static str,
    /// Cached from the start (readiness waits for it), not by a read.
    eager: bool,
    synced: bool,
    objects: usize,
    bytes: usize,
    resource_version: u64,
    /// Seconds since the upstream was last heard from for the type (a
    /// list, an event or a bookmark): how stale the cache may be.
    lag_seconds: Option<f64>,
    watchers: usize,
    served: u64,
    forwarded: u64,
    /// Of its reads, the share answered from the cache.
    hit_ratio: Option<f64>,
    last_error: Option<String>,
    last_error_seconds_ago: Option<u64>,
    /// When the snapshot its state was restored from was written, until
    /// the upstream lists the type again (RFC 3339).
    restored_from: Option<String>,
    /// How its consistent reads are answered now (events, bookmarks,
    /// forwarded; or the setting: forward, serve-stale), and why.
    consistent_reads: String,
    consistent_reads_why: String,
    /// The last proof of freshness: how and how long, or why it failed.
    last_proof: Option<String>,
}

impl TypeRow {
    fn of(tc: &TypeCache, state: &ServeState) -> Self {
        let mode = state.consistent_mode(tc);
        let last_proof = tc.proofs.last().map(|(outcome, at)| {
            let ago = at.elapsed().map_or(0, |d| d.as_secs());
            match outcome {
                Ok(p) => format!("{} in {:.0?}, {ago} s ago", p.how.as_str(), p.took),
                Err(e) => format!("not proven ({e}), {ago} s ago"),
            }
        });
        let (objects, bytes) = tc.store.size();
        let served = tc.tally().served();
        let forwarded = tc.tally().forwarded();
        let reads = served + forwarded;
        let error = tc.activity.last_error();
        TypeRow {
            resource: tc.rt.gvr.to_string(),
            state: tc.condition().name(),
            eager: tc.is_eager(),
            synced: tc.is_synced(),
            objects,
            bytes,
            resource_version: tc.store.rv(),
            lag_seconds: tc.activity.lag().map(|d| d.as_secs_f64()),
            watchers: tc.store.watchers(),
            served,
            forwarded,
            hit_ratio: (reads > 0).then(|| served as f64 / reads as f64),
            last_error_seconds_ago: error
                .as_ref()
                .map(|(_, at)| at.elapsed().map_or(0, |d| d.as_secs())),
            last_error: error.map(|(why, _)| why),
            restored_from: tc.restored_at().map(crate::go::time::format_rfc3339),
            consistent_reads: mode.name.to_string(),
            consistent_reads_why: mode.why,
            last_proof,
        }
    }
}

fn page_of(state: &ServeState) -> Page {
    let mut types: Vec<TypeRow> = state
        .cache
        .all()
        .iter()
        .map(|tc| TypeRow::of(tc, state))
        .collect();
    types.sort_by(|a, b| a.resource.cmp(&b.resource));
    let seen = state.cache.upstream_health().current();
    Page {
        version: env!("CARGO_PKG_VERSION"),
        upstream: state.forward.uri("/").to_string(),
        upstream_state: seen.reach.describe(),
        serving_stale: state.cache.offline(),
        upstream_version: state
            .cache
            .freshness()
            .version()
            .known()
            .map(|k| k.version.to_string()),
        consistent_reads: state.upstream_consistency(),
        representations: state.representations(),
        types,
    }
}

/// The page, as JSON when the client asks for it, else HTML.
pub fn respond(state: &ServeState, wants_json: bool) -> Response<Body> {
    let page = page_of(state);
    let (content, content_type) = if wants_json {
        let json = serde_json::to_vec(&page).unwrap_or_default();
        (json, "application/json")
    } else {
        (html(&page).into_bytes(), "text/html; charset=utf-8")
    };
    let mut r = Response::new(body::full(content));
    *r.status_mut() = StatusCode::OK;
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        "X-Content-Type-Options",
        HeaderValue::from_static("nosniff"),
    );
    // Nothing of another origin, and no script at all.
    h.insert(
        "Content-Security-Policy",
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Bytes as a person reads them: B, KiB, MiB, GiB.
fn size(bytes: usize) -> String {
    let mut v = bytes as f64;
    for unit in ["B", "KiB", "MiB"] {
        if v < 1024.0 {
            return if unit == "B" {
                format!("{bytes} B")
            } else {
                format!("{v:.1} {unit}")
            };
        }
        v /= 1024.0;
    }
    format!("{v:.1} GiB")
}

fn html(page: &Page) -> String {
    let mut rows = String::new();
    for t in &page.types {
        let lag = t.lag_seconds.map_or("—".into(), |s| format!("{s:.1} s"));
        let hits = t
            .hit_ratio
            .map_or("—".into(), |r| format!("{:.0}%", r * 100.0));
        let error = match (&t.last_error, t.last_error_seconds_ago) {
            (Some(e), Some(ago)) => format!("{} ({ago} s ago)", escape(e)),
            _ => "—".into(),
        };
        let restored = t.restored_from.as_ref().map_or(String::new(), |at| {
            format!(
                " <small>restored from the snapshot of {}</small>",
                escape(at)
            )
        });
        let proof = t.last_proof.as_deref().map_or(String::new(), |p| {
            format!("<br><small>last: {}</small>", escape(p))
        });
        let _ = writeln!(
            rows,
            "<tr data-resource=\"{r}\" class=\"{state}\"><td>{r}{eager}</td><td>{state}{restored}</td>\
             <td class=\"n\" data-objects=\"{objects}\">{objects}</td><td class=\"n\">{bytes}</td>\
             <td class=\"n\">{rv}</td><td class=\"n\">{lag}</td><td class=\"n\">{watchers}</td>\
             <td class=\"n\">{hits}</td><td class=\"n\">{served}</td><td class=\"n\">{forwarded}</td>\
             <td title=\"{why}\">{consistent}{proof}</td><td>{error}</td></tr>",
            why = escape(&t.consistent_reads_why),
            consistent = escape(&t.consistent_reads),
            r = escape(&t.resource),
            eager = if t.eager { " <small>eager</small>" } else { "" },
            state = t.state,
            objects = t.objects,
            bytes = size(t.bytes),
            rv = t.resource_version,
            watchers = t.watchers,
            served = t.served,
            forwarded = t.forwarded,
        );
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>kubecache: cache</title><style>\
         body{{font:14px system-ui,sans-serif;margin:1.5em;color:#222}}\
         table{{border-collapse:collapse}}th,td{{padding:.3em .7em;border-bottom:1px solid #ddd;text-align:left}}\
         th{{background:#f4f4f4}}td.n{{text-align:right;font-variant-numeric:tabular-nums}}\
         tr.failing td,tr.refused td,tr.too-large td{{background:#fff0f0}}small{{color:#888}}\
         </style></head><body>\n<h1>kubecache {version}</h1>\n\
         <p>upstream <code>{upstream}</code>: {upstream_state}. {n} types cached. \
         The same as JSON: <code>Accept: application/json</code>.</p>\n\
         <p id=\"consistent\">consistent reads: {consistent}</p>\n\
         <p id=\"representations\">representations: {representations}</p>\n{stale}\
         <table id=\"types\"><thead><tr><th>resource</th><th>state</th><th>objects</th>\
         <th>bytes</th><th>resourceVersion</th><th>lag</th><th>watchers</th><th>hit ratio</th>\
         <th>served</th><th>forwarded</th><th>consistent reads</th><th>last error</th></tr></thead>\n<tbody>\n{rows}</tbody></table>\n\
         </body></html>\n",
        version = page.version,
        upstream = escape(&page.upstream),
        upstream_state = escape(&page.upstream_state),
        consistent = escape(&page.consistent_reads),
        representations = escape(&page.representations),
        n = page.types.len(),
        stale = if page.serving_stale {
            "<p id=\"stale\"><strong>The upstream is unreachable: reads are answered from the \
             last known state, each with a Warning header.</strong></p>\n"
        } else {
            ""
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(resource: &str, error: Option<&str>) -> TypeRow {
        TypeRow {
            resource: resource.into(),
            state: "watching",
            eager: true,
            synced: true,
            objects: 12,
            bytes: 3 << 20,
            resource_version: 77,
            lag_seconds: Some(0.5),
            watchers: 2,
            served: 3,
            forwarded: 1,
            hit_ratio: Some(0.75),
            last_error: error.map(str::to_string),
            last_error_seconds_ago: error.map(|_| 9),
            restored_from: None,
            consistent_reads: "bookmarks".into(),
            consistent_reads_why: "quiet: v1.36.2 makes its bookmarks fresh".into(),
            last_proof: Some("bookmark in 1.1s, 3 s ago".into()),
        }
    }

    #[test]
    fn the_html_page_has_a_row_per_type_and_escapes_what_the_upstream_said() {
        let page = Page {
            version: "0.1.0",
            upstream: "https://k8s.example:6443".into(),
            upstream_state: "ok".into(),
            serving_stale: false,
            upstream_version: Some("v1.36.2".into()),
            consistent_reads: "prove; upstream v1.36.2".into(),
            representations: "v1.36: the upstream's release (v1.36.2)".into(),
            types: vec![
                row("v1/pods", None),
                row("apps/v1/deployments", Some("listing: <b>500</b> & \"bad\"")),
            ],
        };
        let html = html(&page);
        assert!(html.contains("<tr data-resource=\"v1/pods\" class=\"watching\">"));
        assert!(html.contains("data-objects=\"12\""));
        assert!(html.contains("75%") && html.contains("3.0 MiB") && html.contains("0.5 s"));
        assert!(html.contains("listing: &lt;b&gt;500&lt;/b&gt; &amp; &quot;bad&quot; (9 s ago)"));
        assert!(!html.contains("<b>500"));
        assert!(
            !html.contains("http://") && !html.contains("src="),
            "no external asset"
        );
        assert!(!html.contains("id=\"stale\""));
        assert!(html.contains("consistent reads: prove; upstream v1.36.2"));
        assert!(html.contains("<td title=\"quiet: v1.36.2 makes its bookmarks fresh\">bookmarks<br><small>last: bookmark in 1.1s, 3 s ago</small></td>"), "{html}");
    }

    #[test]
    fn serving_stale_and_a_restored_type_are_said_on_the_page() {
        let mut restored = row("v1/pods", None);
        restored.restored_from = Some("2026-11-24T10:00:00Z".into());
        let page = Page {
            version: "0.1.0",
            upstream: "https://k8s.example:6443".into(),
            upstream_state: "unreachable: refused".into(),
            serving_stale: true,
            upstream_version: None,
            consistent_reads: "prove; upstream version not read yet".into(),
            representations: "v1.20: the upstream's version is not read yet".into(),
            types: vec![restored],
        };
        let html = html(&page);
        assert!(html.contains("<p id=\"stale\">"), "{html}");
        assert!(html.contains("restored from the snapshot of 2026-11-24T10:00:00Z"));
        let v = serde_json::to_value(&page).unwrap();
        assert_eq!(v["servingStale"], true);
        assert_eq!(v["types"][0]["restoredFrom"], "2026-11-24T10:00:00Z");
    }

    #[test]
    fn sizes_read_in_the_unit_that_fits() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(36_000), "35.2 KiB");
        assert_eq!(size(3 << 20), "3.0 MiB");
        assert_eq!(size(5 << 30), "5.0 GiB");
    }

    #[test]
    fn the_json_names_its_fields_in_camel_case() {
        let v = serde_json::to_value(row("v1/pods", None)).unwrap();
        for field in [
            "resource",
            "state",
            "objects",
            "bytes",
            "resourceVersion",
            "lagSeconds",
            "watchers",
            "hitRatio",
            "served",
            "forwarded",
            "lastError",
            "consistentReads",
            "consistentReadsWhy",
            "lastProof",
        ] {
            assert!(v.get(field).is_some(), "{field}: {v}");
        }
    }
}
