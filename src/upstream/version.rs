//! What kubecache knows of the apiserver it is in front of, learned in one
//! place: its version (`/version`), read when the upstream is first
//! reached, again whenever it comes back after being away (an upgrade
//! behind kubecache restarts it) and every few minutes (a rolling upgrade
//! behind a load balancer need not look like an outage); what that version
//! can prove about consistent reads ([`Consistency`]); and what kubecache
//! found out by trying ([`UpstreamVersion::disprove`]).
//!
//! The apiserver's source it follows (`staging/src/k8s.io/apiserver/pkg/storage/cacher`):
//! since 1.31 (`ConsistentListFromCache` beta, locked on in 1.34) a
//! consistent list is served from the watch cache once it is fresh: the
//! delegator (`delegator/interface.go`, `ShouldDelegateConsistentRead`)
//! asks etcd for its current revision (`GetCurrentResourceVersion`, a
//! `limit=1` range) and the watch cache waits for it
//! (`watch_cache.go` `waitUntilFreshLocked`) while the progress requester
//! (`progress/watch_progress.go`, every 100 ms) asks etcd for a progress
//! notification, which moves the cacher's `lastProcessedResourceVersion`
//! (`cacher.go` `dispatchEvents`) — the version its next bookmarks carry,
//! even for a type nobody writes. Before 1.31 nothing moves a quiet type's
//! watch cache (v1.20's `lastProcessedResourceVersion` only follows
//! events), so its bookmarks never reach a newer revision.

use super::{Upstream, UpstreamError};
use crate::encode::personality::{Fit, Personality};
use http_body_util::BodyExt;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;

/// The apiserver's version, as `/version` tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerVersion {
    pub major: u32,
    pub minor: u32,
    /// `v1.36.2`, as the server says it.
    pub git_version: String,
}

#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    #[error("reading /version: {0}")]
    Upstream(#[from] UpstreamError),
    #[error("/version is not a version: {0}")]
    NotAVersion(String),
}

impl ServerVersion {
    /// Reads `/version`'s body: `major` and `minor` (a managed cluster's
    /// minor may carry a `+`, as in `"28+"`), and `gitVersion`.
    pub fn parse(body: &[u8]) -> Result<Self, VersionError> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Info {
            major: String,
            minor: String,
            #[serde(default)]
            git_version: String,
        }
        let info: Info =
            serde_json::from_slice(body).map_err(|e| VersionError::NotAVersion(e.to_string()))?;
        let number = |s: &str| {
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits
                .parse::<u32>()
                .map_err(|_| VersionError::NotAVersion(format!("{s:?} is not a number")))
        };
        Ok(ServerVersion {
            major: number(&info.major)?,
            minor: number(&info.minor)?,
            git_version: info.git_version,
        })
    }

    /// What this version can prove about consistent reads.
    pub fn consistency(&self) -> Consistency {
        let at_least = |minor| self.major > 1 || (self.major == 1 && self.minor >= minor);
        Consistency {
            fresh_bookmarks: at_least(31),
            probe: if at_least(31) && !at_least(34) {
                ProbeForm::MatchNothing
            } else {
                ProbeForm::LimitOne
            },
        }
    }
}

impl std::fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.git_version.is_empty() {
            write!(f, "v{}.{}", self.major, self.minor)
        } else {
            f.write_str(&self.git_version)
        }
    }
}

/// How a consistent probe asks the upstream for its current revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeForm {
    /// `limit=1`: one object read. Before 1.31 the apiserver reads it from
    /// etcd (the cheapest consistent read there is); from 1.34 from its
    /// watch cache, made fresh first.
    LimitOne,
    /// No limit and a field selector no object can match (`/` is in no
    /// object's name): in 1.31–1.33 a consistent list with a limit may go
    /// to etcd (1.33's regression, kubernetes#132088), which does not make
    /// the watch cache fresh; without one it is always served from the
    /// watch cache, fresh, and filtered to nothing.
    MatchNothing,
}

/// What the upstream can prove about consistent reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Consistency {
    /// A consistent read makes the upstream's watch cache fresh, so that a
    /// bookmark on a watch of a quiet type reaches the revision it read
    /// (1.31+). Without it a quiet type cannot be proven fresh.
    pub fresh_bookmarks: bool,
    pub probe: ProbeForm,
}

/// Until a version is known, the most an unknown apiserver may be
/// assumed to do: v1.20's.
const UNKNOWN: Consistency = Consistency {
    fresh_bookmarks: false,
    probe: ProbeForm::LimitOne,
};

/// The version as last read, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    pub version: ServerVersion,
    pub read_at: SystemTime,
}

/// How often the version is read again while the upstream is well.
pub const REREAD_EVERY: Duration = Duration::from_secs(300);

/// How long a capability found wanting stays off before it is tried again.
const DISPROVED_FOR: Duration = Duration::from_secs(600);

/// What kubecache knows of its upstream's version.
pub struct UpstreamVersion {
    known: watch::Sender<Option<Known>>,
    /// Bookmarks found not to follow consistent reads, whatever the
    /// version says (an apiserver whose etcd cannot give progress
    /// notifications serves consistent reads from etcd), and why.
    disproved: Mutex<Option<(Instant, String)>>,
}

