//! Writers: straight to the upstream, each write read back through kubecache.

use super::*;

/// How fresh a read must be after a write at a version.
#[derive(Clone, Copy)]
pub(crate) enum Want {
    /// The object at this version or later (most recent, NotOlderThan).
    AtLeast,
    /// The object exactly at this version (Exact).
    Exactly,
}

pub(crate) async fn writer(ctx: Arc<Ctx>, kind: Kind, mut rng: StdRng) {
    let keys = ctx.keys(kind);
    // What the writer believes each object is: absent or at a version.
    // A write without an answer makes it unknown until read again.
    let mut model: HashMap<Key, Option<u64>> = keys.iter().map(|k| (k.clone(), None)).collect();
    while ctx.running() {
        let key = &keys[rng.random_range(0..keys.len())];
        let Some(&current) = model.get(key) else {
            match ctx.http.get(&format!("{}{}", ctx.up, key.path())).await {
                Reply::Answer(StatusCode::OK, body) => {
                    let o = object_of(&body).expect("an object");
                    model.insert(key.clone(), Some(o.rv));
                }
                Reply::Answer(StatusCode::NOT_FOUND, _) => {
                    model.insert(key.clone(), None);
                }
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
            continue;
        };
        let seq = ctx.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let json = |v: Value| serde_json::to_vec(&v).unwrap();
        let (method, url, body) = match current {
            None => (
                Method::POST,
                format!("{}{}", ctx.up, kind.collection(Some(&key.ns))),
                Some(("application/json", json(kind.object(key, seq)))),
            ),
            Some(rv) if rng.random_bool(0.7) => (
                Method::PATCH,
                format!("{}{}", ctx.up, key.path()),
                Some(("application/merge-patch+json", json(kind.change(seq, rv)))),
            ),
            Some(_) => (Method::DELETE, format!("{}{}", ctx.up, key.path()), None),
        };
        let deleting = method == Method::DELETE;
        add(&ctx.counts.writes);
        match ctx.http.call(method, &url, body, WRITE_TIMEOUT).await {
            Reply::Answer(s, body) if s.is_success() => {
                add(&ctx.counts.applied);
                if deleting {
                    model.insert(key.clone(), None);
                    read_your_delete(&ctx, key).await;
                    continue;
                }
                let o = object_of(&body).expect("a write's answer is the object");
                if o.deleting {
                    // An update of an object whose deletion was asked for
                    // with no grace period (a pod with no node) and that is
                    // still there, because the apiserver or etcd died
                    // between the delete's two steps (set deletionTimestamp,
                    // then delete): the apiserver deletes it instead
                    // (generic registry's ShouldDeleteDuringUpdate) and
                    // answers 200 with the request's object at the version
                    // it had before, a version the upstream holds with
                    // other content. Seen as an etcd-lost write with a
                    // reused revision on 2026-11-24 (seed 2121); it is the
                    // apiserver's documented behaviour, and etcd's history
                    // must show it (`check_answered_writes`).
                    add(&ctx.counts.deleted_by_update);
                    let done = (key.clone(), o.rv, seq);
                    ctx.deleted_by_update.lock().unwrap().push(done);
                    model.insert(key.clone(), None);
                    read_your_delete(&ctx, key).await;
                    continue;
                }
                model.insert(key.clone(), Some(o.rv));
                let was = ctx.written.lock().unwrap().insert(o.rv, (key.clone(), seq));
                if let Some((k, s)) = was {
                    // Two writes answered at one version: the upstream
                    // reused a revision (kubecache is not on this path).
                    let what = format!("{key} as {seq}, and before it {k} as {s}");
                    ctx.answered_twice.lock().unwrap().push((o.rv, what));
                }
                ctx.committed.fetch_max(o.rv, Ordering::Relaxed);
                read_your_write(&ctx, key, o.rv, &mut rng).await;
            }
            Reply::Answer(s, body) if s.is_client_error() => {
                add(&ctx.counts.refused);
                // A conflict or a 404: an earlier write's lost answer hid
                // what it did; read the object again.
                if s == StatusCode::CONFLICT || s == StatusCode::NOT_FOUND {
                    model.remove(key);
                } else {
                    let mut first = ctx.first_refusal.lock().unwrap();
                    first.get_or_insert_with(|| format!("{s} {}", String::from_utf8_lossy(&body)));
                }
            }
            Reply::Unreachable => {
                add(&ctx.counts.refused);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Reply::Answer(..) | Reply::Lost(_) => {
                add(&ctx.counts.lost);
                model.remove(key);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// After a write answered at `rv`: a most-recent read through kubecache,
/// then one at that version (NotOlderThan or Exact), must show the object
/// at `rv` or later — or be refused.
pub(crate) async fn read_your_write(ctx: &Ctx, key: &Key, rv: u64, rng: &mut StdRng) {
    let coll = key.kind.collection(Some(&key.ns));
    let by_name = format!("fieldSelector=metadata.name%3D{}", key.name);
    let (path, selector, list) = match rng.random_range(0..3) {
        0 => (key.path(), String::new(), false),
        1 => (coll.clone(), by_name, true),
        _ => (coll.clone(), String::new(), true),
    };
    fresh(
        ctx,
        key,
        rv,
        (&path, &selector, ""),
        list,
        Want::AtLeast,
        "most recent",
    )
    .await;
    let at = format!("resourceVersion={rv}");
    match rng.random_range(0..4) {
        0 => {
            fresh(
                ctx,
                key,
                rv,
                (&key.path(), "", &at),
                false,
                Want::AtLeast,
                "NotOlderThan",
            )
            .await
        }
        1 => {
            fresh(
                ctx,
                key,
                rv,
                (&coll, "", &at),
                true,
                Want::AtLeast,
                "NotOlderThan",
            )
            .await
        }
        2 => {
            let q = format!("{at}&resourceVersionMatch=NotOlderThan");
            fresh(
                ctx,
                key,
                rv,
                (&coll, "", &q),
                true,
                Want::AtLeast,
                "NotOlderThan",
            )
            .await
        }
        _ => {
            let q = format!("{at}&resourceVersionMatch=Exact");
            fresh(ctx, key, rv, (&coll, "", &q), true, Want::Exactly, "Exact").await
        }
    }
}

/// One read of `key` after its write at `rv`: (path, selector, version
/// query).
pub(crate) async fn fresh(
    ctx: &Ctx,
    key: &Key,
    rv: u64,
    (path, selector, version): (&str, &str, &str),
    list: bool,
    want: Want,
    how: &'static str,
) {
    let query: Vec<&str> = [selector, version]
        .into_iter()
        .filter(|q| !q.is_empty())
        .collect();
    let url = format!("{path}?{}", query.join("&"));
    let Reply::Answer(status, body) = ctx.read(&url).await else {
        return;
    };
    let ok = |got: u64| match want {
        Want::AtLeast => got >= rv,
        Want::Exactly => got == rv,
    };
    let stale = |what: String| {
        let what = format!("{how} read {url} after {key} was written at {rv}: {what}");
        eprintln!("chaos: stale unless the upstream lost the write: {what}");
        ctx.stale_after_write.lock().unwrap().push((rv, what));
    };
    match status {
        StatusCode::OK if list => {
            let l = parse_list(&body).expect("a list");
            if !ok(l.rv) {
                return stale(format!("a list at {}", l.rv));
            }
            match l
                .items
                .iter()
                .find(|i| i.name == key.name && i.ns == key.ns)
            {
                None => stale(format!("a list at {} without it", l.rv)),
                Some(i) if !ok(i.rv) => stale(format!("it at {}", i.rv)),
                Some(_) => ctx.compare(path, selector, l.rv, &l.items, how),
            }
        }
        StatusCode::OK => {
            let o = object_of(&body).expect("an object");
            if !ok(o.rv) {
                return stale(format!("it at {}", o.rv));
            }
            let (key, rv, seq) = (key.clone(), o.rv, o.seq);
            let served = ServedObject { key, rv, seq, how };
            ctx.served_objects.lock().unwrap().push(served);
        }
        StatusCode::NOT_FOUND if !list => stale("404".into()),
        // Refused or failing: allowed under faults.
        _ => {}
    }
}

/// After a delete was answered: a most-recent get must not find it.
pub(crate) async fn read_your_delete(ctx: &Ctx, key: &Key) {
    if let Reply::Answer(StatusCode::OK, body) = ctx.read(&key.path()).await {
        let o = object_of(&body).map(|o| o.rv).unwrap_or_default();
        ctx.found.note(
            &ctx.found.stale,
            format!("most recent get of {key} after its delete was answered: it, at {o}"),
        );
    }
}
