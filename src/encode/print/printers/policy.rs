//! Ports of printers.go for access, policy and scheduling types: role
//! bindings, priority and runtime classes, pod disruption budgets, pod
//! security policies, network policies, controller revisions, pod
//! templates, resource quotas, webhook configurations, admission
//! policies, certificate signing requests and cluster trust bundles.

use super::fields::{arr, at, count, created, int, name, s, RowFn};
use super::workloads::{format_label_selector, format_labels};
use crate::encode::personality::Printers;
use crate::encode::print::row::RowBuilder;
use serde_json::Value;

pub fn lookup(group: &str, version: &str, resource: &str) -> Option<RowFn> {
    Some(match (group, version, resource) {
        ("rbac.authorization.k8s.io", "v1" | "v1beta1", "rolebindings" | "clusterrolebindings") => {
            role_binding
        }
        ("scheduling.k8s.io", "v1" | "v1beta1", "priorityclasses") => priority_class,
        ("node.k8s.io", "v1" | "v1beta1", "runtimeclasses") => runtime_class,
        ("policy", "v1beta1", "poddisruptionbudgets") => pod_disruption_budget,
        ("policy", "v1beta1", "podsecuritypolicies") => pod_security_policy,
        ("networking.k8s.io", "v1", "networkpolicies") => network_policy,
        ("apps", "v1", "controllerrevisions") => controller_revision,
        ("", "v1", "podtemplates") => pod_template,
        ("", "v1", "resourcequotas") => resource_quota,
        (
            "admissionregistration.k8s.io",
            "v1" | "v1beta1",
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations",
        ) => webhook_configuration,
        ("certificates.k8s.io", "v1" | "v1beta1", "certificatesigningrequests") => {
            certificate_signing_request
        }
        _ => return None,
    })
}

/// `printRoleBinding` and `printClusterRoleBinding`: the role as
/// kind/name, and (wide) the subjects of `rbac.SubjectsStrings` joined
/// with ", " (subjects of other kinds are not shown).
fn role_binding(b: &Value, r: &mut RowBuilder) {
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for subject in arr(b, &["subjects"]) {
        let n = s(subject, &["name"]);
        match s(subject, &["kind"]) {
            "ServiceAccount" => sas.push(format!("{}/{n}", s(subject, &["namespace"]))),
            "User" => users.push(n.to_string()),
            "Group" => groups.push(n.to_string()),
            _ => {}
        }
    }
    r.str(name(b))
        .str(&format!(
            "{}/{}",
            s(b, &["roleRef", "kind"]),
            s(b, &["roleRef", "name"])
        ))
        .since_field(created(b))
        .str(&users.join(", "))
        .str(&groups.join(", "))
        .str(&sas.join(", "));
}

fn priority_class(p: &Value, r: &mut RowBuilder) {
    r.str(name(p))
        .int(int(p, &["value"]))
        .bool(super::fields::flag(p, &["globalDefault"]))
        .since_field(created(p));
}

/// v1.30's to v1.36's printers where they differ from v1.20's (or serve
/// a version v1.20 did not have with a printer it did): all v1.36's but
/// resource quotas through v1.32, whose Age is still second
/// (kubernetes#129419 moved it last after v1.32.0), and priority classes
/// through v1.31, without PreemptionPolicy (#126529, 1.32); CSRs from
/// v1.22 with their RequestedDuration (#99494).
pub fn lookup_since_v1_32(
    printers: Printers,
    group: &str,
    version: &str,
    resource: &str,
) -> Option<RowFn> {
    Some(match (group, version, resource) {
        ("scheduling.k8s.io", "v1", "priorityclasses") if printers.minor() <= 31 => return None,
        ("scheduling.k8s.io", "v1", "priorityclasses") => priority_class_v1_36,
        ("", "v1", "resourcequotas") if printers.minor() <= 32 => return None,
        ("", "v1", "resourcequotas") => resource_quota_v1_36,
        ("certificates.k8s.io", "v1", "certificatesigningrequests") if printers.minor() >= 22 => {
            certificate_signing_request_v1_22
        }
        ("policy", "v1", "poddisruptionbudgets") => pod_disruption_budget,
        ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies") => {
            validating_admission_policy
        }
        ("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicies") => {
            mutating_admission_policy
        }
        ("certificates.k8s.io", "v1alpha1" | "v1beta1", "clustertrustbundles") => {
            cluster_trust_bundle
        }
        _ => return None,
    })
}

