//! Readers: lists, walks and gets through kubecache in every resourceVersion mode.

use super::*;

pub(crate) async fn reader(ctx: Arc<Ctx>, mut rng: StdRng) {
    while ctx.running() {
        let kind = KINDS[rng.random_range(0..KINDS.len())];
        let ns = rng
            .random_bool(0.7)
            .then(|| ctx.namespaces[rng.random_range(0..ctx.namespaces.len())].clone());
        let path = Scope { kind, ns }.path();
        // What a write had been answered at before this read was asked.
        let committed = ctx.committed.load(Ordering::Relaxed);
        match rng.random_range(0..10) {
            0 | 1 => list(&ctx, &path, "resourceVersion=0", None, "RV=0 list").await,
            2 => list(&ctx, &path, "", Some(Want::AtLeast), "most recent list").await,
            3 => {
                let q = format!("resourceVersion={committed}");
                list(&ctx, &path, &q, Some(Want::AtLeast), "NotOlderThan list").await
            }
            4 => {
                let at = committed.saturating_sub(rng.random_range(0..40)).max(1);
                let q = format!("resourceVersion={at}&resourceVersionMatch=Exact");
                list(&ctx, &path, &q, Some(Want::Exactly), "Exact list").await
            }
            5 | 6 => {
                let limit = rng.random_range(1..=4);
                let from = match rng.random_range(0..3) {
                    0 => String::new(),
                    1 => "&resourceVersion=0".to_string(),
                    _ => format!("&resourceVersion={committed}"),
                };
                walk(&ctx, &path, limit, &from).await
            }
            _ => {
                let keys = ctx.keys(kind);
                let key = &keys[rng.random_range(0..keys.len())];
                let (q, how) = match rng.random_range(0..3) {
                    0 => ("?resourceVersion=0".to_string(), "RV=0 get"),
                    1 => (String::new(), "most recent get"),
                    _ => (format!("?resourceVersion={committed}"), "NotOlderThan get"),
                };
                if let Reply::Answer(StatusCode::OK, body) =
                    ctx.read(&format!("{}{q}", key.path())).await
                {
                    let o = object_of(&body).expect("an object");
                    let (key, rv, seq) = (key.clone(), o.rv, o.seq);
                    let served = ServedObject { key, rv, seq, how };
                    ctx.served_objects.lock().unwrap().push(served);
                }
            }
        }
    }
}

/// A list; with `want`, its version must be at least (or exactly) the
/// version `query` names, else the committed version when it names none.
pub(crate) async fn list(
    ctx: &Ctx,
    path: &str,
    query: &str,
    want: Option<Want>,
    how: &'static str,
) {
    let floor = ctx.committed.load(Ordering::Relaxed);
    let named = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("resourceVersion="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(floor);
    let Reply::Answer(StatusCode::OK, body) = ctx.read(&format!("{path}?{query}")).await else {
        return;
    };
    let l = parse_list(&body).expect("a list");
    let stale = match want {
        Some(Want::AtLeast) => l.rv < named,
        Some(Want::Exactly) => l.rv != named,
        None => false,
    };
    if stale {
        let what = format!("{how} {path}?{query} answered at {}, wanted {named}", l.rv);
        return ctx.found.note(&ctx.found.stale, what);
    }
    ctx.compare(path, "", l.rv, &l.items, how);
}

/// A limit/continue walk to its end: every page at the first page's
/// version, no object twice, the whole equal to the upstream's exact list.
pub(crate) async fn walk(ctx: &Ctx, path: &str, limit: u32, from: &str) {
    let mut query = format!("limit={limit}{from}");
    let mut items: Vec<Item> = vec![];
    let mut rv = None;
    for page in 0.. {
        let Reply::Answer(StatusCode::OK, body) = ctx.read(&format!("{path}?{query}")).await else {
            // A refused page (a 410 for an expired token included) ends the walk.
            return;
        };
        let l = parse_list(&body).expect("a list");
        let first = *rv.get_or_insert(l.rv);
        if l.rv != first {
            let what = format!(
                "walk of {path} ({from}): page {page} at {}, the first at {first}",
                l.rv
            );
            return ctx.found.note(&ctx.found.mismatches, what);
        }
        items.extend(l.items);
        match l.cont {
            Some(token) => {
                let token: String =
                    url::form_urlencoded::byte_serialize(token.as_bytes()).collect();
                query = format!("limit={limit}&continue={token}");
            }
            None => break,
        }
        assert!(page < 1000, "a walk of {path} does not end");
    }
    let rv = rv.unwrap_or_default();
    // v1.20: a version with a limit is a list at exactly that version.
    if let Some(at) = from
        .strip_prefix("&resourceVersion=")
        .and_then(|v| v.parse::<u64>().ok())
    {
        if at != 0 && rv != at {
            let what = format!("walk of {path} from {at}: at {rv}");
            return ctx.found.note(&ctx.found.mismatches, what);
        }
    }
    let before = items.len();
    items.sort();
    items.dedup_by(|a, b| a.ns == b.ns && a.name == b.name);
    if items.len() != before {
        let what = format!("walk of {path} ({from}) at {rv}: an object on two pages");
        return ctx.found.note(&ctx.found.duplicates, what);
    }
    ctx.compare(path, "", rv, &items, "walk");
}
