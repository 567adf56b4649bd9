//! Whether the upstream answers kubecache, and accepts its credentials:
//! probed now and then while all is well, every second once a request
//! failed or a probe did, so that reflectors backing off resume as soon as
//! it is back rather than at the end of a 30 s wait. `/readyz?verbose`
//! reports what it saw.

use super::version::UpstreamVersion;
use super::Upstream;
use http::StatusCode;
use http_body_util::BodyExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{watch, Notify};

/// What the last probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// Not probed yet.
    Unknown,
    /// Answered, with kubecache's credentials accepted.
    Ok,
    /// Answered 401: kubecache's credentials are not accepted.
    Unauthorized,
    /// Answered 403 to a discovery request every authenticated user may
    /// make: the credentials are accepted but the identity lacks even that.
    Forbidden,
    /// Answered with another error status (a 5xx while it starts, say).
    Failing(u16),
    /// No answer: refused, reset, or not within the probe's timeout.
    Unreachable(String),
}

impl Reach {
    /// Whether kubecache can read from the upstream.
    pub fn is_ok(&self) -> bool {
        matches!(self, Reach::Ok)
    }

    /// Whether the upstream answered at all.
    pub fn is_reachable(&self) -> bool {
        !matches!(self, Reach::Unreachable(_) | Reach::Unknown)
    }

    /// Whether the upstream refuses kubecache's own identity.
    pub fn credentials_refused(&self) -> bool {
        matches!(self, Reach::Unauthorized)
    }

    /// For `/readyz?verbose` and the log.
    pub fn describe(&self) -> String {
        match self {
            Reach::Unknown => "not probed yet".into(),
            Reach::Ok => "reachable, kubecache's credentials accepted".into(),
            Reach::Unauthorized => "reachable, kubecache's credentials refused (401)".into(),
            Reach::Forbidden => {
                "reachable, kubecache's credentials accepted but discovery forbidden (403)".into()
            }
            Reach::Failing(code) => format!("reachable, answering {code}"),
            Reach::Unreachable(e) => format!("unreachable: {e}"),
        }
    }
}

/// A probe's finding, numbered.
#[derive(Debug, Clone)]
pub struct Observation {
    pub reach: Reach,
    /// Since when the upstream has been in this state.
    pub since: Instant,
    /// Probes made so far, this one included.
    pub seq: u64,
}

/// How often to probe.
#[derive(Debug, Clone, Copy)]
pub struct ProbeConfig {
    /// While the upstream is well.
    pub healthy: Duration,
    /// While it is not, or after a request to it failed.
    pub unhealthy: Duration,
    /// How long a probe waits for its answer.
    pub timeout: Duration,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            healthy: Duration::from_secs(10),
            unhealthy: Duration::from_secs(1),
            timeout: Duration::from_secs(5),
        }
    }
}

pub struct UpstreamHealth {
    state: watch::Sender<Observation>,
    poke: Notify,
}

/// Discovery of the core group: every authenticated user may read it
/// (`system:discovery`), so it tells credentials refused (401) from
/// accepted, and it is small.
const PROBE_PATH: &str = "/api";

impl UpstreamHealth {
    pub fn new() -> Arc<Self> {
        Arc::new(UpstreamHealth {
            state: watch::channel(Observation {
                reach: Reach::Unknown,
                since: Instant::now(),
                seq: 0,
            })
            .0,
            poke: Notify::new(),
        })
    }

    pub fn current(&self) -> Observation {
        self.state.borrow().clone()
    }

    /// Whether the last probe got no answer (asked per request: no clone).
    pub fn is_unreachable(&self) -> bool {
        matches!(self.state.borrow().reach, Reach::Unreachable(_))
    }

    /// The same, once the first probe has said (at most `wait` after
    /// start): a request that comes before it is not decided on a guess.
    pub async fn is_unreachable_once_probed(&self, wait: std::time::Duration) -> bool {
        if self.state.borrow().seq == 0 {
            let mut rx = self.state.subscribe();
            let _ = tokio::time::timeout(wait, rx.wait_for(|o| o.seq > 0)).await;
        }
        self.is_unreachable()
    }

    /// A request to the upstream failed: probe now.
    pub fn poke(&self) {
        self.poke.notify_one();
    }

