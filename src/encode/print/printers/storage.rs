//! Ports of printers.go for persistent volumes and their claims, storage
//! classes, volume attachments, CSI drivers and CSI nodes, CSI storage
//! capacities and volume attributes classes.

use super::fields::{arr, at, count, created, flag, name, s, RowFn};
use crate::encode::personality::Printers;
use crate::encode::print::row::RowBuilder;
use serde_json::Value;

pub fn lookup(group: &str, version: &str, resource: &str) -> Option<RowFn> {
    Some(match (group, version, resource) {
        ("", "v1", "persistentvolumes") => persistent_volume,
        ("", "v1", "persistentvolumeclaims") => persistent_volume_claim,
        ("storage.k8s.io", "v1" | "v1beta1", "storageclasses") => storage_class,
        ("storage.k8s.io", "v1" | "v1beta1", "volumeattachments") => volume_attachment,
        // With the CSIStorageCapacity and CSIServiceAccountToken gates off,
        // as v1.20 has them by default (and columns.json's columns say).
        ("storage.k8s.io", "v1" | "v1beta1", "csidrivers") => csi_driver,
        ("storage.k8s.io", "v1" | "v1beta1", "csinodes") => csi_node,
        _ => return None,
    })
}

/// Whether an optional field is set (present and not `null`).
fn set(v: &Value, path: &[&str]) -> bool {
    at(v, path).is_some_and(|x| !x.is_null())
}

/// An optional string field: `None` when unset.
fn opt_str<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(v, path).and_then(Value::as_str)
}

/// `resourceList[storage].String()`: the quantity as the apiserver wrote
/// it (always a string, in canonical form, which is what `String()`
/// gives), or the zero quantity, "0", when missing.
fn storage_quantity<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    at(v, path)
        .and_then(|l| l.get("storage"))
        .and_then(Value::as_str)
        .unwrap_or("0")
}

/// `helper.GetAccessModesAsString`: RWO, ROX, RWX in that order, each
/// once, whatever the modes' order and repeats.
fn access_modes(v: &Value, path: &[&str]) -> String {
    let modes = arr(v, path);
    let has = |m: &str| modes.iter().any(|x| x.as_str() == Some(m));
    let mut out = Vec::new();
    for (mode, short) in [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
    ] {
        if has(mode) {
            out.push(short);
        }
    }
    out.join(",")
}

/// The beta storage-class annotation, which wins over the spec's field
/// (`GetPersistentVolumeClass`, `GetPersistentVolumeClaimClass`).
fn class_annotation(v: &Value) -> Option<&str> {
    opt_str(
        v,
        &[
            "metadata",
            "annotations",
            "volume.beta.kubernetes.io/storage-class",
        ],
    )
}

fn volume_mode(v: &Value) -> &str {
    opt_str(v, &["spec", "volumeMode"]).unwrap_or("<unset>")
}

/// v1.36's printers where they differ from v1.20's, as `printers`' release
/// has them: a VolumeAttributesClass column after StorageClass (from 1.29,
/// kubernetes#121104; v1.28 prints volumes and claims as v1.20), CSI
/// drivers' storage capacity, token requests and republishing (their gates
/// on by default from 1.21), and the printers of types v1.20 did not
/// serve. Volume attachments and CSI nodes print as v1.20 printed them.
pub fn lookup_since_v1_28(
    printers: Printers,
    group: &str,
    version: &str,
    resource: &str,
) -> Option<RowFn> {
    let attributes_class = printers.minor() >= 29;
    Some(match (group, version, resource) {
        ("", "v1", "persistentvolumes") if attributes_class => persistent_volume_v1_36,
        ("", "v1", "persistentvolumeclaims") if attributes_class => persistent_volume_claim_v1_36,
        ("storage.k8s.io", "v1", "csidrivers") => csi_driver_v1_36,
        ("storage.k8s.io", "v1", "csistoragecapacities") => csi_storage_capacity,
        ("storage.k8s.io", "v1", "volumeattributesclasses") => volume_attributes_class_row,
        _ => return None,
    })
}

/// `*spec.volumeAttributesClassName`, or `<unset>`.
fn volume_attributes_class(v: &Value) -> &str {
    opt_str(v, &["spec", "volumeAttributesClassName"]).unwrap_or("<unset>")
}

fn persistent_volume(pv: &Value, r: &mut RowBuilder) {
    persistent_volume_as(pv, r, false)
}

