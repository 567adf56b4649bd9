//! The upstream's reviews, as kubecache asks them with its own identity:
//! a `TokenReview` for who a bearer token is, a `SubjectAccessReview` for
//! whether a user may do something — the apiserver's
//! `authentication.k8s.io/v1` and `authorization.k8s.io/v1` shapes.

use super::attributes::Attributes;
use crate::request::UserInfo;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
pub const SUBJECT_ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Review<S> {
    api_version: &'static str,
    kind: &'static str,
    spec: S,
}

#[derive(Serialize)]
struct TokenSpec<'a> {
    token: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    audiences: &'a [String],
}

/// The body of a review of `token` for `audiences` (none: the upstream's
/// own).
pub fn token_review(token: &str, audiences: &[String]) -> Vec<u8> {
    serde_json::to_vec(&Review {
        api_version: "authentication.k8s.io/v1",
        kind: "TokenReview",
        spec: TokenSpec { token, audiences },
    })
    .expect("a review serializes")
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Answer<S> {
    status: S,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct TokenStatus {
    authenticated: bool,
    user: ReviewedUser,
    audiences: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ReviewedUser {
    username: String,
    uid: String,
    groups: Vec<String>,
    extra: BTreeMap<String, Vec<String>>,
}

/// Who the review says the token is; `None` when it is not authenticated,
/// or not for any of `audiences` (when kubecache asked for some), as the
/// apiserver's webhook token authenticator decides.
pub fn token_reviewed(
    body: &[u8],
    audiences: &[String],
) -> Result<Option<UserInfo>, serde_json::Error> {
    let status = serde_json::from_slice::<Answer<TokenStatus>>(body)?.status;
    if !status.authenticated {
        return Ok(None);
    }
    if !audiences.is_empty() && !status.audiences.iter().any(|a| audiences.contains(a)) {
        return Ok(None);
    }
    let u = status.user;
    Ok(Some(UserInfo {
        name: u.username,
        uid: u.uid,
        groups: u.groups,
        extra: u.extra,
    }))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AccessSpec<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_attributes: Option<ResourceAttributes<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    non_resource_attributes: Option<NonResourceAttributes<'a>>,
    user: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    groups: &'a [String],
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    extra: &'a BTreeMap<String, Vec<String>>,
    #[serde(skip_serializing_if = "str::is_empty")]
    uid: &'a str,
}

#[derive(Serialize)]
struct ResourceAttributes<'a> {
    namespace: &'a str,
    verb: &'a str,
    group: &'a str,
    version: &'a str,
    resource: &'a str,
    subresource: &'a str,
    name: &'a str,
}

#[derive(Serialize)]
struct NonResourceAttributes<'a> {
    path: &'a str,
    verb: &'a str,
}

/// The body of a review of whether `user` may do what `attributes` say.
pub fn access_review(user: &UserInfo, attributes: &Attributes) -> Vec<u8> {
    let (resource_attributes, non_resource_attributes) = match attributes {
        Attributes::Resource {
            verb,
            group,
            version,
            resource,
            subresource,
            namespace,
            name,
        } => (
            Some(ResourceAttributes {
                namespace,
                verb,
                group,
                version,
                resource,
                subresource,
                name,
            }),
            None,
        ),
        Attributes::NonResource { verb, path } => {
            (None, Some(NonResourceAttributes { path, verb }))
        }
    };
    serde_json::to_vec(&Review {
        api_version: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: AccessSpec {
            resource_attributes,
            non_resource_attributes,
            user: &user.name,
            groups: &user.groups,
            extra: &user.extra,
            uid: &user.uid,
        },
    })
    .expect("a review serializes")
}

/// What the authorizer decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// Why, in the authorizer's words (appended to a refusal's message).
    pub reason: String,
    /// An error the authorizer met deciding (the apiserver answers a
    /// request it did not allow with one as an internal error).
    pub evaluation_error: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct AccessStatus {
    allowed: bool,
    reason: String,
    evaluation_error: String,
}

pub fn access_reviewed(body: &[u8]) -> Result<Decision, serde_json::Error> {
    let s = serde_json::from_slice::<Answer<AccessStatus>>(body)?.status;
    Ok(Decision {
        allowed: s.allowed,
        reason: s.reason,
        evaluation_error: s.evaluation_error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_review_names_the_audiences_only_when_there_are_some() {
        let body = String::from_utf8(token_review("t", &[])).unwrap();
        assert_eq!(
            body,
            r#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"t"}}"#
        );
        let body = String::from_utf8(token_review("t", &["kubecache".into()])).unwrap();
        assert!(body.ends_with(r#""audiences":["kubecache"]}}"#), "{body}");
    }

    #[test]
    fn a_reviewed_token_is_its_user_when_authenticated_for_one_of_the_audiences() {
        let ok = br#"{"status":{"authenticated":true,"user":{"username":"alice","uid":"1","groups":["g","system:authenticated"],"extra":{"k":["v"]}},"audiences":["api"]}}"#;
        let u = token_reviewed(ok, &[]).unwrap().unwrap();
        assert_eq!((u.name.as_str(), u.uid.as_str()), ("alice", "1"));
        assert_eq!(u.groups, ["g", "system:authenticated"]);
        assert_eq!(u.extra["k"], ["v"]);
        assert!(token_reviewed(ok, &["api".into()]).unwrap().is_some());
        assert_eq!(token_reviewed(ok, &["kubecache".into()]).unwrap(), None);
        let no = br#"{"status":{"authenticated":false,"error":"invalid bearer token"}}"#;
        assert_eq!(token_reviewed(no, &[]).unwrap(), None);
        assert!(token_reviewed(b"<html>", &[]).is_err());
    }

    #[test]
    fn an_access_review_carries_the_whole_user_and_the_attributes() {
        let user = UserInfo {
            name: "alice".into(),
            uid: "u1".into(),
            groups: vec!["team".into()],
            extra: [("scopes".to_string(), vec!["view".to_string()])].into(),
        };
        let attrs = Attributes::Resource {
            verb: "list".into(),
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
            subresource: String::new(),
            namespace: "a".into(),
            name: String::new(),
        };
        let v: serde_json::Value = serde_json::from_slice(&access_review(&user, &attrs)).unwrap();
        assert_eq!(v["kind"], "SubjectAccessReview");
        assert_eq!(v["spec"]["resourceAttributes"]["resource"], "deployments");
        assert_eq!(v["spec"]["resourceAttributes"]["namespace"], "a");
        assert_eq!(v["spec"]["user"], "alice");
        assert_eq!(v["spec"]["uid"], "u1");
        assert_eq!(v["spec"]["groups"][0], "team");
        assert_eq!(v["spec"]["extra"]["scopes"][0], "view");
        let d = access_reviewed(br#"{"status":{"allowed":false,"reason":"nope"}}"#).unwrap();
        assert_eq!((d.allowed, d.reason.as_str()), (false, "nope"));
    }
}
