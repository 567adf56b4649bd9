//! What can go wrong serving a request, by the phase it went wrong in, and
//! the one place each error becomes the `Status` the apiserver would
//! answer with (the HTTP edge; a watch's ERROR event is an edge too).

use super::auth::AuthError;
use super::limits::LimitError;
use super::read::ReadError;
use super::watch::WatchError;
use crate::access::impersonate::ImpersonateError;
use crate::cache::bodies::FinishError;
use crate::encode::recycle::NoMemory;
use crate::request::options::OptionsError;
use crate::selector::SelectorError;
use crate::status::{Cause, Status};
use crate::upstream::UpstreamError;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The query's options (the apiserver's 400s and 422s).
    #[error("the request's options")]
    Options(#[from] OptionsError),
    /// A label or field selector (the apiserver's 400).
    #[error("the request's selector")]
    Selector(#[from] SelectorError),
    #[error("reading the cache")]
    Read(#[from] ReadError),
    /// The upstream could not be asked (a 503).
    #[error("forwarding upstream")]
    Forward(#[from] UpstreamError),
    /// Refused before it was decided: who it is, or what it asks.
    #[error("authenticating or authorizing the request")]
    Auth(#[from] AuthError),
    /// Over one of its user's limits, or too big.
    #[error("the request's limits")]
    Limit(#[from] LimitError),
}

impl From<&OptionsError> for Status {
    fn from(e: &OptionsError) -> Status {
        match e {
            OptionsError::Invalid(fields) => {
                let causes = fields
                    .iter()
                    .map(|f| Cause {
                        reason: f.reason.into(),
                        message: f.message.clone(),
                        field: f.field.into(),
                    })
                    .collect();
                Status::invalid("meta.k8s.io", "ListOptions", "", causes)
            }
            OptionsError::Continue(_) | OptionsError::VersionWithContinue => {
                Status::bad_request(e.to_string())
            }
        }
    }
}

impl From<&SelectorError> for Status {
    fn from(e: &SelectorError) -> Status {
        Status::bad_request(e.to_string())
    }
}

impl From<&FinishError> for Status {
    fn from(e: &FinishError) -> Status {
        match e {
            FinishError::Task(t) => Status::internal(format!("finishing the response: {t}")),
            FinishError::NoMemory(m) => m.into(),
        }
    }
}

/// A body the allocator refused memory for: overload, answered as the
/// apiserver answers overload (429, `Retry-After: 1`), saying why.
impl From<&NoMemory> for Status {
    fn from(e: &NoMemory) -> Status {
        let mut s = Status::new(
            429,
            "TooManyRequests",
            format!("kubecache could not get the memory for this response ({e}); please try again later"),
        );
        // As the apiserver's NewTooManyRequestsError says it.
        s.details = Some(Box::new(crate::status::Details {
            retry_after_seconds: Some(1),
            ..Default::default()
        }));
        s.retry_after = Some(1);
        s
    }
}

impl From<&ReadError> for Status {
    fn from(e: &ReadError) -> Status {
        match e {
            ReadError::NotFound {
                group,
                resource,
                name,
            } => Status::not_found(group, resource, name),
            ReadError::TooLargeResourceVersion { requested, current } => {
                Status::too_large_resource_version(*requested, *current)
            }
            ReadError::Finish(f) => f.into(),
            ReadError::Encode(u) => Status::internal(u.to_string()),
            // Never answered: the router forwards these.
            ReadError::Fallback(_) | ReadError::Unproven(_) => Status::internal(e.to_string()),
            ReadError::Busy(l) => l.into(),
            ReadError::NoMemory(m) => m.into(),
        }
    }
}

impl From<&WatchError> for Status {
    fn from(e: &WatchError) -> Status {
        match e {
            WatchError::Expired { .. } => Status::expired(e.to_string()),
        }
    }
}

impl From<&UpstreamError> for Status {
    fn from(e: &UpstreamError) -> Status {
        match e {
            // A plugin's output is the operator's to read, not every client's.
            UpstreamError::Credentials(_) => Status::service_unavailable(
                "kubecache could not get its credentials for the upstream apiserver (see its log)",
            ),
            e => Status::service_unavailable(format!("the upstream apiserver is unreachable: {e}")),
        }
    }
}

impl From<&AuthError> for Status {
    fn from(e: &AuthError) -> Status {
        match e {
            AuthError::HostNotLocal(host) => Status::forbidden(
                "",
                "",
                "",
                &format!(
                    "kubecache in trust-local mode serves only requests for localhost or a loopback address, as kubectl proxy does; this one is for {}",
                    host.as_deref().map_or("no host".into(), crate::go::strconv::quote)
                ),
            ),
            AuthError::ExecNotAllowed { subresource, name } => Status::forbidden(
                "",
                "pods",
                name,
                &format!(
                    "kubecache in trust-local mode does not pass on pods/{subresource} unless it runs with --allow-exec"
                ),
            ),
            AuthError::Impersonation => Status::forbidden(
                "",
                "",
                "",
                "kubecache in trust-local mode does not pass on impersonation: every request through it acts as kubecache itself",
            ),
            // The apiserver's 401 says no more, whatever failed.
            AuthError::Unauthenticated
            | AuthError::InvalidToken
            | AuthError::ProtocolToken(_)
            | AuthError::Anonymous
            | AuthError::TokenReview(_) => Status::new(401, "Unauthorized", "Unauthorized"),
            // Answered as plain text (`too_many_requests_text`).
            AuthError::ReviewsBusy(_) => {
                let mut s = Status::new(429, "TooManyRequests", "Too many requests, please try again later.");
                s.retry_after = Some(1);
                s
            }
            AuthError::Forbidden {
                attributes,
                user,
                reason,
            }
            | AuthError::Impersonate(ImpersonateError::Forbidden {
                attributes,
                requestor: user,
                reason,
            }) => {
                let (group, resource, name) = attributes.refused();
                Status::forbidden(group, resource, name, &attributes.forbidden_message(user, reason))
            }
            // Answered as plain text (`internal_error_text`).
            AuthError::Authorizer { .. } | AuthError::Impersonate(ImpersonateError::WithoutUser(_)) => {
                Status::internal(e.to_string())
            }
            AuthError::Unforwardable(what) => Status::internal(format!(
                "kubecache cannot forward the client's identity upstream: {what} does not fit in a header"
            )),
        }
    }
}

impl From<&LimitError> for Status {
    fn from(e: &LimitError) -> Status {
        match e {
            // Answered as plain text (`too_many_requests_text`); this is
            // what a watch's edge would say.
            LimitError::TooManyRequests { .. }
            | LimitError::TooManyWatches { .. }
            | LimitError::BytesInFlight { .. } => {
                let mut s = Status::new(
                    429,
                    "TooManyRequests",
                    "Too many requests, please try again later.",
                );
                s.retry_after = Some(1);
                s
            }
            LimitError::UriTooLong { len, limit } => Status::new(
                414,
                "RequestURITooLong",
                format!("the request's URI is {len} bytes; kubecache takes at most {limit}"),
            ),
            LimitError::BodyTooLarge { limit, .. } => Status::new(
                413,
                "RequestEntityTooLarge",
                format!("Request entity too large: limit is {limit}"),
            ),
        }
    }
}

/// The apiserver's answer to a client over its flow-control share (its
/// `tooManyRequests`: plain text, `Retry-After: 1`).
pub fn too_many_requests_text(e: &ServeError) -> Option<&'static str> {
    match e {
        ServeError::Limit(
            LimitError::TooManyRequests { .. }
            | LimitError::TooManyWatches { .. }
            | LimitError::BytesInFlight { .. },
        )
        | ServeError::Auth(AuthError::ReviewsBusy(_)) => {
            Some("Too many requests, please try again later.")
        }
        _ => None,
    }
}

/// The apiserver's `InternalError` text for the errors it answers with one
/// (an authorizer's, a malformed impersonation), quoting the request's
/// URI; `None` for the errors answered with a `Status`.
pub fn internal_error_text(request_uri: &str, e: &ServeError) -> Option<String> {
    let error = match e {
        ServeError::Auth(AuthError::Authorizer { error, .. }) => error.clone(),
        ServeError::Auth(AuthError::Impersonate(e @ ImpersonateError::WithoutUser(_))) => {
            e.to_string()
        }
        _ => return None,
    };
    let text = format!(
        "Internal Server Error: {}: {error}",
        crate::go::strconv::quote(request_uri)
    );
    Some(
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;"),
    )
}

/// Whether the apiserver sends its refusal marked not to be sniffed.
pub fn is_refusal(e: &ServeError) -> bool {
    matches!(
        e,
        ServeError::Auth(AuthError::Forbidden { .. })
            | ServeError::Auth(AuthError::Impersonate(ImpersonateError::Forbidden { .. }))
    )
}

/// The `Status` of an error as `personality`'s apiserver words it: its
/// Go's encoding/json errors (a continue token that is not JSON) change
/// with the release; the rest as `From` makes them.
pub fn status_as(e: &ServeError, personality: crate::encode::personality::Personality) -> Status {
    match e {
        ServeError::Options(OptionsError::Continue(t)) if personality.quotes_json_error_bytes() => {
            Status::bad_request(format!("invalid continue token: {}", t.worded(true)))
        }
        _ => Status::from(e),
    }
}

impl From<&ServeError> for Status {
    fn from(e: &ServeError) -> Status {
        match e {
            ServeError::Options(e) => e.into(),
            ServeError::Selector(e) => e.into(),
            ServeError::Read(e) => e.into(),
            ServeError::Forward(e) => e.into(),
            ServeError::Auth(e) => e.into(),
            ServeError::Limit(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::options::FieldError;

    #[test]
    fn each_phases_errors_become_the_apiservers_status() {
        let invalid = OptionsError::Invalid(vec![FieldError {
            reason: "FieldValueForbidden",
            field: "sendInitialEvents",
            message: "Forbidden: sendInitialEvents is forbidden for list".into(),
        }]);
        let s = Status::from(&ServeError::from(invalid));
        assert_eq!((s.code, s.reason), (422, "Invalid"));
        assert_eq!(
            s.message,
            "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"
        );
        let s = Status::from(&OptionsError::VersionWithContinue);
        assert_eq!(
            (s.code, s.message.as_str()),
            (
                400,
                "specifying resource version is not allowed when using continue"
            )
        );
        let s = Status::from(&ReadError::NotFound {
            group: "apps".into(),
            resource: "deployments".into(),
            name: "web".into(),
        });
        assert_eq!(
            (s.code, s.message.as_str()),
            (404, "deployments.apps \"web\" not found")
        );
        let s = Status::from(&ReadError::TooLargeResourceVersion {
            requested: 9,
            current: 3,
        });
        assert_eq!((s.code, s.retry_after), (504, Some(1)));
        assert_eq!(
            s.message,
            "Timeout: Too large resource version: 9, current: 3"
        );
    }

    #[test]
    fn an_authorizer_failure_is_the_apiservers_plain_internal_error_and_limits_their_codes() {
        let e = ServeError::Auth(AuthError::Authorizer {
            request_uri: "/api/v1/pods?x=<y>".into(),
            error: "SubjectAccessReview failed: the upstream answered 503".into(),
        });
        assert_eq!(
            internal_error_text("/api/v1/pods?x=<y>", &e).unwrap(),
            r#"Internal Server Error: "/api/v1/pods?x=&lt;y&gt;": SubjectAccessReview failed: the upstream answered 503"#
        );
        let forbidden = ServeError::Auth(AuthError::Forbidden {
            attributes: crate::access::Attributes::Resource {
                verb: "list".into(),
                group: String::new(),
                version: "v1".into(),
                resource: "pods".into(),
                subresource: String::new(),
                namespace: "team-a".into(),
                name: String::new(),
            },
            user: "alice".into(),
            reason: String::new(),
        });
        assert!(internal_error_text("/", &forbidden).is_none() && is_refusal(&forbidden));
        let s = Status::from(&forbidden);
        assert_eq!(
            s.message,
            r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "team-a""#
        );
        let many = ServeError::Limit(LimitError::TooManyWatches {
            user: "a".into(),
            limit: 1,
        });
        assert_eq!(
            too_many_requests_text(&many),
            Some("Too many requests, please try again later.")
        );
        // A token left unreviewed while every review permit was taken: the
        // overloaded apiserver's 429, never a 401 that would tell the
        // client its token is bad.
        let busy =
            AuthError::ReviewsBusy(std::sync::Arc::new(crate::access::AccessError::Busy(64)));
        let s = Status::from(&busy);
        assert_eq!((s.code, s.retry_after), (429, Some(1)));
        assert_eq!(
            too_many_requests_text(&ServeError::Auth(busy)),
            Some("Too many requests, please try again later.")
        );
        let big = Status::from(&LimitError::BodyTooLarge { len: 9, limit: 3 });
        assert_eq!(
            (big.code, big.message.as_str()),
            (413, "Request entity too large: limit is 3")
        );
        assert_eq!(
            Status::from(&LimitError::UriTooLong { len: 9, limit: 3 }).code,
            414
        );
    }

    #[test]
    fn refusals_are_the_apiservers_forbidden_status() {
        let s = Status::from(&AuthError::ExecNotAllowed {
            subresource: "exec".into(),
            name: "web-1".into(),
        });
        assert_eq!((s.code, s.reason), (403, "Forbidden"));
        assert_eq!(
            s.message,
            "pods \"web-1\" is forbidden: kubecache in trust-local mode does not pass on pods/exec unless it runs with --allow-exec"
        );
        let d = s.details.unwrap();
        assert_eq!((d.kind.as_str(), d.name.as_str()), ("pods", "web-1"));
        let s = Status::from(&AuthError::HostNotLocal(Some("evil.example\"".into())));
        assert_eq!(
            s.message,
            "forbidden: kubecache in trust-local mode serves only requests for localhost or a loopback address, as kubectl proxy does; this one is for \"evil.example\\\"\""
        );
        let s = Status::from(&AuthError::HostNotLocal(None));
        assert!(
            s.message.ends_with("this one is for no host"),
            "{}",
            s.message
        );
    }
}
