//! The consistent probe: the cheapest consistent read of a type the
//! upstream answers, made only for the resourceVersion its list carries —
//! at least the etcd revision when the probe began (the apiserver reads
//! `GetCurrentResourceVersion` for every consistent list), and on 1.31+
//! the revision its watch cache was made fresh to before answering
//! (`waitAndListLatestRV` returns the watch cache's own version).

use crate::resource::GroupVersionResource;
use crate::upstream::version::ProbeForm;
use crate::upstream::{Upstream, UpstreamError};
use http_body_util::BodyExt;
use std::time::Duration;

#[derive(Debug, Clone, thiserror::Error)]
pub enum ProbeError {
    #[error("{0}")]
    Upstream(String),
    #[error("answered {0}")]
    Status(u16),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("the answer is not a list with a resourceVersion: {0}")]
    NotAList(String),
}

impl From<UpstreamError> for ProbeError {
    fn from(e: UpstreamError) -> Self {
        ProbeError::Upstream(e.to_string())
    }
}

/// The probe's path and query for `gvr` in `form`.
pub fn path(gvr: &GroupVersionResource, form: ProbeForm) -> String {
    let base = gvr.path(None);
    match form {
        ProbeForm::LimitOne => format!("{base}?limit=1"),
        // `/` is in no object's name (path segment names forbid it), so
        // nothing matches; `%2F` is its escape.
        ProbeForm::MatchNothing => {
            format!("{base}?fieldSelector=metadata.name%3Dkubecache.io%2Fprobe")
        }
    }
}

/// Asks the upstream for a consistent list of `gvr` and returns its
/// resourceVersion, within `timeout`.
pub async fn probe(
    up: &Upstream,
    gvr: &GroupVersionResource,
    form: ProbeForm,
    timeout: Duration,
) -> Result<u64, ProbeError> {
    let ask = async {
        let resp = up.get(&path(gvr, form)).await?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| ProbeError::Upstream(e.to_string()))?
            .to_bytes();
        if !status.is_success() {
            return Err(ProbeError::Status(status.as_u16()));
        }
        list_version(&body)
    };
    tokio::time::timeout(timeout, ask)
        .await
        .unwrap_or(Err(ProbeError::Timeout(timeout)))
}

/// A list's `metadata.resourceVersion`, reading nothing else of it.
pub fn list_version(body: &[u8]) -> Result<u64, ProbeError> {
    #[derive(serde::Deserialize)]
    struct List<'a> {
        #[serde(borrow)]
        metadata: Meta<'a>,
    }
    #[derive(serde::Deserialize)]
    struct Meta<'a> {
        #[serde(rename = "resourceVersion", borrow)]
        resource_version: Option<&'a str>,
    }
    let list: List =
        serde_json::from_slice(body).map_err(|e| ProbeError::NotAList(e.to_string()))?;
    list.metadata
        .resource_version
        .and_then(|rv| rv.parse().ok())
        .ok_or_else(|| ProbeError::NotAList("no numeric resourceVersion".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_reads_one_object_or_none() {
        let pods = GroupVersionResource::new("", "v1", "pods");
        assert_eq!(path(&pods, ProbeForm::LimitOne), "/api/v1/pods?limit=1");
        let deploys = GroupVersionResource::new("apps", "v1", "deployments");
        assert_eq!(
            path(&deploys, ProbeForm::MatchNothing),
            "/apis/apps/v1/deployments?fieldSelector=metadata.name%3Dkubecache.io%2Fprobe"
        );
    }

    #[test]
    fn only_the_lists_version_is_read() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"2250","continue":"x"},"items":[{"metadata":{"resourceVersion":"7"}}]}"#;
        assert_eq!(list_version(body).unwrap(), 2250);
        assert!(list_version(br#"{"metadata":{}}"#).is_err());
        assert!(list_version(br#"{"kind":"Status","code":500}"#).is_err());
        assert!(list_version(b"[").is_err());
    }
}