fn persistent_volume_v1_36(pv: &Value, r: &mut RowBuilder) {
    persistent_volume_as(pv, r, true)
}

fn persistent_volume_as(pv: &Value, r: &mut RowBuilder, v1_36: bool) {
    let claim = match at(pv, &["spec", "claimRef"]) {
        Some(c) if c.is_object() => format!("{}/{}", s(c, &["namespace"]), s(c, &["name"])),
        _ => String::new(),
    };
    let phase = if set(pv, &["metadata", "deletionTimestamp"]) {
        "Terminating"
    } else {
        s(pv, &["status", "phase"])
    };
    let class = class_annotation(pv).unwrap_or_else(|| s(pv, &["spec", "storageClassName"]));
    r.str(name(pv))
        .str(storage_quantity(pv, &["spec", "capacity"]))
        .str(&access_modes(pv, &["spec", "accessModes"]))
        .str(s(pv, &["spec", "persistentVolumeReclaimPolicy"]))
        .str(phase)
        .str(&claim)
        .str(class);
    if v1_36 {
        r.str(volume_attributes_class(pv));
    }
    r.str(s(pv, &["status", "reason"]))
        .since_field(created(pv))
        .str(volume_mode(pv));
}

fn persistent_volume_claim(pvc: &Value, r: &mut RowBuilder) {
    persistent_volume_claim_as(pvc, r, false)
}

fn persistent_volume_claim_v1_36(pvc: &Value, r: &mut RowBuilder) {
    persistent_volume_claim_as(pvc, r, true)
}

fn persistent_volume_claim_as(pvc: &Value, r: &mut RowBuilder, v1_36: bool) {
    let phase = if set(pvc, &["metadata", "deletionTimestamp"]) {
        "Terminating"
    } else {
        s(pvc, &["status", "phase"])
    };
    let volume = s(pvc, &["spec", "volumeName"]);
    // Capacity and access modes are the bound volume's, from the status.
    let (capacity, modes) = if volume.is_empty() {
        ("", String::new())
    } else {
        (
            storage_quantity(pvc, &["status", "capacity"]),
            access_modes(pvc, &["status", "accessModes"]),
        )
    };
    let class = class_annotation(pvc)
        .or_else(|| opt_str(pvc, &["spec", "storageClassName"]))
        .unwrap_or("");
    r.str(name(pvc))
        .str(phase)
        .str(volume)
        .str(capacity)
        .str(&modes)
        .str(class);
    if v1_36 {
        r.str(volume_attributes_class(pvc));
    }
    r.since_field(created(pvc)).str(volume_mode(pvc));
}

fn storage_class(sc: &Value, r: &mut RowBuilder) {
    let annotation = |k: &str| s(sc, &["metadata", "annotations", k]) == "true";
    let mut shown = name(sc).to_string();
    if annotation("storageclass.kubernetes.io/is-default-class")
        || annotation("storageclass.beta.kubernetes.io/is-default-class")
    {
        shown.push_str(" (default)");
    }
    r.str(&shown)
        .str(s(sc, &["provisioner"]))
        .str(opt_str(sc, &["reclaimPolicy"]).unwrap_or("Delete"))
        .str(opt_str(sc, &["volumeBindingMode"]).unwrap_or("Immediate"))
        .bool(flag(sc, &["allowVolumeExpansion"]))
        .since_field(created(sc));
}

fn volume_attachment(va: &Value, r: &mut RowBuilder) {
    r.str(name(va))
        .str(s(va, &["spec", "attacher"]))
        .str(s(va, &["spec", "source", "persistentVolumeName"]))
        .str(s(va, &["spec", "nodeName"]))
        .bool(flag(va, &["status", "attached"]))
        .since_field(created(va));
}

fn csi_driver(d: &Value, r: &mut RowBuilder) {
    csi_driver_as(d, r, false)
}

/// v1.36's `printCSIDriver`: after attach-required and pod-info-on-mount,
/// storage capacity (false unless set), the token requests' audiences
/// joined with "," ("<unset>" when there is no list; an empty one joins to
/// ""), and requires-republish (false unless set).
fn csi_driver_v1_36(d: &Value, r: &mut RowBuilder) {
    csi_driver_as(d, r, true)
}

