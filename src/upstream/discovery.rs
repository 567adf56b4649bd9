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
