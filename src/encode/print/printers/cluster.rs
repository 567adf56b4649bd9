//! Ports of printers.go for nodes, events (core and events.k8s.io) and
//! leases.

use super::fields::{arr, at, created, flag, int, name, s, RowFn};
use crate::encode::personality::Printers;
use crate::encode::print::row::RowBuilder;
use serde_json::Value;
use std::collections::BTreeSet;

pub fn lookup(group: &str, version: &str, resource: &str) -> Option<RowFn> {
    Some(match (group, version, resource) {
        ("", "v1", "nodes") => node,
        ("", "v1", "events") => core_event,
        ("events.k8s.io", "v1" | "v1beta1", "events") => events_event,
        ("coordination.k8s.io", "v1" | "v1beta1", "leases") => lease,
        _ => return None,
    })
}

/// A pointer or time field that is set (present and not null).
fn set<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    at(v, path).filter(|v| !v.is_null())
}

const ROLE_PREFIX: &str = "node-role.kubernetes.io/";
const ROLE_LABEL: &str = "kubernetes.io/role";

/// The printers of releases after v1.20 where they differ from v1.20's:
/// - v1.36: a node's kernel version with its architecture
///   (kubernetes#132402, listed in CHANGELOG-1.36 under v1.36.0-alpha.1);
///   until v1.35 nodes print as v1.20 did.
/// - from v1.24 at the latest: an event series counts `series.count`, not
///   one more (kubernetes#105009, release note NONE: absent from every
///   printers.go copy from January 2022 on, see `event`). v1.22 and older
///   count one more; whether v1.23 does is not established, and its
///   events' Tables are the upstream's (`columns_v1_23.json`).
pub fn lookup_since_v1_34(
    printers: Printers,
    group: &str,
    version: &str,
    resource: &str,
) -> Option<RowFn> {
    match (printers, group, version, resource) {
        (Printers::V1_36, "", "v1", "nodes") => Some(node_v1_36),
        (p, "", "v1", "events") if p.minor() >= 24 => Some(core_event_v1_24),
        (p, "events.k8s.io", "v1" | "v1beta1", "events") if p.minor() >= 24 => {
            Some(events_event_v1_24)
        }
        _ => None,
    }
}

fn node(n: &Value, r: &mut RowBuilder) {
    node_as(n, r, false)
}

fn node_v1_36(n: &Value, r: &mut RowBuilder) {
    node_as(n, r, true)
}