fn csi_driver_as(d: &Value, r: &mut RowBuilder, v1_36: bool) {
    let attach_required = at(d, &["spec", "attachRequired"])
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let modes: Vec<&str> = arr(d, &["spec", "volumeLifecycleModes"])
        .iter()
        .map(|m| m.as_str().unwrap_or(""))
        .collect();
    let modes = modes.join(",");
    r.str(name(d))
        .bool(attach_required)
        .bool(flag(d, &["spec", "podInfoOnMount"]));
    if v1_36 {
        let token_requests = match at(d, &["spec", "tokenRequests"]).and_then(Value::as_array) {
            Some(requests) => requests
                .iter()
                .map(|t| s(t, &["audience"]))
                .collect::<Vec<_>>()
                .join(","),
            None => "<unset>".into(),
        };
        r.bool(flag(d, &["spec", "storageCapacity"]))
            .str(&token_requests)
            .bool(flag(d, &["spec", "requiresRepublish"]));
    }
    r.str(if modes.is_empty() { "<none>" } else { &modes })
        .since_field(created(d));
}

/// `printCSIStorageCapacity`: the storage class and the capacity as
/// `Quantity.String()` writes it ("<unset>" without one); no age.
fn csi_storage_capacity(c: &Value, r: &mut RowBuilder) {
    r.str(name(c))
        .str(s(c, &["storageClassName"]))
        .str(opt_str(c, &["capacity"]).unwrap_or("<unset>"));
}

/// `printVolumeAttributesClass`: the driver's name.
fn volume_attributes_class_row(c: &Value, r: &mut RowBuilder) {
    r.str(name(c))
        .str(s(c, &["driverName"]))
        .since_field(created(c));
}

fn csi_node(n: &Value, r: &mut RowBuilder) {
    r.str(name(n))
        .int(count(n, &["spec", "drivers"]) as i64)
        .since_field(created(n));
}

#[cfg(test)]
mod tests {
    //! The cases are objects made on a v1.20 kube-apiserver, with the
    //! cells it printed for them.
    use super::super::test_support::{
        cells, cells_as, check_as, column, column_count, column_count_as,
    };
    use crate::encode::personality::Personality;
    use serde_json::{json, Value};

    const NOW: &str = "2026-01-01T01:00:00Z";
    const PVS: (&str, &str, &str) = ("", "v1", "persistentvolumes");
    const PVCS: (&str, &str, &str) = ("", "v1", "persistentvolumeclaims");

    fn obj(meta: Value, rest: Value) -> Value {
        let mut o = json!({"metadata": {"creationTimestamp": "2026-01-01T00:59:00Z"}});
        o["metadata"]
            .as_object_mut()
            .unwrap()
            .extend(meta.as_object().unwrap().clone());
        o.as_object_mut()
            .unwrap()
            .extend(rest.as_object().unwrap().clone());
        o
    }

    /// The cells, checked to be as many as the columns.
    fn row(gvr: (&str, &str, &str), o: Value) -> String {
        let c = cells(gvr, o, NOW);
        let v: Value = serde_json::from_str(&format!("{{{c}}}")).unwrap();
        assert_eq!(v["cells"].as_array().unwrap().len(), column_count(gvr));
        c
    }

