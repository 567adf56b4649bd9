//! What a request asks to do, as the apiserver's authorizer is asked it
//! (`authorizer.Attributes`), and the words of its refusal.

use crate::go::strconv::quote;

/// A resource request's attributes (the only kind kubecache asks about
/// for a client's reads) or a non-resource path's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Attributes {
    Resource {
        verb: String,
        group: String,
        version: String,
        resource: String,
        subresource: String,
        namespace: String,
        name: String,
    },
    NonResource {
        verb: String,
        path: String,
    },
}

impl Attributes {
    /// The refusal's message for `user`, the apiserver's
    /// `forbiddenMessage`, with the authorizer's reason after it when it
    /// gave one, HTML's specials escaped as the apiserver escapes them.
    pub fn forbidden_message(&self, user: &str, reason: &str) -> String {
        let msg = match self {
            Attributes::NonResource { verb, path } => {
                format!("User {} cannot {verb} path {}", quote(user), quote(path))
            }
            Attributes::Resource {
                verb,
                group,
                resource,
                subresource,
                namespace,
                ..
            } => {
                let resource = if subresource.is_empty() {
                    resource.clone()
                } else {
                    format!("{resource}/{subresource}")
                };
                let scope = if namespace.is_empty() {
                    "at the cluster scope".to_string()
                } else {
                    format!("in the namespace {}", quote(namespace))
                };
                format!(
                    "User {} cannot {verb} resource {} in API group {} {scope}",
                    quote(user),
                    quote(&resource),
                    quote(group)
                )
            }
        };
        let msg = msg
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        if reason.is_empty() {
            msg
        } else {
            format!("{msg}: {reason}")
        }
    }

    /// The group, resource and name the refusal's `Status` names.
    pub fn refused(&self) -> (&str, &str, &str) {
        match self {
            Attributes::Resource {
                group,
                resource,
                name,
                ..
            } => (group, resource, name),
            Attributes::NonResource { .. } => ("", "", ""),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods(verb: &str, namespace: &str, subresource: &str) -> Attributes {
        Attributes::Resource {
            verb: verb.into(),
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: String::new(),
        }
    }

    #[test]
    fn refusals_read_as_the_apiservers_forbidden_messages() {
        assert_eq!(
            pods("list", "team-a", "").forbidden_message("alice", ""),
            r#"User "alice" cannot list resource "pods" in API group "" in the namespace "team-a""#
        );
        assert_eq!(
            pods("get", "", "log").forbidden_message("bob", "no RBAC policy matched"),
            r#"User "bob" cannot get resource "pods/log" in API group "" at the cluster scope: no RBAC policy matched"#
        );
        let metrics = Attributes::NonResource {
            verb: "get".into(),
            path: "/metrics".into(),
        };
        assert_eq!(
            metrics.forbidden_message("system:anonymous", ""),
            r#"User "system:anonymous" cannot get path "/metrics""#
        );
        assert_eq!(
            pods("list", "", "").forbidden_message("<b>&", ""),
            r#"User "&lt;b&gt;&amp;" cannot list resource "pods" in API group "" at the cluster scope"#
        );
    }
}
