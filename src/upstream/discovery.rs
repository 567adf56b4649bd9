//! Discovery: which resource types the upstream serves, their kinds, scope
//! and verbs, learned from `/api`, `/apis` and each group version.

use super::{Upstream, UpstreamError};
use crate::resource::{GroupVersionResource, ResourceType};
use bytes::Bytes;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};

#[derive(Deserialize)]
struct ApiVersions {
    versions: Vec<String>,
}

#[derive(Deserialize)]
struct GroupList {
    groups: Vec<Group>,
}

#[derive(Deserialize)]
struct Group {
    name: String,
    versions: Vec<GroupVersionRef>,
}

#[derive(Deserialize)]
struct GroupVersionRef {
    version: String,
}

#[derive(Deserialize)]
struct ResourceList {
    resources: Vec<ApiResource>,
}

#[derive(Deserialize)]
struct ApiResource {
    name: String,
    namespaced: bool,
    kind: String,
    #[serde(default)]
    verbs: Vec<String>,
}

/// Every resource type the upstream serves, keyed by group/version/resource,
/// and the documents they were read from (served from a snapshot while the
/// upstream is unreachable: `cache::snapshot`).
#[derive(Debug, Default, Clone)]
pub struct Discovery {
    types: HashMap<GroupVersionResource, ResourceType>,
    documents: Documents,
}

/// Discovery documents by path (`/api`, `/apis`, `/api/v1`,
/// `/apis/apps/v1`, `/version`), as the upstream answered them in JSON.
pub type Documents = BTreeMap<String, Bytes>;

impl Discovery {
    pub fn get(&self, gvr: &GroupVersionResource) -> Option<&ResourceType> {
        self.types.get(gvr)
    }

    pub fn len(&self) -> usize {
        self.types.len()
    }

    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &ResourceType> {
        self.types.values()
    }

    /// The documents it was read from.
    pub fn documents(&self) -> &Documents {
        &self.documents
    }

    /// The document at `path`, if discovery read one there.
    pub fn document(&self, path: &str) -> Option<&Bytes> {
        self.documents.get(path)
    }

    /// The aggregated discovery (`apidiscovery.k8s.io/v2`) of `/api` or
    /// `/apis`, if the upstream serves it (1.30+; v1.20 answers the plain
    /// document instead, and none is kept).
    pub fn aggregated(&self, path: &str) -> Option<&Bytes> {
        self.documents.get(&aggregated_key(path))
    }

    /// A type known otherwise (restored from a snapshot) that these
    /// documents do not name.
    pub fn with_type(mut self, rt: ResourceType) -> Self {
        self.types.entry(rt.gvr.clone()).or_insert(rt);
        self
    }

    pub async fn fetch(up: &Upstream) -> Result<Self, UpstreamError> {
        let mut documents = Documents::new();
        for path in ["/api", "/apis"] {
            documents.insert(path.to_string(), up.get_bytes(path).await?);
        }
        for path in group_versions(&documents)? {
            // A group version that fails (an aggregated API that is down) only
            // loses its own types.
            match up.get_bytes(&path).await {
                Ok(body) => {
                    documents.insert(path, body);
                }
                Err(e) => tracing::warn!(%path, error = %e, "discovery: skipping group version"),
            }
        }
        // Current kubectl's first question, kept for while the upstream is
        // away (read by `aggregated`; ignored by `from_documents`).
        for path in ["/api", "/apis"] {
            match up.get_bytes_accepting(path, AGGREGATED_ACCEPT, false).await {
                Ok(body) if is_aggregated(&body) => {
                    documents.insert(aggregated_key(path), body);
                }
                Ok(_) => {
                    tracing::debug!(%path, "discovery: the upstream serves no aggregated discovery")
                }
                Err(e) => tracing::debug!(%path, error = %e, "discovery: no aggregated discovery"),
            }
        }
        // Only for clients (`kubectl version`) while the upstream is away.
        match up.get_bytes("/version").await {
            Ok(body) => {
                documents.insert("/version".to_string(), body);
            }
            Err(e) => tracing::debug!(error = %e, "discovery: no /version"),
        }
        Self::from_documents(documents)
    }

