//! The run: load, faults, quiet, checks.

use super::*;

/// A scenario's name and settings.
pub(crate) struct Run {
    pub(crate) scenario: &'static str,
    pub(crate) seed: u64,
    pub(crate) seconds: u64,
}

impl Run {
    pub(crate) fn new(scenario: &'static str) -> Run {
        let run = Run {
            scenario,
            seed: setting("KUBECACHE_CHAOS_SEED", DEFAULT_SEED),
            seconds: setting("KUBECACHE_CHAOS_SECONDS", DEFAULT_SECONDS),
        };
        eprintln!(
            "chaos[{scenario}]: seed {}, {} s of faults",
            run.seed, run.seconds
        );
        run
    }
}

pub(crate) struct Load {
    pub(crate) tasks: Vec<JoinHandle<()>>,
    pub(crate) watchers: Vec<(Scope, Arc<AtomicU64>, JoinHandle<Vec<Chain>>)>,
    pub(crate) stop_watchers: watch::Sender<bool>,
}

pub(crate) fn start_load(ctx: &Arc<Ctx>, seed: u64) -> Load {
    let mut tasks = vec![];
    for (i, kind) in KINDS.into_iter().enumerate() {
        tasks.push(tokio::spawn(writer(
            ctx.clone(),
            kind,
            rng_for(seed, 10 + i as u64),
        )));
    }
    // A third of what a reader asks is forwarded upstream and waits out a
    // paused apiserver: more readers keep kubecache busy meanwhile.
    for i in 0..3 {
        tasks.push(tokio::spawn(reader(ctx.clone(), rng_for(seed, 20 + i))));
    }
    let (stop_watchers, stop) = watch::channel(false);
    let scopes = [
        Scope {
            kind: Kind::ConfigMap,
            ns: None,
        },
        Scope {
            kind: Kind::ConfigMap,
            ns: Some(ctx.namespaces[0].clone()),
        },
        Scope {
            kind: Kind::Pod,
            ns: None,
        },
        Scope {
            kind: Kind::Pod,
            ns: Some(ctx.namespaces[1].clone()),
        },
    ];
    let watchers = scopes
        .into_iter()
        .enumerate()
        .map(|(i, scope)| {
            let progress = Arc::new(AtomicU64::new(0));
            let task = watcher(
                ctx.clone(),
                scope.clone(),
                rng_for(seed, 30 + i as u64),
                progress.clone(),
                stop.clone(),
            );
            (scope, progress, tokio::spawn(task))
        })
        .collect();
    Load {
        tasks,
        watchers,
        stop_watchers,
    }
}

/// Stops the writers and readers (the faults are over).
pub(crate) async fn stop_writing(ctx: &Ctx, load: &mut Load) {
    ctx.running.store(false, Ordering::Relaxed);
    for t in load.tasks.drain(..) {
        t.await.expect("a writer or reader panicked");
    }
}

