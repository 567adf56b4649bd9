//! Ports of printers.go for the core group's pods, config maps,
//! namespaces, secrets and service accounts.

use super::fields::{arr, at, count, created, flag, int, name, s, RowFn};
use crate::encode::personality::Printers;
use crate::encode::print::row::RowBuilder;
use crate::go::time;
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
    pod_as(p, r, Printers::V1_20)
}

/// v1.34's `printPod` (v1.31's to v1.33's too): v1.36's but for a
/// completed pod's failed container's reason, which came in 1.35.
fn pod_v1_34(p: &Value, r: &mut RowBuilder) {
    pod_as(p, r, Printers::V1_34)
}

/// v1.30's `printPod` (v1.28's and v1.29's too): v1.34's but a deleted
/// pod is Terminating even once it has finished (kubernetes#122038 made
/// that 1.31's rule).
fn pod_v1_30(p: &Value, r: &mut RowBuilder) {
    pod_as(p, r, Printers::V1_30)
}

/// v1.27's `printPod` (v1.26's too): v1.30's without sidecars, which #116429 brought in
/// 1.28. No init container counts among the containers; once initialized,
/// restarts are the containers' alone, while the last restart's age stays
/// the latest of all (its date is not set back); and a pod none of whose
/// containers restarted still shows an init container's last restart,
/// "0 (5m ago)" (1.28 added the `restarts != 0` guard).
fn pod_v1_27(p: &Value, r: &mut RowBuilder) {
    pod_as(p, r, Printers::V1_27)
}

/// v1.25's `printPod` (v1.22's to v1.24's too): v1.26's without the
/// SchedulingGated reason, which #113274 (KEP-3521) brought in 1.26.
/// v1.21's is v1.20's (#100142, the last restart's age, is 1.22's).
fn pod_v1_25(p: &Value, r: &mut RowBuilder) {
    pod_as(p, r, Printers::V1_25)
}

/// v1.36's `printPod` (v1.35's too): restartable init containers
/// (sidecars) count as containers, a scheduling-gated pod says so, a
/// completed pod shows a failed container's reason (since 1.35), only a
/// pod not yet finished shows Terminating, and the restarts cell is a
/// string with the last restart's age ("3 (6d6h ago)").
fn pod_v1_36(p: &Value, r: &mut RowBuilder) {
    pod_as(p, r, Printers::V1_36)
}

/// The latest `lastState.terminated.finishedAt` of `statuses`, and later
/// than `since`.
fn last_restart(statuses: &[&Value], since: Option<time::Nanos>) -> Option<time::Nanos> {
    statuses
        .iter()
        .filter_map(|c| {
            at(c, &["lastState", "terminated", "finishedAt"])
                .and_then(Value::as_str)
                .and_then(time::parse_rfc3339)
        })
        .chain(since)
        .max()
}