/// `printValidatingAdmissionPolicy` and `printMutatingAdmissionPolicy`:
/// how many rules (`field`) the policy has, and its param kind as
/// apiVersion/kind ("<unset>" without one).
fn admission_policy(p: &Value, r: &mut RowBuilder, field: &str) {
    let param_kind = match at(p, &["spec", "paramKind"]).filter(|k| !k.is_null()) {
        Some(k) => format!("{}/{}", s(k, &["apiVersion"]), s(k, &["kind"])),
        None => "<unset>".into(),
    };
    r.str(name(p))
        .int(count(p, &["spec", field]) as i64)
        .str(&param_kind)
        .since_field(created(p));
}

fn validating_admission_policy(p: &Value, r: &mut RowBuilder) {
    admission_policy(p, r, "validations")
}

fn mutating_admission_policy(p: &Value, r: &mut RowBuilder) {
    admission_policy(p, r, "mutations")
}

/// `printClusterTrustBundle`: the signer ("<none>" without one); no age.
fn cluster_trust_bundle(b: &Value, r: &mut RowBuilder) {
    let signer = match s(b, &["spec", "signerName"]) {
        "" => "<none>",
        signer => signer,
    };
    r.str(name(b)).str(signer);
}

/// v1.36: the preemption policy last (`options.Wide`, which the server
/// always sets), "" when unset.
fn priority_class_v1_36(p: &Value, r: &mut RowBuilder) {
    priority_class(p, r);
    r.str(s(p, &["preemptionPolicy"]));
}

fn runtime_class(c: &Value, r: &mut RowBuilder) {
    r.str(name(c))
        .str(s(c, &["handler"]))
        .since_field(created(c));
}

/// `IntOrString.String()` of a set pointer field, "N/A" when unset.
fn int_or_string(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "N/A".into(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.as_i64().unwrap_or(0).to_string(),
    }
}

fn pod_disruption_budget(p: &Value, r: &mut RowBuilder) {
    r.str(name(p))
        .str(&int_or_string(at(p, &["spec", "minAvailable"])))
        .str(&int_or_string(at(p, &["spec", "maxUnavailable"])))
        .int(int(p, &["status", "disruptionsAllowed"]))
        .since_field(created(p));
}

/// `printPodSecurityPolicy`: privileged as `%v` writes a bool, the
/// allowed capabilities and volumes comma-separated, the strategies'
/// rules, read-only root as a bool cell; no age.
fn pod_security_policy(p: &Value, r: &mut RowBuilder) {
    let list = |field: &str| {
        arr(p, &["spec", field])
            .iter()
            .map(|v| v.as_str().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(",")
    };
    let privileged = if super::fields::flag(p, &["spec", "privileged"]) {
        "true"
    } else {
        "false"
    };
    r.str(name(p))
        .str(privileged)
        .str(&list("allowedCapabilities"))
        .str(s(p, &["spec", "seLinux", "rule"]))
        .str(s(p, &["spec", "runAsUser", "rule"]))
        .str(s(p, &["spec", "fsGroup", "rule"]))
        .str(s(p, &["spec", "supplementalGroups", "rule"]))
        .bool(super::fields::flag(p, &["spec", "readOnlyRootFilesystem"]))
        .str(&list("volumes"));
}

/// `printNetworkPolicy`: the pod selector (never nil in Go; an empty one
/// and a missing one both print `<none>`).
fn network_policy(p: &Value, r: &mut RowBuilder) {
    r.str(name(p))
        .str(&format_label_selector(at(p, &["spec", "podSelector"])))
        .since_field(created(p));
}

/// `printControllerRevision`: the controller owner reference as
/// `formatResourceName` writes it (`kind.group/name`, lower-cased kind
/// and group), the revision as an integer.
fn controller_revision(c: &Value, r: &mut RowBuilder) {
    let controller = arr(c, &["metadata", "ownerReferences"])
        .iter()
        .find(|o| super::fields::flag(o, &["controller"]))
        .map_or_else(
            || "<none>".to_string(),
            |o| {
                // `schema.ParseGroupVersion`: the group is what comes before
                // the slash (validation allows at most one).
                let api_version = s(o, &["apiVersion"]);
                let group = api_version.split_once('/').map_or("", |(g, _)| g);
                let kind = s(o, &["kind"]);
                let n = s(o, &["name"]);
                match (group, kind) {
                    ("", "") => n.to_string(),
                    ("", k) => format!("{}/{n}", crate::go::strings::to_lower(k)),
                    (g, k) => format!("{}/{n}", crate::go::strings::to_lower(&format!("{k}.{g}"))),
                }
            },
        );
    r.str(name(c))
        .str(&controller)
        .int(int(c, &["revision"]))
        .since_field(created(c));
}

fn pod_template(t: &Value, r: &mut RowBuilder) {
    let cs = arr(t, &["template", "spec", "containers"]);
    let names: Vec<&str> = cs.iter().map(|c| s(c, &["name"])).collect();
    let images: Vec<&str> = cs.iter().map(|c| s(c, &["image"])).collect();
    r.str(name(t))
        .str(&names.join(","))
        .str(&images.join(","))
        .str(&format_labels(at(t, &["template", "metadata", "labels"])));
}

/// `printResourceQuota`: `resource: used/hard` for each resource of
/// `status.hard`, sorted by name, those named `limits.*` in the Limit
/// column. Quantities in the JSON are already as `Quantity.String()`
/// writes them; a resource without usage shows a zero quantity's "0".
fn resource_quota(q: &Value, r: &mut RowBuilder) {
    let (requests, limits) = quota_usage(q);
    r.str(name(q))
        .since_field(created(q))
        .str(&requests)
        .str(&limits);
}

/// v1.36 puts the age last.
fn resource_quota_v1_36(q: &Value, r: &mut RowBuilder) {
    let (requests, limits) = quota_usage(q);
    r.str(name(q))
        .str(&requests)
        .str(&limits)
        .since_field(created(q));
}

/// `printResourceQuota`'s request and limit cells: "resource: used/hard"
/// by resource name, limits apart.
fn quota_usage(q: &Value) -> (String, String) {
    let hard = at(q, &["status", "hard"]).and_then(Value::as_object);
    let mut resources: Vec<(&str, &str)> = hard
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("0")))
                .collect()
        })
        .unwrap_or_default();
    resources.sort_unstable();
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for (resource, hard) in resources {
        let used = at(q, &["status", "used", resource])
            .and_then(Value::as_str)
            .unwrap_or("0");
        let cell = format!("{resource}: {used}/{hard}");
        let pieces: Vec<&str> = resource.split('.').collect();
        if pieces.len() > 1 && pieces[0] == "limits" {
            limits.push(cell);
        } else {
            requests.push(cell);
        }
    }
    (requests.join(", "), limits.join(", "))
}

