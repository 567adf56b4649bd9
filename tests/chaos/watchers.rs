//! Watchers: list, then watch from the list's version, resuming where they were.

use super::*;

#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) rv: u64,
    pub(crate) change: Change,
    pub(crate) key: Key,
    pub(crate) seq: Option<u64>,
    /// The chain's end when it arrived: everything up to it had been
    /// delivered, by an event or a bookmark.
    pub(crate) after: u64,
}

/// Everything one watcher saw from one list on: the list's version, then
/// the events of the watches that resumed one after another.
pub(crate) struct Chain {
    pub(crate) scope: Scope,
    pub(crate) start: u64,
    /// The version everything up to which has been delivered: the last
    /// event's or bookmark's.
    pub(crate) end: u64,
    pub(crate) events: Vec<Seen>,
    /// The versions each watch resumed from.
    pub(crate) resumes: Vec<u64>,
    /// The ERROR event (or 410) that ended it, after which it relisted.
    pub(crate) ended: Option<String>,
}

pub(crate) enum Event {
    Seen(Seen),
    Bookmark(u64),
    Error(String),
}

#[derive(Deserialize)]
pub(crate) struct EventIn<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    #[serde(borrow)]
    pub(crate) object: &'a RawValue,
}

pub(crate) fn parse_event(kind: Kind, line: &[u8]) -> Option<Event> {
    let e: EventIn = serde_json::from_slice(line).ok()?;
    let raw = e.object.get().as_bytes();
    let change = match e.kind.as_str() {
        "ADDED" => Change::Added,
        "MODIFIED" => Change::Modified,
        "DELETED" => Change::Deleted,
        "BOOKMARK" => return Some(Event::Bookmark(object_of(raw)?.rv)),
        "ERROR" => return Some(Event::Error(e.object.get().to_string())),
        _ => return None,
    };
    let o = object_of(raw)?;
    Some(Event::Seen(Seen {
        rv: o.rv,
        change,
        key: Key {
            kind,
            ns: o.ns,
            name: o.name,
        },
        seq: o.seq,
        after: 0,
    }))
}

pub(crate) async fn watcher(
    ctx: Arc<Ctx>,
    scope: Scope,
    mut rng: StdRng,
    progress: Arc<AtomicU64>,
    mut stop: watch::Receiver<bool>,
) -> Vec<Chain> {
    let path = scope.path();
    let mut chains = vec![];
    let pause = || tokio::time::sleep(Duration::from_millis(200));
    'relist: while !*stop.borrow() {
        let from = if rng.random_bool(0.5) {
            "resourceVersion=0"
        } else {
            ""
        };
        let Reply::Answer(StatusCode::OK, body) = ctx.read(&format!("{path}?{from}")).await else {
            pause().await;
            continue;
        };
        let l = parse_list(&body).expect("a list");
        ctx.compare(&path, "", l.rv, &l.items, "a watcher's list");
        let mut chain = Chain {
            scope: scope.clone(),
            start: l.rv,
            end: l.rv,
            events: vec![],
            resumes: vec![],
            ended: None,
        };
        progress.store(chain.end, Ordering::Relaxed);
        loop {
            if *stop.borrow() {
                chains.push(chain);
                break 'relist;
            }
            let timeout = rng.random_range(1..=8u64);
            let bookmarks = if rng.random_bool(0.5) {
                "&allowWatchBookmarks=true"
            } else {
                ""
            };
            let url = format!(
                "{}{path}?watch=1&resourceVersion={}&timeoutSeconds={timeout}{bookmarks}",
                ctx.kube, chain.end
            );
            add(&ctx.counts.requests);
            let opened = tokio::select! {
                r = ctx.http.open(Method::GET, &url, None) => r,
                _ = stop.changed() => {
                    chains.push(chain);
                    break 'relist;
                }
            };
            let resp = match opened {
                Ok(r) if r.status() == StatusCode::OK => r,
                Ok(r) => {
                    add(&ctx.counts.error_statuses);
                    if r.status() == StatusCode::GONE {
                        chain.ended = Some("410 status".into());
                        chains.push(chain);
                        continue 'relist;
                    }
                    pause().await;
                    continue;
                }
                Err(_) => {
                    add(&ctx.counts.failed);
                    pause().await;
                    continue;
                }
            };
            add(&ctx.counts.answered);
            chain.resumes.push(chain.end);
            let mut lines = Lines::new(resp.into_body());
            loop {
                // Past its timeout a watch kubecache serves has ended; one
                // forwarded to a stalled upstream may hang: resume it.
                let wait = Duration::from_secs(timeout + 20);
                let line = tokio::select! {
                    l = lines.next(wait) => l,
                    _ = stop.changed() => {
                        chains.push(chain);
                        break 'relist;
                    }
                };
                let Line::Data(line) = line else {
                    break;
                };
                match parse_event(scope.kind, &line) {
                    Some(Event::Seen(mut seen)) => {
                        add(&ctx.counts.watch_events);
                        seen.after = chain.end;
                        chain.end = chain.end.max(seen.rv);
                        chain.events.push(seen);
                    }
                    Some(Event::Bookmark(rv)) => chain.end = chain.end.max(rv),
                    Some(Event::Error(status)) => {
                        chain.ended = Some(status);
                        chains.push(chain);
                        continue 'relist;
                    }
                    None => {
                        // As client-go does with an undecodable event: end
                        // the watch and resume from the last version.
                        add(&ctx.counts.undecodable_lines);
                        break;
                    }
                }
                progress.store(chain.end, Ordering::Relaxed);
            }
        }
    }
    chains
}