impl Default for UpstreamVersion {
    fn default() -> Self {
        UpstreamVersion {
            known: watch::channel(None).0,
            disproved: Mutex::new(None),
        }
    }
}

impl UpstreamVersion {
    pub fn known(&self) -> Option<Known> {
        self.known.borrow().clone()
    }

    /// Told of every version read (a change of release among them).
    pub fn subscribe(&self) -> watch::Receiver<Option<Known>> {
        self.known.subscribe()
    }

    /// Records a version read; a change is logged.
    pub fn set(&self, version: ServerVersion) {
        let read_at = SystemTime::now();
        self.known.send_modify(|k| {
            match k {
                Some(was) if was.version == version => {}
                Some(was) => tracing::warn!(was = %was.version, now = %version,
                    "the upstream's version changed"),
                None => tracing::info!(version = %version, "upstream version"),
            }
            // What was found by trying belonged to the old version.
            if k.as_ref().is_some_and(|was| was.version != version) {
                *self.disproved.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
            *k = Some(Known { version, read_at });
        });
    }

    /// Reads `/version` and records it.
    pub async fn refresh(&self, up: &Upstream) -> Result<(), VersionError> {
        let resp = up.get("/version").await?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| VersionError::NotAVersion(e.to_string()))?
            .to_bytes();
        if !status.is_success() {
            return Err(VersionError::NotAVersion(format!("status {status}")));
        }
        self.set(ServerVersion::parse(&body)?);
        Ok(())
    }

    /// Whose representations kubecache's own follow: the upstream's
    /// release (v1.20's until its version is read), and how it fits what
    /// kubecache knows.
    pub fn personality(&self) -> (Personality, Fit) {
        match self.known.borrow().as_ref() {
            Some(k) => Personality::of(k.version.major, k.version.minor),
            None => (Personality::V1_20, Fit::Known),
        }
    }

    /// What the upstream can prove now: its version's capabilities, less
    /// what trying found wanting.
    pub fn consistency(&self) -> Consistency {
        let mut c = self
            .known
            .borrow()
            .as_ref()
            .map_or(UNKNOWN, |k| k.version.consistency());
        if self.disproved_now().is_some() {
            c.fresh_bookmarks = false;
        }
        c
    }

    /// Bookmarks did not follow consistent reads although the version
    /// says they should: no quiet type is proven by them for a while.
    pub fn disprove(&self, why: String) {
        let mut d = self.disproved.lock().unwrap_or_else(|e| e.into_inner());
        if d.is_none() {
            tracing::warn!(%why, retry = ?DISPROVED_FOR,
                "the upstream's bookmarks do not follow its consistent reads: quiet types are not proven fresh");
        }
        *d = Some((Instant::now(), why));
    }

    /// Why bookmarks are not trusted now, if they are not.
    pub fn disproved_now(&self) -> Option<String> {
        let d = self.disproved.lock().unwrap_or_else(|e| e.into_inner());
        d.as_ref()
            .filter(|(at, _)| at.elapsed() < DISPROVED_FOR)
            .map(|(_, why)| why.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(major: &str, minor: &str) -> ServerVersion {
        let body =
            format!(r#"{{"major":"{major}","minor":"{minor}","gitVersion":"v{major}.{minor}.0"}}"#);
        ServerVersion::parse(body.as_bytes()).unwrap()
    }

    #[test]
    fn a_managed_clusters_minor_with_a_plus_is_its_number() {
        assert_eq!(v("1", "28+").minor, 28);
        assert!(ServerVersion::parse(br#"{"major":"","minor":"x"}"#).is_err());
        assert!(ServerVersion::parse(b"not json").is_err());
    }

    #[test]
    fn v1_20_proves_nothing_of_quiet_types_and_probes_with_a_limit() {
        let c = v("1", "20").consistency();
        assert!(!c.fresh_bookmarks);
        assert_eq!(c.probe, ProbeForm::LimitOne);
        assert!(!v("1", "30").consistency().fresh_bookmarks);
    }

    #[test]
    fn from_1_31_consistent_reads_make_bookmarks_fresh() {
        for minor in ["31", "32", "33"] {
            let c = v("1", minor).consistency();
            assert!(c.fresh_bookmarks, "{minor}");
            assert_eq!(c.probe, ProbeForm::MatchNothing, "{minor}");
        }
        for minor in ["34", "36", "40"] {
            let c = v("1", minor).consistency();
            assert!(c.fresh_bookmarks, "{minor}");
            assert_eq!(c.probe, ProbeForm::LimitOne, "{minor}");
        }
    }

    #[test]
    fn an_unknown_upstream_is_taken_for_v1_20_and_trying_can_take_back_what_a_version_promises() {
        let u = UpstreamVersion::default();
        assert_eq!(u.consistency(), UNKNOWN);
        u.set(v("1", "36"));
        assert!(u.consistency().fresh_bookmarks);
        u.disprove("no bookmark".into());
        assert!(!u.consistency().fresh_bookmarks);
        assert_eq!(u.disproved_now().as_deref(), Some("no bookmark"));
        // A new version is tried afresh.
        u.set(v("1", "37"));
        assert!(u.consistency().fresh_bookmarks);
    }
}