    #[test]
    fn persistent_volumes() {
        let pv = |meta: Value, spec: Value, status: Value| {
            row(PVS, obj(meta, json!({"spec": spec, "status": status})))
        };
        // Access modes in a fixed order, each once.
        assert_eq!(
            pv(
                json!({"name": "a"}),
                json!({"capacity": {"storage": "1536Mi"}, "storageClassName": "fast",
                    "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany"],
                    "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"}),
                json!({"phase": "Pending"})
            ),
            r#""cells":["a","1536Mi","RWO,ROX,RWX","Retain","Pending","","fast","","60s","Filesystem"]"#
        );
        // The beta annotation wins over the spec's class.
        assert_eq!(
            pv(
                json!({"name": "b", "annotations": {"volume.beta.kubernetes.io/storage-class": "beta"}}),
                json!({"capacity": {"storage": "1G"}, "accessModes": ["ReadOnlyMany"], "storageClassName": "fast",
                    "persistentVolumeReclaimPolicy": "Delete", "volumeMode": "Block",
                    "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "ns1", "name": "c1"}}),
                json!({"phase": "Failed", "reason": "Oops"})
            ),
            r#""cells":["b","1G","ROX","Delete","Failed","ns1/c1","beta","Oops","60s","Block"]"#
        );
        assert!(pv(
            json!({"name": "c"}),
            json!({"capacity": {"storage": "500m"}, "claimRef": {"name": "noNs"}}),
            json!({"phase": "Pending"})
        )
        .contains(r#""Pending","/noNs","""#));
        assert!(pv(
            json!({"name": "d", "deletionTimestamp": "2026-01-01T00:59:30Z"}),
            json!({}),
            json!({"phase": "Available"})
        )
        .contains(r#""Terminating""#));
        // Nothing set: the zero quantity and an unset volume mode.
        assert_eq!(
            pv(json!({"name": "e"}), json!(null), json!(null)),
            r#""cells":["e","0","","","","","","","60s","\u003cunset\u003e"]"#
        );
    }

    #[test]
    fn persistent_volume_claims() {
        let pvc = |meta: Value, spec: Value, status: Value| {
            row(PVCS, obj(meta, json!({"spec": spec, "status": status})))
        };
        let requests = json!({"requests": {"storage": "1Gi"}});
        // Capacity and access modes are the status's, once bound to a volume.
        assert_eq!(
            pvc(
                json!({"name": "bound", "annotations": {"volume.beta.kubernetes.io/storage-class": "beta"}}),
                json!({"storageClassName": "fast", "volumeName": "pv-a", "accessModes": ["ReadWriteOnce"],
                    "resources": requests, "volumeMode": "Filesystem"}),
                json!({"phase": "Bound", "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                    "capacity": {"storage": "1536Mi"}})
            ),
            r#""cells":["bound","Bound","pv-a","1536Mi","RWO,RWX","beta","60s","Filesystem"]"#
        );
        assert_eq!(
            pvc(
                json!({"name": "nocap"}),
                json!({"storageClassName": "", "volumeName": "pv-c", "accessModes": ["ReadWriteOnce"],
                    "resources": requests, "volumeMode": "Block"}),
                json!({"phase": "Pending"})
            ),
            r#""cells":["nocap","Pending","pv-c","0","","","60s","Block"]"#
        );
        assert_eq!(
            pvc(
                json!({"name": "pending"}),
                json!({"storageClassName": "fast", "accessModes": ["ReadWriteOnce"], "resources": requests}),
                json!({"phase": "Pending", "capacity": {"storage": "1Gi"}})
            ),
            r#""cells":["pending","Pending","","","","fast","60s","\u003cunset\u003e"]"#
        );
        assert!(pvc(
            json!({"name": "t", "deletionTimestamp": "2026-01-01T00:59:30Z"}),
            json!({}),
            json!({"phase": "Bound"})
        )
        .contains(r#""t","Terminating""#));
    }

    #[test]
    fn storage_classes_default_their_policies_and_mark_the_default() {
        for v in ["v1", "v1beta1"] {
            let gvr = ("storage.k8s.io", v, "storageclasses");
            let sc = |meta: Value, rest: Value| row(gvr, obj(meta, rest));
            assert_eq!(
                sc(
                    json!({"name": "plain"}),
                    json!({"provisioner": "example.com/p"})
                ),
                r#""cells":["plain","example.com/p","Delete","Immediate",false,"60s"]"#
            );
            assert_eq!(
                sc(
                    json!({"name": "d", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}),
                    json!({"provisioner": "example.com/p", "reclaimPolicy": "Retain",
                        "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": true})
                ),
                r#""cells":["d (default)","example.com/p","Retain","WaitForFirstConsumer",true,"60s"]"#
            );
            assert!(sc(
                json!({"name": "b", "annotations": {
                    "storageclass.beta.kubernetes.io/is-default-class": "true",
                    "storageclass.kubernetes.io/is-default-class": "false"}}),
                json!({"allowVolumeExpansion": false})
            )
            .starts_with(r#""cells":["b (default)","#));
            assert!(sc(
                json!({"name": "n", "annotations": {"storageclass.kubernetes.io/is-default-class": "True"}}),
                json!({})
            )
            .starts_with(r#""cells":["n","#));
        }
    }

    #[test]
    fn volume_attachments_csi_drivers_and_csi_nodes() {
        for v in ["v1", "v1beta1"] {
            let va = ("storage.k8s.io", v, "volumeattachments");
            assert_eq!(
                row(
                    va,
                    obj(
                        json!({"name": "va"}),
                        json!({"spec": {"attacher": "att.example.com", "nodeName": "node2",
                            "source": {"persistentVolumeName": "pv2"}}, "status": {"attached": true}})
                    )
                ),
                r#""cells":["va","att.example.com","pv2","node2",true,"60s"]"#
            );
            assert_eq!(
                row(
                    va,
                    obj(
                        json!({"name": "inline"}),
                        json!({"spec": {"attacher": "att.example.com", "nodeName": "node3",
                            "source": {"inlineVolumeSpec": {"csi": {"driver": "d", "volumeHandle": "h"}}}},
                            "status": {"attached": false}})
                    )
                ),
                r#""cells":["inline","att.example.com","","node3",false,"60s"]"#
            );

            let driver = ("storage.k8s.io", v, "csidrivers");
            assert_eq!(
                row(
                    driver,
                    obj(
                        json!({"name": "a.example.com"}),
                        json!({"spec": {"attachRequired": true, "podInfoOnMount": false,
                            "volumeLifecycleModes": ["Persistent"]}})
                    )
                ),
                r#""cells":["a.example.com",true,false,"Persistent","60s"]"#
            );
            assert_eq!(
                row(
                    driver,
                    obj(
                        json!({"name": "b.example.com"}),
                        json!({"spec": {"attachRequired": false, "podInfoOnMount": true,
                            "volumeLifecycleModes": ["Persistent", "Ephemeral"]}})
                    )
                ),
                r#""cells":["b.example.com",false,true,"Persistent,Ephemeral","60s"]"#
            );
            // Unset: attach required, no pod info, no modes.
            assert_eq!(
                row(driver, obj(json!({"name": "c"}), json!({"spec": {}}))),
                r#""cells":["c",true,false,"\u003cnone\u003e","60s"]"#
            );

            let node = ("storage.k8s.io", v, "csinodes");
            assert_eq!(
                row(
                    node,
                    obj(
                        json!({"name": "n"}),
                        json!({"spec": {"drivers": [{"name": "a.example.com", "nodeID": "n1"},
                            {"name": "b.example.com", "nodeID": "n1"}]}})
                    )
                ),
                r#""cells":["n",2,"60s"]"#
            );
            assert_eq!(
                row(
                    node,
                    obj(json!({"name": "e"}), json!({"spec": {"drivers": []}}))
                ),
                r#""cells":["e",0,"60s"]"#
            );
        }
    }

    #[test]
    fn only_the_ported_versions_are_registered() {
        assert!(super::lookup("storage.k8s.io", "v1alpha1", "volumeattachments").is_none());
        assert!(super::lookup("storage.k8s.io", "v1beta1", "csistoragecapacities").is_none());
    }

    #[test]
    fn v1_29_volumes_and_claims_show_their_volume_attributes_class() {
        let v1_36 = Personality::NEWEST;
        for (gvr, at) in [(PVS, 7), (PVCS, 6)] {
            assert_eq!(column(v1_36, gvr, at).0, "VolumeAttributesClass");
            assert_eq!(column_count_as(v1_36, gvr), column_count(gvr) + 1);
        }
        let pv = |class: Value| {
            obj(
                json!({"name": "a"}),
                json!({"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "fast",
                    "volumeMode": "Filesystem", "volumeAttributesClassName": class},
                    "status": {"phase": "Available"}}),
            )
        };
        assert_eq!(
            cells_as(v1_36, PVS, pv(json!("gold")), NOW),
            r#""cells":["a","1Gi","RWO","Retain","Available","","fast","gold","","60s","Filesystem"]"#
        );
        assert!(
            cells_as(v1_36, PVS, pv(json!(null)), NOW).contains(r#""fast","\u003cunset\u003e","""#)
        );
        let pvc = obj(
            json!({"name": "c"}),
            json!({"spec": {"storageClassName": "fast", "volumeName": "a", "volumeMode": "Block"},
                "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}}),
        );
        assert_eq!(
            cells_as(v1_36, PVCS, pvc.clone(), NOW),
            r#""cells":["c","Bound","a","1Gi","RWO","fast","\u003cunset\u003e","60s","Block"]"#
        );
        // v1.28 has neither the column nor the cell (#121104 is 1.29's).
        let v1_28 = Personality::of(1, 28).0;
        for gvr in [PVS, PVCS] {
            assert_eq!(column_count_as(v1_28, gvr), column_count_as(v1_36, gvr) - 1);
        }
        assert_eq!(
            cells_as(v1_28, PVS, pv(json!("gold")), NOW),
            r#""cells":["a","1Gi","RWO","Retain","Available","","fast","","60s","Filesystem"]"#
        );
        assert_eq!(
            cells_as(v1_28, PVCS, pvc, NOW),
            r#""cells":["c","Bound","a","1Gi","RWO","fast","60s","Block"]"#
        );
    }

    #[test]
    fn v1_21_csi_drivers_show_storage_capacity_token_requests_and_republish() {
        let v1_36 = Personality::NEWEST;
        let gvr = ("storage.k8s.io", "v1", "csidrivers");
        let names: Vec<String> = (0..column_count_as(v1_36, gvr))
            .map(|i| column(v1_36, gvr, i).0)
            .collect();
        assert_eq!(
            names,
            [
                "Name",
                "AttachRequired",
                "PodInfoOnMount",
                "StorageCapacity",
                "TokenRequests",
                "RequiresRepublish",
                "Modes",
                "Age"
            ]
        );
        let driver = |spec: Value| obj(json!({"name": "d.example.com"}), json!({"spec": spec}));
        check_as(
            v1_36,
            gvr,
            driver(
                json!({"attachRequired": false, "podInfoOnMount": true, "storageCapacity": true,
                "tokenRequests": [{"audience": "a"}, {"audience": "b", "expirationSeconds": 3600}],
                "requiresRepublish": true, "volumeLifecycleModes": ["Persistent", "Ephemeral"]}),
            ),
            r#""cells":["d.example.com",false,true,true,"a,b",true,"Persistent,Ephemeral","60s"]"#,
        );
        // Unset: attach required, and no token requests at all.
        check_as(
            v1_36,
            gvr,
            driver(json!({})),
            r#""cells":["d.example.com",true,false,false,"\u003cunset\u003e",false,"\u003cnone\u003e","60s"]"#,
        );
        // A request without an audience joins as the empty string.
        assert!(
            cells_as(v1_36, gvr, driver(json!({"tokenRequests": [{}]})), NOW)
                .contains(r#"false,"",false"#)
        );
    }

    #[test]
    fn v1_24_csi_storage_capacities_show_their_class_and_capacity() {
        let v1_36 = Personality::NEWEST;
        let gvr = ("storage.k8s.io", "v1", "csistoragecapacities");
        let capacity = |rest: Value| {
            obj(
                json!({"name": "csisc-abc", "namespace": "kube-system"}),
                rest,
            )
        };
        // No age column: the printer has none.
        check_as(
            v1_36,
            gvr,
            capacity(json!({"storageClassName": "fast", "capacity": "10Gi",
                "nodeTopology": {"matchLabels": {"zone": "a"}}})),
            r#""cells":["csisc-abc","fast","10Gi"]"#,
        );
        check_as(
            v1_36,
            gvr,
            capacity(json!({"storageClassName": "fast"})),
            r#""cells":["csisc-abc","fast","\u003cunset\u003e"]"#,
        );
        // v1.20 did not print them (storage.k8s.io/v1 came in 1.24).
        assert_eq!(column_count(gvr), 0);
    }

    #[test]
    fn v1_29_volume_attributes_classes_show_their_driver() {
        let v1_36 = Personality::NEWEST;
        let gvr = ("storage.k8s.io", "v1", "volumeattributesclasses");
        check_as(
            v1_36,
            gvr,
            obj(
                json!({"name": "gold"}),
                json!({"driverName": "pd.csi.storage.gke.io", "parameters": {"iops": "3000"}}),
            ),
            r#""cells":["gold","pd.csi.storage.gke.io","60s"]"#,
        );
    }

    #[test]
    fn v1_36_prints_volume_attachments_and_csi_nodes_as_v1_20_did() {
        let v1_36 = Personality::NEWEST;
        let va = ("storage.k8s.io", "v1", "volumeattachments");
        check_as(
            v1_36,
            va,
            obj(
                json!({"name": "va"}),
                json!({"spec": {"attacher": "att.example.com", "nodeName": "node2",
                    "source": {"persistentVolumeName": "pv2"}}, "status": {"attached": true}}),
            ),
            r#""cells":["va","att.example.com","pv2","node2",true,"60s"]"#,
        );
        assert_eq!(column(v1_36, va, 1), ("Attacher".into(), "string".into()));
        check_as(
            v1_36,
            ("storage.k8s.io", "v1", "csinodes"),
            obj(
                json!({"name": "n"}),
                json!({"spec": {"drivers": [{"name": "a.example.com", "nodeID": "n1"}]}}),
            ),
            r#""cells":["n",1,"60s"]"#,
        );
    }
}
