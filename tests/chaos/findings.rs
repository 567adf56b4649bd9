//! What the run counts and finds, and the context every task of a scenario shares (`Ctx`), with the comparers of lists.

use super::*;

#[derive(Default)]
pub(crate) struct Findings {
    pub(crate) stale: AtomicU64,
    pub(crate) gaps: AtomicU64,
    pub(crate) duplicates: AtomicU64,
    pub(crate) disorder: AtomicU64,
    pub(crate) mismatches: AtomicU64,
    pub(crate) examples: Mutex<Vec<String>>,
}

impl Findings {
    pub(crate) fn note(&self, counter: &AtomicU64, what: String) {
        counter.fetch_add(1, Ordering::Relaxed);
        let mut examples = self.examples.lock().unwrap();
        if examples.len() < 40 {
            eprintln!("chaos finding: {what}");
            examples.push(what);
        }
    }
}

#[derive(Default)]
pub(crate) struct Counts {
    /// Requests to kubecache, by what came back.
    pub(crate) requests: AtomicU64,
    pub(crate) answered: AtomicU64,
    pub(crate) error_statuses: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) watch_events: AtomicU64,
    pub(crate) undecodable_lines: AtomicU64,
    /// Writes to the upstream, by what came back.
    pub(crate) writes: AtomicU64,
    pub(crate) applied: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) lost: AtomicU64,
    /// Updates answered 2xx with the object pending deletion: the upstream
    /// deleted it instead (see `writer`).
    pub(crate) deleted_by_update: AtomicU64,
    /// Lists compared with the upstream's exact list at their version.
    pub(crate) verified: AtomicU64,
    /// ... of which compared after the faults, the upstream failing when served.
    pub(crate) deferred: AtomicU64,
    /// Not compared: the comparers were all busy.
    pub(crate) left_out: AtomicU64,
    /// Not comparable: the upstream's history compacted, or the upstream
    /// still failing after the faults.
    pub(crate) unverifiable: AtomicU64,
}

