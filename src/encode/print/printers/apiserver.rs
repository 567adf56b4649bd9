//! Printers of the apiserver's own configuration: printers.go's ports
//! for flow schemas and priority level configurations (API priority and
//! fairness), and the kube-aggregator's Table convertor for API services.
//!
//! Component statuses have a printer too, but they can be listed and not
//! watched, so kubecache does not cache them: their Tables go upstream.

use super::fields::{arr, at, created, int, name, s, RowFn};
use crate::encode::print::row::RowBuilder;
use serde_json::Value;

const FLOWCONTROL: &str = "flowcontrol.apiserver.k8s.io";

pub fn lookup(group: &str, version: &str, resource: &str) -> Option<RowFn> {
    Some(match (group, version, resource) {
        (FLOWCONTROL, "v1beta1", "flowschemas") => flow_schema,
        (FLOWCONTROL, "v1beta1", "prioritylevelconfigurations") => priority_level_configuration,
        ("apiregistration.k8s.io", "v1" | "v1beta1", "apiservices") => api_service,
        _ => return None,
    })
}

/// v1.36's printers of the flowcontrol.apiserver.k8s.io/v1 types (the only
/// version it serves), and v1.28's of v1beta3 and v1beta2 (v1 is 1.29's,
/// kubernetes#121089): flow schemas print as v1.20 printed them, priority
/// levels show the internal type's `nominalConcurrencyShares` where v1.20
/// showed `assuredConcurrencyShares` (renamed in v1beta3, kubernetes 1.26):
/// a v1beta2 object's `assuredConcurrencyShares`, which its conversion
/// makes the internal `nominalConcurrencyShares`. (Which versions print is
/// each release's columns' to say: 1.29 to 1.31 serve v1beta3 too, with
/// their printers describing v1's fields, and have no v1beta3 columns, so
/// those Tables go upstream.)
pub fn lookup_v1_36(group: &str, version: &str, resource: &str) -> Option<RowFn> {
    Some(match (group, version, resource) {
        (FLOWCONTROL, "v1" | "v1beta3" | "v1beta2", "flowschemas") => flow_schema,
        (FLOWCONTROL, "v1" | "v1beta3", "prioritylevelconfigurations") => {
            priority_level_configuration_v1_36
        }
        (FLOWCONTROL, "v1beta2", "prioritylevelconfigurations") => priority_level_configuration,
        _ => return None,
    })
}

/// `printFlowSchemaList` sorts the flow schemas it is given (a page, not
/// the whole collection) as `FlowSchemaSequence` does: by matching
/// precedence, then by name.
pub fn list_order(group: &str, version: &str, resource: &str) -> Option<fn(&Value) -> i64> {
    match (group, version, resource) {
        (FLOWCONTROL, "v1beta1" | "v1beta2" | "v1beta3" | "v1", "flowschemas") => {
            Some(|f| int(f, &["spec", "matchingPrecedence"]))
        }
        _ => None,
    }
}

/// The kube-aggregator's convertor ignores `noHeaders`, so each Table of
/// an API service watch carries the column definitions, not the first only.
pub fn headers_on_every_event(group: &str, resource: &str) -> bool {
    (group, resource) == ("apiregistration.k8s.io", "apiservices")
}

/// A pointer field that is set (present and not null).
fn set<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    at(v, path).filter(|v| !v.is_null())
}

/// The first condition of a type.
fn condition<'a>(v: &'a Value, ty: &str) -> Option<&'a Value> {
    arr(v, &["status", "conditions"])
        .iter()
        .find(|c| s(c, &["type"]) == ty)
}

/// `printFlowSchema`: the distinguisher method's type ("<none>" without
/// one), and whether the priority level is missing as the Dangling
/// condition's status ("?" before the apiserver has set it).
fn flow_schema(f: &Value, r: &mut RowBuilder) {
    let method = match set(f, &["spec", "distinguisherMethod"]) {
        Some(m) => s(m, &["type"]),
        None => "<none>",
    };
    let dangling = condition(f, "Dangling").map_or("?", |c| s(c, &["status"]));
    r.str(name(f))
        .str(s(f, &["spec", "priorityLevelConfiguration", "name"]))
        .int(int(f, &["spec", "matchingPrecedence"]))
        .str(method)
        .since_field(created(f))
        .str(dangling);
}

/// `printPriorityLevelConfiguration`: a limited level's shares and, when
/// it queues, its queuing as integer cells; "<none>" for what it lacks.
fn priority_level_configuration(p: &Value, r: &mut RowBuilder) {
    priority_level_with(p, r, "assuredConcurrencyShares")
}

/// v1.36's: the nominal concurrency shares (a pointer in v1, which the
/// apiserver defaults; 0 when unset, as its conversion reads it).
fn priority_level_configuration_v1_36(p: &Value, r: &mut RowBuilder) {
    priority_level_with(p, r, "nominalConcurrencyShares")
}

