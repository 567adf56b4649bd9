//! Which lists of the simulated types a strategic merge patch merges, and
//! by which key: what apimachinery reads from the Go types' struct tags
//! (`patchStrategy`, `patchMergeKey`). The simulator has no Go types, so
//! it keeps them as a table, apart from the merge that reads it.

/// How a list field of a simulated type merges: by a key of its items, or
/// (an empty key) as a set of scalars; lists not named here are replaced
/// whole. From k8s.io/api's `patchStrategy:"merge"` tags.
const POD_SPEC_LISTS: [(&str, &str); 7] = [
    ("volumes", "name"),
    ("initContainers", "name"),
    ("containers", "name"),
    ("ephemeralContainers", "name"),
    ("imagePullSecrets", "name"),
    ("hostAliases", "ip"),
    ("topologySpreadConstraints", "topologyKey"),
];

/// The merged lists of every kind of container.
const CONTAINER_LISTS: [(&str, &str); 4] = [
    ("ports", "containerPort"),
    ("env", "name"),
    ("volumeMounts", "mountPath"),
    ("volumeDevices", "devicePath"),
];

/// The merge key of the list at `path` (field names from the object's
/// root; list items add no step) in an object of `kind`: `Some("")` for a
/// merged list of scalars, `None` for a list replaced whole.
pub(super) fn list_merge_key(kind: &str, path: &[&str]) -> Option<&'static str> {
    let find = |table: &[(&str, &'static str)], name: &str| {
        table.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
    };
    let meta = |p: &[&str]| match p {
        ["ownerReferences"] => Some("uid"),
        ["finalizers"] => Some(""),
        _ => None,
    };
    let pod_spec = |p: &[&str]| match p {
        [list] => find(&POD_SPEC_LISTS, list),
        ["containers" | "initContainers" | "ephemeralContainers", list] => {
            find(&CONTAINER_LISTS, list)
        }
        _ => None,
    };
    match (kind, path) {
        (_, ["metadata", rest @ ..]) => meta(rest),
        ("Pod", ["spec", rest @ ..]) => pod_spec(rest),
        ("Pod", ["status", "conditions"]) => Some("type"),
        ("Pod", ["status", "podIPs"]) => Some("ip"),
        ("Node", ["spec", "podCIDRs"]) => Some(""),
        ("Node", ["status", "conditions" | "addresses"]) => Some("type"),
        ("Namespace", ["status", "conditions"]) => Some("type"),
        ("Service", ["spec", "ports"]) => Some("port"),
        ("Deployment", ["spec", "template", "metadata", rest @ ..]) => meta(rest),
        ("Deployment", ["spec", "template", "spec", rest @ ..]) => pod_spec(rest),
        ("Deployment", ["status", "conditions"]) => Some("type"),
        _ => None,
    }
}