fn webhook_configuration(w: &Value, r: &mut RowBuilder) {
    r.str(name(w))
        .int(count(w, &["webhooks"]) as i64)
        .since_field(created(w));
}

/// `printCertificateSigningRequest` with `extractCSRStatus`: Denied over
/// Approved over Pending, then ",Failed" and ",Issued".
fn certificate_signing_request(c: &Value, r: &mut RowBuilder) {
    certificate_signing_request_as(c, r, false)
}

/// From v1.22 the requested duration follows the requestor (#99494).
fn certificate_signing_request_v1_22(c: &Value, r: &mut RowBuilder) {
    certificate_signing_request_as(c, r, true)
}

fn certificate_signing_request_as(c: &Value, r: &mut RowBuilder, requested_duration: bool) {
    let (mut approved, mut denied, mut failed) = (false, false, false);
    for cond in arr(c, &["status", "conditions"]) {
        match s(cond, &["type"]) {
            "Approved" => approved = true,
            "Denied" => denied = true,
            "Failed" => failed = true,
            _ => {}
        }
    }
    let mut status = String::from(if denied {
        "Denied"
    } else if approved {
        "Approved"
    } else {
        "Pending"
    });
    if failed {
        status.push_str(",Failed");
    }
    if !s(c, &["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    let signer = match s(c, &["spec", "signerName"]) {
        "" => "<none>",
        signer => signer,
    };
    r.str(name(c))
        .since_field(created(c))
        .str(signer)
        .str(s(c, &["spec", "username"]));
    if requested_duration {
        // `duration.HumanDuration(csr.ExpirationSecondsToDuration(*s))`.
        let duration = match at(c, &["spec", "expirationSeconds"]).and_then(Value::as_i64) {
            Some(seconds) => crate::go::time::human_duration(seconds.saturating_mul(1_000_000_000)),
            None => "<none>".into(),
        };
        r.str(&duration);
    }
    r.str(&status);
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{cells, check_as, column_count, column_count_as};
    use crate::encode::personality::Personality;
    use serde_json::{json, Value};

    // Each case is an object made on the real v1.20 apiserver, with the
    // cells its Table showed.

    const NOW: &str = "2026-01-01T01:00:00Z";

    fn meta(name: &str) -> Value {
        json!({"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"})
    }

    fn check(gvr: (&str, &str, &str), obj: Value, want: &str) {
        let got = cells(gvr, obj, NOW);
        assert_eq!(got, want, "{gvr:?}");
        let n = serde_json::from_str::<Value>(&format!("{{{got}}}")).unwrap()["cells"]
            .as_array()
            .unwrap()
            .len();
        assert_eq!(n, column_count(gvr), "{gvr:?}");
    }

    const RBAC: &str = "rbac.authorization.k8s.io";

    #[test]
    fn role_bindings_list_users_groups_and_service_accounts() {
        let rb = json!({"metadata": meta("rb1"),
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "r1"},
        "subjects": [
            {"kind": "User", "name": "u1", "apiGroup": RBAC},
            {"kind": "ServiceAccount", "name": "sa1", "namespace": "other"},
            {"kind": "Group", "name": "g1", "apiGroup": RBAC},
            {"kind": "User", "name": "u2", "apiGroup": RBAC},
            {"kind": "ServiceAccount", "name": "sa2", "namespace": "ns"},
        ]});
        let want = r#""cells":["rb1","Role/r1","60m","u1, u2","g1","other/sa1, ns/sa2"]"#;
        for v in ["v1", "v1beta1"] {
            check((RBAC, v, "rolebindings"), rb.clone(), want);
        }
        let crb = json!({"metadata": meta("crb"),
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "Group", "name": "system:a", "apiGroup": RBAC},
                {"kind": "Group", "name": "system:b", "apiGroup": RBAC}]});
        let want = r#""cells":["crb","ClusterRole/view","60m","","system:a, system:b",""]"#;
        for v in ["v1", "v1beta1"] {
            check((RBAC, v, "clusterrolebindings"), crb.clone(), want);
        }
        let none = json!({"metadata": meta("rb2"),
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"}});
        check(
            (RBAC, "v1", "rolebindings"),
            none,
            r#""cells":["rb2","ClusterRole/view","60m","","",""]"#,
        );
    }

    #[test]
    fn priority_and_runtime_classes() {
        for v in ["v1", "v1beta1"] {
            let gvr = ("scheduling.k8s.io", v, "priorityclasses");
            check(
                gvr,
                json!({"metadata": meta("pc1"), "value": -5, "description": "x"}),
                r#""cells":["pc1",-5,false,"60m"]"#,
            );
            check(
                gvr,
                json!({"metadata": meta("pc2"), "value": 1000000, "globalDefault": true}),
                r#""cells":["pc2",1000000,true,"60m"]"#,
            );
            check(
                ("node.k8s.io", v, "runtimeclasses"),
                json!({"metadata": meta("rc"), "handler": "kata-x"}),
                r#""cells":["rc","kata-x","60m"]"#,
            );
        }
    }

    #[test]
    fn pod_disruption_budgets_show_int_or_string_or_na() {
        let gvr = ("policy", "v1beta1", "poddisruptionbudgets");
        let pdb = |spec: Value, status: Value| json!({"metadata": meta("p"), "spec": spec, "status": status});
        check(
            gvr,
            pdb(json!({"minAvailable": 2}), json!({"disruptionsAllowed": 3})),
            r#""cells":["p","2","N/A",3,"60m"]"#,
        );
        check(
            gvr,
            pdb(
                json!({"maxUnavailable": "50%"}),
                json!({"disruptionsAllowed": 0}),
            ),
            r#""cells":["p","N/A","50%",0,"60m"]"#,
        );
        check(
            gvr,
            pdb(json!({"minAvailable": "30%"}), json!({})),
            r#""cells":["p","30%","N/A",0,"60m"]"#,
        );
        check(
            gvr,
            pdb(json!({}), json!({})),
            r#""cells":["p","N/A","N/A",0,"60m"]"#,
        );
    }

    #[test]
    fn pod_security_policies_show_privilege_strategies_and_volumes() {
        let gvr = ("policy", "v1beta1", "podsecuritypolicies");
        let psp = |name: &str, spec: Value| json!({"metadata": meta(name), "spec": spec});
        check(
            gvr,
            psp(
                "kcprint-restricted",
                json!({"privileged": false, "seLinux": {"rule": "RunAsAny"}, "runAsUser": {"rule": "MustRunAsNonRoot"},
                "supplementalGroups": {"rule": "RunAsAny"}, "fsGroup": {"rule": "MustRunAs", "ranges": [{"min": 1, "max": 65535}]},
                "readOnlyRootFilesystem": true, "volumes": ["configMap", "secret", "emptyDir"],
                "allowedCapabilities": ["NET_ADMIN", "SYS_TIME"], "allowPrivilegeEscalation": true}),
            ),
            r#""cells":["kcprint-restricted","false","NET_ADMIN,SYS_TIME","RunAsAny","MustRunAsNonRoot","MustRunAs","RunAsAny",true,"configMap,secret,emptyDir"]"#,
        );
        check(
            gvr,
            psp(
                "kcprint-priv",
                json!({"privileged": true, "seLinux": {"rule": "RunAsAny"}, "runAsUser": {"rule": "RunAsAny"},
                "supplementalGroups": {"rule": "MayRunAs", "ranges": [{"min": 1, "max": 2}]}, "fsGroup": {"rule": "RunAsAny"},
                "volumes": ["*"], "allowPrivilegeEscalation": true}),
            ),
            r#""cells":["kcprint-priv","true","","RunAsAny","RunAsAny","RunAsAny","MayRunAs",false,"*"]"#,
        );
        check(
            gvr,
            psp(
                "kcprint-min",
                json!({"seLinux": {"rule": "MustRunAs"}, "runAsUser": {"rule": "MustRunAs", "ranges": [{"min": 1, "max": 2}]},
                "supplementalGroups": {"rule": "RunAsAny"}, "fsGroup": {"rule": "MayRunAs", "ranges": [{"min": 1, "max": 2}]},
                "allowPrivilegeEscalation": true}),
            ),
            r#""cells":["kcprint-min","false","","MustRunAs","MustRunAs","MayRunAs","RunAsAny",false,""]"#,
        );
        // The empty object of a bookmark.
        check(
            gvr,
            json!({"metadata": {"resourceVersion": "110", "creationTimestamp": null},
                "spec": {"seLinux": {"rule": ""}, "runAsUser": {"rule": ""}, "supplementalGroups": {}, "fsGroup": {},
                "allowPrivilegeEscalation": false}}),
            r#""cells":["","false","","","","","",false,""]"#,
        );
    }

    #[test]
    fn network_policies_format_their_pod_selector() {
        let gvr = ("networking.k8s.io", "v1", "networkpolicies");
        let np = |sel: Value| json!({"metadata": meta("np"), "spec": {"podSelector": sel}});
        check(
            gvr,
            np(json!({})),
            r#""cells":["np","\u003cnone\u003e","60m"]"#,
        );
        check(
            gvr,
            json!({"metadata": meta("np"), "spec": {}}),
            r#""cells":["np","\u003cnone\u003e","60m"]"#,
        );
        check(
            gvr,
            np(
                json!({"matchLabels": {"role": "db", "app": "x"}, "matchExpressions": [
                {"key": "tier", "operator": "NotIn", "values": ["b", "a"]},
                {"key": "app", "operator": "Exists"},
                {"key": "zone", "operator": "DoesNotExist"}]}),
            ),
            r#""cells":["np","app=x,app,role=db,tier notin (a,b),!zone","60m"]"#,
        );
        // Expression values are not validated; the printer's error shows.
        check(
            gvr,
            np(
                json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["bad value!"]}]}),
            ),
            r#""cells":["np","\u003cerror\u003e","60m"]"#,
        );
        check(
            gvr,
            np(json!({"matchLabels": {"example.com/app": "x"}})),
            r#""cells":["np","example.com/app=x","60m"]"#,
        );
        // Past 12 requirements Go's sort reorders equal keys.
        let mut exprs: Vec<Value> = "hgfedcba"
            .chars()
            .map(|k| json!({"key": k.to_string(), "operator": "Exists"}))
            .collect();
        for i in 0..6 {
            exprs.push(json!({"key": "a", "operator": "In", "values": [format!("v{i}")]}));
        }
        exprs.push(json!({"key": "a", "operator": "DoesNotExist"}));
        check(
            gvr,
            np(json!({"matchLabels": {"a": "z"}, "matchExpressions": exprs})),
            concat!(
                r#""cells":["np","!a,a in (v5),a in (v0),a in (v1),a in (v2),a=z,a,"#,
                r#"a in (v4),a in (v3),b,c,d,e,f,g,h","60m"]"#
            ),
        );
    }

    #[test]
    fn controller_revisions_name_their_controller_with_kind_and_group() {
        let gvr = ("apps", "v1", "controllerrevisions");
        let cr = |owners: Value, revision: i64| {
            let mut m = meta("cr");
            m["ownerReferences"] = owners;
            json!({"metadata": m, "revision": revision, "data": {}})
        };
        check(
            gvr,
            cr(
                json!([{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "1", "controller": true}]),
                3,
            ),
            r#""cells":["cr","statefulset.apps/web",3,"60m"]"#,
        );
        check(
            gvr,
            cr(
                json!([{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "2"},
                {"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "uid": "3", "controller": true}]),
                0,
            ),
            r#""cells":["cr","replicationcontroller/rc",0,"60m"]"#,
        );
        check(
            gvr,
            cr(
                json!([{"apiVersion": "example.com/v1", "kind": "FooBar", "name": "f", "uid": "4", "controller": false}]),
                9007199254740993,
            ),
            r#""cells":["cr","\u003cnone\u003e",9007199254740993,"60m"]"#,
        );
        check(
            gvr,
            cr(
                json!([{"apiVersion": "Example.COM/v1", "kind": "FooBar", "name": "f", "uid": "4", "controller": true}]),
                7,
            ),
            r#""cells":["cr","foobar.example.com/f",7,"60m"]"#,
        );
        check(
            gvr,
            json!({"metadata": meta("cr")}),
            r#""cells":["cr","\u003cnone\u003e",0,"60m"]"#,
        );
    }

    #[test]
    fn pod_templates_show_containers_and_pod_labels() {
        let gvr = ("", "v1", "podtemplates");
        check(
            gvr,
            json!({"metadata": meta("pt1"), "template": {"metadata": {"labels": {"z": "1", "app": "x"}},
                "spec": {"containers": [{"name": "a", "image": "img:1"}, {"name": "b", "image": "img:2"}]}}}),
            r#""cells":["pt1","a,b","img:1,img:2","app=x,z=1"]"#,
        );
        check(
            gvr,
            json!({"metadata": meta("pt2"), "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}),
            r#""cells":["pt2","c","i","\u003cnone\u003e"]"#,
        );
    }

    #[test]
    fn resource_quotas_show_used_over_hard_sorted_limits_apart() {
        let gvr = ("", "v1", "resourcequotas");
        let hard = json!({"count/deployments.apps": "5", "cpu": "1", "limits.cpu": "2",
            "limits.memory": "2Gi", "pods": "10", "requests.cpu": "1500m",
            "requests.memory": "1e3", "services.loadbalancers": "0"});
        check(
            gvr,
            json!({"metadata": meta("rq1"), "spec": {"hard": hard},
                "status": {"hard": hard, "used": {"cpu": "0", "limits.cpu": "500m", "pods": "3", "requests.memory": "2k"}}}),
            concat!(
                r#""cells":["rq1","60m","count/deployments.apps: 0/5, cpu: 0/1, pods: 3/10, "#,
                r#"requests.cpu: 0/1500m, requests.memory: 2k/1e3, services.loadbalancers: 0/0","#,
                r#""limits.cpu: 500m/2, limits.memory: 0/2Gi"]"#
            ),
        );
        // Only the status counts.
        check(
            gvr,
            json!({"metadata": meta("rq2"), "spec": {"hard": {"pods": "1"}},
                "status": {"hard": {"limits.memory": "1Mi"}}}),
            r#""cells":["rq2","60m","","limits.memory: 0/1Mi"]"#,
        );
        check(
            gvr,
            json!({"metadata": meta("rq3"), "spec": {}, "status": {}}),
            r#""cells":["rq3","60m","",""]"#,
        );
    }

    #[test]
    fn webhook_configurations_count_their_webhooks() {
        let wh = json!({"name": "a.example", "clientConfig": {"url": "https://127.0.0.1:1/x"}});
        for v in ["v1", "v1beta1"] {
            for kind in [
                "mutatingwebhookconfigurations",
                "validatingwebhookconfigurations",
            ] {
                let gvr = ("admissionregistration.k8s.io", v, kind);
                check(
                    gvr,
                    json!({"metadata": meta("w"), "webhooks": [wh, wh]}),
                    r#""cells":["w",2,"60m"]"#,
                );
                check(
                    gvr,
                    json!({"metadata": meta("w")}),
                    r#""cells":["w",0,"60m"]"#,
                );
            }
        }
    }

    #[test]
    fn v1_22_prints_a_csrs_requested_duration_after_its_requestor() {
        // #99494: `<none>` without expirationSeconds, else its HumanDuration.
        let gvr = ("certificates.k8s.io", "v1", "certificatesigningrequests");
        let csr = |spec: Value| json!({"metadata": meta("c"), "spec": spec, "status": {}});
        let spec = json!({"signerName": "s", "username": "u"});
        let of = |minor| Personality::of(1, minor).0;
        check_as(
            of(21),
            gvr,
            csr(spec.clone()),
            r#""cells":["c","60m","s","u","Pending"]"#,
        );
        for minor in [22, 23, 26, 35] {
            check_as(
                of(minor),
                gvr,
                csr(spec.clone()),
                r#""cells":["c","60m","s","u","\u003cnone\u003e","Pending"]"#,
            );
        }
        let mut day = spec;
        day["expirationSeconds"] = json!(86400);
        check_as(
            of(22),
            gvr,
            csr(day.clone()),
            r#""cells":["c","60m","s","u","24h","Pending"]"#,
        );
        day["expirationSeconds"] = json!(600);
        check_as(
            of(30),
            gvr,
            csr(day),
            r#""cells":["c","60m","s","u","10m","Pending"]"#,
        );
        // 1.36's printers.go is not established for them: forwarded.
        assert_eq!(column_count_as(of(36), gvr), 0);
    }

    #[test]
    fn certificate_signing_requests_condition_from_status() {
        let csr = |signer: &str, status: Value| {
            json!({"metadata": meta("c"),
                "spec": {"request": "LS0t", "signerName": signer, "username": "system:unsecured"},
                "status": status})
        };
        let cond = |t: &str| json!({"type": t, "status": "True", "reason": "R"});
        let cases = [
            (
                json!({"conditions": [cond("Approved")], "certificate": "LS0t"}),
                "Approved,Issued",
            ),
            (json!({}), "Pending"),
            (
                json!({"conditions": [cond("Denied"), cond("Failed")]}),
                "Denied,Failed",
            ),
            (json!({"conditions": [cond("Failed")]}), "Pending,Failed"),
        ];
        for v in ["v1", "v1beta1"] {
            let gvr = ("certificates.k8s.io", v, "certificatesigningrequests");
            for (status, want) in &cases {
                check(
                    gvr,
                    csr("example.com/signer", status.clone()),
                    &format!(
                        r#""cells":["c","60m","example.com/signer","system:unsecured","{want}"]"#
                    ),
                );
            }
            check(
                gvr,
                csr("kubernetes.io/legacy-unknown", json!({})),
                r#""cells":["c","60m","kubernetes.io/legacy-unknown","system:unsecured","Pending"]"#,
            );
            // Not seen from the apiserver (signerName is defaulted in
            // v1beta1, required in v1): printers.go's "<none>".
            check(
                gvr,
                csr("", json!({})),
                r#""cells":["c","60m","\u003cnone\u003e","system:unsecured","Pending"]"#,
            );
        }
    }

    #[test]
    fn v1_36_priority_classes_show_their_preemption_policy() {
        let gvr = ("scheduling.k8s.io", "v1", "priorityclasses");
        check_as(
            Personality::NEWEST,
            gvr,
            json!({"metadata": meta("pc"), "value": 7, "preemptionPolicy": "Never"}),
            r#""cells":["pc",7,false,"60m","Never"]"#,
        );
        check_as(
            Personality::NEWEST,
            gvr,
            json!({"metadata": meta("pc"), "value": 7}),
            r#""cells":["pc",7,false,"60m",""]"#,
        );
    }

    #[test]
    fn v1_36_resource_quotas_print_their_age_last() {
        let hard = json!({"pods": "10", "limits.cpu": "2"});
        let q = json!({"metadata": meta("rq"), "spec": {"hard": hard},
            "status": {"hard": hard, "used": {"pods": "3"}}});
        check_as(
            Personality::NEWEST,
            ("", "v1", "resourcequotas"),
            q.clone(),
            r#""cells":["rq","pods: 3/10","limits.cpu: 0/2","60m"]"#,
        );
        assert_eq!(
            cells(("", "v1", "resourcequotas"), q, "2026-01-01T01:00:00Z"),
            r#""cells":["rq","60m","pods: 3/10","limits.cpu: 0/2"]"#
        );
    }

    #[test]
    fn v1_33_moved_resource_quotas_age_last_and_v1_32_prints_it_second() {
        // kubernetes#129419, opened after v1.32.0: v1.32 prints v1.20's row.
        let hard = json!({"pods": "10"});
        let q = json!({"metadata": meta("rq"), "spec": {"hard": hard},
            "status": {"hard": hard, "used": {"pods": "3"}}});
        let gvr = ("", "v1", "resourcequotas");
        check_as(
            Personality::of(1, 32).0,
            gvr,
            q.clone(),
            r#""cells":["rq","60m","pods: 3/10",""]"#,
        );
        check_as(
            Personality::of(1, 33).0,
            gvr,
            q,
            r#""cells":["rq","pods: 3/10","","60m"]"#,
        );
    }

    #[test]
    fn v1_32_added_priority_classes_preemption_policy_and_v1_31_has_none() {
        let gvr = ("scheduling.k8s.io", "v1", "priorityclasses");
        let pc = json!({"metadata": meta("pc"), "value": 7, "preemptionPolicy": "Never"});
        check_as(
            Personality::of(1, 31).0,
            gvr,
            pc.clone(),
            r#""cells":["pc",7,false,"60m"]"#,
        );
        check_as(
            Personality::of(1, 32).0,
            gvr,
            pc,
            r#""cells":["pc",7,false,"60m","Never"]"#,
        );
    }

    #[test]
    fn v1_36_serves_disruption_budgets_at_policy_v1() {
        check_as(
            Personality::NEWEST,
            ("policy", "v1", "poddisruptionbudgets"),
            json!({"metadata": meta("p"), "spec": {"maxUnavailable": "25%"}, "status": {"disruptionsAllowed": 1}}),
            r#""cells":["p","N/A","25%",1,"60m"]"#,
        );
    }

    #[test]
    fn v1_26_validating_admission_policies_count_their_validations() {
        let v1_36 = Personality::NEWEST;
        let gvr = (
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicies",
        );
        let policy = |spec: Value| {
            let mut o = json!({"metadata": meta("vap"), "spec": spec});
            o["spec"]["failurePolicy"] = json!("Fail");
            o
        };
        check_as(
            v1_36,
            gvr,
            policy(
                json!({"paramKind": {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"},
                "validations": [{"expression": "object.spec.replicas <= params.maxReplicas"},
                    {"expression": "true"}]}),
            ),
            r#""cells":["vap",2,"rules.example.com/v1/ReplicaLimit","60m"]"#,
        );
        check_as(
            v1_36,
            gvr,
            policy(json!({})),
            r#""cells":["vap",0,"\u003cunset\u003e","60m"]"#,
        );
        // Without a group the param kind's apiVersion is the version alone.
        check_as(
            v1_36,
            gvr,
            policy(json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}})),
            r#""cells":["vap",0,"v1/ConfigMap","60m"]"#,
        );
    }

    #[test]
    fn v1_32_mutating_admission_policies_count_their_mutations() {
        let v1_36 = Personality::NEWEST;
        let gvr = (
            "admissionregistration.k8s.io",
            "v1",
            "mutatingadmissionpolicies",
        );
        check_as(
            v1_36,
            gvr,
            json!({"metadata": meta("map"), "spec": {"mutations": [
                {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{}"}}],
                "reinvocationPolicy": "Never"}}),
            r#""cells":["map",1,"\u003cunset\u003e","60m"]"#,
        );
    }

    #[test]
    fn v1_27_cluster_trust_bundles_show_their_signer() {
        let v1_36 = Personality::NEWEST;
        for version in ["v1alpha1", "v1beta1"] {
            let gvr = ("certificates.k8s.io", version, "clustertrustbundles");
            check_as(
                v1_36,
                gvr,
                json!({"metadata": meta("example.com:signer:abc"),
                    "spec": {"signerName": "example.com/signer", "trustBundle": "..."}}),
                r#""cells":["example.com:signer:abc","example.com/signer"]"#,
            );
            check_as(
                v1_36,
                gvr,
                json!({"metadata": meta("plain"), "spec": {"trustBundle": "..."}}),
                r#""cells":["plain","\u003cnone\u003e"]"#,
            );
        }
    }

    #[test]
    fn v1_36_prints_pod_templates_webhooks_and_runtime_classes_as_v1_20_did() {
        let v1_36 = Personality::NEWEST;
        check_as(
            v1_36,
            ("", "v1", "podtemplates"),
            json!({"metadata": meta("t"), "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "busybox"}]}}}),
            r#""cells":["t","a,b","nginx,busybox","app=web"]"#,
        );
        for kind in [
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations",
        ] {
            check_as(
                v1_36,
                ("admissionregistration.k8s.io", "v1", kind),
                json!({"metadata": meta("hooks"), "webhooks": [{"name": "a.example.com"}, {"name": "b.example.com"}]}),
                r#""cells":["hooks",2,"60m"]"#,
            );
        }
        check_as(
            v1_36,
            ("node.k8s.io", "v1", "runtimeclasses"),
            json!({"metadata": meta("gvisor"), "handler": "runsc"}),
            r#""cells":["gvisor","runsc","60m"]"#,
        );
    }

    #[test]
    fn v1_36_leaves_network_policies_csrs_and_controller_revisions_upstream() {
        // Their v1.36 descriptions come from API versions no source here
        // pins down (see columns_v1_36_derived.py): forwarded.
        let v1_36 = Personality::NEWEST;
        for (g, v, r) in [
            ("networking.k8s.io", "v1", "networkpolicies"),
            ("certificates.k8s.io", "v1", "certificatesigningrequests"),
            ("apps", "v1", "controllerrevisions"),
            ("coordination.k8s.io", "v1beta1", "leasecandidates"),
            ("certificates.k8s.io", "v1beta1", "podcertificaterequests"),
            (
                "admissionregistration.k8s.io",
                "v1",
                "validatingadmissionpolicybindings",
            ),
        ] {
            assert!(
                crate::encode::print::Printer::builtin(v1_36, g, v, r).is_none(),
                "{g}/{v}/{r}"
            );
        }
    }
}
