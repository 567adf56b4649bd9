//! What kubecache knows about one resource type: the facts discovery gives
//! (group, version, plural, kind, scope, verbs) and the names derived from them.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersionResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

impl GroupVersionResource {
    pub fn new(group: &str, version: &str, resource: &str) -> Self {
        GroupVersionResource {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The URL prefix of the group version: `/api/v1` or `/apis/apps/v1`.
    pub fn base_path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    /// The collection path, optionally namespaced.
    pub fn path(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) => format!("{}/namespaces/{ns}/{}", self.base_path(), self.resource),
            None => format!("{}/{}", self.base_path(), self.resource),
        }
    }
}

impl fmt::Display for GroupVersionResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}/{}", self.version, self.resource)
        } else {
            write!(f, "{}/{}/{}", self.group, self.version, self.resource)
        }
    }
}

/// One resource type as discovery describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    pub gvr: GroupVersionResource,
    pub kind: String,
    pub namespaced: bool,
    pub verbs: Vec<String>,
}

impl ResourceType {
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// Only types that can be both listed and watched can be cached.
    pub fn cacheable(&self) -> bool {
        self.verbs.iter().any(|v| v == "list") && self.verbs.iter().any(|v| v == "watch")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_for_core_and_grouped_types() {
        let pods = GroupVersionResource::new("", "v1", "pods");
        assert_eq!(pods.path(None), "/api/v1/pods");
        assert_eq!(pods.path(Some("ns")), "/api/v1/namespaces/ns/pods");
        let deps = GroupVersionResource::new("apps", "v1", "deployments");
        assert_eq!(deps.path(None), "/apis/apps/v1/deployments");
        assert_eq!(deps.api_version(), "apps/v1");
    }
}
