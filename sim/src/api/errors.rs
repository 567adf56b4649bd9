//! The one place each of the simulator's errors becomes the `Status` the
//! apiserver would answer with, and the HTTP edge that answers a failed
//! request with it (a watch that fails once under way sends it as its
//! ERROR event instead, in `reads`). Errors of kubecache's own types keep
//! the library's mapping (`kubecache::serve::errors`, which it mirrors).

use super::reads::ReadError;
use super::route::RouteError;
use super::writes::WriteRequestError;
use crate::faults::FaultCommandError;
use crate::patch::PatchError;
use crate::WriteError;
use http::Response;
use kubecache::body::Body;
use kubecache::encode::personality::Personality;
use kubecache::request::accept::Endpoint;
use kubecache::request::options::OptionsError;
use kubecache::request::ContinueToken;
use kubecache::serving::respond::{negotiated_error, status_response};
use kubecache::status::{Cause, Details, Status};

/// The serializers of the simulator's errors: JSON alone, as for the rest.
const ERRORS: Endpoint = Endpoint::JSON_ONLY_ERRORS;

/// The answer to a request that failed: its Status (worded as the
/// simulated release words it), negotiated for a read, as compact JSON
/// for the rest whatever `Accept` says.
pub(super) fn respond(e: &RouteError, release: Personality) -> Response<Body> {
    match e {
        RouteError::Read { error, accept } => {
            negotiated_error(&read_status(error, release), accept, ERRORS, None)
        }
        e => status_response(&Status::from(e)),
    }
}

/// A read's Status: a continue token that is not JSON is worded by the
/// release's Go (`Personality::quotes_json_error_bytes`).
fn read_status(e: &ReadError, release: Personality) -> Status {
    match e {
        ReadError::Options(OptionsError::Continue(t)) if release.quotes_json_error_bytes() => {
            Status::bad_request(format!("invalid continue token: {}", t.worded(true)))
        }
        e => Status::from(e),
    }
}

impl From<&RouteError> for Status {
    fn from(e: &RouteError) -> Status {
        match e {
            RouteError::InjectedFault => Status::internal(e.to_string()),
            // As the cacher answers while it is not ready (since 1.27).
            RouteError::InjectedThrottle(secs) => {
                let secs = u32::try_from(*secs).unwrap_or(u32::MAX);
                let mut s = Status::new(
                    429,
                    "TooManyRequests",
                    "Too many requests, please try again later.",
                );
                s.details = Some(Box::new(Details {
                    retry_after_seconds: Some(secs),
                    ..Details::default()
                }));
                s.retry_after = Some(secs);
                s
            }
            RouteError::NotAResourcePath(_) | RouteError::UnknownResource(_) => Status::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ),
            RouteError::NotSimulated(_) => Status::new(404, "NotFound", e.to_string()),
            RouteError::Logs(e) => e.into(),
            RouteError::OpenApi(e) => Status::internal(e.to_string()),
            RouteError::MethodNotAllowed(_) => Status::method_not_allowed(),
            RouteError::FaultControls(e) => e.into(),
            RouteError::Read { error, .. } => error.into(),
            RouteError::Write(e) => e.into(),
        }
    }
}

impl From<&FaultCommandError> for Status {
    fn from(e: &FaultCommandError) -> Status {
        Status::bad_request(e.to_string())
    }
}

impl From<&ReadError> for Status {
    fn from(e: &ReadError) -> Status {
        match e {
            ReadError::NoAcceptableRoute => Status::no_acceptable_route(),
            ReadError::UnacceptableMedia
            | ReadError::MetadataOfList { .. }
            | ReadError::MetadataListOfObject { .. } => Status::not_acceptable(e.to_string()),
            ReadError::IncludeObject(_)
            | ReadError::VersionNotANumber
            | ReadError::WatchVersionNotANumber(_) => Status::bad_request(e.to_string()),
            ReadError::NoPrinter(_) => Status::internal(e.to_string()),
            ReadError::Options(e) => e.into(),
            ReadError::Selector(e) => e.into(),
            ReadError::VersionCompacted => Status::expired(e.to_string()),
            ReadError::ContinueCompacted { start } => {
                let mut s = Status::expired(e.to_string());
                let next = ContinueToken {
                    rv: -1,
                    start: start.clone(),
                };
                s.metadata.continue_token = Some(next.encode());
                s
            }
            ReadError::Store(e) => e.into(),
        }
    }
}

