//! The `Impersonate-*` headers of a request, read as the apiserver's
//! impersonation filter reads them (`buildImpersonationRequests`): the
//! user (a service account's name naming the service account), each
//! group, each extra value; one thing to be allowed to impersonate each.

use std::collections::BTreeMap;

pub const USER: &str = "impersonate-user";
pub const GROUP: &str = "impersonate-group";
pub const EXTRA_PREFIX: &str = "impersonate-extra-";

/// Who the headers ask to act as.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Impersonation {
    /// `Impersonate-User`'s first value, if not empty.
    pub user: Option<String>,
    /// Every `Impersonate-Group` value.
    pub groups: Vec<String>,
    /// `Impersonate-Extra-{key}` values, keys lowercased and
    /// percent-decoded.
    pub extra: BTreeMap<String, Vec<String>>,
}

/// One thing a client asks to impersonate, as the apiserver's
/// `ObjectReference` for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    User(String),
    ServiceAccount { namespace: String, name: String },
    Group(String),
    Extra { key: String, value: String },
}

impl Target {
    /// Go's `%v` of the apiserver's `ObjectReference` for it (its error
    /// messages print them so).
    pub fn go_value(&self) -> String {
        let (kind, ns, name, api_version, field_path) = match self {
            Target::User(n) => ("User", "", n.as_str(), "", ""),
            Target::ServiceAccount { namespace, name } => {
                ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
            }
            Target::Group(n) => ("Group", "", n.as_str(), "", ""),
            Target::Extra { key, value } => (
                "UserExtra",
                "",
                value.as_str(),
                "authentication.k8s.io/v1",
                key.as_str(),
            ),
        };
        format!("{{{kind} {ns} {name}  {api_version}  {field_path}}}")
    }
}

impl Impersonation {
    /// `None` when the request has no impersonation header that counts.
    pub fn from_headers(headers: &http::HeaderMap) -> Option<Impersonation> {
        let text = |v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
        let mut imp = Impersonation {
            user: headers.get(USER).map(text).filter(|u| !u.is_empty()),
            groups: headers.get_all(GROUP).iter().map(text).collect(),
            extra: BTreeMap::new(),
        };
        for (name, value) in headers {
            if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
                let key = crate::request::path::percent_decode(key);
                imp.extra.entry(key).or_default().push(text(value));
            }
        }
        (imp.user.is_some() || !imp.groups.is_empty() || !imp.extra.is_empty()).then_some(imp)
    }

    /// The things to be allowed, in the apiserver's order: the user, the
    /// groups, the extras.
    pub fn targets(&self) -> Vec<Target> {
        let mut out = Vec::new();
        if let Some(user) = &self.user {
            out.push(match service_account(user) {
                Some((namespace, name)) => Target::ServiceAccount { namespace, name },
                None => Target::User(user.clone()),
            });
        }
        out.extend(self.groups.iter().cloned().map(Target::Group));
        for (key, values) in &self.extra {
            for value in values {
                out.push(Target::Extra {
                    key: key.clone(),
                    value: value.clone(),
                });
            }
        }
        out
    }
}

/// The namespace and name of a service account's user name
/// (`system:serviceaccount:NS:NAME`, both valid names), as the
/// apiserver's `serviceaccount.SplitUsername` reads it.
pub fn service_account(user: &str) -> Option<(String, String)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let parts: Vec<&str> = rest.split(':').collect();
    match parts.as_slice() {
        [ns, name] if dns1123_label(ns) && dns1123_subdomain(name) => {
            Some((ns.to_string(), name.to_string()))
        }
        _ => None,
    }
}

fn dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(dns1123_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn impersonation_headers_become_one_target_each_in_the_apiservers_order() {
        let imp = Impersonation::from_headers(&headers(&[
            ("Impersonate-Extra-Scopes", "view"),
            ("Impersonate-Group", "team-a"),
            ("Impersonate-Group", "team-b"),
            ("Impersonate-User", "system:serviceaccount:ns:robot"),
            ("Impersonate-Extra-Scopes", "edit"),
            ("Impersonate-Extra-Acme.com%2Fproject", "p1"),
        ]))
        .unwrap();
        assert_eq!(
            imp.targets(),
            [
                Target::ServiceAccount {
                    namespace: "ns".into(),
                    name: "robot".into()
                },
                Target::Group("team-a".into()),
                Target::Group("team-b".into()),
                Target::Extra {
                    key: "acme.com/project".into(),
                    value: "p1".into()
                },
                Target::Extra {
                    key: "scopes".into(),
                    value: "view".into()
                },
                Target::Extra {
                    key: "scopes".into(),
                    value: "edit".into()
                },
            ]
        );
        assert_eq!(Impersonation::from_headers(&headers(&[])), None);
        assert_eq!(
            Impersonation::from_headers(&headers(&[("impersonate-user", "")])),
            None
        );
    }

    #[test]
    fn only_well_formed_service_account_names_name_service_accounts() {
        assert_eq!(
            service_account("system:serviceaccount:kube-system:a.b"),
            Some(("kube-system".into(), "a.b".into()))
        );
        for not in [
            "system:serviceaccount:ns",
            "system:serviceaccount:ns:a:b",
            "system:serviceaccount:NS:a",
            "system:serviceaccount::a",
            "system:serviceaccount:ns:-a",
            "alice",
        ] {
            assert_eq!(service_account(not), None, "{not}");
        }
    }

    #[test]
    fn targets_print_as_gos_value_of_the_apiservers_object_reference() {
        assert_eq!(
            Target::Group("system:masters".into()).go_value(),
            "{Group  system:masters    }"
        );
        assert_eq!(
            Target::Extra {
                key: "k".into(),
                value: "v".into()
            }
            .go_value(),
            "{UserExtra  v  authentication.k8s.io/v1  k}"
        );
    }
}
