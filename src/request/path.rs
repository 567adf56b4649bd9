//! Resource paths, parsed like the apiserver's `RequestInfoFactory`.

/// `/api/v1/namespaces/ns/pods/name/status` and its relatives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    pub group: String,
    pub version: String,
    /// The namespace segment, if the path has one (for `/api/v1/namespaces/x`
    /// this is `x`, as in the apiserver's RequestInfo).
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
    /// The legacy `/watch/` prefix was used.
    pub legacy_watch: bool,
}

const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

impl ResourcePath {
    /// `None` for anything that is not a resource path (discovery, /version,
    /// health endpoints, OpenAPI…).
    pub fn parse(path: &str) -> Option<Self> {
        let rest = path.strip_prefix('/')?;
        let mut parts: Vec<&str> = rest.split('/').collect();
        if parts.last() == Some(&"") {
            parts.pop();
        }
        let (group, version, mut parts) = match parts.as_slice() {
            ["api", version, rest @ ..] => (String::new(), version.to_string(), rest.to_vec()),
            ["apis", group, version, rest @ ..] => {
                (group.to_string(), version.to_string(), rest.to_vec())
            }
            _ => return None,
        };
        if parts.is_empty() || parts.iter().any(|p| p.is_empty()) {
            return None;
        }
        let mut legacy_watch = false;
        if parts[0] == "watch" {
            legacy_watch = true;
            parts.remove(0);
            if parts.is_empty() {
                return None;
            }
        }
        let mut namespace = None;
        if parts[0] == "namespaces" && parts.len() > 1 {
            namespace = Some(parts[1].to_string());
            if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
                parts.drain(..2);
            }
        }
        let decode = |s: &str| percent_decode(s);
        Some(ResourcePath {
            group,
            version,
            namespace: namespace.map(|n| decode(&n)),
            resource: parts[0].to_string(),
            name: parts.get(1).map(|n| decode(n)),
            subresource: if parts.len() > 2 {
                Some(parts[2..].join("/"))
            } else {
                None
            },
            legacy_watch,
        })
    }

    /// True for `/api/v1/namespaces/x`: the namespaces resource itself.
    pub fn is_namespace_object(&self) -> bool {
        self.group.is_empty() && self.resource == "namespaces"
    }
}

/// A path segment (or a whole path) with its `%XX` escapes decoded, as Go's
/// `URL.Path` holds it.
pub fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// What a read returns: one object, a list, or a stream of events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Object,
    List,
    Watch,
}

impl Shape {
    /// What a read (GET) of `path` returns, `watch` its query's: the one
    /// place that decides (the cache's routing, verbs, the simulator). A
    /// collection with `?watch` watches; `?watch` on a named object is a
    /// get, as the apiserver's named-object route ignores it (the real
    /// v1.20 answers `GET …/services/kubernetes?watch=1` with the Service);
    /// the legacy `/watch/` path always watches.
    pub fn of(path: &ResourcePath, watch: bool) -> Shape {
        if path.legacy_watch || (watch && path.name.is_none()) {
            Shape::Watch
        } else if path.name.is_some() {
            Shape::Object
        } else {
            Shape::List
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> ResourcePath {
        ResourcePath::parse(s).unwrap()
    }

    #[test]
    fn cluster_wide_and_namespaced_collections() {
        let a = p("/api/v1/pods");
        assert_eq!(
            (a.resource.as_str(), a.namespace, a.name),
            ("pods", None, None)
        );
        let b = p("/api/v1/namespaces/kube-system/pods");
        assert_eq!(b.namespace.as_deref(), Some("kube-system"));
        assert_eq!(b.resource, "pods");
        let c = p("/apis/apps/v1/namespaces/ns/deployments/web");
        assert_eq!((c.group.as_str(), c.name.as_deref()), ("apps", Some("web")));
    }

    #[test]
    fn a_namespace_is_an_object_of_the_namespaces_resource() {
        let a = p("/api/v1/namespaces/default");
        assert_eq!(a.resource, "namespaces");
        assert_eq!(a.name.as_deref(), Some("default"));
        assert!(a.is_namespace_object());
        let s = p("/api/v1/namespaces/default/status");
        assert_eq!(s.subresource.as_deref(), Some("status"));
    }

    #[test]
    fn subresources_and_legacy_watch() {
        let a = p("/api/v1/namespaces/ns/pods/x/log");
        assert_eq!(a.subresource.as_deref(), Some("log"));
        let w = p("/api/v1/watch/namespaces/ns/pods");
        assert!(w.legacy_watch);
        assert_eq!(w.namespace.as_deref(), Some("ns"));
    }

    #[test]
    fn non_resource_paths_are_not_parsed() {
        for s in [
            "/",
            "/api",
            "/apis",
            "/apis/apps",
            "/api/v1",
            "/version",
            "/healthz",
            "/api/v1//pods",
            "/openapi/v2",
        ] {
            assert!(ResourcePath::parse(s).is_none(), "{s}");
        }
    }
}
