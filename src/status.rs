//! The Kubernetes `Status` object: the one error shape every HTTP answer of
//! kubecache uses, built field for field like apimachinery's `metav1.Status`
//! (field order matters to clients that compare bytes).

use bytes::Bytes;
use serde::Serialize;

/// A failure answer, translated from module errors only at the HTTP edge.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Status {
    pub kind: &'static str,
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    pub metadata: StatusMeta,
    pub status: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub reason: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Box<Details>>,
    pub code: u16,
    /// Sent as the `Retry-After` header as well as in `details`.
    #[serde(skip)]
    pub retry_after: Option<u32>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct StatusMeta {
    /// Set on a 410 for an expired continue token: where to go on inconsistently.
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Details {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<Cause>,
    #[serde(rename = "retryAfterSeconds", skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u32>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cause {
    pub reason: String,
    pub message: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field: String,
}

impl Status {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Status {
            kind: "Status",
            api_version: "v1",
            metadata: StatusMeta::default(),
            status: "Failure",
            message: message.into(),
            reason,
            details: None,
            code,
            retry_after: None,
        }
    }

    pub fn with_details(mut self, details: Details) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// 400, like `apierrors.NewBadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Status::new(400, "BadRequest", message)
    }

    /// 404, like `apierrors.NewNotFound(resource, name)`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let qualified = qualified_resource(group, resource);
        Status::new(404, "NotFound", format!("{qualified} \"{name}\" not found"))
            .with_details(object_details(group, resource, name))
    }

    /// 409, like `apierrors.NewAlreadyExists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let qualified = qualified_resource(group, resource);
        Status::new(
            409,
            "AlreadyExists",
            format!("{qualified} \"{name}\" already exists"),
        )
        .with_details(object_details(group, resource, name))
    }

    /// 409, like `apierrors.NewConflict` for a stale resourceVersion.
    pub fn conflict(group: &str, resource: &str, name: &str) -> Self {
        Status::conflict_because(group, resource, name, "the object has been modified; please apply your changes to the latest version and try again")
    }

    /// 409, like `apierrors.NewConflict(resource, name, err)`.
    pub fn conflict_because(group: &str, resource: &str, name: &str, err: &str) -> Self {
        let qualified = qualified_resource(group, resource);
        Status::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {qualified} \"{name}\": {err}"),
        )
        .with_details(object_details(group, resource, name))
    }

    /// 403, like `apierrors.NewForbidden(resource, name, err)`: `why` is
    /// the error's text.
    pub fn forbidden(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let message = match (resource, name) {
            ("", _) => format!("forbidden: {why}"),
            (_, "") => format!(
                "{} is forbidden: {why}",
                qualified_resource(group, resource)
            ),
            _ => format!(
                "{} {} is forbidden: {why}",
                qualified_resource(group, resource),
                crate::go::strconv::quote(name)
            ),
        };
        Status::new(403, "Forbidden", message).with_details(object_details(group, resource, name))
    }

    /// 410, like `apierrors.NewResourceExpired`.
    pub fn expired(message: impl Into<String>) -> Self {
        Status::new(410, "Expired", message)
    }

    /// 422, like `apierrors.NewInvalid(groupKind, name, errs)`.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let qualified = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        // The message lists each distinct error once, as the field
        // ErrorList's aggregate does; the causes keep every one.
        let mut list: Vec<String> = Vec::new();
        for c in &causes {
            let line = format!("{}: {}", c.field, c.message);
            if !list.contains(&line) {
                list.push(line);
            }
        }
        let message = match list.as_slice() {
            [one] => format!("{qualified} \"{name}\" is invalid: {one}"),
            many => format!("{qualified} \"{name}\" is invalid: [{}]", many.join(", ")),
        };
        Status::new(422, "Invalid", message).with_details(Details {
            name: name.to_string(),
            group: group.to_string(),
            kind: kind.to_string(),
            causes,
            ..Default::default()
        })
    }

    /// 504 for a NotOlderThan read the cache has not caught up with in time,
    /// like `storage.NewTooLargeResourceVersionError` through the cacher.
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        let mut s = Status::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
        );
        s.details = Some(Box::new(Details {
            causes: vec![Cause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
                field: String::new(),
            }],
            retry_after_seconds: Some(1),
            ..Default::default()
        }));
        s.retry_after = Some(1);
        s
    }

    /// 503 when the upstream cannot be reached at all.
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Status::new(503, "ServiceUnavailable", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        let message = message.into();
        Status::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        )
        .with_details(Details {
            causes: vec![Cause {
                reason: String::new(),
                message,
                field: String::new(),
            }],
            ..Default::default()
        })
    }

    /// 406, as negotiation and conversions refuse (`errNotAcceptable`).
    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Status::new(406, "NotAcceptable", message)
    }

    /// go-restful's 406 when no route produces what Accept names, as the
    /// apiserver writes it (`NewGenericServerResponse`: empty details).
    pub fn no_acceptable_route() -> Self {
        Status::not_acceptable("406: Not Acceptable").with_details(Details::default())
    }

    pub fn method_not_allowed() -> Self {
        Status::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// The body as the apiserver's WriteRawJSON writes it when no
    /// representation of the error fits the Accept header: indented JSON
    /// (two spaces), no trailing newline.
    pub fn to_indented_bytes(&self) -> Bytes {
        let v = serde_json::to_vec_pretty(self).expect("Status always serializes");
        Bytes::from(crate::go::json::escape(&v))
    }

    /// The body exactly as the apiserver writes it: compact JSON and a newline.
    pub fn to_bytes(&self) -> Bytes {
        let v = serde_json::to_vec(self).expect("Status always serializes");
        let mut v = crate::go::json::escape(&v);
        v.push(b'\n');
        Bytes::from(v)
    }
}

