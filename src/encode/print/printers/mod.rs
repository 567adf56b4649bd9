//! Which printer turns a type's objects into rows: a port of one of
//! printers.go's print functions for built-in types (or of the
//! kube-aggregator's convertor, for API services), the default convertor
//! (Name, Created At), or a custom resource's printer columns.
//!
//! The ports read the versioned JSON the cache holds rather than Go's
//! internal types; where the two differ (a pointer field left unset reads
//! as the internal type's zero value) the port says so.

mod apiserver;
mod autoscaling;
mod cluster;
mod core;
mod dra;
mod fields;
mod network;
mod policy;
mod storage;
mod workloads;

use super::columns::{self, Column};
use super::jsonpath::CustomColumn;
use super::row::{Row, RowBuilder};
use crate::encode::personality::{Personality, Printers};
use crate::encode::pruned::parse_without;
use bytes::Bytes;
use fields::{at, s, OrderFn, RowFn};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

enum Kind {
    Printed(RowFn),
    Default,
    Custom(Vec<CustomColumn>),
}

pub struct Printer {
    /// What the rows cached on entries were printed by: 0 for built-in
    /// printers, the CRD's resourceVersion for custom resources.
    id: u64,
    columns: Bytes,
    kind: Kind,
    /// The row of the kind's empty object, where printing the version's
    /// differs from printing the internal one (as bookmarks are).
    zero: Option<RowFn>,
    /// How the list printer orders a page's rows, if it does not keep
    /// the list's order.
    order: Option<OrderFn>,
    /// Whether every Table of a watch carries the column definitions.
    headers_always: bool,
    /// Whether the release's printer fails on some objects
    /// (`RowBuilder::fail`): then every row of a Table is printed before
    /// its first byte is written.
    fallible: bool,
    /// Whose Tables it prints.
    printers: Printers,
}

impl std::fmt::Debug for Printer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// The port of printers.go's function for a resource as `printers`
/// print it: v1.36's where it differs from v1.20's (v1.29's to v1.35's
/// too, but for the printers changed since, which take the release), else
/// v1.20's.
fn row_fn_for(printers: Printers, group: &str, version: &str, resource: &str) -> Option<RowFn> {
    let since_v1_34 = |printers| {
        core::lookup_since_v1_34(printers, group, version, resource)
            .or_else(|| cluster::lookup_since_v1_34(printers, group, version, resource))
            .or_else(|| workloads::lookup_since_v1_33(printers, group, version, resource))
            .or_else(|| storage::lookup_since_v1_28(printers, group, version, resource))
            .or_else(|| policy::lookup_since_v1_32(printers, group, version, resource))
            .or_else(|| autoscaling::lookup_since_v1_29(printers, group, version, resource))
            .or_else(|| network::lookup_v1_36(group, version, resource))
            .or_else(|| apiserver::lookup_v1_36(group, version, resource))
            .or_else(|| dra::lookup_v1_36(group, version, resource))
    };
    if printers != Printers::V1_20 {
        if let Some(f) = since_v1_34(printers) {
            return Some(f);
        }
    }
    row_fn(group, version, resource)
}

/// The port of printers.go's function for a resource, by group/version/resource.
fn row_fn(group: &str, version: &str, resource: &str) -> Option<RowFn> {
    core::lookup(group, version, resource)
        .or_else(|| workloads::lookup(group, version, resource))
        .or_else(|| cluster::lookup(group, version, resource))
        .or_else(|| network::lookup(group, version, resource))
        .or_else(|| storage::lookup(group, version, resource))
        .or_else(|| policy::lookup(group, version, resource))
        .or_else(|| autoscaling::lookup(group, version, resource))
        .or_else(|| apiserver::lookup(group, version, resource))
}

type Builtins = HashMap<(Printers, String), Option<Arc<Printer>>>;

static BUILTIN: LazyLock<Mutex<Builtins>> = LazyLock::new(Default::default);