fn priority_level_with(p: &Value, r: &mut RowBuilder, shares: &str) {
    r.str(name(p)).str(s(p, &["spec", "type"]));
    match set(p, &["spec", "limited"]) {
        Some(limited) => {
            r.int(int(limited, &[shares]));
            match set(limited, &["limitResponse", "queuing"]) {
                Some(q) => {
                    r.int(int(q, &["queues"]))
                        .int(int(q, &["handSize"]))
                        .int(int(q, &["queueLengthLimit"]));
                }
                None => {
                    r.str("<none>").str("<none>").str("<none>");
                }
            }
        }
        None => {
            r.str("<none>").str("<none>").str("<none>").str("<none>");
        }
    }
    r.since_field(created(p));
}

/// The kube-aggregator's `ConvertToTable` for API services: the service
/// as namespace/name ("Local" for none), and availability as the
/// Available condition's status, with its reason when not True
/// ("Unknown" without the condition).
fn api_service(a: &Value, r: &mut RowBuilder) {
    let service = match set(a, &["spec", "service"]) {
        Some(svc) => format!("{}/{}", s(svc, &["namespace"]), s(svc, &["name"])),
        None => "Local".into(),
    };
    let available = match condition(a, "Available") {
        None => "Unknown".to_string(),
        Some(c) => {
            let (status, reason) = (s(c, &["status"]), s(c, &["reason"]));
            if status == "True" || reason.is_empty() {
                status.to_string()
            } else {
                format!("{status} ({reason})")
            }
        }
    };
    r.str(name(a))
        .str(&service)
        .str(&available)
        .since_field(created(a));
}

#[cfg(test)]
mod tests {
    //! The cases are objects made on (or made by) a v1.20 kube-apiserver,
    //! with the cells it printed for them.
    use super::super::test_support::{check, check_as, column};
    use crate::encode::personality::Personality;
    use crate::encode::print::Printer;
    use serde_json::{json, Value};

    const FS: (&str, &str, &str) = (super::FLOWCONTROL, "v1beta1", "flowschemas");
    const PLC: (&str, &str, &str) = (super::FLOWCONTROL, "v1beta1", "prioritylevelconfigurations");

    fn obj(name: &str, rest: &str) -> Value {
        let mut o: Value = serde_json::from_str(rest).unwrap();
        o["metadata"] = json!({"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"});
        o
    }

    #[test]
    fn flow_schemas_show_their_level_precedence_distinguisher_and_dangling() {
        let rules = r#""rules":[{"subjects":[{"kind":"User","user":{"name":"kcprint-nobody"}}],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/kcprint"]}]}]"#;
        check(
            FS,
            obj(
                "kcprint-dangling",
                &format!(
                    r#"{{"spec":{{"priorityLevelConfiguration":{{"name":"kcprint-missing"}},"matchingPrecedence":1000,{rules}}},"status":{{"conditions":[{{"type":"Dangling","status":"True","lastTransitionTime":"2026-11-21T20:22:33Z","reason":"NotFound","message":"This FlowSchema references the PriorityLevelConfiguration object named \"kcprint-missing\" but there is no such object"}}]}}}}"#
                ),
            ),
            r#""cells":["kcprint-dangling","kcprint-missing",1000,"\u003cnone\u003e","60m","True"]"#,
        );
        check(
            FS,
            obj(
                "kcprint-bynamespace",
                &format!(
                    r#"{{"spec":{{"priorityLevelConfiguration":{{"name":"kcprint-queued"}},"matchingPrecedence":9500,"distinguisherMethod":{{"type":"ByNamespace"}},{rules}}},"status":{{"conditions":[{{"type":"Dangling","status":"False","lastTransitionTime":"2026-11-21T20:22:33Z","reason":"Found","message":"m"}}]}}}}"#
                ),
            ),
            r#""cells":["kcprint-bynamespace","kcprint-queued",9500,"ByNamespace","60m","False"]"#,
        );
        // Before the apiserver has looked (printers.go's "?").
        check(
            FS,
            obj(
                "new",
                r#"{"spec":{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":9600,"distinguisherMethod":{"type":"ByUser"}},"status":{}}"#,
            ),
            r#""cells":["new","global-default",9600,"ByUser","60m","?"]"#,
        );
    }

    #[test]
    fn flow_schema_lists_sort_by_precedence_then_name() {
        let p = Printer::builtin(
            crate::encode::personality::Personality::V1_20,
            FS.0,
            FS.1,
            FS.2,
        )
        .unwrap();
        let key = p.list_order().unwrap();
        assert_eq!(key(&json!({"spec": {"matchingPrecedence": 800}})), 800);
        assert_eq!(key(&json!({"spec": {}})), 0);
        assert!(Printer::builtin(
            crate::encode::personality::Personality::V1_20,
            PLC.0,
            PLC.1,
            PLC.2
        )
        .unwrap()
        .list_order()
        .is_none());
    }

