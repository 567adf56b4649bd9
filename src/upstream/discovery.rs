//! Discovery: which resource types the upstream serves, their kinds, scope
//! and verbs, learned from `/api`, `/apis` and each group version.

use super::{Upstream, UpstreamError};
use crate::resource::{GroupVersionResource, ResourceType};
use serde::Deserialize;
use std::collections::HashMap;

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

/// Every resource type the upstream serves, keyed by group/version/resource.
#[derive(Debug, Default, Clone)]
pub struct Discovery {
    types: HashMap<GroupVersionResource, ResourceType>,
}

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

    pub async fn fetch(up: &Upstream) -> Result<Self, UpstreamError> {
        let mut gvs: Vec<(String, String)> = Vec::new();
        let core: ApiVersions = parse(&up.get_bytes("/api").await?, "/api")?;
        gvs.extend(core.versions.into_iter().map(|v| (String::new(), v)));
        let groups: GroupList = parse(&up.get_bytes("/apis").await?, "/apis")?;
        for g in groups.groups {
            gvs.extend(g.versions.into_iter().map(|v| (g.name.clone(), v.version)));
        }
        let mut types = HashMap::new();
        for (group, version) in gvs {
            let path = if group.is_empty() {
                format!("/api/{version}")
            } else {
                format!("/apis/{group}/{version}")
            };
            // A group version that fails (an aggregated API that is down) only
            // loses its own types.
            let list: ResourceList = match up.get_bytes(&path).await {
                Ok(body) => match parse(&body, &path) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!(%path, error = %e, "discovery: skipping group version");
                        continue;
                    }
                },
                Err(e) => {
                    tracing::warn!(%path, error = %e, "discovery: skipping group version");
                    continue;
                }
            };
            for r in list.resources.into_iter().filter(|r| !r.name.contains('/')) {
                let gvr = GroupVersionResource::new(&group, &version, &r.name);
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
        Ok(Discovery { types })
    }

    #[cfg(test)]
    pub fn from_types(list: Vec<ResourceType>) -> Self {
        Discovery {
            types: list.into_iter().map(|t| (t.gvr.clone(), t)).collect(),
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8], path: &str) -> Result<T, UpstreamError> {
    serde_json::from_slice(body).map_err(|e| UpstreamError::Status {
        status: http::StatusCode::OK,
        path: path.to_string(),
        body: format!("unparseable discovery document: {e}"),
        retry_after: None,
    })
}