/// The id of built-in printers: rows printed as v1.20 prints them (0),
/// as v1.21 to v1.36 do (the largest ids, v1.36's `u64::MAX`), kept on
/// entries apart. Custom resources' printers take their CRD's
/// resourceVersion, which is never this large.
fn builtin_id(printers: Printers) -> u64 {
    match printers {
        Printers::V1_20 => 0,
        p => u64::MAX - (Printers::COUNT - 1 - p.index()) as u64,
    }
}

impl Printer {
    /// The printer of a built-in resource as `personality`'s apiserver
    /// prints it, if kubecache can print it as that apiserver does;
    /// `None` sends Table requests upstream.
    pub fn builtin(
        personality: Personality,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<Arc<Printer>> {
        let printers = personality.printers();
        let gvr = format!("{group}/{version}/{resource}");
        let mut known = BUILTIN.lock().unwrap_or_else(|e| e.into_inner());
        known
            .entry((printers, gvr))
            .or_insert_with_key(|(_, gvr)| {
                let (columns, kind) = match columns::printed(printers, gvr) {
                    Some(cols) => (
                        columns::encode(cols),
                        Kind::Printed(row_fn_for(printers, group, version, resource)?),
                    ),
                    None if columns::is_default(printers, gvr) => (
                        columns::encode(&[
                            Column::new(
                                "Name",
                                "string",
                                "name",
                                columns::meta_description(printers, "name"),
                            ),
                            Column::new(
                                "Created At",
                                "date",
                                "",
                                columns::meta_description(printers, "creationTimestamp"),
                            ),
                        ]),
                        Kind::Default,
                    ),
                    None => return None,
                };
                Some(Arc::new(Printer {
                    id: builtin_id(printers),
                    columns,
                    kind,
                    zero: autoscaling::zero(group, version, resource),
                    order: apiserver::list_order(group, version, resource),
                    headers_always: apiserver::headers_on_every_event(group, resource),
                    fallible: workloads::fails_on_some(printers, group, version, resource),
                    printers,
                }))
            })
            .clone()
    }

    /// A custom resource's printer as `personality`'s apiserver prints it:
    /// the version's `additionalPrinterColumns` after Name, or Age when it
    /// has none. `id` tells rows printed with one definition of the
    /// columns from those of another.
    pub fn custom(personality: Personality, id: u64, printer_columns: &[Value]) -> Printer {
        let printers = personality.printers();
        let mut defs = vec![Column::new(
            "Name",
            "string",
            "name",
            columns::meta_description(printers, "name"),
        )];
        let mut custom = Vec::new();
        let age = [serde_json::json!({
            "name": "Age",
            "type": "date",
            "description": columns::meta_description(printers, "creationTimestamp"),
            "jsonPath": ".metadata.creationTimestamp",
        })];
        let printer_columns = if printer_columns.is_empty() {
            &age[..]
        } else {
            printer_columns
        };
        // Like tableconvertor.New, a column whose path does not parse ends
        // the list: the apiserver prints the columns before it.
        for c in printer_columns {
            let Ok((def, col)) = CustomColumn::parse(c) else {
                break;
            };
            defs.push(def);
            custom.push(col);
        }
        Printer {
            id,
            columns: columns::encode(&defs),
            kind: Kind::Custom(custom),
            zero: None,
            order: None,
            headers_always: false,
            fallible: false,
            printers,
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whose Tables it prints.
    pub fn printers(&self) -> Printers {
        self.printers
    }

    /// Whether some objects' rows are unprintable (`Row::printable`).
    pub fn fallible(&self) -> bool {
        self.fallible
    }

    /// The column definitions, encoded.
    pub fn columns(&self) -> &[u8] {
        &self.columns
    }

    /// The default convertor leaves an empty table's rows `null`; the
    /// printers make an empty slice.
    pub fn null_when_empty(&self) -> bool {
        matches!(self.kind, Kind::Default)
    }

    /// Whether each Table of a watch carries the column definitions, as
    /// the kube-aggregator's convertor writes them, rather than the first.
    pub fn headers_always(&self) -> bool {
        self.headers_always
    }

    /// The order a list printer gives a page's rows: its key, then the
    /// name. `None` keeps the list's order.
    pub fn list_order(&self) -> Option<OrderFn> {
        self.order
    }

    /// The row of one object, given as JSON.
    pub fn row(&self, object: &[u8]) -> Row {
        let obj = match self.kind {
            // No built-in printer reads managed fields, nearly half of a
            // pod as the apiserver keeps it: not building them makes a
            // first Table of real pods much cheaper. A custom resource's
            // columns may point anywhere.
            Kind::Printed(_) | Kind::Default => {
                parse_without(object, &["metadata", "managedFields"])
            }
            Kind::Custom(_) => serde_json::from_slice(object),
        };
        self.row_of(&obj.unwrap_or(Value::Null))
    }

    /// The row of the kind's empty object (a bookmark's), given as JSON:
    /// the apiserver prints the internal type's, unconverted.
    pub fn zero_row(&self, object: &[u8]) -> Row {
        match self.zero {
            Some(f) => {
                let obj: Value = serde_json::from_slice(object).unwrap_or(Value::Null);
                let mut r = RowBuilder::default();
                f(&obj, &mut r);
                r.finish()
            }
            None => self.row(object),
        }
    }

    pub fn row_of(&self, obj: &Value) -> Row {
        let mut r = RowBuilder::default();
        match &self.kind {
            Kind::Printed(f) => f(obj, &mut r),
            Kind::Default => {
                r.str(s(obj, &["metadata", "name"]));
                // A zero time formats as Go's zero time.
                match at(obj, &["metadata", "creationTimestamp"]).and_then(Value::as_str) {
                    Some(t) => r.str(t),
                    None => r.str("0001-01-01T00:00:00Z"),
                };
            }
            Kind::Custom(cols) => {
                r.str(s(obj, &["metadata", "name"]));
                for c in cols {
                    c.cell(obj, &mut r);
                }
            }
        }
        r.finish()
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    /// The row a built-in printer makes of an object, cells as JSON, at
    /// `now`, as v1.20 prints it.
    pub fn cells(gvr: (&str, &str, &str), obj: Value, now: &str) -> String {
        cells_as(Personality::V1_20, gvr, obj, now)
    }

    /// The row `personality`'s printer makes of an object, cells as JSON, at `now`.
    pub fn cells_as(
        personality: Personality,
        gvr: (&str, &str, &str),
        obj: Value,
        now: &str,
    ) -> String {
        let p = Printer::builtin(personality, gvr.0, gvr.1, gvr.2).expect("a printer");
        let now = crate::go::time::parse_rfc3339(now).unwrap();
        p.row_of(&obj).to_json(now)
    }

    /// The row's cells at 2026-01-01T01:00:00Z are `want`, and as many as
    /// the printer has columns, as v1.20 prints them.
    pub fn check(gvr: (&str, &str, &str), obj: Value, want: &str) {
        check_as(Personality::V1_20, gvr, obj, want)
    }

    /// The row's cells at 2026-01-01T01:00:00Z are `want`, and as many as
    /// `personality`'s printer has columns.
    pub fn check_as(personality: Personality, gvr: (&str, &str, &str), obj: Value, want: &str) {
        let got = cells_as(personality, gvr, obj, "2026-01-01T01:00:00Z");
        assert_eq!(got, want);
        let n = serde_json::from_str::<Value>(&format!("{{{got}}}")).unwrap()["cells"]
            .as_array()
            .unwrap()
            .len();
        assert_eq!(n, column_count_as(personality, gvr), "{gvr:?}");
    }

    /// Every printed row has as many cells as its printer has columns.
    pub fn column_count(gvr: (&str, &str, &str)) -> usize {
        column_count_as(Personality::V1_20, gvr)
    }

    /// How many columns `personality`'s printer of `gvr` has.
    pub fn column_count_as(personality: Personality, gvr: (&str, &str, &str)) -> usize {
        columns::printed(
            personality.printers(),
            &format!("{}/{}/{}", gvr.0, gvr.1, gvr.2),
        )
        .map_or(0, <[Column]>::len)
    }

    /// A column's name and type, as `personality`'s printer of `gvr` defines it.
    pub fn column(
        personality: Personality,
        gvr: (&str, &str, &str),
        at: usize,
    ) -> (String, String) {
        let printers = personality.printers();
        let cols = columns::printed(printers, &format!("{}/{}/{}", gvr.0, gvr.1, gvr.2))
            .expect("a printer");
        (cols[at].name.clone(), cols[at].ty.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::cells;
    use super::*;
    use serde_json::json;

    #[test]
    fn each_releases_rows_are_kept_apart() {
        let (v1_20, v1_35, v1_36) = (
            Printer::builtin(Personality::V1_20, "", "v1", "pods").unwrap(),
            Printer::builtin(Personality::of(1, 35).0, "", "v1", "pods").unwrap(),
            Printer::builtin(Personality::NEWEST, "", "v1", "pods").unwrap(),
        );
        // Rows kept on entries tell one release's from another's, and
        // from a custom resource's (whose id is its CRD's resourceVersion).
        let of = |minor| {
            Printer::builtin(Personality::of(1, minor).0, "", "v1", "pods")
                .unwrap()
                .id()
        };
        let ids = [
            v1_20.id(),
            v1_35.id(),
            v1_36.id(),
            of(33),
            of(34),
            of(24),
            of(25),
            of(21),
            of(22),
            of(23),
        ];
        assert_eq!(
            ids.iter().collect::<std::collections::HashSet<_>>().len(),
            10
        );
        assert!(ids[1..].iter().all(|id| *id > u64::from(u32::MAX)));
        assert_ne!(v1_20.columns(), v1_36.columns());
        // A newer release than kubecache knows is printed as the newest.
        let newer = Printer::builtin(Personality::of(1, 40).0, "", "v1", "pods").unwrap();
        assert_eq!(newer.columns(), v1_36.columns());
    }

    #[test]
    fn v1_21_to_v1_36_have_a_row_function_for_each_printer_they_have_columns_for() {
        // (v1.20's column file, regenerated from a v1.20 apiserver, also
        // holds printers kubecache has no port of: see below.)
        for (personality, printers) in [
            (Personality::of(1, 21).0, Printers::V1_21),
            (Personality::of(1, 22).0, Printers::V1_22),
            (Personality::of(1, 23).0, Printers::V1_23),
            (Personality::of(1, 24).0, Printers::V1_24),
            (Personality::of(1, 25).0, Printers::V1_25),
            (Personality::of(1, 26).0, Printers::V1_26),
            (Personality::of(1, 27).0, Printers::V1_27),
            (Personality::of(1, 28).0, Printers::V1_28),
            (Personality::of(1, 29).0, Printers::V1_29),
            (Personality::of(1, 30).0, Printers::V1_30),
            (Personality::of(1, 31).0, Printers::V1_31),
            (Personality::of(1, 32).0, Printers::V1_32),
            (Personality::of(1, 33).0, Printers::V1_33),
            (Personality::of(1, 34).0, Printers::V1_34),
            (Personality::of(1, 35).0, Printers::V1_35),
            (Personality::NEWEST, Printers::V1_36),
        ] {
            assert_eq!(personality.printers(), printers);
            for gvr in columns::printed_resources(printers) {
                let (group, rest) = gvr.split_once('/').unwrap();
                let (version, resource) = rest.split_once('/').unwrap();
                let p = Printer::builtin(personality, group, version, resource);
                assert!(
                    p.is_some_and(|p| p.printers() == printers),
                    "{personality} {gvr}"
                );
            }
        }
    }

    #[test]
    fn v1_35_prints_pods_as_v1_36_and_deployments_with_their_old_descriptions() {
        let v1_35 = Personality::of(1, 35).0;
        let pods = Printer::builtin(v1_35, "", "v1", "pods").unwrap();
        // 1.35's API docs describe a pod's columns as 1.36's do.
        let v1_36 = Printer::builtin(Personality::NEWEST, "", "v1", "pods").unwrap();
        assert_eq!(pods.columns(), v1_36.columns());
        // Deployments are described from extensions/v1beta1, which 1.35
        // does not serve, so not as v1.36 describes them; printed still.
        let deployments = Printer::builtin(v1_35, "apps", "v1", "deployments").unwrap();
        let newest = Printer::builtin(Personality::NEWEST, "apps", "v1", "deployments").unwrap();
        assert_ne!(deployments.columns(), newest.columns());
        // The default convertor's types are printed.
        assert!(Printer::builtin(v1_35, "rbac.authorization.k8s.io", "v1", "roles").is_some());
    }

    #[test]
    fn v1_21_to_v1_23_print_pods_events_and_deployments_as_their_releases() {
        use super::test_support::cells_as;
        let of = |minor| Personality::of(1, minor).0;
        const NOW: &str = "2026-01-01T01:00:00Z";
        // Pods: an integer restart count at 1.21 (v1.20's printer), the
        // last restart's age from 1.22 (#100142).
        let pod = json!({"metadata": {"name": "p"}, "status": {"containerStatuses": [
            {"name": "c", "ready": true, "restartCount": 2,
             "lastState": {"terminated": {"finishedAt": "2026-01-01T00:55:00Z"}}}]}});
        let pods = ("", "v1", "pods");
        let c = cells_as(of(21), pods, pod.clone(), NOW);
        assert!(c.contains(r#""0/0","",2,"#), "{c}");
        for minor in [22, 23] {
            assert!(
                cells_as(of(minor), pods, pod.clone(), NOW).contains(r#""2 (5m ago)""#),
                "1.{minor}"
            );
        }
        // Events: one more on a series' count through 1.22; 1.23's Tables
        // are the upstream's (#105009's release is not established).
        let event = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Node"},
            "eventTime": "2026-01-01T00:30:00.000000Z",
            "series": {"count": 2, "lastObservedTime": "2026-01-01T00:58:00.000000Z"}});
        for minor in [21, 22] {
            assert!(
                cells_as(of(minor), ("", "v1", "events"), event.clone(), NOW).contains(",3,"),
                "1.{minor}"
            );
        }
        assert!(Printer::builtin(of(23), "", "v1", "events").is_none());
        assert!(Printer::builtin(of(23), "events.k8s.io", "v1", "events").is_none());
        // A deployment's selector that does not convert: <invalid> is
        // 1.24's (#107559); before, v1.20's printer fails on it.
        let deployment = json!({"metadata": {"name": "d"}, "spec": {"selector": {
            "matchExpressions": [{"key": "a", "operator": "In", "values": []}]}}});
        let deployments = ("apps", "v1", "deployments");
        for minor in [21, 22, 23] {
            let p = Printer::builtin(of(minor), "apps", "v1", "deployments").unwrap();
            assert!(
                p.fallible() && !p.row_of(&deployment).printable(),
                "1.{minor}"
            );
        }
        let v1_24 = Printer::builtin(of(24), "apps", "v1", "deployments").unwrap();
        assert!(!v1_24.fallible());
        assert!(
            cells_as(of(24), deployments, deployment, NOW).ends_with(r#""\u003cinvalid\u003e"]"#)
        );
        // storage.k8s.io/v1 CSI storage capacities are 1.24's.
        assert!(Printer::builtin(of(23), "storage.k8s.io", "v1", "csistoragecapacities").is_none());
        assert!(Printer::builtin(of(24), "storage.k8s.io", "v1", "csistoragecapacities").is_some());
    }

    #[test]
    fn v1_34_leaves_volume_attributes_classes_to_the_upstream() {
        // Their printer named a default class "NAME (default)" before
        // v1.34.0-beta.0 and not in 1.35's development: which v1.34 did is
        // not established.
        let vac = ("storage.k8s.io", "v1", "volumeattributesclasses");
        assert!(Printer::builtin(Personality::of(1, 34).0, vac.0, vac.1, vac.2).is_none());
        assert!(Printer::builtin(Personality::of(1, 35).0, vac.0, vac.1, vac.2).is_some());
        // Jobs' SuccessCriteriaMet status is 1.34's (v1.34.0-beta.0).
        let job = serde_json::json!({"metadata": {"name": "j"}, "spec": {},
            "status": {"conditions": [{"type": "SuccessCriteriaMet", "status": "True"}]}});
        let cells = test_support::cells_as(
            Personality::of(1, 34).0,
            ("batch", "v1", "jobs"),
            job,
            "2026-01-01T00:00:00Z",
        );
        assert!(cells.contains(r#""j","SuccessCriteriaMet""#), "{cells}");
    }

    #[test]
    fn resources_without_a_port_have_no_printer() {
        assert!(Printer::builtin(
            crate::encode::personality::Personality::V1_20,
            "",
            "v1",
            "nosuchthings"
        )
        .is_none());
        // printers.go prints these, but kubecache does not cache them (they
        // cannot be watched): upstream does.
        assert!(Printer::builtin(
            crate::encode::personality::Personality::V1_20,
            "",
            "v1",
            "componentstatuses"
        )
        .is_none());
    }

    #[test]
    fn the_default_convertor_prints_name_and_creation_time() {
        let obj = json!({"metadata": {"name": "r", "creationTimestamp": "2026-01-02T03:04:05Z"}});
        assert_eq!(
            cells(
                ("rbac.authorization.k8s.io", "v1", "roles"),
                obj,
                "2026-01-02T03:04:05Z"
            ),
            r#""cells":["r","2026-01-02T03:04:05Z"]"#
        );
        let p = Printer::builtin(
            crate::encode::personality::Personality::V1_20,
            "rbac.authorization.k8s.io",
            "v1",
            "roles",
        )
        .unwrap();
        assert!(p.null_when_empty());
        let cols: Vec<Column> = serde_json::from_slice(p.columns()).unwrap();
        assert_eq!(cols[1].name, "Created At");
        assert_eq!(cols[1].ty, "date");
    }

    #[test]
    fn a_column_that_does_not_parse_ends_a_custom_resources_columns() {
        let cols = [
            serde_json::json!({"name": "A", "type": "string", "jsonPath": ".spec.a"}),
            serde_json::json!({"name": "B", "type": "string", "jsonPath": ".spec.b["}),
            serde_json::json!({"name": "C", "type": "string", "jsonPath": ".spec.c"}),
        ];
        let p = Printer::custom(crate::encode::personality::Personality::V1_20, 1, &cols);
        let defs: Vec<Column> = serde_json::from_slice(p.columns()).unwrap();
        let names: Vec<_> = defs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Name", "A"]);
        let obj = json!({"metadata": {"name": "w"}, "spec": {"a": "x", "c": "z"}});
        assert_eq!(p.row_of(&obj).to_json(0), r#""cells":["w","x"]"#);
    }

    #[test]
    fn custom_resources_without_printer_columns_get_an_age() {
        let p = Printer::custom(crate::encode::personality::Personality::V1_20, 7, &[]);
        let cols: Vec<Column> = serde_json::from_slice(p.columns()).unwrap();
        let names: Vec<_> = cols.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Name", "Age"]);
        let obj = json!({"metadata": {"name": "w", "creationTimestamp": "2026-01-01T00:00:00Z"}});
        let now = crate::go::time::parse_rfc3339("2026-01-01T00:01:00Z").unwrap();
        assert_eq!(p.row_of(&obj).to_json(now), r#""cells":["w","60s"]"#);
    }
}
