//! Sharing one piece of work among everyone who asked for it before it
//! began: the shape of a linearizable read. A caller waits for the next
//! run that *starts after it asked* — never one already under way, whose
//! answer may predate it — and every caller that asked meanwhile shares
//! that run. At most one run per key is in flight; runs follow each other
//! while callers keep coming. Used for the consistent probes that prove a
//! type's cache fresh (`freshness`) and for consistent reads forwarded
//! upstream (`serve::coalesce`).

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// Runs keyed by `K`, each answering `T` to its callers.
pub struct Flights<K, T> {
    waiting: Mutex<HashMap<K, Vec<oneshot::Sender<T>>>>,
}

impl<K, T> Default for Flights<K, T> {
    fn default() -> Self {
        Flights {
            waiting: Mutex::new(HashMap::new()),
        }
    }
}

/// How one caller's wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joined {
    /// Its ask began the runs for its key.
    Began,
    /// It joined runs already going.
    Shared,
}

impl<K, T> Flights<K, T>
where
    K: Eq + Hash + Clone + Send + 'static,
    T: Clone + Send + 'static,
{
    /// Waits for a run of `key` that starts after this call, made by `run`
    /// on `rt` (only if no run of `key` is going; otherwise the going
    /// ones' `run` serves). `None` if the runs' task went away.
    pub async fn join<F, Fut>(
        self: &Arc<Self>,
        key: K,
        rt: &tokio::runtime::Handle,
        run: F,
    ) -> (Option<T>, Joined)
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: Future<Output = T> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let joined = {
            let mut waiting = self.lock();
            match waiting.get_mut(&key) {
                Some(callers) => {
                    callers.push(tx);
                    Joined::Shared
                }
                None => {
                    waiting.insert(key.clone(), vec![tx]);
                    Joined::Began
                }
            }
        };
        if joined == Joined::Began {
            let flights = self.clone();
            rt.spawn(async move { flights.runs(key, run).await });
        }
        (rx.await.ok(), joined)
    }

    /// The runs of one key, one after the other, each for the callers
    /// that asked before it began, until none are left.
    async fn runs<F, Fut>(self: Arc<Self>, key: K, run: F)
    where
        F: Fn() -> Fut,
        Fut: Future<Output = T>,
    {
        loop {
            let callers = {
                let mut waiting = self.lock();
                let Some(callers) = waiting.get_mut(&key) else {
                    return;
                };
                let callers: Vec<_> = std::mem::take(callers)
                    .into_iter()
                    .filter(|c| !c.is_closed())
                    .collect();
                if callers.is_empty() {
                    // No one asked since the last run began: done. The next
                    // caller begins anew.
                    waiting.remove(&key);
                    return;
                }
                callers
            };
            let answer = run().await;
            for c in callers {
                let _ = c.send(answer.clone());
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Vec<oneshot::Sender<T>>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    /// A run that takes 100 ms and answers its number, counting in `runs`.
    fn counted(
        runs: &Arc<AtomicU64>,
    ) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = u64> + Send>> + Clone + Send + 'static
    {
        let runs = runs.clone();
        move || {
            let runs = runs.clone();
            Box::pin(async move {
                // The run's number as it begins.
                let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
                n
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn callers_share_the_next_run_that_starts_after_they_asked() {
        let flights: Arc<Flights<&str, u64>> = Arc::default();
        let runs = Arc::new(AtomicU64::new(0));
        let rt = tokio::runtime::Handle::current();
        let run = counted(&runs);
        let first = tokio::spawn({
            let (f, rt, run) = (flights.clone(), rt.clone(), run.clone());
            async move { f.join("k", &rt, run).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        // Asked while run 1 is under way: run 1 began before them.
        let later: Vec<_> = (0..5)
            .map(|_| {
                let (f, rt, run) = (flights.clone(), rt.clone(), run.clone());
                tokio::spawn(async move { f.join("k", &rt, run).await })
            })
            .collect();
        assert_eq!(first.await.unwrap(), (Some(1), Joined::Began));
        for l in later {
            assert_eq!(l.await.unwrap(), (Some(2), Joined::Shared));
        }
        assert_eq!(runs.load(Ordering::SeqCst), 2, "one run per batch");
        // Nothing going: the next caller begins again.
        let (got, joined) = flights.join("k", &rt, run).await;
        assert_eq!((got, joined), (Some(3), Joined::Began));
    }

    #[tokio::test(start_paused = true)]
    async fn a_batch_whose_callers_all_left_is_not_run() {
        let flights: Arc<Flights<u8, u64>> = Arc::default();
        let runs = Arc::new(AtomicU64::new(0));
        let rt = tokio::runtime::Handle::current();
        let run = counted(&runs);
        let first = tokio::spawn({
            let (f, rt, run) = (flights.clone(), rt.clone(), run.clone());
            async move { f.join(1, &rt, run).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let gone = tokio::spawn({
            let (f, rt, run) = (flights.clone(), rt.clone(), run.clone());
            async move { f.join(1, &rt, run).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        gone.abort();
        first.await.unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