    /// Discovery read from documents fetched before: `/api` and `/apis`
    /// must parse; a group version that is missing or does not parse only
    /// loses its own types.
    pub fn from_documents(documents: Documents) -> Result<Self, UpstreamError> {
        let mut types = HashMap::new();
        for path in group_versions(&documents)? {
            let Some(body) = documents.get(&path) else {
                continue;
            };
            let list: ResourceList = match parse(body, &path) {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(%path, error = %e, "discovery: skipping group version");
                    continue;
                }
            };
            let (group, version) = match path.strip_prefix("/apis/") {
                Some(gv) => gv.split_once('/').unwrap_or((gv, "")),
                None => ("", path.trim_start_matches("/api/")),
            };
            for r in list.resources.into_iter().filter(|r| !r.name.contains('/')) {
                let gvr = GroupVersionResource::new(group, version, &r.name);
                types.insert(
                    gvr.clone(),
                    ResourceType {
                        gvr,
                        kind: r.kind,
                        namespaced: r.namespaced,
                        verbs: r.verbs,
                    },
                );
            }
        }
        Ok(Discovery { types, documents })
    }

    #[cfg(test)]
    pub fn from_types(list: Vec<ResourceType>) -> Self {
        Discovery {
            types: list.into_iter().map(|t| (t.gvr.clone(), t)).collect(),
            documents: Documents::new(),
        }
    }
}

/// The paths of every group version `/api` and `/apis` name.
/// The media type of aggregated discovery (`apidiscovery.k8s.io/v2`).
pub const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// What discovery asks for it with: the plain document if the upstream
/// has none (v1.20 answers that).
const AGGREGATED_ACCEPT: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

/// Where the documents keep `path`'s aggregated discovery: not a path a
/// client can ask for (`#` never reaches a server).
fn aggregated_key(path: &str) -> String {
    format!("{path}#{AGGREGATED}")
}

/// Whether a discovery answer is an `APIGroupDiscoveryList` of v2.
fn is_aggregated(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow, default)]
        kind: &'a str,
        #[serde(borrow, default, rename = "apiVersion")]
        api_version: &'a str,
    }
    serde_json::from_slice::<Head>(body).is_ok_and(|h| {
        h.kind == "APIGroupDiscoveryList" && h.api_version == "apidiscovery.k8s.io/v2"
    })
}

fn group_versions(documents: &Documents) -> Result<Vec<String>, UpstreamError> {
    let doc = |path: &str| {
        documents.get(path).ok_or_else(|| UpstreamError::Status {
            status: http::StatusCode::OK,
            path: path.to_string(),
            body: "no discovery document".into(),
            retry_after: None,
        })
    };
    let core: ApiVersions = parse(doc("/api")?, "/api")?;
    let groups: GroupList = parse(doc("/apis")?, "/apis")?;
    let mut paths: Vec<String> = core.versions.iter().map(|v| format!("/api/{v}")).collect();
    for g in groups.groups {
        paths.extend(
            g.versions
                .iter()
                .map(|v| format!("/apis/{}/{}", g.name, v.version)),
        );
    }
    Ok(paths)
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8], path: &str) -> Result<T, UpstreamError> {
    serde_json::from_slice(body).map_err(|e| UpstreamError::Status {
        status: http::StatusCode::OK,
        path: path.to_string(),
        body: format!("unparseable discovery document: {e}"),
        retry_after: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_v2_group_discovery_list_is_kept_as_aggregated_discovery() {
        assert!(is_aggregated(
            br#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[]}"#
        ));
        // v1.20 answers the plain document to the same request.
        assert!(!is_aggregated(
            br#"{"kind":"APIVersions","versions":["v1"]}"#
        ));
        assert!(!is_aggregated(
            br#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2beta1"}"#
        ));
        assert!(!is_aggregated(b"not json"));
        // Kept where no client's path can reach, and not read as a group version.
        assert_ne!(aggregated_key("/apis"), "/apis");
        assert!(aggregated_key("/apis").starts_with("/apis#"));
    }
}