/// The rest of a run once the faults are over and the writers stopped:
/// kubecache must converge to the upstream, its watchers must have seen
/// exactly the upstream's history (read by `history`), and the summary is
/// printed.
pub(crate) async fn finish(
    run: Run,
    ctx: &Arc<Ctx>,
    proxy: &Proxy,
    load: Load,
    faults: BTreeMap<&'static str, u64>,
    history: impl AsyncFn() -> Vec<Made>,
) {
    let Run {
        scenario,
        seed,
        seconds,
    } = run;
    let quiet = Instant::now();
    let types = converge(ctx, proxy).await;
    eprintln!(
        "chaos[{scenario}]: converged {:.1?} after the faults",
        quiet.elapsed()
    );
    // How the consistent reads were answered: proven and served from the
    // cache, or forwarded.
    for tc in proxy.cache.all() {
        let p = &tc.proofs;
        eprintln!(
            "chaos[{scenario}]: {}: consistent reads proven {}, not proven (forwarded) {}; reads served {}, forwarded {}",
            tc.rt.gvr,
            p.proven.load(Ordering::Relaxed),
            p.unproven.load(Ordering::Relaxed),
            tc.tally().served(),
            tc.tally().forwarded(),
        );
    }

    // Every watcher catches up with the last change in its scope.
    let history_then = history().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    for (scope, progress, _) in &load.watchers {
        let last = history_then
            .iter()
            .filter(|m| scope.holds(&m.key))
            .map(|m| m.rv)
            .max()
            .unwrap_or(0);
        while progress.load(Ordering::Relaxed) < last {
            if Instant::now() > deadline {
                let at = progress.load(Ordering::Relaxed);
                ctx.found.note(
                    &ctx.found.gaps,
                    format!("the watcher of {scope} never caught up: at {at}, the last change at {last}"),
                );
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let _ = load.stop_watchers.send(true);
    let mut chains = vec![];
    for (_, _, task) in load.watchers {
        chains.extend(task.await.expect("a watcher panicked"));
    }
    ctx.comparisons_done().await;
    ctx.compare_deferred().await;
    // Read again: whatever the watchers saw is in it, even a change the
    // upstream made of its own accord meanwhile (a restarted apiserver's).
    let history = history().await;
    let answers = check_answered_writes(ctx, &history);
    check_chains(ctx, &chains, &history);
    check_served_objects(ctx, &history);

    let c = &ctx.counts;
    let f = &ctx.found;
    let faults_total: u64 = faults.values().sum();
    let faults_line = faults
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    let reflectors: Vec<String> = proxy
        .cache
        .all()
        .iter()
        .map(|t| {
            let s = t.tally();
            format!(
                "{} {} lists/{} watches/{} errors",
                t.rt.gvr,
                s.lists(),
                s.watches(),
                s.errors()
            )
        })
        .collect();
    let relists = chains.iter().filter(|c| c.ended.is_some()).count();
    println!(
        "chaos[{scenario}] seed {seed} (KUBECACHE_CHAOS_SEED), {seconds} s of faults: \
         faults {faults_total} ({faults_line}); \
         requests through kubecache {} ({} answered, {} error statuses, {} failed), \
         {} watch events in {} chains ({} ended by an ERROR and relisted), {} undecodable lines; \
         writes {} ({} applied, {} refused, {} failed: a 5xx or no answer; \
         {} updates the upstream carried out as deletes, {} of them shown by its history); \
         acknowledged writes lost by the upstream (its history rewrote their revision) {}, \
         reads after them that did not show them {} (not kubecache's: not failures); \
         lists compared with the upstream's exact list {} ({} of them once it was back), {} not comparable, {} left out (comparers busy); \
         stale reads {}, gaps {}, duplicates {}, out of order {}, mismatches {}; \
         reflectors: {}; final: {}",
        n(&c.requests),
        n(&c.answered),
        n(&c.error_statuses),
        n(&c.failed),
        n(&c.watch_events),
        chains.len(),
        relists,
        n(&c.undecodable_lines),
        n(&c.writes),
        n(&c.applied),
        n(&c.refused),
        n(&c.lost),
        n(&c.deleted_by_update),
        answers.deletes_shown,
        answers.lost.len(),
        answers.reads_after_lost,
        n(&c.verified),
        n(&c.deferred),
        n(&c.unverifiable),
        n(&c.left_out),
        n(&f.stale),
        n(&f.gaps),
        n(&f.duplicates),
        n(&f.disorder),
        n(&f.mismatches),
        reflectors.join(", "),
        types.join(", "),
    );
    if let Some(r) = ctx.first_refusal.lock().unwrap().as_ref() {
        eprintln!("chaos[{scenario}]: a write was refused: {r}");
    }
    for lost in &answers.lost {
        eprintln!("chaos[{scenario}]: {lost}");
    }
    let examples = f.examples.lock().unwrap().join("\n  ");
    assert_eq!(
        (n(&f.stale), n(&f.gaps), n(&f.duplicates), n(&f.disorder), n(&f.mismatches)),
        (0, 0, 0, 0, 0),
        "chaos[{scenario}] seed {seed}: stale reads, gaps, duplicates, out of order, mismatches:\n  {examples}"
    );
    // A run that did nothing proves nothing.
    assert!(faults_total > 0, "no fault was injected");
    assert!(n(&c.applied) >= 20, "only {} writes applied", n(&c.applied));
    assert!(
        n(&c.watch_events) > 0 && n(&c.verified) > 0,
        "nothing watched or compared"
    );
}

/// Waits until every cached type's RV=0 list through kubecache holds
/// exactly what the upstream's most recent list holds; notes a mismatch
/// for each type that does not within a generous deadline. Returns each
/// type's count and hash over (namespace, name, resourceVersion).
pub(crate) async fn converge(ctx: &Ctx, proxy: &Proxy) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut report = vec![];
        let mut differ = vec![];
        for tc in proxy.cache.all() {
            let path = tc.rt.gvr.path(None);
            let ours = ctx
                .http
                .get(&format!("{}{path}?resourceVersion=0", ctx.kube))
                .await;
            let theirs = ctx.http.get(&format!("{}{path}", ctx.up)).await;
            let (Reply::Answer(StatusCode::OK, ours), Reply::Answer(StatusCode::OK, theirs)) =
                (ours, theirs)
            else {
                differ.push(format!("{path}: not both answered"));
                continue;
            };
            let (ours, theirs) = (
                parse_list(&ours).expect("a list"),
                parse_list(&theirs).expect("a list"),
            );
            let (a, b) = (nnr_hash(&ours.items), nnr_hash(&theirs.items));
            if a == b && ours.items == theirs.items {
                report.push(format!(
                    "{} {} objects, hash {a:016x} = upstream's",
                    tc.rt.gvr,
                    ours.items.len()
                ));
            } else {
                differ.push(format!(
                    "{} hash {a:016x} against the upstream's {b:016x}: {}",
                    tc.rt.gvr,
                    diff(&ours.items, &theirs.items)
                ));
            }
        }
        if differ.is_empty() {
            return report;
        }
        if Instant::now() > deadline {
            for d in differ {
                ctx.found.note(
                    &ctx.found.mismatches,
                    format!("after the faults, within 60 s: {d}"),
                );
            }
            return report;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What the upstream's own history says of the writes it answered.
pub(crate) struct Answers {
    /// Updates carried out as deletes (answered with the object pending
    /// deletion) whose history shows the delete.
    pub(crate) deletes_shown: u64,
    /// Acknowledged writes the upstream lost, each described.
    pub(crate) lost: Vec<String>,
    /// Reads after a lost write that did not show it: what the upstream
    /// did, not kubecache.
    pub(crate) reads_after_lost: u64,
}

/// How the upstream's history (`made`, by kind and version) does not hold
/// a write of `key` answered at `rv` as `seq`, if it does not: the change
/// at `rv` is of another object, a delete or another write, or there is
/// none of a pod or configmap (another object's, or none at all).
pub(crate) fn not_held(
    made: &HashMap<(Kind, u64), &Made>,
    key: &Key,
    rv: u64,
    seq: u64,
) -> Option<String> {
    match made.get(&(key.kind, rv)) {
        None => Some(format!("holds no change of {} there", key.kind.plural())),
        Some(m) if m.key != *key => Some(format!("holds {:?} {} there", m.change, m.key)),
        Some(m) if m.change == Change::Deleted => Some("holds its delete there".into()),
        Some(m) => match m.seq {
            Some(s) if s != seq => Some(format!("holds write {s} of it there")),
            _ => None,
        },
    }
}

/// Whether the upstream's history (in version order) shows an update of
/// `key` answered at `rv` with the object pending deletion as the delete
/// it was: `key` changed at `rv` (the delete's first step, or an earlier
/// write) and its next change a delete. The delete's version, or why not.
pub(crate) fn delete_shown(history: &[Made], key: &Key, rv: u64) -> Result<u64, String> {
    let mut changes = history.iter().filter(|m| m.key == *key);
    match changes.find(|m| m.rv >= rv) {
        Some(m) if m.rv == rv && m.change != Change::Deleted => {}
        Some(m) => {
            return Err(format!(
                "its first change from {rv} is {:?} at {}",
                m.change, m.rv
            ))
        }
        None => return Err(format!("it has no change from {rv}")),
    }
    match changes.next() {
        Some(m) if m.change == Change::Deleted => Ok(m.rv),
        Some(m) => Err(format!("its next change is {:?} at {}", m.change, m.rv)),
        None => Err("it was never deleted".into()),
    }
}

/// Every write the upstream answered, against the upstream's own history
/// (etcd's revisions, or the simulator's stores), once quiet. A write
/// whose revision the history holds with other content, or two writes
/// answered at one revision, were acknowledged and lost by the upstream:
/// counted and printed, not held against kubecache, and taken out of
/// `written` so that the checks after this one judge kubecache by what
/// the upstream holds. Only a loss shown write by write is excused: a
/// read's staleness about any other write is a finding.
pub(crate) fn check_answered_writes(ctx: &Ctx, history: &[Made]) -> Answers {
    let made: HashMap<(Kind, u64), &Made> =
        history.iter().map(|m| ((m.key.kind, m.rv), m)).collect();
    let mut deletes_shown = 0;
    for (key, rv, seq) in ctx.deleted_by_update.lock().unwrap().iter() {
        match delete_shown(history, key, *rv) {
            Ok(_) => deletes_shown += 1,
            Err(why) => ctx.found.note(
                &ctx.found.mismatches,
                format!(
                    "update {seq} of {key} was answered at {rv} with it pending deletion, \
                     but the upstream's history does not show it deleted: {why}"
                ),
            ),
        }
    }
    let mut lost = vec![];
    let mut lost_at = HashSet::new();
    let mut written = ctx.written.lock().unwrap();
    let mut gone: Vec<(u64, Key, u64, String)> = written
        .iter()
        .filter_map(|(&rv, (key, seq))| {
            Some((rv, key.clone(), *seq, not_held(&made, key, rv, *seq)?))
        })
        .collect();
    gone.sort_by_key(|g| g.0);
    for (rv, key, seq, how) in gone {
        written.remove(&rv);
        lost_at.insert(rv);
        lost.push(format!(
            "acknowledged write lost by the upstream (its history rewrote revision {rv}): \
             {key} written as {seq} and answered at {rv}; the history {how}"
        ));
    }
    drop(written);
    for (rv, what) in ctx.answered_twice.lock().unwrap().iter() {
        lost_at.insert(*rv);
        lost.push(format!(
            "acknowledged write lost by the upstream (it answered two writes at revision {rv}): {what}"
        ));
    }
    let mut reads_after_lost = 0;
    for (rv, what) in std::mem::take(&mut *ctx.stale_after_write.lock().unwrap()) {
        if lost_at.contains(&rv) {
            reads_after_lost += 1;
        } else {
            ctx.found.note(&ctx.found.stale, what);
        }
    }
    Answers {
        deletes_shown,
        lost,
        reads_after_lost,
    }
}

/// Every watch event is one the upstream made, in order, each once, and
/// none that the upstream made within what a chain covers is missing.
pub(crate) fn check_chains(ctx: &Ctx, chains: &[Chain], history: &[Made]) {
    let f = &ctx.found;
    let made: HashMap<(Kind, u64), &Made> =
        history.iter().map(|m| ((m.key.kind, m.rv), m)).collect();
    let written = ctx.written.lock().unwrap();
    for chain in chains {
        let scope = &chain.scope;
        let context = || {
            format!(
                "watch of {scope} from {} to {}, resumed from {:?}{}",
                chain.start,
                chain.end,
                chain.resumes,
                chain
                    .ended
                    .as_ref()
                    .map(|e| format!(", ended by {e}"))
                    .unwrap_or_default()
            )
        };
        let mut seen = HashSet::new();
        for e in &chain.events {
            if e.rv <= chain.start || seen.contains(&e.rv) {
                f.note(
                    &f.duplicates,
                    format!("{:?} {} at {} again: {}", e.change, e.key, e.rv, context()),
                );
            } else if e.rv <= e.after {
                let what = format!(
                    "{:?} {} at {} after {}: {}",
                    e.change,
                    e.key,
                    e.rv,
                    e.after,
                    context()
                );
                f.note(&f.disorder, what);
            }
            seen.insert(e.rv);
            match made.get(&(e.key.kind, e.rv)) {
                Some(m) if m.key == e.key && m.change == e.change => {}
                Some(m) => f.note(
                    &f.mismatches,
                    format!(
                        "{:?} {} at {}, where the upstream made {:?} {}: {}",
                        e.change,
                        e.key,
                        e.rv,
                        m.change,
                        m.key,
                        context()
                    ),
                ),
                None => f.note(
                    &f.mismatches,
                    format!(
                        "{:?} {} at {}, which the upstream never made: {}",
                        e.change,
                        e.key,
                        e.rv,
                        context()
                    ),
                ),
            }
            if let (Some((key, seq)), false) = (written.get(&e.rv), e.change == Change::Deleted) {
                if *key != e.key || e.seq != Some(*seq) {
                    f.note(
                        &f.mismatches,
                        format!(
                            "{} at {} carries write {:?}, written as {seq}: {}",
                            e.key,
                            e.rv,
                            e.seq,
                            context()
                        ),
                    );
                }
            }
        }
        for m in history.iter().filter(|m| scope.holds(&m.key)) {
            if m.rv > chain.start && m.rv <= chain.end && !seen.contains(&m.rv) {
                f.note(
                    &f.gaps,
                    format!(
                        "{:?} {} at {} never arrived: {}",
                        m.change,
                        m.key,
                        m.rv,
                        context()
                    ),
                );
            }
        }
    }
}

/// Every object a get served is a version the upstream made.
pub(crate) fn check_served_objects(ctx: &Ctx, history: &[Made]) {
    let made: HashSet<(&Key, u64)> = history
        .iter()
        .filter(|m| m.change != Change::Deleted)
        .map(|m| (&m.key, m.rv))
        .collect();
    let written = ctx.written.lock().unwrap();
    for o in ctx.served_objects.lock().unwrap().iter() {
        let ServedObject { key, rv, seq, how } = o;
        let wrong = if !made.contains(&(key, *rv)) {
            Some("a version the upstream never made".to_string())
        } else {
            match written.get(rv) {
                Some((k, s)) if k != key || Some(*s) != *seq => {
                    Some(format!("write {seq:?}, written as {s}"))
                }
                _ => None,
            }
        };
        if let Some(wrong) = wrong {
            ctx.found.note(
                &ctx.found.mismatches,
                format!("{how} of {key} served it at {rv}: {wrong}"),
            );
        }
    }
}

/// The namespaces the writers use, created upstream.
pub(crate) async fn namespaces(up: &str) -> Vec<String> {
    let sfx = unique_suffix();
    let names: Vec<String> = (0..3).map(|i| format!("chaos-{sfx}-{i}")).collect();
    for ns in &names {
        ensure_namespace(up, ns).await;
    }
    names
}