pub(crate) fn add(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn n(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

/// Where a list is: its path and `?selector`, and its version.
pub(crate) type At = (String, u64);

/// A list kubecache served, to compare with the upstream's.
pub(crate) struct Served {
    pub(crate) at: String,
    pub(crate) rv: u64,
    pub(crate) items: Vec<Item>,
    pub(crate) what: &'static str,
}

/// An object a get served, and how it was asked for.
pub(crate) struct ServedObject {
    pub(crate) key: Key,
    pub(crate) rv: u64,
    pub(crate) seq: Option<u64>,
    pub(crate) how: &'static str,
}

/// Everything the tasks of one scenario share.
pub(crate) struct Ctx {
    pub(crate) up: String,
    pub(crate) kube: String,
    pub(crate) http: Http,
    pub(crate) namespaces: Vec<String>,
    /// Writers and readers run while this holds.
    pub(crate) running: AtomicBool,
    pub(crate) seq: AtomicU64,
    /// The highest version a write's answer has given so far.
    pub(crate) committed: AtomicU64,
    /// Writes whose answer gave their version: version → (object, seq).
    pub(crate) written: Mutex<HashMap<u64, (Key, u64)>>,
    /// Updates the upstream carried out as deletes: (object, the version
    /// its answer gave, seq), to prove by the upstream's history.
    pub(crate) deleted_by_update: Mutex<Vec<(Key, u64, u64)>>,
    /// Reads after a write that did not show it: (the write's version,
    /// what was read), judged once the upstream's history is read, since
    /// a write the upstream itself lost is no fault of kubecache's.
    pub(crate) stale_after_write: Mutex<Vec<(u64, String)>>,
    /// Versions the upstream answered two writes at: (version, which).
    pub(crate) answered_twice: Mutex<Vec<(u64, String)>>,
    pub(crate) counts: Counts,
    pub(crate) found: Findings,
    /// The upstream's exact lists already read.
    pub(crate) exact: Mutex<HashMap<At, Vec<Item>>>,
    /// Lists served while the upstream could not give its exact list, to
    /// compare once it can: (path and selector, rv) → the lists, and how.
    pub(crate) deferred: Mutex<HashMap<At, Vec<Served>>>,
    /// Lists queued for the comparer.
    pub(crate) comparisons: tokio::sync::mpsc::Sender<Served>,
    /// Lists queued or being compared.
    pub(crate) queued: AtomicU64,
    /// Objects gets served.
    pub(crate) served_objects: Mutex<Vec<ServedObject>>,
    pub(crate) first_refusal: Mutex<Option<String>>,
}

impl Ctx {
    pub(crate) fn new(up: &str, kube: &str, namespaces: Vec<String>) -> Arc<Ctx> {
        let (comparisons, jobs) = tokio::sync::mpsc::channel(256);
        let jobs = Arc::new(tokio::sync::Mutex::new(jobs));
        let ctx = Arc::new(Ctx {
            up: up.to_string(),
            kube: kube.to_string(),
            http: Http::new(),
            namespaces,
            running: AtomicBool::new(true),
            seq: AtomicU64::new(0),
            committed: AtomicU64::new(0),
            written: Mutex::default(),
            deleted_by_update: Mutex::default(),
            stale_after_write: Mutex::default(),
            answered_twice: Mutex::default(),
            counts: Counts::default(),
            found: Findings::default(),
            exact: Mutex::default(),
            deferred: Mutex::default(),
            comparisons,
            queued: AtomicU64::new(0),
            served_objects: Mutex::default(),
            first_refusal: Mutex::default(),
        });
        for _ in 0..COMPARERS {
            tokio::spawn(comparer(ctx.clone(), jobs.clone()));
        }
        ctx
    }

    pub(crate) fn running(&self) -> bool {
        self.running.load(Ordering::Relaxed)
    }

    pub(crate) fn keys(&self, kind: Kind) -> Vec<Key> {
        let prefix = match kind {
            Kind::ConfigMap => "cm",
            Kind::Pod => "pod",
        };
        self.namespaces
            .iter()
            .flat_map(|ns| {
                (0..NAMES_PER_NAMESPACE).map(move |i| Key {
                    kind,
                    ns: ns.clone(),
                    name: format!("{prefix}-{i}"),
                })
            })
            .collect()
    }

    /// A GET through kubecache, counted.
    pub(crate) async fn read(&self, path_and_query: &str) -> Reply {
        add(&self.counts.requests);
        let r = self
            .http
            .get(&format!("{}{path_and_query}", self.kube))
            .await;
        match &r {
            Reply::Answer(s, _) if s.is_success() => add(&self.counts.answered),
            Reply::Answer(..) => add(&self.counts.error_statuses),
            _ => add(&self.counts.failed),
        }
        r
    }

    /// Has a list kubecache served at `rv` compared with the upstream's
    /// exact list at that version (`selector` beside it, if the list had
    /// one): by the comparers, so that reads through kubecache go on while
    /// the upstream is slow to answer. Lists are served faster than the
    /// upstream gives exact ones: those that find every comparer busy are
    /// counted and left out.
    pub(crate) fn compare(
        &self,
        path: &str,
        selector: &str,
        rv: u64,
        items: &[Item],
        what: &'static str,
    ) {
        let at = format!("{path}?{selector}");
        let known = self.exact.lock().unwrap().get(&(at.clone(), rv)).cloned();
        if let Some(upstream) = known {
            return self.same(&at, rv, items, &upstream, what);
        }
        let items = items.to_vec();
        let list = Served {
            at,
            rv,
            items,
            what,
        };
        self.queued.fetch_add(1, Ordering::SeqCst);
        if self.comparisons.try_send(list).is_err() {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            add(&self.counts.left_out);
        }
    }

    /// Keeps a list to compare once the faults are over. Lists served from
    /// the cache while the upstream is away are what most needs checking;
    /// the cache's version hardly moves meanwhile, so they are few.
    pub(crate) fn defer(&self, list: Served) {
        let mut deferred = self.deferred.lock().unwrap();
        if deferred.len() >= 5000 {
            return add(&self.counts.unverifiable);
        }
        let lists = deferred.entry((list.at.clone(), list.rv)).or_default();
        if !lists.iter().any(|l| l.items == list.items) {
            lists.push(list);
        }
    }

    /// Waits until the comparers are done with every list queued so far.
    pub(crate) async fn comparisons_done(&self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.queued.load(Ordering::SeqCst) > 0 {
            assert!(Instant::now() < deadline, "the comparers are stuck");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The upstream's exact list at `rv` of `at` (a path and `?selector`).
    pub(crate) async fn exact_list(&self, at: &str, rv: u64) -> Exact {
        let key = (at.to_string(), rv);
        if let Some(items) = self.exact.lock().unwrap().get(&key) {
            return Exact::Items(items.clone());
        }
        let and = if at.ends_with('?') { "" } else { "&" };
        let url = format!(
            "{}{at}{and}resourceVersion={rv}&resourceVersionMatch=Exact",
            self.up
        );
        let body = match self.http.get(&url).await {
            Reply::Answer(StatusCode::OK, body) => body,
            // Compacted: nothing to compare with.
            Reply::Answer(StatusCode::GONE, _) => return Exact::Gone,
            _ => return Exact::Failing,
        };
        let Some(l) = parse_list(&body) else {
            panic!(
                "the upstream's exact list is no list: {}",
                String::from_utf8_lossy(&body)
            );
        };
        let mut exact = self.exact.lock().unwrap();
        if exact.len() > 4000 {
            exact.clear();
        }
        exact.insert(key, l.items.clone());
        Exact::Items(l.items)
    }

    pub(crate) fn same(&self, at: &str, rv: u64, items: &[Item], upstream: &[Item], what: &str) {
        add(&self.counts.verified);
        if items != upstream {
            self.found.note(
                &self.found.mismatches,
                format!(
                    "{what} of {at} at {rv} differs from the upstream's exact list at {rv}: {}",
                    diff(items, upstream)
                ),
            );
        }
    }

    /// The comparisons put off while the upstream was failing, now that it
    /// is back.
    pub(crate) async fn compare_deferred(&self) {
        let deferred = std::mem::take(&mut *self.deferred.lock().unwrap());
        for ((at, rv), lists) in deferred {
            let mut exact = Exact::Failing;
            for _ in 0..20 {
                exact = self.exact_list(&at, rv).await;
                if !matches!(exact, Exact::Failing) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            for Served { items, what, .. } in lists {
                add(&self.counts.deferred);
                match &exact {
                    Exact::Items(upstream) => self.same(&at, rv, &items, upstream, what),
                    _ => add(&self.counts.unverifiable),
                }
            }
        }
    }
}

pub(crate) enum Exact {
    Items(Vec<Item>),
    Gone,
    Failing,
}

/// How many lists are compared at once.
pub(crate) const COMPARERS: usize = 4;

/// Compares the lists queued by `Ctx::compare`; one of `COMPARERS`.
pub(crate) async fn comparer(
    ctx: Arc<Ctx>,
    jobs: Arc<tokio::sync::Mutex<tokio::sync::mpsc::Receiver<Served>>>,
) {
    loop {
        let Some(list) = jobs.lock().await.recv().await else {
            return;
        };
        match ctx.exact_list(&list.at, list.rv).await {
            Exact::Items(upstream) => {
                ctx.same(&list.at, list.rv, &list.items, &upstream, list.what)
            }
            Exact::Gone => add(&ctx.counts.unverifiable),
            Exact::Failing => ctx.defer(list),
        }
        ctx.queued.fetch_sub(1, Ordering::SeqCst);
    }
}