/// `printNode`: Ready/NotReady from the last Ready condition (Unknown
/// without one), SchedulingDisabled when cordoned; roles from labels.
fn node_as(n: &Value, r: &mut RowBuilder, v1_36: bool) {
    let ready = arr(n, &["status", "conditions"])
        .iter()
        .rev()
        .find(|c| s(c, &["type"]) == "Ready");
    let mut status = vec![match ready {
        Some(c) if s(c, &["status"]) == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if flag(n, &["spec", "unschedulable"]) {
        status.push("SchedulingDisabled");
    }
    let mut roles = BTreeSet::new();
    if let Some(labels) = at(n, &["metadata", "labels"]).and_then(Value::as_object) {
        for (k, v) in labels {
            let v = v.as_str().unwrap_or("");
            if let Some(role) = k.strip_prefix(ROLE_PREFIX) {
                if !role.is_empty() {
                    roles.insert(role);
                }
            } else if k == ROLE_LABEL && !v.is_empty() {
                roles.insert(v);
            }
        }
    }
    let roles = if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    };
    let info = |field| {
        let v = s(n, &["status", "nodeInfo", field]);
        if v.is_empty() {
            "<unknown>"
        } else {
            v
        }
    };
    let address = |ty| {
        arr(n, &["status", "addresses"])
            .iter()
            .find(|a| s(a, &["type"]) == ty)
            .map_or("<none>", |a| s(a, &["address"]))
    };
    r.str(name(n))
        .str(&status.join(","))
        .str(&roles)
        .since_field(created(n))
        .str(s(n, &["status", "nodeInfo", "kubeletVersion"]))
        .str(address("InternalIP"))
        .str(address("ExternalIP"))
        .str(info("osImage"));
    // "6.1.0 (amd64)"; a node that reports no architecture keeps the
    // kernel version alone (not recorded: the change's empty case is read
    // from its description, not its code).
    let arch = s(n, &["status", "nodeInfo", "architecture"]);
    if v1_36 && !arch.is_empty() {
        r.str(&format!("{} ({arch})", info("kernelVersion")));
    } else {
        r.str(info("kernelVersion"));
    }
    r.str(info("containerRuntimeVersion"));
}

/// The internal Event's fields `printEvent` reads, by their names in one
/// of the versioned forms.
struct EventFields {
    involved_object: &'static str,
    message: &'static str,
    source: &'static str,
    first_timestamp: &'static str,
    last_timestamp: &'static str,
    count: &'static str,
    reporting_controller: &'static str,
}

/// core/v1 Event.
const CORE: EventFields = EventFields {
    involved_object: "involvedObject",
    message: "message",
    source: "source",
    first_timestamp: "firstTimestamp",
    last_timestamp: "lastTimestamp",
    count: "count",
    reporting_controller: "reportingComponent",
};

/// events.k8s.io v1 and v1beta1 Event (`Convert_v1_Event_To_core_Event`).
const EVENTS: EventFields = EventFields {
    involved_object: "regarding",
    message: "note",
    source: "deprecatedSource",
    first_timestamp: "deprecatedFirstTimestamp",
    last_timestamp: "deprecatedLastTimestamp",
    count: "deprecatedCount",
    reporting_controller: "reportingController",
};

fn core_event(e: &Value, r: &mut RowBuilder) {
    event(e, &CORE, SeriesCount::PlusOne, r);
}

fn events_event(e: &Value, r: &mut RowBuilder) {
    event(e, &EVENTS, SeriesCount::PlusOne, r);
}

fn core_event_v1_24(e: &Value, r: &mut RowBuilder) {
    event(e, &CORE, SeriesCount::AsIs, r);
}

fn events_event_v1_24(e: &Value, r: &mut RowBuilder) {
    event(e, &EVENTS, SeriesCount::AsIs, r);
}

/// What an event series' count prints as.
#[derive(Clone, Copy, PartialEq)]
enum SeriesCount {
    /// v1.20's `obj.Series.Count + 1` ("a series counts its first event
    /// too").
    PlusOne,
    /// kubernetes#105009 took the one away: `series.count` already counts
    /// every occurrence.
    AsIs,
}

/// `printEvent`: Last Seen from the series, the last timestamp or the
/// first; First Seen from the first timestamp or the event time; the
/// count (a series' by `series`; a singleton counts 1).
fn event(e: &Value, f: &EventFields, series: SeriesCount, r: &mut RowBuilder) {
    let time = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .and_then(crate::go::time::parse_rfc3339)
    };
    let first = match set(e, &[f.first_timestamp]) {
        Some(t) => time(Some(t)),
        None => time(set(e, &["eventTime"])),
    };
    let mut last = match set(e, &[f.last_timestamp]) {
        Some(t) => time(Some(t)),
        None => first,
    };
    let mut count = int(e, &[f.count]) as i32;
    if let Some(set_series) = set(e, &["series"]) {
        last = time(set(set_series, &["lastObservedTime"]));
        count = int(set_series, &["count"]) as i32;
        if series == SeriesCount::PlusOne {
            count = count.wrapping_add(1);
        }
    } else if count == 0 {
        count = 1;
    }
    let obj = at(e, &[f.involved_object]);
    let field = |k| obj.map_or("", |o| s(o, &[k]));
    let kind = crate::go::strings::to_lower(field("kind"));
    let target = if field("name").is_empty() {
        kind
    } else {
        format!("{kind}/{}", field("name"))
    };
    let first_non_empty = |a: &'static str, b: &str| {
        let a = s(e, &[f.source, a]);
        if a.is_empty() {
            s(e, &[b]).to_string()
        } else {
            a.to_string()
        }
    };
    let component = first_non_empty("component", f.reporting_controller);
    let instance = first_non_empty("host", "reportingInstance");
    let source = if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    };
    r.since(last)
        .str(s(e, &["type"]))
        .str(s(e, &["reason"]))
        .str(&target)
        .str(field("fieldPath"))
        .str(&source)
        .str(s(e, &[f.message]).trim())
        .since(first)
        .int(i64::from(count))
        .str(name(e));
}

