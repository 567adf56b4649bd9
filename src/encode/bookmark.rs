//! BOOKMARK objects as the apiserver encodes them. The cacher sends its
//! type's empty object (`newFunc()`) with only `metadata.resourceVersion`
//! set, so a bookmark carries the zero value of the served version: the
//! fields Go encodes without `omitempty`, and what conversion from the
//! internal version adds. The table below was read off the real
//! kube-apiserver (v1.20) and is checked against it by
//! tests/bookmarks.rs; a kind not in it gets the bare type and metadata.

use super::codec::{ListStyle, TypeCodec};
use super::personality::Personality;
use bytes::Bytes;

/// The annotation that closes the initial events of a streaming list.
const INITIAL_EVENTS_END: &str = r#""k8s.io/initial-events-end":"true""#;

/// A bookmark object at `rv`; `initial_events_end` marks the end of a
/// streaming list's initial events.
pub fn object(codec: &TypeCodec, rv: u64, initial_events_end: bool) -> Bytes {
    let kind = serde_json::Value::from(codec.kind.as_str());
    let api_version = serde_json::Value::from(codec.api_version.as_str());
    if codec.style == ListStyle::Unstructured {
        // Custom resources are maps: keys come out sorted, and an empty
        // creationTimestamp is not written.
        let annotations = if initial_events_end {
            format!(r#""annotations":{{{INITIAL_EVENTS_END}}},"#)
        } else {
            String::new()
        };
        return Bytes::from(format!(
            r#"{{"apiVersion":{api_version},"kind":{kind},"metadata":{{{annotations}"resourceVersion":"{rv}"}}}}"#
        ));
    }
    let (fixed, rest) = zero_value(&codec.group, &codec.api_version, &codec.kind);
    let meta = versioned_meta(fixed, rv, initial_events_end);
    let object = format!(r#"{{"kind":{kind},"apiVersion":{api_version},"metadata":{meta}{rest}}}"#);
    if codec.personality.omits_zero_creation_timestamp() {
        // The object's and its templates' empty ObjectMeta alike.
        return Bytes::from(
            object
                .replace(r#","creationTimestamp":null"#, "")
                .replace(r#""creationTimestamp":null"#, ""),
        );
    }
    Bytes::from(object)
}

/// A bookmark's metadata as its internal object has it, which is what a
/// metadata-only watch's bookmark and a Table row carry: without the
/// annotations only the conversion to a version adds.
pub fn object_meta(rv: u64, initial_events_end: bool, personality: Personality) -> String {
    let m = versioned_meta(None, rv, initial_events_end);
    if personality.omits_zero_creation_timestamp() {
        return m.replace(r#","creationTimestamp":null"#, "");
    }
    m
}

/// The metadata with the annotation the kind's conversion adds, if any.
fn versioned_meta(fixed: Option<&str>, rv: u64, initial_events_end: bool) -> String {
    let annotations: Vec<&str> = fixed
        .into_iter()
        .chain(initial_events_end.then_some(INITIAL_EVENTS_END))
        .collect();
    let annotations = if annotations.is_empty() {
        String::new()
    } else {
        format!(r#","annotations":{{{}}}"#, annotations.join(","))
    };
    format!(r#"{{"resourceVersion":"{rv}","creationTimestamp":null{annotations}}}"#)
}

/// The empty pod template of workload kinds.
macro_rules! pod_template {
    () => {
        r#""template":{"metadata":{"creationTimestamp":null},"spec":{"containers":null}}"#
    };
}

/// What follows `metadata` in a kind's empty object, and an annotation its
/// conversion always adds.
fn zero_value(group: &str, api_version: &str, kind: &str) -> (Option<&'static str>, &'static str) {
    let rest = match (group, kind) {
        ("", "Pod") => r#","spec":{"containers":null},"status":{}"#,
        ("", "Service") => r#","spec":{},"status":{"loadBalancer":{}}"#,
        ("", "PersistentVolumeClaim") => r#","spec":{"resources":{}},"status":{}"#,
        ("", "PersistentVolume" | "Namespace") => r#","spec":{},"status":{}"#,
        ("", "Node") => {
            r#","spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}}"#
        }
        ("apps", "Deployment") => {
            concat!(
                r#","spec":{"replicas":0,"selector":null,"#,
                pod_template!(),
                r#","strategy":{}},"status":{}"#
            )
        }
        ("apps", "ReplicaSet") => {
            concat!(
                r#","spec":{"replicas":0,"selector":null,"#,
                pod_template!(),
                r#"},"status":{"replicas":0}"#
            )
        }
        ("apps", "StatefulSet") => concat!(
            r#","spec":{"replicas":0,"selector":null,"#,
            pod_template!(),
            r#","serviceName":"","updateStrategy":{}},"status":{"replicas":0}"#
        ),
        ("apps", "DaemonSet") => {
            return (
                Some(r#""deprecated.daemonset.template.generation":"0""#),
                concat!(
                    r#","spec":{"selector":null,"#,
                    pod_template!(),
                    r#","updateStrategy":{}},"status":{"currentNumberScheduled":0,"numberMisscheduled":0,"desiredNumberScheduled":0,"numberReady":0}"#
                ),
            )
        }
        ("batch", "Job") => concat!(r#","spec":{"#, pod_template!(), r#"},"status":{}"#),
        ("batch", "CronJob") => concat!(
            r#","spec":{"schedule":"","jobTemplate":{"metadata":{"creationTimestamp":null},"spec":{"#,
            pod_template!(),
            r#"}}},"status":{}"#
        ),
        ("networking.k8s.io", "Ingress") => r#","spec":{},"status":{"loadBalancer":{}}"#,
        ("storage.k8s.io", "StorageClass") => r#","provisioner":"""#,
        ("coordination.k8s.io", "Lease") => r#","spec":{}"#,
        ("discovery.k8s.io", "EndpointSlice") => {
            r#","addressType":"","endpoints":null,"ports":null"#
        }
        ("rbac.authorization.k8s.io", "ClusterRole" | "Role") => r#","rules":null"#,
        // autoscaling/v1 has no lists in its status to write as `null`.
        ("autoscaling", "HorizontalPodAutoscaler") if api_version == "autoscaling/v1" => {
            r#","spec":{"scaleTargetRef":{"kind":"","name":""},"maxReplicas":0},"status":{"currentReplicas":0,"desiredReplicas":0}"#
        }
        ("autoscaling", "HorizontalPodAutoscaler") => {
            r#","spec":{"scaleTargetRef":{"kind":"","name":""},"maxReplicas":0},"status":{"currentReplicas":0,"desiredReplicas":0,"currentMetrics":null,"conditions":null}"#
        }
        ("policy", "PodSecurityPolicy") => {
            r#","spec":{"seLinux":{"rule":""},"runAsUser":{"rule":""},"supplementalGroups":{},"fsGroup":{},"allowPrivilegeEscalation":false}"#
        }
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => {
            r#","spec":{"priorityLevelConfiguration":{"name":""},"matchingPrecedence":0},"status":{}"#
        }
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            r#","spec":{"type":""},"status":{}"#
        }
        ("apiregistration.k8s.io", "APIService") => {
            r#","spec":{"groupPriorityMinimum":0,"versionPriority":0},"status":{}"#
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            r#","spec":{"group":"","names":{"plural":"","kind":""},"scope":"","versions":null},"status":{"conditions":null,"acceptedNames":{"plural":"","kind":""},"storedVersions":null}"#
        }
        _ => "",
    };
    (None, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(group: &str, api_version: &str, kind: &str) -> TypeCodec {
        TypeCodec::new(group, api_version, kind, true, ListStyle::Typed)
    }

    fn text(b: Bytes) -> String {
        String::from_utf8(b.to_vec()).unwrap()
    }

    #[test]
    fn a_pod_bookmark_is_the_empty_pod_at_the_version() {
        assert_eq!(
            text(object(&typed("", "v1", "Pod"), 42, false)),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"42","creationTimestamp":null},"spec":{"containers":null},"status":{}}"#
        );
    }

    #[test]
    fn the_initial_events_end_annotation_follows_any_annotation_conversion_adds() {
        assert_eq!(
            text(object(&typed("apps", "apps/v1", "DaemonSet"), 7, true)),
            r#"{"kind":"DaemonSet","apiVersion":"apps/v1","metadata":{"resourceVersion":"7","creationTimestamp":null,"annotations":{"deprecated.daemonset.template.generation":"0","k8s.io/initial-events-end":"true"}},"spec":{"selector":null,"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":null}},"updateStrategy":{}},"status":{"currentNumberScheduled":0,"numberMisscheduled":0,"desiredNumberScheduled":0,"numberReady":0}}"#
        );
    }

    #[test]
    fn an_hpa_bookmark_has_status_lists_but_in_autoscaling_v1() {
        // As v1.20 sent them.
        let hpa = |v: &str| {
            text(object(
                &typed("autoscaling", v, "HorizontalPodAutoscaler"),
                109,
                false,
            ))
        };
        assert_eq!(
            hpa("autoscaling/v1"),
            r#"{"kind":"HorizontalPodAutoscaler","apiVersion":"autoscaling/v1","metadata":{"resourceVersion":"109","creationTimestamp":null},"spec":{"scaleTargetRef":{"kind":"","name":""},"maxReplicas":0},"status":{"currentReplicas":0,"desiredReplicas":0}}"#
        );
        for v in ["autoscaling/v2beta1", "autoscaling/v2beta2"] {
            assert_eq!(
                hpa(v),
                format!(
                    r#"{{"kind":"HorizontalPodAutoscaler","apiVersion":"{v}","metadata":{{"resourceVersion":"109","creationTimestamp":null}},"spec":{{"scaleTargetRef":{{"kind":"","name":""}},"maxReplicas":0}},"status":{{"currentReplicas":0,"desiredReplicas":0,"currentMetrics":null,"conditions":null}}}}"#
                )
            );
        }
    }

    #[test]
    fn custom_resource_bookmarks_have_sorted_keys_and_no_creation_timestamp() {
        let c = TypeCodec::new("x.io", "x.io/v1", "Widget", true, ListStyle::Unstructured);
        assert_eq!(
            text(object(&c, 9, false)),
            r#"{"apiVersion":"x.io/v1","kind":"Widget","metadata":{"resourceVersion":"9"}}"#
        );
        assert_eq!(
            text(object(&c, 9, true)),
            r#"{"apiVersion":"x.io/v1","kind":"Widget","metadata":{"annotations":{"k8s.io/initial-events-end":"true"},"resourceVersion":"9"}}"#
        );
    }

    #[test]
    fn every_bookmark_is_valid_json() {
        for (g, k) in [
            ("", "Node"),
            ("apps", "Deployment"),
            ("apps", "ReplicaSet"),
            ("apps", "StatefulSet"),
            ("batch", "Job"),
            ("batch", "CronJob"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("autoscaling", "HorizontalPodAutoscaler"),
            ("policy", "PodSecurityPolicy"),
            ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
            ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
            ("apiregistration.k8s.io", "APIService"),
            ("", "Unknown"),
        ] {
            for end in [false, true] {
                let b = object(&typed(g, "v1", k), 1, end);
                let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
                assert_eq!(v["metadata"]["resourceVersion"], "1", "{k}");
            }
        }
    }
}