impl From<&WriteRequestError> for Status {
    fn from(e: &WriteRequestError) -> Status {
        match e {
            WriteRequestError::Body(_)
            | WriteRequestError::UnknownFormat(_)
            | WriteRequestError::Undecodable { .. }
            | WriteRequestError::Unrecognized { .. }
            | WriteRequestError::MetadataNotAnObject => Status::bad_request(e.to_string()),
            // The apiserver's 415 for a body its serializers cannot read,
            // with the reason being the simulator's.
            WriteRequestError::UnreadableMedia(_) => Status::new(
                415,
                "UnsupportedMediaType",
                format!(
                    "{e} (the real apiserver reads YAML too; send application/json or application/vnd.kubernetes.protobuf)"
                ),
            ),
            // go-restful's, with the empty details of its generic response.
            WriteRequestError::UnsupportedPatchType(_) => {
                Status::new(415, "UnsupportedMediaType", "415: Unsupported Media Type")
                    .with_details(Details::default())
            }
            WriteRequestError::Refused {
                group,
                resource,
                kind,
                name,
                error,
            } => refused(group, resource, kind, name, error),
        }
    }
}

/// A refused write of the object `name` of a resource (of kind `kind`).
fn refused(group: &str, resource: &str, kind: &str, name: &str, e: &WriteError) -> Status {
    match e {
        WriteError::NameRequired
        | WriteError::NotAnObject
        | WriteError::MetadataNotAnObject
        | WriteError::NameMissing { .. }
        | WriteError::NameMismatch { .. }
        | WriteError::NamespaceMismatch { .. }
        | WriteError::Stored(_)
        | WriteError::Unwritable(_)
        | WriteError::Undecodable(_)
        | WriteError::Store(_) => Status::bad_request(e.to_string()),
        WriteError::UidChanged { uid } => {
            let cause = Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: \"{uid}\": field is immutable"),
                field: "metadata.uid".into(),
            };
            // Twice, as the apiserver finds it twice: its check of the
            // common fields and the type's own update validation.
            Status::invalid(group, kind, name, vec![cause.clone(), cause])
        }
        WriteError::UidPrecondition { .. } => {
            Status::conflict_because(group, resource, name, &e.to_string())
        }
        WriteError::StaleResourceVersion { .. } => Status::conflict(group, resource, name),
        WriteError::AlreadyExists => Status::already_exists(group, resource, name),
        WriteError::NotFound => Status::not_found(group, resource, name),
        WriteError::Patch(e) => e.into(),
    }
}