    #[test]
    fn priority_levels_show_shares_and_queuing_or_none() {
        check(
            PLC,
            obj(
                "kcprint-queued",
                r#"{"spec":{"type":"Limited","limited":{"assuredConcurrencyShares":3,"limitResponse":{"type":"Queue","queuing":{"queues":7,"handSize":2,"queueLengthLimit":50}}}},"status":{}}"#,
            ),
            r#""cells":["kcprint-queued","Limited",3,7,2,50,"60m"]"#,
        );
        check(
            PLC,
            obj(
                "kcprint-reject",
                r#"{"spec":{"type":"Limited","limited":{"assuredConcurrencyShares":30,"limitResponse":{"type":"Reject"}}},"status":{}}"#,
            ),
            r#""cells":["kcprint-reject","Limited",30,"\u003cnone\u003e","\u003cnone\u003e","\u003cnone\u003e","60m"]"#,
        );
        check(
            PLC,
            obj("exempt", r#"{"spec":{"type":"Exempt"},"status":{}}"#),
            r#""cells":["exempt","Exempt","\u003cnone\u003e","\u003cnone\u003e","\u003cnone\u003e","\u003cnone\u003e","60m"]"#,
        );
    }

    #[test]
    fn api_services_show_their_service_and_availability() {
        for v in ["v1", "v1beta1"] {
            let gvr = ("apiregistration.k8s.io", v, "apiservices");
            check(
                gvr,
                obj(
                    "v1.autoscaling",
                    r#"{"spec":{"group":"autoscaling","version":"v1","groupPriorityMinimum":17500,"versionPriority":15},"status":{"conditions":[{"type":"Available","status":"True","lastTransitionTime":"2026-11-21T20:09:05Z","reason":"Local","message":"Local APIServices are always available"}]}}"#,
                ),
                r#""cells":["v1.autoscaling","Local","True","60m"]"#,
            );
            check(
                gvr,
                obj(
                    "v1.kcprint.example.com",
                    r#"{"spec":{"service":{"namespace":"kcprint-scratch","name":"nosvc","port":443},"group":"kcprint.example.com","version":"v1","insecureSkipTLSVerify":true,"groupPriorityMinimum":100,"versionPriority":10},"status":{"conditions":[{"type":"Available","status":"False","lastTransitionTime":"2026-11-21T20:22:47Z","reason":"ServiceNotFound","message":"service/nosvc in \"kcprint-scratch\" is not present"}]}}"#,
                ),
                r#""cells":["v1.kcprint.example.com","kcprint-scratch/nosvc","False (ServiceNotFound)","60m"]"#,
            );
            // Without the condition, or without a reason (the convertor's
            // other branches).
            check(
                gvr,
                obj(
                    "v1.x",
                    r#"{"spec":{"service":{"namespace":"ns","name":"s"}},"status":{}}"#,
                ),
                r#""cells":["v1.x","ns/s","Unknown","60m"]"#,
            );
            check(
                gvr,
                obj(
                    "v1.x",
                    r#"{"spec":{},"status":{"conditions":[{"type":"Other","status":"True"},{"type":"Available","status":"False"}]}}"#,
                ),
                r#""cells":["v1.x","Local","False","60m"]"#,
            );
            let p = Printer::builtin(
                crate::encode::personality::Personality::V1_20,
                gvr.0,
                gvr.1,
                gvr.2,
            )
            .unwrap();
            assert!(p.headers_always());
            // A bookmark's row, as a Table watch of v1.20 sends it.
            let bookmark = r#"{"kind":"APIService","apiVersion":"apiregistration.k8s.io/v1","metadata":{"resourceVersion":"113","creationTimestamp":null},"spec":{"groupPriorityMinimum":0,"versionPriority":0},"status":{}}"#;
            assert_eq!(
                p.zero_row(bookmark.as_bytes()).to_json(0),
                r#""cells":["","Local","Unknown","\u003cunknown\u003e"]"#
            );
        }
        assert!(!Printer::builtin(
            crate::encode::personality::Personality::V1_20,
            FS.0,
            FS.1,
            FS.2
        )
        .unwrap()
        .headers_always());
    }

    #[test]
    fn v1_26_priority_levels_show_nominal_concurrency_shares() {
        let v1_36 = Personality::NEWEST;
        let plc = (super::FLOWCONTROL, "v1", "prioritylevelconfigurations");
        assert_eq!(
            column(v1_36, plc, 2),
            ("NominalConcurrencyShares".into(), "string".into())
        );
        check_as(
            v1_36,
            plc,
            obj(
                "workload-low",
                r#"{"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":100,"lendablePercent":90,"limitResponse":{"type":"Queue","queuing":{"queues":128,"handSize":6,"queueLengthLimit":50}}}},"status":{}}"#,
            ),
            r#""cells":["workload-low","Limited",100,128,6,50,"60m"]"#,
        );
        check_as(
            v1_36,
            plc,
            obj(
                "catch-all",
                r#"{"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":5,"lendablePercent":0,"limitResponse":{"type":"Reject"}}},"status":{}}"#,
            ),
            r#""cells":["catch-all","Limited",5,"\u003cnone\u003e","\u003cnone\u003e","\u003cnone\u003e","60m"]"#,
        );
        check_as(
            v1_36,
            plc,
            obj(
                "exempt",
                r#"{"spec":{"type":"Exempt","exempt":{"nominalConcurrencyShares":0}},"status":{}}"#,
            ),
            r#""cells":["exempt","Exempt","\u003cnone\u003e","\u003cnone\u003e","\u003cnone\u003e","\u003cnone\u003e","60m"]"#,
        );
    }

    #[test]
    fn v1_29_flow_schemas_at_flowcontrol_v1_print_and_sort_as_v1beta1_did() {
        let v1_36 = Personality::NEWEST;
        let fs = (super::FLOWCONTROL, "v1", "flowschemas");
        check_as(
            v1_36,
            fs,
            obj(
                "kube-scheduler",
                r#"{"spec":{"priorityLevelConfiguration":{"name":"workload-high"},"matchingPrecedence":800,"distinguisherMethod":{"type":"ByNamespace"}},"status":{"conditions":[{"type":"Dangling","status":"False"}]}}"#,
            ),
            r#""cells":["kube-scheduler","workload-high",800,"ByNamespace","60m","False"]"#,
        );
        let p = Printer::builtin(v1_36, fs.0, fs.1, fs.2).unwrap();
        let key = p.list_order().unwrap();
        assert_eq!(key(&json!({"spec": {"matchingPrecedence": 800}})), 800);
    }

    #[test]
    fn v1_28_prints_flowcontrol_at_v1beta3_and_v1beta2_a_v1beta2_levels_assured_shares() {
        // 1.28 serves no flowcontrol v1 (#121089 is 1.29's); its printers
        // print the internal type, whose nominalConcurrencyShares a
        // v1beta2 object's assuredConcurrencyShares converts to.
        let v1_28 = Personality::of(1, 28).0;
        let level = |version| (super::FLOWCONTROL, version, "prioritylevelconfigurations");
        let limited = |shares: &str| {
            format!(
                r#"{{"spec":{{"type":"Limited","limited":{{{shares},"limitResponse":{{"type":"Queue","queuing":{{"queues":64,"handSize":6,"queueLengthLimit":50}}}}}}}},"status":{{}}}}"#
            )
        };
        let cells = r#""cells":["workload-low","Limited",100,64,6,50,"60m"]"#;
        let beta3 = limited(r#""nominalConcurrencyShares":100"#);
        check_as(v1_28, level("v1beta3"), obj("workload-low", &beta3), cells);
        let beta2 = limited(r#""assuredConcurrencyShares":100"#);
        check_as(v1_28, level("v1beta2"), obj("workload-low", &beta2), cells);
        for version in ["v1beta2", "v1beta3"] {
            let fs = (super::FLOWCONTROL, version, "flowschemas");
            let p = Printer::builtin(v1_28, fs.0, fs.1, fs.2).unwrap();
            assert!(p.list_order().is_some(), "{version}");
        }
        // Not v1, which 1.28 does not serve; and 1.29 prints v1 only.
        assert!(Printer::builtin(v1_28, super::FLOWCONTROL, "v1", "flowschemas").is_none());
        let v1_29 = Personality::of(1, 29).0;
        assert!(Printer::builtin(v1_29, super::FLOWCONTROL, "v1beta3", "flowschemas").is_none());
    }

    #[test]
    fn v1_36_prints_api_services_as_v1_20_did() {
        let v1_36 = Personality::NEWEST;
        let gvr = ("apiregistration.k8s.io", "v1", "apiservices");
        check_as(
            v1_36,
            gvr,
            obj(
                "v1.metrics.k8s.io",
                r#"{"spec":{"service":{"namespace":"kube-system","name":"metrics-server","port":443},"group":"metrics.k8s.io","version":"v1"},"status":{"conditions":[{"type":"Available","status":"False","reason":"MissingEndpoints"}]}}"#,
            ),
            r#""cells":["v1.metrics.k8s.io","kube-system/metrics-server","False (MissingEndpoints)","60m"]"#,
        );
        assert!(Printer::builtin(v1_36, gvr.0, gvr.1, gvr.2)
            .unwrap()
            .headers_always());
    }
}