fn lease(l: &Value, r: &mut RowBuilder) {
    r.str(name(l))
        .str(s(l, &["spec", "holderIdentity"]))
        .since_field(created(l));
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{cells, cells_as, check, check_as};
    use crate::encode::personality::Personality;
    use serde_json::json;

    const NOW: &str = "2026-01-01T01:00:00Z";
    const NODES: (&str, &str, &str) = ("", "v1", "nodes");
    const EVENTS: (&str, &str, &str) = ("", "v1", "events");
    const EVENTS_V1: (&str, &str, &str) = ("events.k8s.io", "v1", "events");
    const EVENTS_V1BETA1: (&str, &str, &str) = ("events.k8s.io", "v1beta1", "events");

    #[test]
    fn nodes_show_readiness_roles_and_node_info() {
        let n = json!({
            "metadata": {"name": "n1", "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {
                "node-role.kubernetes.io/master": "", "node-role.kubernetes.io/": "x",
                "kubernetes.io/role": "worker", "node-role.kubernetes.io/etcd": "false"}},
            "spec": {"unschedulable": true},
            "status": {
                "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                "addresses": [{"type": "Hostname", "address": "h"}, {"type": "InternalIP", "address": "10.0.0.1"},
                    {"type": "InternalIP", "address": "10.0.0.2"}],
                "nodeInfo": {"kubeletVersion": "v1.20.2", "osImage": "Debian", "kernelVersion": "6.1",
                    "containerRuntimeVersion": "containerd://1.6"},
            },
        });
        check(
            NODES,
            n,
            r#""cells":["n1","Ready,SchedulingDisabled","etcd,master,worker","60m","v1.20.2","10.0.0.1","\u003cnone\u003e","Debian","6.1","containerd://1.6"]"#,
        );
        let bare = json!({"metadata": {"name": "n2", "creationTimestamp": "2026-01-01T00:00:00Z"}});
        check(
            NODES,
            bare,
            r#""cells":["n2","Unknown","\u003cnone\u003e","60m","","\u003cnone\u003e","\u003cnone\u003e","\u003cunknown\u003e","\u003cunknown\u003e","\u003cunknown\u003e"]"#,
        );
        // The last Ready condition counts.
        let not_ready = json!({"metadata": {"name": "n3"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Ready", "status": "Unknown"}],
                "addresses": [{"type": "ExternalIP", "address": "1.2.3.4"}]}});
        assert!(cells(NODES, not_ready, NOW).contains(
            r#""NotReady","\u003cnone\u003e","\u003cunknown\u003e","","\u003cnone\u003e","1.2.3.4""#
        ));
    }

    #[test]
    fn core_events() {
        let e = json!({
            "metadata": {"name": "e1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{a}"},
            "reason": "Pulled", "message": "  pulled\n", "type": "Normal",
            "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:59:00Z",
            "count": 4, "eventTime": null,
        });
        check(
            EVENTS,
            e.clone(),
            r#""cells":["60s","Normal","Pulled","pod/p","spec.containers{a}","kubelet, n1","pulled","60m",4,"e1"]"#,
        );
        // The new API's fields: event time, reporting controller, a series.
        // Ages truncate: 29m59.877s is "29m".
        let e2 = json!({
            "metadata": {"name": "e2"},
            "involvedObject": {"kind": "Node"},
            "reason": "R", "message": "m", "type": "Warning",
            "source": {},
            "firstTimestamp": null, "lastTimestamp": null,
            "eventTime": "2026-01-01T00:30:00.123456Z",
            "reportingComponent": "ctl", "reportingInstance": "i1",
        });
        check(
            EVENTS,
            e2.clone(),
            r#""cells":["29m","Warning","R","node","","ctl, i1","m","29m",1,"e2"]"#,
        );
        let mut e3 = e2;
        e3["series"] = json!({"count": 2, "lastObservedTime": "2026-01-01T00:58:00.000001Z"});
        e3["source"] = json!({"component": "comp"});
        e3.as_object_mut().unwrap().remove("reportingInstance");
        check(
            EVENTS,
            e3,
            r#""cells":["119s","Warning","R","node","","comp","m","29m",3,"e2"]"#,
        );
        let bare = json!({"metadata": {"name": "e4"}});
        check(
            EVENTS,
            bare,
            r#""cells":["\u003cunknown\u003e","","","","","","","\u003cunknown\u003e",1,"e4"]"#,
        );
    }

    #[test]
    fn events_k8s_io_events_read_their_own_field_names() {
        let e = json!({
            "metadata": {"name": "e1"},
            "regarding": {"kind": "Pod", "name": "p", "fieldPath": "f"},
            "related": {"kind": "Node", "name": "n"},
            "reason": "Pulled", "note": "pulled ", "type": "Normal",
            "deprecatedSource": {"host": "n1"},
            "reportingController": "kubelet", "reportingInstance": "ignored",
            "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z",
            "deprecatedLastTimestamp": "2026-01-01T00:59:00Z",
            "deprecatedCount": 4,
            "eventTime": "2026-01-01T00:50:00.000000Z",
        });
        for gvr in [EVENTS_V1, EVENTS_V1BETA1] {
            check(
                gvr,
                e.clone(),
                r#""cells":["60s","Normal","Pulled","pod/p","f","kubelet, n1","pulled","60m",4,"e1"]"#,
            );
        }
        let e = json!({
            "metadata": {"name": "e2"},
            "regarding": {"kind": "Deployment", "name": "d"},
            "reason": "R", "note": "n", "type": "Normal",
            "eventTime": "2026-01-01T00:50:00.000000Z",
            "series": {"count": 1, "lastObservedTime": "2026-01-01T00:55:00.000000Z"},
            "reportingController": "c", "reportingInstance": "i",
        });
        check(
            EVENTS_V1,
            e,
            r#""cells":["5m","Normal","R","deployment/d","","c, i","n","10m",2,"e2"]"#,
        );
    }

    #[test]
    fn v1_24_counts_an_event_series_as_its_count_not_one_more() {
        // kubernetes#105009: v1.20 printed series.count + 1; from v1.24
        // (at the latest) the count as it is, in both events APIs.
        let series = json!({"count": 2, "lastObservedTime": "2026-01-01T00:58:00.000001Z"});
        let core = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Node"},
            "eventTime": "2026-01-01T00:30:00.000000Z", "series": series});
        let new_api = json!({"metadata": {"name": "e"}, "regarding": {"kind": "Node"},
            "eventTime": "2026-01-01T00:30:00.000000Z", "series": series});
        let count = |p: Personality, gvr, e: &serde_json::Value| {
            let row = cells_as(p, gvr, e.clone(), NOW);
            let row: serde_json::Value = serde_json::from_str(&format!("{{{row}}}")).unwrap();
            row["cells"][8].to_string()
        };
        assert_eq!(
            count(Personality::of(1, 20).0, EVENTS_V1BETA1, &new_api),
            "3"
        );
        for (gvr, e) in [(EVENTS, &core), (EVENTS_V1, &new_api)] {
            assert_eq!(count(Personality::of(1, 20).0, gvr, e), "3", "{gvr:?}");
            for minor in [24, 28, 33, 36] {
                assert_eq!(
                    count(Personality::of(1, minor).0, gvr, e),
                    "2",
                    "1.{minor} {gvr:?}"
                );
            }
        }
    }

    #[test]
    fn leases_show_their_holder() {
        let l = json!({"metadata": {"name": "l", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"holderIdentity": "me"}});
        for v in ["v1", "v1beta1"] {
            check(
                ("coordination.k8s.io", v, "leases"),
                l.clone(),
                r#""cells":["l","me","60m"]"#,
            );
        }
        check(
            ("coordination.k8s.io", "v1", "leases"),
            json!({"metadata": {"name": "l"}, "spec": {}}),
            r#""cells":["l","","\u003cunknown\u003e"]"#,
        );
    }

    #[test]
    fn v1_36_a_nodes_kernel_version_names_its_architecture() {
        let n = json!({"metadata": {"name": "n1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                "nodeInfo": {"kubeletVersion": "v1.36.2", "osImage": "Debian", "kernelVersion": "6.1.0",
                    "containerRuntimeVersion": "containerd://2.1", "architecture": "amd64"}}});
        check_as(
            Personality::NEWEST,
            NODES,
            n.clone(),
            r#""cells":["n1","Ready","\u003cnone\u003e","60m","v1.36.2","\u003cnone\u003e","\u003cnone\u003e","Debian","6.1.0 (amd64)","containerd://2.1"]"#,
        );
        assert!(cells(NODES, n.clone(), NOW).contains(r#""Debian","6.1.0","containerd"#));
        // v1.35 had not changed it yet.
        let v1_35 = Personality::of(1, 35).0;
        assert!(cells_as(v1_35, NODES, n, NOW).contains(r#""Debian","6.1.0","containerd"#));
    }

    #[test]
    fn v1_36_prints_events_k8s_io_events_with_the_core_printer() {
        // One printer for both groups: the recorded core columns.
        let e = json!({
            "metadata": {"name": "e1"},
            "regarding": {"kind": "Pod", "name": "p", "fieldPath": "f"},
            "reason": "Pulled", "note": "pulled ", "type": "Normal",
            "deprecatedSource": {"host": "n1"},
            "reportingController": "kubelet", "reportingInstance": "ignored",
            "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z",
            "deprecatedLastTimestamp": "2026-01-01T00:59:00Z",
            "deprecatedCount": 4,
            "eventTime": "2026-01-01T00:50:00.000000Z",
        });
        check_as(
            Personality::NEWEST,
            EVENTS_V1,
            e,
            r#""cells":["60s","Normal","Pulled","pod/p","f","kubelet, n1","pulled","60m",4,"e1"]"#,
        );
    }
}
