//! A client's `Impersonate-*` headers, allowed as the apiserver's
//! impersonation filter allows them: the client must be allowed the
//! `impersonate` verb on each thing it names (the user or service
//! account, each group, each extra value), and then acts as the user they
//! make up — `system:authenticated` added unless the groups say
//! otherwise, `system:unauthenticated` for `system:anonymous`.

use super::{Access, Attributes};
use crate::request::identity::{ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS};
use crate::request::impersonation::{Impersonation, Target};
use crate::request::UserInfo;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImpersonateError {
    /// Groups or extras without a user (the apiserver's internal error).
    #[error("requested [{}] without impersonating a user", .0.iter().map(Target::go_value).collect::<Vec<_>>().join(" "))]
    WithoutUser(Vec<Target>),
    /// Not allowed to impersonate one of them (a review that failed
    /// refuses too, as the apiserver's filter refuses on an error).
    #[error("impersonating is not allowed")]
    Forbidden {
        attributes: Attributes,
        requestor: String,
        reason: String,
    },
}

/// What the `impersonate` verb is asked about for one target.
fn attributes(target: &Target) -> Attributes {
    let (group, version, resource, subresource, namespace, name) = match target {
        Target::User(n) => ("", "", "users", "", "", n.as_str()),
        Target::ServiceAccount { namespace, name } => (
            "",
            "",
            "serviceaccounts",
            "",
            namespace.as_str(),
            name.as_str(),
        ),
        Target::Group(n) => ("", "", "groups", "", "", n.as_str()),
        Target::Extra { key, value } => (
            "authentication.k8s.io",
            "v1",
            "userextras",
            key.as_str(),
            "",
            value.as_str(),
        ),
    };
    Attributes::Resource {
        verb: "impersonate".into(),
        group: group.into(),
        version: version.into(),
        resource: resource.into(),
        subresource: subresource.into(),
        namespace: namespace.into(),
        name: name.into(),
    }
}

/// Whom `requestor` acts as once each impersonation is allowed.
pub async fn acting_as(
    access: &Access,
    requestor: &UserInfo,
    imp: &Impersonation,
) -> Result<UserInfo, ImpersonateError> {
    let targets = imp.targets();
    if imp.user.is_none() {
        return Err(ImpersonateError::WithoutUser(targets));
    }
    for target in &targets {
        let attributes = attributes(target);
        let reason = match access.decide(requestor, &attributes).await {
            Ok(d) if d.allowed => continue,
            Ok(d) => d.reason,
            Err(e) => {
                tracing::warn!(error = %e, "reviewing an impersonation failed; refused");
                String::new()
            }
        };
        return Err(ImpersonateError::Forbidden {
            attributes,
            requestor: requestor.name.clone(),
            reason,
        });
    }
    Ok(impersonated(&targets, !imp.groups.is_empty()))
}

/// The user the allowed targets make up.
fn impersonated(targets: &[Target], groups_given: bool) -> UserInfo {
    let mut user = UserInfo::default();
    for t in targets {
        match t {
            Target::User(n) => user.name = n.clone(),
            Target::ServiceAccount { namespace, name } => {
                user.name = format!("system:serviceaccount:{namespace}:{name}");
                if !groups_given {
                    user.groups = vec![
                        "system:serviceaccounts".into(),
                        format!("system:serviceaccounts:{namespace}"),
                    ];
                }
            }
            Target::Group(g) => user.groups.push(g.clone()),
            Target::Extra { key, value } => user
                .extra
                .entry(key.clone())
                .or_default()
                .push(value.clone()),
        }
    }
    if user.name != ANONYMOUS {
        if !user
            .groups
            .iter()
            .any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED)
        {
            user.groups.push(ALL_AUTHENTICATED.into());
        }
    } else if !user.groups.iter().any(|g| g == ALL_UNAUTHENTICATED) {
        user.groups.push(ALL_UNAUTHENTICATED.into());
    }
    user
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_impersonated_user_gets_the_apiservers_implicit_groups() {
        let bob = impersonated(&[Target::User("bob".into())], false);
        assert_eq!(
            (bob.name.as_str(), bob.groups.as_slice()),
            ("bob", &[ALL_AUTHENTICATED.to_string()][..])
        );
        let sa = impersonated(
            &[Target::ServiceAccount {
                namespace: "ns".into(),
                name: "r".into(),
            }],
            false,
        );
        assert_eq!(sa.name, "system:serviceaccount:ns:r");
        assert_eq!(
            sa.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                ALL_AUTHENTICATED
            ]
        );
        let sa_with_groups = impersonated(
            &[
                Target::ServiceAccount {
                    namespace: "ns".into(),
                    name: "r".into(),
                },
                Target::Group("g".into()),
            ],
            true,
        );
        assert_eq!(sa_with_groups.groups, ["g", ALL_AUTHENTICATED]);
        let unauth = impersonated(
            &[
                Target::User("bob".into()),
                Target::Group(ALL_UNAUTHENTICATED.into()),
            ],
            true,
        );
        assert_eq!(unauth.groups, [ALL_UNAUTHENTICATED]);
        let anon = impersonated(&[Target::User(ANONYMOUS.into())], false);
        assert_eq!(anon.groups, [ALL_UNAUTHENTICATED]);
        let extra = impersonated(
            &[
                Target::User("bob".into()),
                Target::Extra {
                    key: "k".into(),
                    value: "v".into(),
                },
            ],
            false,
        );
        assert_eq!(extra.extra["k"], ["v"]);
    }

    #[test]
    fn impersonation_targets_are_asked_about_as_the_apiserver_asks() {
        assert_eq!(
            attributes(&Target::Extra {
                key: "scopes".into(),
                value: "view".into()
            }),
            Attributes::Resource {
                verb: "impersonate".into(),
                group: "authentication.k8s.io".into(),
                version: "v1".into(),
                resource: "userextras".into(),
                subresource: "scopes".into(),
                namespace: String::new(),
                name: "view".into(),
            }
        );
        let e = ImpersonateError::WithoutUser(vec![Target::Group("system:masters".into())]);
        assert_eq!(
            e.to_string(),
            "requested [{Group  system:masters    }] without impersonating a user"
        );
    }
}