/// `printPod` as `printers` print it: v1.20's, or the newer rules
/// (`v1_36` below: v1.34's and later), a completed pod's failed
/// container's reason only from 1.35 (kubernetes#124766, merged after
/// v1.34.0).
fn pod_as(p: &Value, r: &mut RowBuilder, printers: Printers) {
    let v1_36 = printers != Printers::V1_20;
    let sidecars = printers.minor() >= 28;
    let scheduling_gated = printers.minor() >= 26;
    let error_reason_shown = printers.minor() >= 35;
    let finished_not_terminating = printers.minor() >= 31;
    let init_specs = arr(p, &["spec", "initContainers"]);
    let init_total = init_specs.len();
    // From 1.28: an init container that always restarts is a sidecar,
    // counted among the containers.
    let restartable = |name: &str| {
        sidecars
            && init_specs
                .iter()
                .any(|c| s(c, &["name"]) == name && s(c, &["restartPolicy"]) == "Always")
    };
    let mut total = arr(p, &["spec", "containers"]).len();
    if sidecars {
        total += init_specs
            .iter()
            .filter(|c| s(c, &["restartPolicy"]) == "Always")
            .count();
    }
    let phase = s(p, &["status", "phase"]);
    let status_reason = s(p, &["status", "reason"]);
    let mut reason = if status_reason.is_empty() {
        phase.to_string()
    } else {
        status_reason.to_string()
    };
    let conditions = arr(p, &["status", "conditions"]);
    if scheduling_gated
        && conditions
            .iter()
            .any(|c| s(c, &["type"]) == "PodScheduled" && s(c, &["reason"]) == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }
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
    let mut sidecar_restarts = 0;
    let (mut last_restart_at, mut last_sidecar_restart_at) = (None, None);
    for (i, c) in arr(p, &["status", "initContainerStatuses"])
        .iter()
        .enumerate()
    {
        restarts += int(c, &["restartCount"]);
        last_restart_at = last_restart(&[c], last_restart_at);
        let sidecar = restartable(s(c, &["name"]));
        if sidecar {
            sidecar_restarts += int(c, &["restartCount"]);
            last_sidecar_restart_at = last_restart(&[c], last_sidecar_restart_at);
        }
        let terminated = at(c, &["state", "terminated"]);
        let waiting_reason = s(c, &["state", "waiting", "reason"]);
        match terminated {
            Some(t) if int(t, &["exitCode"]) == 0 => continue,
            _ if sidecar && flag(c, &["started"]) => {
                if flag(c, &["ready"]) {
                    ready += 1;
                }
                continue;
            }
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
    let initialized = conditions
        .iter()
        .any(|c| s(c, &["type"]) == "Initialized" && s(c, &["status"]) == "True");
    if !initializing || (sidecars && initialized) {
        restarts = sidecar_restarts;
        if sidecars {
            last_restart_at = last_sidecar_restart_at;
        }
        let mut has_running = false;
        let mut error_reason = String::new();
        for c in arr(p, &["status", "containerStatuses"]).iter().rev() {
            restarts += int(c, &["restartCount"]);
            last_restart_at = last_restart(&[c], last_restart_at);
            let waiting = s(c, &["state", "waiting", "reason"]);
            let terminated = at(c, &["state", "terminated"]);
            let terminated_reason = terminated.map(|t| s(t, &["reason"]));
            if at(c, &["state", "waiting"]).is_some() && !waiting.is_empty() {
                reason = waiting.to_string();
            } else if let Some(t) = terminated {
                reason = match terminated_reason.filter(|w| !w.is_empty()) {
                    Some(why) => why.to_string(),
                    None if int(t, &["signal"]) != 0 => format!("Signal:{}", int(t, &["signal"])),
                    None => format!("ExitCode:{}", int(t, &["exitCode"])),
                };
                if int(t, &["exitCode"]) != 0 {
                    error_reason = reason.clone();
                }
            } else if flag(c, &["ready"]) && at(c, &["state", "running"]).is_some() {
                has_running = true;
                ready += 1;
            }
        }
        // At least one container still running: back to Running.
        if reason == "Completed" {
            let pod_ready = conditions
                .iter()
                .any(|c| s(c, &["type"]) == "Ready" && s(c, &["status"]) == "True");
            if !v1_36 {
                if has_running {
                    reason = if pod_ready { "Running" } else { "NotReady" }.into();
                }
            } else if has_running && pod_ready {
                reason = "Running".into();
            } else if error_reason_shown && !error_reason.is_empty() {
                reason = error_reason;
            } else if has_running {
                reason = "NotReady".into();
            }
        }
    }
    if at(p, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null()) {
        let finished = matches!(phase, "Succeeded" | "Failed");
        if status_reason == "NodeLost" {
            reason = "Unknown".into();
        } else if !(finished_not_terminating && finished) {
            reason = "Terminating".into();
        }
    }
    r.str(name(p)).str(&format!("{ready}/{total}")).str(&reason);
    match (v1_36, last_restart_at) {
        (false, _) => r.int(restarts),
        // "3 (6d6h ago)": the count, and how long ago the last restart was.
        (true, Some(at)) if restarts != 0 || !sidecars => {
            r.since_within(&format!("{restarts} ("), at, " ago)")
        }
        (true, _) => r.str(&restarts.to_string()),
    };
    r.since_field(created(p));

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

/// v1.34's, v1.35's and v1.36's printers where they differ from v1.20's:
/// pods' restarts with the last one's age and their newer status rules
/// (a failed container's reason from 1.35), service accounts without the
/// secrets column (from 1.35).
pub fn lookup_since_v1_34(
    printers: Printers,
    group: &str,
    version: &str,
    resource: &str,
) -> Option<RowFn> {
    if !group.is_empty() || version != "v1" {
        return None;
    }
    Some(match (printers, resource) {
        // v1.21 counts restarts as v1.20 did (v1.20's printer): the last
        // restart's age is 1.22's (kubernetes#100142).
        (p, "pods") if p.minor() <= 21 => return None,
        (p, "pods") if p.minor() <= 25 => pod_v1_25,
        (p, "pods") if p.minor() <= 27 => pod_v1_27,
        (p, "pods") if p.minor() <= 30 => pod_v1_30,
        (p, "pods") if p.minor() <= 34 => pod_v1_34,
        (_, "pods") => pod_v1_36,
        // v1.34 and older still count them (v1.20's printer).
        (p, "serviceaccounts") if p.minor() <= 34 => return None,
        (_, "serviceaccounts") => service_account_v1_36,
        _ => return None,
    })
}

/// v1.35 dropped the secrets column (service accounts' token secrets are
/// no longer made): kubernetes#117160, in CHANGELOG-1.35's v1.35.0-alpha.1.
fn service_account_v1_36(a: &Value, r: &mut RowBuilder) {
    r.str(name(a)).since_field(created(a));
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{cells, cells_as, column, column_count, column_count_as};
    use crate::encode::personality::Personality;
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

    /// The first four cells (name, ready, status, restarts) as
    /// `personality` prints a pod.
    fn status_as(personality: Personality, p: Value) -> String {
        let row = cells_as(personality, PODS, p, NOW);
        let v: Value = serde_json::from_str(&format!("{{{row}}}")).unwrap();
        serde_json::to_string(&v["cells"].as_array().unwrap()[..4]).unwrap()
    }

    /// Those as v1.20 and as v1.36 print a pod.
    fn status_as_both(p: Value) -> (String, String) {
        (
            status_as(Personality::V1_20, p.clone()),
            status_as(Personality::NEWEST, p),
        )
    }

    #[test]
    fn v1_22_restarts_are_a_string_saying_how_long_ago_the_last_one_was() {
        let v1_36 = Personality::NEWEST;
        assert_eq!(
            column(Personality::V1_20, PODS, 3),
            ("Restarts".into(), "integer".into())
        );
        assert_eq!(column(v1_36, PODS, 3), ("Restarts".into(), "string".into()));
        let restarted = |count: i64, last: Value| {
            pod(
                json!({"containers": [{"name": "a"}]}),
                json!({"phase": "Running", "containerStatuses": [{"name": "a", "ready": true,
                    "restartCount": count, "lastState": last, "state": {"running": {}}}]}),
            )
        };
        let at = |t: &str| json!({"terminated": {"exitCode": 1, "finishedAt": t}});
        assert_eq!(
            status_as_both(restarted(3, at("2026-01-01T00:30:00Z"))),
            (
                r#"["p","1/1","Running",3]"#.into(),
                r#"["p","1/1","Running","3 (30m ago)"]"#.into()
            )
        );
        // Without a finished time the count alone; none at all is "0".
        assert_eq!(
            status_as_both(restarted(2, json!({}))).1,
            r#"["p","1/1","Running","2"]"#
        );
        assert_eq!(
            status_as_both(restarted(0, json!({}))).1,
            r#"["p","1/1","Running","0"]"#
        );
        // The age is the latest finish of any container, told when served.
        let p = pod(
            json!({"containers": [{"name": "a"}, {"name": "b"}]}),
            json!({"phase": "Running", "containerStatuses": [
                {"name": "a", "restartCount": 1, "lastState": at("2026-01-01T00:10:00Z"), "state": {"running": {}}},
                {"name": "b", "restartCount": 1, "lastState": at("2026-01-01T00:58:00Z"), "state": {"running": {}}},
            ]}),
        );
        assert_eq!(
            status_as_both(p.clone()).1,
            r#"["p","0/2","Running","2 (2m ago)"]"#
        );
        assert!(cells_as(v1_36, PODS, p, "2026-01-02T01:00:00Z").contains(r#""2 (24h ago)""#));
    }

    #[test]
    fn v1_26_a_pod_waiting_on_scheduling_gates_says_scheduling_gated() {
        let gated = pod(
            json!({"containers": [{"name": "a"}], "schedulingGates": [{"name": "g"}]}),
            json!({"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
        );
        assert_eq!(
            status_as_both(gated.clone()),
            (
                r#"["p","0/1","Pending",0]"#.into(),
                r#"["p","0/1","SchedulingGated","0"]"#.into()
            )
        );
        // 1.25 (before #113274) shows the phase, in 1.22's string restarts.
        let row = cells_as(Personality::of(1, 25).0, PODS, gated, NOW);
        assert!(
            row.starts_with(r#""cells":["p","0/1","Pending","0","#),
            "{row}"
        );
    }

    #[test]
    fn v1_28_sidecars_count_among_a_pods_containers_once_started() {
        let p = |started: bool| {
            pod(
                json!({"containers": [{"name": "a"}],
                       "initContainers": [{"name": "s", "restartPolicy": "Always"}]}),
                json!({"phase": "Running",
                       "conditions": [{"type": "Initialized", "status": "True"}],
                       "initContainerStatuses": [{"name": "s", "started": started, "ready": started,
                           "restartCount": 4, "state": {"running": {}}}],
                       "containerStatuses": [{"name": "a", "ready": true, "restartCount": 1,
                           "state": {"running": {}}}]}),
            )
        };
        // v1.20 sees an init container still running; v1.36 a started
        // sidecar, ready, its restarts added to the containers'.
        assert_eq!(
            status_as_both(p(true)),
            (
                r#"["p","0/1","Init:0/1",4]"#.into(),
                r#"["p","2/2","Running","5"]"#.into()
            )
        );
        // Not started yet: the init status stays (printPod's switch falls
        // to Init:i/n), while the initialized pod's containers still count.
        assert_eq!(status_as_both(p(false)).1, r#"["p","1/2","Init:0/1","5"]"#);
    }

    #[test]
    fn v1_27_counts_no_sidecars_and_shows_an_init_containers_restart_at_zero() {
        let four = status_as;
        let (v1_27, v1_28) = (Personality::of(1, 27).0, Personality::of(1, 28).0);
        // A started sidecar: 1.28 counts it (and its restarts); 1.27 sees
        // an init container still running, as v1.20 did, in 1.22's string
        // restarts.
        let sidecar = pod(
            json!({"containers": [{"name": "a"}],
                   "initContainers": [{"name": "s", "restartPolicy": "Always"}]}),
            json!({"phase": "Running",
                   "conditions": [{"type": "Initialized", "status": "True"}],
                   "initContainerStatuses": [{"name": "s", "started": true, "ready": true,
                       "restartCount": 4, "state": {"running": {}}}],
                   "containerStatuses": [{"name": "a", "ready": true, "restartCount": 1,
                       "state": {"running": {}}}]}),
        );
        assert_eq!(four(v1_28, sidecar.clone()), r#"["p","2/2","Running","5"]"#);
        assert_eq!(four(v1_27, sidecar), r#"["p","0/1","Init:0/1","4"]"#);
        // An init container that restarted before it completed: once the
        // pod is initialized, 1.27 counts the containers' restarts (none)
        // but keeps the init container's last restart, "0 (59m ago)";
        // 1.28 prints "0" (its restarts guard).
        let restarted = pod(
            json!({"containers": [{"name": "a"}], "initContainers": [{"name": "i"}]}),
            json!({"phase": "Running",
                   "initContainerStatuses": [{"name": "i", "restartCount": 2,
                       "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2026-01-01T00:01:00Z"}},
                       "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
                   "containerStatuses": [{"name": "a", "ready": true, "restartCount": 0,
                       "state": {"running": {}}}]}),
        );
        assert_eq!(
            four(v1_28, restarted.clone()),
            r#"["p","1/1","Running","0"]"#
        );
        assert_eq!(
            four(v1_27, restarted),
            r#"["p","1/1","Running","0 (59m ago)"]"#
        );
    }

    #[test]
    fn v1_35_a_completed_pod_shows_a_failed_containers_reason() {
        // kubernetes#124766, merged after v1.34.0 (no release note): the
        // printers.go read from before v1.34.0 (mortent/kubernetes@1baf7abe)
        // lacks it, v1.34 keeps "Completed" (with v1.34's string restarts).
        let p = pod(
            json!({"containers": [{"name": "a"}, {"name": "b"}]}),
            json!({"phase": "Failed", "containerStatuses": [
                {"name": "a", "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                {"name": "b", "restartCount": 0, "state": {"terminated": {"exitCode": 1, "reason": "Error"}}},
            ]}),
        );
        assert_eq!(
            status_as_both(p.clone()),
            (
                r#"["p","0/2","Completed",0]"#.into(),
                r#"["p","0/2","Error","0"]"#.into()
            )
        );
        let four = |personality: Personality| status_as(personality, p.clone());
        assert_eq!(four(Personality::of(1, 35).0), r#"["p","0/2","Error","0"]"#);
        assert_eq!(
            four(Personality::of(1, 34).0),
            r#"["p","0/2","Completed","0"]"#
        );
    }

    #[test]
    fn v1_36_a_deleted_pod_that_has_finished_is_not_terminating() {
        let mut done = pod(
            json!({"containers": [{"name": "a"}]}),
            json!({"phase": "Succeeded", "containerStatuses": [
                {"name": "a", "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}),
        );
        done["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:59:00Z");
        assert_eq!(
            status_as_both(done.clone()),
            (
                r#"["p","0/1","Terminating",0]"#.into(),
                r#"["p","0/1","Completed","0"]"#.into()
            )
        );
        done["status"]["phase"] = json!("Running");
        assert_eq!(status_as_both(done).1, r#"["p","0/1","Terminating","0"]"#);
    }

    #[test]
    fn v1_31_stopped_calling_a_deleted_pod_that_has_finished_terminating() {
        // kubernetes#122038 (CHANGELOG-1.31): v1.30 still says Terminating.
        let mut done = pod(
            json!({"containers": [{"name": "a"}]}),
            json!({"phase": "Failed", "containerStatuses": [
                {"name": "a", "restartCount": 2, "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}),
        );
        done["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:59:00Z");
        let four = |minor| {
            let row = cells_as(Personality::of(1, minor).0, PODS, done.clone(), NOW);
            let v: Value = serde_json::from_str(&format!("{{{row}}}")).unwrap();
            serde_json::to_string(&v["cells"].as_array().unwrap()[..4]).unwrap()
        };
        assert_eq!(four(30), r#"["p","0/1","Terminating","2"]"#);
        assert_eq!(four(31), r#"["p","0/1","Error","2"]"#);
        assert_eq!(four(34), four(31));
    }

    #[test]
    fn v1_35_service_accounts_have_no_secrets_column() {
        // (Token secrets stopped being made in 1.24; the column went in
        // 1.35: kubernetes#117160, CHANGELOG-1.35's v1.35.0-alpha.1.)
        let sa = json!({"metadata": {"name": "x", "creationTimestamp": "2026-01-01T00:59:00Z"},
                        "secrets": [{"name": "t"}]});
        let sas = ("", "v1", "serviceaccounts");
        for p in [Personality::NEWEST, Personality::of(1, 35).0] {
            assert_eq!(
                cells_as(p, sas, sa.clone(), NOW),
                r#""cells":["x","60s"]"#,
                "{p}"
            );
        }
        let v1_34 = Personality::of(1, 34).0;
        assert_eq!(cells_as(v1_34, sas, sa, NOW), r#""cells":["x",1,"60s"]"#);
        assert_eq!(column(v1_34, sas, 1), ("Secrets".into(), "string".into()));
        assert_eq!(column_count_as(v1_34, sas), 3);
    }
}