impl From<&PatchError> for Status {
    fn from(e: &PatchError) -> Status {
        match e {
            PatchError::BadRequest(m) => Status::bad_request(m),
            PatchError::DoesNotApply => {
                Status::new(422, "Invalid", e.to_string()).with_details(Details::default())
            }
            PatchError::NotAnObject(value) => Status::invalid(
                "",
                "",
                "",
                vec![Cause {
                    reason: "FieldValueInvalid".into(),
                    message: format!("Invalid value: {value}"),
                    field: "patch".into(),
                }],
            ),
            PatchError::TooLarge(m) => Status::new(
                413,
                "RequestEntityTooLarge",
                format!("Request entity too large: {m}"),
            ),
            PatchError::Unknown(m) => Status::new(500, "", m.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::FaultCommand;
    use http::Method;
    use http_body_util::BodyExt;
    use kubecache::encode::codec::DecodeError as CodecDecodeError;
    use kubecache::encode::protobuf::DecodeError;
    use kubecache::request::accept::Accept;
    use kubecache::resource::GroupVersionResource;
    use kubecache::selector::SelectorError;
    use kubecache::serving::read::ReadError as CacheReadError;
    use kubecache::store::StoreError;

    fn answer(s: Status) -> (u16, &'static str, String) {
        (s.code, s.reason, s.message)
    }

    fn json_error() -> serde_json::Error {
        serde_json::from_str::<serde_json::Value>("{").unwrap_err()
    }

    #[test]
    fn routing_errors_are_the_apiservers_404_405_and_500() {
        let not_found = (
            404,
            "NotFound",
            "the server could not find the requested resource".to_string(),
        );
        for e in [
            RouteError::NotAResourcePath("/nope".into()),
            RouteError::UnknownResource(GroupVersionResource::new("", "v1", "widgets")),
        ] {
            assert_eq!(answer(Status::from(&e)), not_found, "{e}");
        }
        let s = Status::from(&RouteError::NotSimulated(
            "the status subresource of pods".into(),
        ));
        assert_eq!(
            answer(s),
            (
                404,
                "NotFound",
                "the kubecache simulator does not simulate the status subresource of pods".into()
            )
        );
        let s = Status::from(&RouteError::MethodNotAllowed(Method::PUT));
        assert_eq!((s.code, s.reason), (405, "MethodNotAllowed"));
        let s = Status::from(&RouteError::InjectedFault);
        assert_eq!(
            answer(s),
            (
                500,
                "InternalError",
                "Internal error occurred: injected fault".into()
            )
        );
    }

    #[test]
    fn a_bad_fault_command_is_a_400_in_its_own_words() {
        let e = FaultCommand::parse("stallWatches", "maybe").unwrap_err();
        assert_eq!(
            answer(Status::from(&RouteError::from(e))),
            (
                400,
                "BadRequest",
                "stallWatches=\"maybe\": expected true or false".into()
            )
        );
    }

    #[test]
    fn each_read_error_has_the_apiservers_code_and_reason() {
        let cases: Vec<(ReadError, u16, &str)> = vec![
            (ReadError::NoAcceptableRoute, 406, "NotAcceptable"),
            (ReadError::UnacceptableMedia, 406, "NotAcceptable"),
            (
                ReadError::MetadataOfList {
                    list: "*core.PodList".into(),
                },
                406,
                "NotAcceptable",
            ),
            (
                ReadError::MetadataListOfObject {
                    object: "*core.Pod".into(),
                },
                406,
                "NotAcceptable",
            ),
            (ReadError::IncludeObject("All".into()), 400, "BadRequest"),
            (
                ReadError::NoPrinter(GroupVersionResource::new("", "v1", "pods")),
                500,
                "InternalError",
            ),
            (OptionsError::VersionWithContinue.into(), 400, "BadRequest"),
            (SelectorError::Label("bad".into()).into(), 400, "BadRequest"),
            (ReadError::VersionNotANumber, 400, "BadRequest"),
            (
                ReadError::WatchVersionNotANumber("x".into()),
                400,
                "BadRequest",
            ),
            (ReadError::VersionCompacted, 410, "Expired"),
            (
                CacheReadError::NotFound {
                    group: String::new(),
                    resource: "pods".into(),
                    name: "web".into(),
                }
                .into(),
                404,
                "NotFound",
            ),
            (
                CacheReadError::TooLargeResourceVersion {
                    requested: 9,
                    current: 3,
                }
                .into(),
                504,
                "Timeout",
            ),
        ];
        for (e, code, reason) in cases {
            let s = Status::from(&e);
            assert_eq!((s.code, s.reason), (code, reason), "{e:?}");
        }
        assert_eq!(
            Status::from(&ReadError::UnacceptableMedia).message,
            "only the following media types are accepted: application/json"
        );
        assert_eq!(
            Status::from(&ReadError::IncludeObject("All".into())).message,
            "Unable to convert to Table as requested: includeObject: Invalid value: \"All\": must be 'Metadata', 'Object', 'None', or empty"
        );
    }

    #[test]
    fn an_expired_continue_token_is_answered_with_one_that_goes_on_from_the_latest() {
        let s = Status::from(&ReadError::ContinueCompacted {
            start: "default/web".into(),
        });
        assert_eq!((s.code, s.reason), (410, "Expired"));
        assert!(s
            .message
            .starts_with("The provided continue parameter is too old"));
        let token = s.metadata.continue_token.expect("a token to go on with");
        assert_eq!(
            ContinueToken::decode(&token).unwrap(),
            ContinueToken {
                rv: -1,
                start: "default/web".into()
            }
        );
    }

    fn refused(error: WriteError) -> Status {
        let e = WriteRequestError::Refused {
            group: "apps".into(),
            resource: "deployments".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            error,
        };
        Status::from(&e)
    }

    #[test]
    fn each_refused_write_names_its_object_as_the_apiserver_does() {
        assert_eq!(
            answer(refused(WriteError::NotFound)),
            (404, "NotFound", "deployments.apps \"web\" not found".into())
        );
        assert_eq!(
            answer(refused(WriteError::AlreadyExists)),
            (
                409,
                "AlreadyExists",
                "deployments.apps \"web\" already exists".into()
            )
        );
        let stale = refused(WriteError::StaleResourceVersion {
            given: "3".into(),
            stored: "4".into(),
        });
        assert_eq!(
            answer(stale),
            (409, "Conflict", "Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified; please apply your changes to the latest version and try again".into())
        );
        let precondition = refused(WriteError::UidPrecondition {
            key: "/registry/deployments/default/web".into(),
            precondition: "a".into(),
            stored: "b".into(),
        });
        assert_eq!(
            answer(precondition),
            (409, "Conflict", "Operation cannot be fulfilled on deployments.apps \"web\": StorageError: invalid object, Code: 4, Key: /registry/deployments/default/web, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: a, UID in object meta: b".into())
        );
        let s = refused(WriteError::UidChanged { uid: "a".into() });
        assert_eq!(
            answer(s.clone()),
            (
                422,
                "Invalid",
                "Deployment.apps \"web\" is invalid: metadata.uid: Invalid value: \"a\": field is immutable".into()
            )
        );
        assert_eq!(s.details.unwrap().causes.len(), 2);
        for e in [
            WriteError::NameRequired,
            WriteError::NotAnObject,
            WriteError::MetadataNotAnObject,
            WriteError::NameMissing { url: "web".into() },
            WriteError::NameMismatch {
                object: "api".into(),
                url: "web".into(),
            },
            WriteError::NamespaceMismatch {
                object: "a".into(),
                request: "b".into(),
            },
            WriteError::Stored(json_error()),
            WriteError::Unwritable(json_error()),
            WriteError::Undecodable(CodecDecodeError::NoName),
            WriteError::Store(StoreError::NotNewer { got: 1, have: 2 }),
        ] {
            let words = e.to_string();
            assert_eq!(answer(refused(e)), (400, "BadRequest", words));
        }
    }

    #[test]
    fn a_write_request_that_is_not_one_is_a_400_or_go_restfuls_415() {
        let s = Status::from(&WriteRequestError::UnknownFormat(json_error()));
        assert_eq!((s.code, s.reason), (400, "BadRequest"));
        assert!(s
            .message
            .starts_with("the body of the request was in an unknown format: "));
        let s = Status::from(&WriteRequestError::UnreadableMedia(
            "application/yaml".into(),
        ));
        assert_eq!((s.code, s.reason), (415, "UnsupportedMediaType"));
        assert!(s.message.starts_with(
            "the kubecache simulator reads JSON and protobuf request bodies only, not \"application/yaml\""
        ));
        // A protobuf body that does not decode: the apiserver's 400s, in
        // its words (compared by hand with v1.20's answers).
        let s = Status::from(&WriteRequestError::Undecodable {
            kind: "ConfigMap".into(),
            version: "v1".into(),
            into: "ConfigMap".into(),
            error: DecodeError::UnexpectedEof,
        });
        assert_eq!(
            answer(s),
            (
                400,
                "BadRequest",
                "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: unexpected EOF"
                    .into()
            )
        );
        let s = Status::from(&WriteRequestError::Unrecognized {
            into: "ConfigMap".into(),
            error: DecodeError::NoMagic,
            summary: "67617262616765".into(),
        });
        assert_eq!(
            answer(s),
            (
                400,
                "BadRequest",
                "the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] (67617262616765)".into()
            )
        );
        let s = Status::from(&WriteRequestError::MetadataNotAnObject);
        assert_eq!(
            answer(s),
            (400, "BadRequest", "metadata must be an object".into())
        );
        let s = Status::from(&WriteRequestError::UnsupportedPatchType(None));
        assert_eq!(
            answer(s.clone()),
            (
                415,
                "UnsupportedMediaType",
                "415: Unsupported Media Type".into()
            )
        );
        assert_eq!(s.details.as_deref(), Some(&Details::default()));
    }

    #[test]
    fn each_patch_error_has_the_apiservers_code_and_reason() {
        let cases = [
            (PatchError::BadRequest("x".into()), 400, "BadRequest"),
            (PatchError::DoesNotApply, 422, "Invalid"),
            (PatchError::NotAnObject("1".into()), 422, "Invalid"),
            (
                PatchError::TooLarge("x".into()),
                413,
                "RequestEntityTooLarge",
            ),
            (PatchError::Unknown("x".into()), 500, ""),
        ];
        for (e, code, reason) in cases {
            let s = refused(e.clone().into());
            assert_eq!((s.code, s.reason), (code, reason), "{e:?}");
        }
        let s = Status::from(&PatchError::NotAnObject("1".into()));
        assert_eq!(s.message, " \"\" is invalid: patch: Invalid value: 1");
    }

    async fn body(r: Response<Body>) -> String {
        let bytes = r.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn a_reads_error_is_negotiated_and_the_others_are_compact_json() {
        let read = RouteError::Read {
            error: ReadError::VersionNotANumber,
            accept: Accept::new(Some("application/yaml")),
        };
        let r = respond(&read, Personality::V1_20);
        assert_eq!(r.status(), 400);
        // No clause the errors' serializers take: the indented fallback.
        assert!(body(r).await.starts_with("{\n  \"kind\": \"Status\""));
        let r = respond(&RouteError::InjectedFault, Personality::V1_20);
        assert_eq!(r.status(), 500);
        assert!(body(r).await.starts_with("{\"kind\":\"Status\""));
    }
}