/// The details of an error about one named object of a resource.
fn object_details(group: &str, resource: &str, name: &str) -> Details {
    Details {
        name: name.to_string(),
        group: group.to_string(),
        kind: resource.to_string(),
        ..Default::default()
    }
}

/// `pods` or `deployments.apps`, as apimachinery's `GroupResource.String()`.
pub fn qualified_resource(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_escaped_as_go_escapes_them() {
        let s = Status::bad_request("unable to parse requirement: <nil> & more");
        let body = String::from_utf8(s.to_bytes().to_vec()).unwrap();
        assert!(
            body.contains(
                r#""message":"unable to parse requirement: \u003cnil\u003e \u0026 more""#
            ),
            "{body}"
        );
        let body = String::from_utf8(s.to_indented_bytes().to_vec()).unwrap();
        assert!(
            body.contains(
                r#""message": "unable to parse requirement: \u003cnil\u003e \u0026 more""#
            ),
            "{body}"
        );
    }

    #[test]
    fn not_found_matches_the_apiserver_body() {
        let s = Status::not_found("", "pods", "nope");
        assert_eq!(
            std::str::from_utf8(&s.to_bytes()).unwrap(),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"pods \\\"nope\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"nope\",\"kind\":\"pods\"},\"code\":404}\n"
        );
    }

    #[test]
    fn go_restfuls_406_matches_the_apiserver_body_in_both_forms() {
        let s = Status::no_acceptable_route();
        assert_eq!(
            std::str::from_utf8(&s.to_bytes()).unwrap(),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"406: Not Acceptable\",\"reason\":\"NotAcceptable\",\"details\":{},\"code\":406}\n"
        );
        assert_eq!(
            std::str::from_utf8(&s.to_indented_bytes()).unwrap(),
            "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Failure\",\n  \"message\": \"406: Not Acceptable\",\n  \"reason\": \"NotAcceptable\",\n  \"details\": {},\n  \"code\": 406\n}"
        );
        // Negotiation's and conversions' 406s carry no details.
        let s =
            Status::not_acceptable("only the following media types are accepted: application/json");
        assert!(s.details.is_none());
        assert_eq!((s.code, s.reason), (406, "NotAcceptable"));
    }

    #[test]
    fn grouped_not_found_names_the_group() {
        let s = Status::not_found("apps", "deployments", "web");
        assert_eq!(s.message, "deployments.apps \"web\" not found");
        assert_eq!(s.details.unwrap().group, "apps");
    }

    #[test]
    fn invalid_with_one_cause_names_field_and_message() {
        let s = Status::invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            vec![Cause {
                reason: "FieldValueForbidden".into(),
                message: "Forbidden: x".into(),
                field: "resourceVersionMatch".into(),
            }],
        );
        assert_eq!(
            s.message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: x"
        );
        assert_eq!(s.code, 422);
    }

    #[test]
    fn too_large_resource_version_carries_retry_after() {
        let s = Status::too_large_resource_version(10, 5);
        assert_eq!(s.code, 504);
        assert_eq!(s.retry_after, Some(1));
        let body = String::from_utf8(s.to_bytes().to_vec()).unwrap();
        assert!(body.contains("\"retryAfterSeconds\":1"));
        assert!(body.contains("ResourceVersionTooLarge"));
    }
}
