//! Scenario 1: the simulator's faults.

use super::*;

/// Every change the simulator's stores make, read off their broadcasts in
/// process, where no HTTP fault reaches: the upstream's history.
pub(crate) struct SimHistory {
    pub(crate) ask: tokio::sync::mpsc::Sender<tokio::sync::oneshot::Sender<Vec<Made>>>,
}

impl SimHistory {
    pub(crate) fn start(sim: &SimServer) -> SimHistory {
        use tokio::sync::broadcast::error::{RecvError, TryRecvError};
        let mut subscriptions = vec![];
        for kind in KINDS {
            let t = sim
                .sim
                .type_of("", "v1", kind.plural())
                .expect("a simulated type");
            subscriptions.push((kind, t.store.snapshot_and_subscribe().1));
        }
        let [(k0, mut rx0), (k1, mut rx1)] = <[_; 2]>::try_from(subscriptions).ok().unwrap();
        let (ask, mut asked) = tokio::sync::mpsc::channel::<tokio::sync::oneshot::Sender<_>>(1);
        tokio::spawn(async move {
            let mut history = vec![];
            // What a store's change was, if it was a change of an object.
            let made = |kind: Kind, change: kubecache::store::Change<_>| {
                use kubecache::store::{Change as StoreChange, EventType};
                let StoreChange::Event(ev) = change else {
                    return None;
                };
                let e = &ev.entry;
                let key = Key {
                    kind,
                    ns: e.namespace().unwrap_or_default().to_string(),
                    name: e.name().to_string(),
                };
                let change = match ev.kind {
                    EventType::Added => Change::Added,
                    EventType::Modified => Change::Modified,
                    EventType::Deleted => Change::Deleted,
                };
                let seq = (change != Change::Deleted)
                    .then(|| object_of(&e.item)?.seq)
                    .flatten();
                Some(Made {
                    key,
                    rv: ev.rv,
                    change,
                    seq,
                })
            };
            let lagged = |n| panic!("the simulator's history tap fell {n} events behind");
            loop {
                tokio::select! {
                    r = rx0.recv() => match r {
                        Ok(c) => history.extend(made(k0, c)),
                        Err(RecvError::Lagged(n)) => lagged(n),
                        Err(RecvError::Closed) => return,
                    },
                    r = rx1.recv() => match r {
                        Ok(c) => history.extend(made(k1, c)),
                        Err(RecvError::Lagged(n)) => lagged(n),
                        Err(RecvError::Closed) => return,
                    },
                    reply = asked.recv() => {
                        let Some(reply) = reply else { return };
                        // A store broadcasts a change before its write is
                        // answered: everything answered before this was
                        // asked is waiting here already.
                        for (kind, rx) in [(k0, &mut rx0), (k1, &mut rx1)] {
                            loop {
                                match rx.try_recv() {
                                    Ok(c) => history.extend(made(kind, c)),
                                    Err(TryRecvError::Lagged(n)) => lagged(n),
                                    Err(_) => break,
                                }
                            }
                        }
                        let mut sorted = history.clone();
                        sorted.sort_by_key(|m| m.rv);
                        let _ = reply.send(sorted);
                    }
                }
            }
        });
        SimHistory { ask }
    }

    /// The history up to now.
    pub(crate) async fn read(&self) -> Vec<Made> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.ask.send(reply).await.expect("the history tap");
        answer.await.expect("the history tap")
    }
}

pub(crate) async fn sim_fault(http: &Http, sim: &str, query: &str) {
    match http.get(&format!("{sim}/sim/faults?{query}")).await {
        Reply::Answer(StatusCode::OK, _) => {}
        Reply::Answer(s, body) => panic!(
            "/sim/faults?{query}: {s} {}",
            String::from_utf8_lossy(&body)
        ),
        Reply::Lost(e) => panic!("/sim/faults?{query}: {e}"),
        Reply::Unreachable => panic!("/sim/faults?{query}: the simulator is unreachable"),
    }
}

/// Random faults until `until`, each kind counted; then none.
pub(crate) async fn simulator_faults(
    http: &Http,
    sim: &str,
    mut rng: StdRng,
    until: Instant,
) -> BTreeMap<&'static str, u64> {
    let mut counts = BTreeMap::new();
    let ms = |rng: &mut StdRng, lo: u64, hi: u64| Duration::from_millis(rng.random_range(lo..hi));
    while Instant::now() < until {
        tokio::time::sleep(ms(&mut rng, 100, 1000)).await;
        let kind = match rng.random_range(0..6) {
            0 => {
                sim_fault(http, sim, &format!("errors={}", rng.random_range(1..=20))).await;
                "500s"
            }
            1 => {
                sim_fault(
                    http,
                    sim,
                    &format!("latencyMs={}", rng.random_range(20..400)),
                )
                .await;
                tokio::time::sleep(ms(&mut rng, 300, 2500)).await;
                sim_fault(http, sim, "latencyMs=0").await;
                "latency"
            }
            2 => {
                sim_fault(http, sim, "dropWatches=true").await;
                "watches dropped"
            }
            3 => {
                // Longer than the reflector's watch timeout and grace at
                // times: it gives the watch up, and relists if it stalls again.
                sim_fault(http, sim, "stallWatches=true").await;
                tokio::time::sleep(ms(&mut rng, 300, 12_000)).await;
                sim_fault(http, sim, "stallWatches=false").await;
                "watches stalled"
            }
            4 => {
                let n = rng.random_range(1..=3);
                sim_fault(http, sim, &format!("garbageWatchEvents={n}")).await;
                "truncated events"
            }
            _ => {
                sim_fault(http, sim, "expire=true").await;
                "history compacted (410)"
            }
        };
        *counts.entry(kind).or_default() += 1;
    }
    sim_fault(
        http,
        sim,
        "errors=0&latencyMs=0&stallWatches=false&garbageWatchEvents=0",
    )
    .await;
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn under_random_simulator_faults_no_read_is_stale_no_watch_skips_and_the_cache_ends_equal(
) {
    let run = Run::new("simulator");
    within(run.seconds + 150, async {
        // As a current apiserver: quiet types' consistent reads are
        // proven by its bookmarks, busy ones' by their events.
        let sim = SimBuilder::new()
            .personality(kubecache_sim::Personality::V1_36)
            .start()
            .await;
        let tap = SimHistory::start(&sim);
        let namespaces = namespaces(&sim.url).await;
        // Short watches: resuming, stalls and relists come often.
        // Consistent reads answered from the cache once proven fresh.
        let proxy = ProxyBuilder::new(&sim.url)
            .watch_timeout(5, Duration::from_secs(2))
            .consistent(kubecache::serve::ConsistentReads::Prove)
            .start()
            .await;
        for kind in KINDS {
            let path = kind.collection(None);
            wait_synced(&proxy, &path, &format!("v1/{}", kind.plural())).await;
        }
        let ctx = Ctx::new(&sim.url, &proxy.url, namespaces);
        let mut load = start_load(&ctx, run.seed);
        let until = Instant::now() + Duration::from_secs(run.seconds);
        let faults = simulator_faults(&ctx.http, &sim.url, rng_for(run.seed, 1), until).await;
        stop_writing(&ctx, &mut load).await;
        finish(run, &ctx, &proxy, load, faults, async || tap.read().await).await;
    })
    .await;
}