    /// Resolves once a probe after `seq` finds the upstream well after
    /// having found it otherwise — the moment to retry what failed while
    /// it was away. Never resolves if the first probe after `seq` finds it
    /// well: the failure was not the upstream's, and the caller's own
    /// backoff decides.
    pub async fn recovered_after(&self, seq: u64) {
        let mut rx = self.state.subscribe();
        let Ok(first) = rx.wait_for(|o| o.seq > seq).await.map(|o| o.clone()) else {
            return std::future::pending().await;
        };
        if first.reach.is_ok() {
            return std::future::pending().await;
        }
        if rx.wait_for(|o| o.reach.is_ok()).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Records a probe's finding.
    pub fn record(&self, reach: Reach) {
        self.state.send_modify(|o| {
            if o.reach != reach {
                match (&o.reach, &reach) {
                    (Reach::Unknown, Reach::Ok) => {}
                    (_, Reach::Ok) => {
                        tracing::info!(upstream = %reach.describe(), "upstream is back")
                    }
                    _ => tracing::warn!(upstream = %reach.describe(), "upstream"),
                }
                o.since = Instant::now();
                o.reach = reach;
            }
            o.seq += 1;
        });
    }

    /// Probes `up` for as long as the health is wanted, and reads its
    /// version when it is first reached, whenever it is back after being
    /// away (an upgrade restarts it), and every few minutes.
    pub async fn run(
        self: Arc<Self>,
        up: Arc<Upstream>,
        cfg: ProbeConfig,
        version: Arc<UpstreamVersion>,
    ) {
        loop {
            let reach = probe(&up, cfg.timeout).await;
            let wait = if reach.is_ok() {
                cfg.healthy
            } else {
                cfg.unhealthy
            };
            let back = reach.is_ok() && !self.state.borrow().reach.is_ok();
            let stale = version.known().is_none_or(|k| {
                k.read_at.elapsed().unwrap_or_default() >= super::version::REREAD_EVERY
            });
            self.record(reach);
            if self.state.borrow().reach.is_ok() && (back || stale) {
                if let Err(e) = tokio::time::timeout(cfg.timeout, version.refresh(&up))
                    .await
                    .unwrap_or_else(|_| {
                        Err(super::version::VersionError::NotAVersion(
                            "no answer".into(),
                        ))
                    })
                {
                    tracing::info!(error = %e, "reading the upstream's version");
                }
            }
            if Arc::strong_count(&self) == 1 {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.poke.notified() => {}
            }
        }
    }
}

async fn probe(up: &Upstream, timeout: Duration) -> Reach {
    let ask = async {
        let resp = up.get(PROBE_PATH).await?;
        let status = resp.status();
        // Read to the end, so that the connection goes back to the pool.
        resp.into_body().collect().await?;
        Ok::<_, super::UpstreamError>(status)
    };
    match tokio::time::timeout(timeout, ask).await {
        Err(_) => Reach::Unreachable(format!("no answer within {timeout:?}")),
        Ok(Err(e)) => Reach::Unreachable(with_sources(&e)),
        Ok(Ok(s)) if s.is_success() => Reach::Ok,
        Ok(Ok(StatusCode::UNAUTHORIZED)) => Reach::Unauthorized,
        Ok(Ok(StatusCode::FORBIDDEN)) => Reach::Forbidden,
        Ok(Ok(s)) => Reach::Failing(s.as_u16()),
    }
}

/// An error and its sources on one line ("connect: connection refused").
fn with_sources(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        let part = inner.to_string();
        if !s.contains(&part) {
            s.push_str(": ");
            s.push_str(&part);
        }
        source = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_failure_that_was_not_the_upstreams_leaves_the_wait_to_the_backoff() {
        let h = UpstreamHealth::new();
        let seq = h.current().seq;
        h.record(Reach::Ok);
        let waited = tokio::time::timeout(Duration::from_secs(60), h.recovered_after(seq)).await;
        assert!(waited.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_ends_when_the_upstream_is_back() {
        let h = UpstreamHealth::new();
        h.record(Reach::Ok);
        let seq = h.current().seq;
        let wait = tokio::spawn({
            let h = h.clone();
            async move { h.recovered_after(seq).await }
        });
        h.record(Reach::Unreachable("connection refused".into()));
        h.record(Reach::Unreachable("connection refused".into()));
        tokio::task::yield_now().await;
        assert!(!wait.is_finished());
        h.record(Reach::Ok);
        tokio::time::timeout(Duration::from_secs(1), wait)
            .await
            .expect("woken when the upstream is back")
            .unwrap();
    }

    #[test]
    fn a_state_keeps_its_start_across_probes_that_find_it_again() {
        let h = UpstreamHealth::new();
        h.record(Reach::Unauthorized);
        let since = h.current().since;
        h.record(Reach::Unauthorized);
        assert_eq!(h.current().since, since);
        assert_eq!(h.current().seq, 2);
        assert!(h.current().reach.credentials_refused());
        assert!(h.current().reach.is_reachable());
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_before_the_first_probe_waits_for_its_verdict_at_most_the_wait() {
        let h = UpstreamHealth::new();
        let started = tokio::time::Instant::now();
        assert!(!h.is_unreachable_once_probed(Duration::from_secs(5)).await);
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(5),
            "no verdict: the whole wait"
        );
        let h = UpstreamHealth::new();
        let h3 = h.clone();
        let verdict = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            h3.record(Reach::Unreachable("refused".into()));
        });
        let started = tokio::time::Instant::now();
        assert!(h.is_unreachable_once_probed(Duration::from_secs(5)).await);
        assert_eq!(
            started.elapsed(),
            Duration::from_millis(300),
            "decided by the probe"
        );
        verdict.await.unwrap();
    }
}
