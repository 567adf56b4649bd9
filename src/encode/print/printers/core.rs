//! Ports of printers.go for the core group's pods, config maps,
//! namespaces, secrets and service accounts.

use super::fields::{arr, at, count, created, flag, int, name, s, RowFn};
use crate::encode::print::row::RowBuilder;
use serde_json::Value;

pub fn lookup(group: &str, version: &str, resource: &str) -> Option<RowFn> {
    if !group.is_empty() || version != "v1" {
        return None;
    }
    Some(match resource {
        "pods" => pod,
        "configmaps" => config_map,
        "namespaces" => namespace,
        "secrets" => secret,
        "serviceaccounts" => service_account,
        _ => return None,
    })
}

const POD_SUCCEEDED: &str = r#"[{"type":"Completed","status":"True","reason":"Succeeded","message":"The pod has completed successfully."}]"#;
const POD_FAILED: &str =
    r#"[{"type":"Completed","status":"True","reason":"Failed","message":"The pod failed."}]"#;

/// `printPod`: readiness, the aggregate status (init containers first,
/// then containers from last to first), restarts, age; and the wide
/// columns (the server always prints wide).
fn pod(p: &Value, r: &mut RowBuilder) {
    let total = arr(p, &["spec", "containers"]).len();
    let init_total = arr(p, &["spec", "initContainers"]).len();
    let phase = s(p, &["status", "phase"]);
    let status_reason = s(p, &["status", "reason"]);
    let mut reason = if status_reason.is_empty() {
        phase.to_string()
    } else {
        status_reason.to_string()
    };
    match phase {
        "Succeeded" => {
            r.conditions(POD_SUCCEEDED);
        }
        "Failed" => {
            r.conditions(POD_FAILED);
        }
        _ => {}
    }
    let mut restarts = 0;
    let mut ready = 0;
    let mut initializing = false;
    for (i, c) in arr(p, &["status", "initContainerStatuses"])
        .iter()
        .enumerate()
    {
        restarts += int(c, &["restartCount"]);
        let terminated = at(c, &["state", "terminated"]);
        let waiting_reason = s(c, &["state", "waiting", "reason"]);
        match terminated {
            Some(t) if int(t, &["exitCode"]) == 0 => continue,
            Some(t) => {
                let why = s(t, &["reason"]);
                reason = if !why.is_empty() {
                    format!("Init:{why}")
                } else if int(t, &["signal"]) != 0 {
                    format!("Init:Signal:{}", int(t, &["signal"]))
                } else {
                    format!("Init:ExitCode:{}", int(t, &["exitCode"]))
                };
            }
            None if at(c, &["state", "waiting"]).is_some()
                && !waiting_reason.is_empty()
                && waiting_reason != "PodInitializing" =>
            {
                reason = format!("Init:{waiting_reason}");
            }
            None => reason = format!("Init:{i}/{init_total}"),
        }
        initializing = true;
        break;
    }
    if !initializing {
        restarts = 0;
        let mut has_running = false;
        for c in arr(p, &["status", "containerStatuses"]).iter().rev() {
            restarts += int(c, &["restartCount"]);
            let waiting = s(c, &["state", "waiting", "reason"]);
            let terminated = at(c, &["state", "terminated"]);
            let terminated_reason = terminated.map(|t| s(t, &["reason"]));
            if at(c, &["state", "waiting"]).is_some() && !waiting.is_empty() {
                reason = waiting.to_string();
            } else if let Some(why) = terminated_reason.filter(|w| !w.is_empty()) {
                reason = why.to_string();
            } else if let Some(t) = terminated {
                reason = if int(t, &["signal"]) != 0 {
                    format!("Signal:{}", int(t, &["signal"]))
                } else {
                    format!("ExitCode:{}", int(t, &["exitCode"]))
                };
            } else if flag(c, &["ready"]) && at(c, &["state", "running"]).is_some() {
                has_running = true;
                ready += 1;
            }
        }
        // At least one container still running: back to Running.
        if reason == "Completed" && has_running {
            let pod_ready = arr(p, &["status", "conditions"])
                .iter()
                .any(|c| s(c, &["type"]) == "Ready" && s(c, &["status"]) == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.into();
        }
    }
    if at(p, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null()) {
        reason = if status_reason == "NodeLost" {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    r.str(name(p))
        .str(&format!("{ready}/{total}"))
        .str(&reason)
        .int(restarts)
        .since_field(created(p));

    let or_none = |v: &str| {
        if v.is_empty() {
            "<none>".to_string()
        } else {
            v.to_string()
        }
    };
    let ip = arr(p, &["status", "podIPs"])
        .first()
        .map_or("", |ip| s(ip, &["ip"]));
    let gates = arr(p, &["spec", "readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let conditions = arr(p, &["status", "conditions"]);
        let true_conditions = gates
            .iter()
            .filter(|g| {
                let ty = s(g, &["conditionType"]);
                conditions
                    .iter()
                    .find(|c| s(c, &["type"]) == ty)
                    .is_some_and(|c| s(c, &["status"]) == "True")
            })
            .count();
        format!("{true_conditions}/{}", gates.len())
    };
    r.str(&or_none(ip))
        .str(&or_none(s(p, &["spec", "nodeName"])))
        .str(&or_none(s(p, &["status", "nominatedNodeName"])))
        .str(&readiness_gates);
}

fn config_map(c: &Value, r: &mut RowBuilder) {
    let entries = count(c, &["data"]) + count(c, &["binaryData"]);
    r.str(name(c)).int(entries as i64).since_field(created(c));
}

fn namespace(n: &Value, r: &mut RowBuilder) {
    r.str(name(n))
        .str(s(n, &["status", "phase"]))
        .since_field(created(n));
}

fn secret(x: &Value, r: &mut RowBuilder) {
    r.str(name(x))
        .str(s(x, &["type"]))
        .int(count(x, &["data"]) as i64)
        .since_field(created(x));
}

fn service_account(a: &Value, r: &mut RowBuilder) {
    r.str(name(a))
        .int(count(a, &["secrets"]) as i64)
        .since_field(created(a));
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{cells, column_count};
    use serde_json::{json, Value};

    const NOW: &str = "2026-01-01T01:00:00Z";
    const PODS: (&str, &str, &str) = ("", "v1", "pods");

    fn pod(spec: Value, status: Value) -> Value {
        json!({
            "metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": spec,
            "status": status,
        })
    }

    #[test]
    fn a_running_pod_shows_ready_containers_and_wide_columns() {
        let p = pod(
            json!({"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"}),
            json!({
                "phase": "Running",
                "podIPs": [{"ip": "10.0.0.1"}],
                "containerStatuses": [
                    {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}}},
                    {"name": "b", "ready": false, "restartCount": 1, "state": {"running": {}}},
                ],
            }),
        );
        assert_eq!(
            cells(PODS, p, NOW),
            r#""cells":["p","1/2","Running",3,"60m","10.0.0.1","n1","\u003cnone\u003e","\u003cnone\u003e"]"#
        );
        assert_eq!(column_count(PODS), 9);
    }

    #[test]
    fn init_containers_decide_the_status_until_they_have_all_succeeded() {
        let spec = json!({"containers": [{"name": "a"}], "initContainers": [{"name": "i1"}, {"name": "i2"}]});
        let st = |second: Value| {
            json!({"phase": "Pending", "initContainerStatuses": [
                {"name": "i1", "restartCount": 1, "state": {"terminated": {"exitCode": 0}}},
                second,
            ]})
        };
        let case = |second: Value| cells(PODS, pod(spec.clone(), st(second)), NOW);
        assert!(
            case(json!({"restartCount": 0, "state": {"running": {}}})).contains(r#""Init:1/2",1"#)
        );
        assert!(case(
            json!({"restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}})
        )
        .contains(r#""Init:CrashLoopBackOff",4"#));
        assert!(
            case(json!({"state": {"waiting": {"reason": "PodInitializing"}}}))
                .contains(r#""Init:1/2""#)
        );
        assert!(case(json!({"state": {"terminated": {"exitCode": 2}}}))
            .contains(r#""Init:ExitCode:2""#));
        assert!(
            case(json!({"state": {"terminated": {"exitCode": 137, "signal": 9}}}))
                .contains(r#""Init:Signal:9""#)
        );
        assert!(
            case(json!({"state": {"terminated": {"exitCode": 1, "reason": "Error"}}}))
                .contains(r#""Init:Error""#)
        );
    }

    #[test]
    fn container_states_override_the_phase_last_container_first() {
        let spec = json!({"containers": [{"name": "a"}, {"name": "b"}]});
        let p = pod(
            spec.clone(),
            json!({"phase": "Running", "containerStatuses": [
                {"name": "a", "state": {"waiting": {"reason": "ImagePullBackOff"}}},
                {"name": "b", "state": {"terminated": {"exitCode": 1}}},
            ]}),
        );
        assert!(cells(PODS, p, NOW).contains(r#""0/2","ImagePullBackOff""#));
        let completed_but_running = pod(
            spec,
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [
                {"name": "a", "ready": true, "state": {"running": {}}},
                {"name": "b", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            ]}),
        );
        assert!(cells(PODS, completed_but_running, NOW).contains(r#""1/2","NotReady""#));
    }

    #[test]
    fn finished_pods_carry_a_completed_condition() {
        let p = pod(
            json!({"containers": [{"name": "a"}]}),
            json!({"phase": "Succeeded"}),
        );
        assert!(cells(PODS, p, NOW).ends_with(
            r#"],"conditions":[{"type":"Completed","status":"True","reason":"Succeeded","message":"The pod has completed successfully."}]"#
        ));
        let p = pod(json!({}), json!({"phase": "Failed", "reason": "Evicted"}));
        let c = cells(PODS, p, NOW);
        assert!(c.contains(r#""0/0","Evicted""#));
        assert!(c.contains(r#""reason":"Failed","message":"The pod failed.""#));
    }

    #[test]
    fn deleted_pods_are_terminating_or_unknown_when_their_node_is_lost() {
        let mut p = pod(
            json!({"containers": [{"name": "a"}]}),
            json!({"phase": "Running"}),
        );
        p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:30:00Z");
        assert!(cells(PODS, p.clone(), NOW).contains(r#""Terminating""#));
        p["status"]["reason"] = json!("NodeLost");
        assert!(cells(PODS, p, NOW).contains(r#""Unknown""#));
    }

    #[test]
    fn readiness_gates_count_their_true_conditions() {
        let p = pod(
            json!({"readinessGates": [{"conditionType": "x"}, {"conditionType": "y"}]}),
            json!({"conditions": [{"type": "x", "status": "True"}, {"type": "y", "status": "False"}]}),
        );
        assert!(cells(PODS, p, NOW).ends_with(r#""1/2"]"#));
    }

    #[test]
    fn config_maps_secrets_namespaces_and_service_accounts() {
        let meta = json!({"name": "x", "creationTimestamp": "2026-01-01T00:59:00Z"});
        let cm = json!({"metadata": meta, "data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}});
        assert_eq!(
            cells(("", "v1", "configmaps"), cm, NOW),
            r#""cells":["x",3,"60s"]"#
        );
        let sec = json!({"metadata": meta, "type": "Opaque", "data": {"a": ""}});
        assert_eq!(
            cells(("", "v1", "secrets"), sec, NOW),
            r#""cells":["x","Opaque",1,"60s"]"#
        );
        let ns = json!({"metadata": meta, "status": {"phase": "Active"}});
        assert_eq!(
            cells(("", "v1", "namespaces"), ns, NOW),
            r#""cells":["x","Active","60s"]"#
        );
        let sa = json!({"metadata": meta, "secrets": [{"name": "t"}]});
        assert_eq!(
            cells(("", "v1", "serviceaccounts"), sa, NOW),
            r#""cells":["x",1,"60s"]"#
        );
        let bare = json!({"metadata": {"name": "y"}});
        assert_eq!(
            cells(("", "v1", "configmaps"), bare, NOW),
            r#""cells":["y",0,"\u003cunknown\u003e"]"#
        );
    }
}
