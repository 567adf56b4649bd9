//! Ports of printers.go for the workload controllers: deployments,
//! replica sets, stateful sets, daemon sets, jobs, cron jobs and
//! replication controllers.

use super::fields::{arr, at, count, created, int, name, s, RowFn};
use crate::encode::personality::Printers;
use crate::encode::print::row::RowBuilder;
use crate::go::time::{human_duration, parse_rfc3339};
use serde_json::Value;

pub fn lookup(group: &str, version: &str, resource: &str) -> Option<RowFn> {
    Some(match (group, version, resource) {
        ("apps", "v1", "deployments") => deployment,
        ("apps", "v1", "replicasets") => replica_set,
        ("apps", "v1", "statefulsets") => stateful_set,
        ("apps", "v1", "daemonsets") => daemon_set,
        ("batch", "v1", "jobs") => job,
        ("batch", "v1beta1", "cronjobs") => cron_job,
        ("", "v1", "replicationcontrollers") => replication_controller,
        _ => return None,
    })
}

/// A pointer field that is set (present and not null).
fn set<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    at(v, path).filter(|v| !v.is_null())
}

/// `layoutContainerCells`: names and images, comma-separated.
fn containers(pod_spec: Option<&Value>) -> (String, String) {
    let cs = pod_spec.map_or(&[][..], |p| arr(p, &["containers"]));
    let names: Vec<&str> = cs.iter().map(|c| s(c, &["name"])).collect();
    let images: Vec<&str> = cs.iter().map(|c| s(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

fn template_containers(obj: &Value) -> (String, String) {
    containers(at(obj, &["spec", "template", "spec"]))
}

/// `labels.FormatLabels`: `k=v` sorted by key, `<none>` when empty.
pub(super) fn format_labels(map: Option<&Value>) -> String {
    let mut pairs: Vec<(&str, &str)> = map
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    pairs.sort_unstable();
    if pairs.is_empty() {
        return "<none>".into();
    }
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `validation.IsValidLabelValue`: at most 63 characters, alphanumeric at
/// both ends, `-_.` inside.
fn is_label_value(v: &str) -> bool {
    if v.is_empty() {
        return true;
    }
    let b = v.as_bytes();
    b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `validation.IsDNS1123Subdomain`.
fn is_dns1123_subdomain(v: &str) -> bool {
    v.len() <= 253
        && v.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
                && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

/// `validation.IsQualifiedName`: `[prefix/]name`.
fn is_qualified_name(k: &str) -> bool {
    let parts: Vec<&str> = k.split('/').collect();
    let name = match parts[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() || !is_dns1123_subdomain(prefix) {
                return false;
            }
            name
        }
        _ => return false,
    };
    !name.is_empty() && is_label_value(name)
}

/// `metav1.LabelSelectorAsSelector(sel).String()`: requirements kept
/// sorted by key (each one added re-sorts; equal keys keep the order they
/// were added in), values of `in`/`notin` sorted. `None` is Go's error (a
/// requirement `labels.NewRequirement` refuses).
fn selector_string(sel: Option<&Value>) -> Option<String> {
    let Some(sel) = sel.filter(|v| !v.is_null()) else {
        return Some(String::new()); // labels.Nothing()
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = at(sel, &["matchLabels"]).and_then(Value::as_object) {
        for (k, v) in m {
            let v = v.as_str().unwrap_or("");
            if !is_qualified_name(k) || !is_label_value(v) {
                return None;
            }
            reqs.push((k.clone(), format!("{k}={v}")));
        }
        reqs.sort_by(|a, b| a.0.cmp(&b.0));
    }
    for e in arr(sel, &["matchExpressions"]) {
        let key = s(e, &["key"]);
        let mut values: Vec<&str> = arr(e, &["values"])
            .iter()
            .map(|v| v.as_str().unwrap_or(""))
            .collect();
        if !is_qualified_name(key) || !values.iter().all(|v| is_label_value(v)) {
            return None;
        }
        let text = match s(e, &["operator"]) {
            op @ ("In" | "NotIn") => {
                if values.is_empty() {
                    return None;
                }
                values.sort_unstable();
                let op = if op == "In" { "in" } else { "notin" };
                format!("{key} {op} ({})", values.join(","))
            }
            "Exists" if values.is_empty() => key.to_string(),
            "DoesNotExist" if values.is_empty() => format!("!{key}"),
            _ => return None,
        };
        // `internalSelector.Add`: appended, then `sort.Sort(ByKey)`, which
        // does not keep equal keys in order beyond 12 requirements.
        reqs.push((key.to_string(), text));
        go_sort::sort(&mut reqs);
    }
    Some(reqs.into_iter().map(|r| r.1).collect::<Vec<_>>().join(","))
}

/// Go 1.19's `sort.Sort` (pattern-defeating quicksort, what the v1.20
/// apiserver is built with), by key: which of several requirements with
/// one key comes first is the algorithm's to say.
mod go_sort {
    type Data = [(String, String)];

    fn less(d: &Data, i: usize, j: usize) -> bool {
        d[i].0 < d[j].0
    }

    pub fn sort(d: &mut Data) {
        let n = d.len();
        if n <= 1 {
            return;
        }
        let limit = usize::BITS - n.leading_zeros();
        pdqsort(d, 0, n, limit);
    }

    fn insertion_sort(d: &mut Data, a: usize, b: usize) {
        for i in a + 1..b {
            let mut j = i;
            while j > a && less(d, j, j - 1) {
                d.swap(j, j - 1);
                j -= 1;
            }
        }
    }

    fn sift_down(d: &mut Data, lo: usize, hi: usize, first: usize) {
        let mut root = lo;
        loop {
            let mut child = 2 * root + 1;
            if child >= hi {
                return;
            }
            if child + 1 < hi && less(d, first + child, first + child + 1) {
                child += 1;
            }
            if !less(d, first + root, first + child) {
                return;
            }
            d.swap(first + root, first + child);
            root = child;
        }
    }

    fn heap_sort(d: &mut Data, a: usize, b: usize) {
        let (first, hi) = (a, b - a);
        for i in (0..=(hi - 1) / 2).rev() {
            sift_down(d, i, hi, first);
        }
        for i in (0..hi).rev() {
            d.swap(first, first + i);
            sift_down(d, 0, i, first);
        }
    }

    #[derive(PartialEq)]
    enum Hint {
        Unknown,
        Increasing,
        Decreasing,
    }

    fn pdqsort(d: &mut Data, mut a: usize, mut b: usize, mut limit: u32) {
        let (mut was_balanced, mut was_partitioned) = (true, true);
        loop {
            let length = b - a;
            if length <= 12 {
                insertion_sort(d, a, b);
                return;
            }
            if limit == 0 {
                heap_sort(d, a, b);
                return;
            }
            if !was_balanced {
                break_patterns(d, a, b);
                limit -= 1;
            }
            let (mut pivot, mut hint) = choose_pivot(d, a, b);
            if hint == Hint::Decreasing {
                d[a..b].reverse();
                pivot = (b - 1) - (pivot - a);
                hint = Hint::Increasing;
            }
            if was_balanced
                && was_partitioned
                && hint == Hint::Increasing
                && partial_insertion_sort(d, a, b)
            {
                return;
            }
            if a > 0 && !less(d, a - 1, pivot) {
                a = partition_equal(d, a, b, pivot);
                continue;
            }
            let (mid, already) = partition(d, a, b, pivot);
            was_partitioned = already;
            let (left, right) = (mid - a, b - mid);
            let threshold = length / 8;
            if left < right {
                was_balanced = left >= threshold;
                pdqsort(d, a, mid, limit);
                a = mid + 1;
            } else {
                was_balanced = right >= threshold;
                pdqsort(d, mid + 1, b, limit);
                b = mid;
            }
        }
    }

    fn partition(d: &mut Data, a: usize, b: usize, pivot: usize) -> (usize, bool) {
        d.swap(a, pivot);
        // i and j as Go's ints: j can go below a.
        let (mut i, mut j) = (a as isize + 1, b as isize - 1);
        let lt = |d: &Data, x: isize| less(d, x as usize, a);
        while i <= j && lt(d, i) {
            i += 1;
        }
        while i <= j && !lt(d, j) {
            j -= 1;
        }
        if i > j {
            d.swap(j as usize, a);
            return (j as usize, true);
        }
        d.swap(i as usize, j as usize);
        i += 1;
        j -= 1;
        loop {
            while i <= j && lt(d, i) {
                i += 1;
            }
            while i <= j && !lt(d, j) {
                j -= 1;
            }
            if i > j {
                break;
            }
            d.swap(i as usize, j as usize);
            i += 1;
            j -= 1;
        }
        d.swap(j as usize, a);
        (j as usize, false)
    }

    fn partition_equal(d: &mut Data, a: usize, b: usize, pivot: usize) -> usize {
        d.swap(a, pivot);
        let (mut i, mut j) = (a as isize + 1, b as isize - 1);
        loop {
            while i <= j && !less(d, a, i as usize) {
                i += 1;
            }
            while i <= j && less(d, a, j as usize) {
                j -= 1;
            }
            if i > j {
                break;
            }
            d.swap(i as usize, j as usize);
            i += 1;
            j -= 1;
        }
        i as usize
    }

    fn partial_insertion_sort(d: &mut Data, a: usize, b: usize) -> bool {
        const MAX_STEPS: usize = 5;
        const SHORTEST_SHIFTING: usize = 50;
        let mut i = a + 1;
        for _ in 0..MAX_STEPS {
            while i < b && !less(d, i, i - 1) {
                i += 1;
            }
            if i == b {
                return true;
            }
            if b - a < SHORTEST_SHIFTING {
                return false;
            }
            d.swap(i, i - 1);
            if i - a >= 2 {
                // Go's loop runs down to 1, not to a+1.
                let mut j = i - 1;
                while j >= 1 {
                    if !less(d, j, j - 1) {
                        break;
                    }
                    d.swap(j, j - 1);
                    j -= 1;
                }
            }
            if b - i >= 2 {
                for j in i + 1..b {
                    if !less(d, j, j - 1) {
                        break;
                    }
                    d.swap(j, j - 1);
                }
            }
        }
        false
    }

    fn break_patterns(d: &mut Data, a: usize, b: usize) {
        let length = b - a;
        if length >= 8 {
            let mut random = length as u64;
            let modulus = 1usize << (usize::BITS - length.leading_zeros());
            let idx0 = a + (length / 4) * 2 - 1;
            for idx in idx0..=idx0 + 2 {
                random ^= random << 13;
                random ^= random >> 17;
                random ^= random << 5;
                let mut other = (random as usize) & (modulus - 1);
                if other >= length {
                    other -= length;
                }
                d.swap(idx, a + other);
            }
        }
    }

    fn choose_pivot(d: &mut Data, a: usize, b: usize) -> (usize, Hint) {
        let l = b - a;
        let mut swaps = 0;
        let (mut i, mut j, mut k) = (a + l / 4, a + l / 4 * 2, a + l / 4 * 3);
        if l >= 8 {
            if l >= 50 {
                i = median(d, i - 1, i, i + 1, &mut swaps);
                j = median(d, j - 1, j, j + 1, &mut swaps);
                k = median(d, k - 1, k, k + 1, &mut swaps);
            }
            j = median(d, i, j, k, &mut swaps);
        }
        match swaps {
            0 => (j, Hint::Increasing),
            12 => (j, Hint::Decreasing),
            _ => (j, Hint::Unknown),
        }
    }

    fn order2(d: &Data, a: usize, b: usize, swaps: &mut u32) -> (usize, usize) {
        if less(d, b, a) {
            *swaps += 1;
            (b, a)
        } else {
            (a, b)
        }
    }

    fn median(d: &Data, a: usize, b: usize, c: usize, swaps: &mut u32) -> usize {
        let (a, b) = order2(d, a, b, swaps);
        let (b, c) = order2(d, b, c, swaps);
        let _ = c;
        let (_, b) = order2(d, a, b, swaps);
        b
    }
}

/// `metav1.FormatLabelSelector`: `<none>` for an empty selector,
/// `<error>` for one that does not convert.
pub(super) fn format_label_selector(sel: Option<&Value>) -> String {
    match selector_string(sel) {
        None => "<error>".into(),
        Some(s) if s.is_empty() => "<none>".into(),
        Some(s) => s,
    }
}

/// Whether `printers`' printer of a resource returns an error for some
/// objects: v1.20's to v1.23's deployments' (`deployment`).
pub fn fails_on_some(printers: Printers, group: &str, version: &str, resource: &str) -> bool {
    printers.minor() <= 23 && (group, version, resource) == ("apps", "v1", "deployments")
}

/// `printDeployment`. Its selector goes through `LabelSelectorAsSelector`
/// unformatted; validation of apps/v1 makes sure it converts. One that
/// does not (stored before validation caught it, kubernetes#99139) is the
/// printer's error, which fails v1.20's to v1.23's whole Table: the row is
/// unprintable, and such a Table is the upstream's to answer.
fn deployment(d: &Value, r: &mut RowBuilder) {
    deployment_as(d, r, None)
}

/// From v1.24 a selector that does not convert prints `<invalid>`
/// (kubernetes#107559).
fn deployment_v1_24(d: &Value, r: &mut RowBuilder) {
    deployment_as(d, r, Some("<invalid>"))
}

fn deployment_as(d: &Value, r: &mut RowBuilder, invalid: Option<&str>) {
    let Some(selector) =
        selector_string(at(d, &["spec", "selector"])).or_else(|| invalid.map(String::from))
    else {
        r.fail();
        return;
    };
    let (names, images) = template_containers(d);
    r.str(name(d))
        .str(&format!(
            "{}/{}",
            int(d, &["status", "readyReplicas"]),
            int(d, &["spec", "replicas"])
        ))
        .int(int(d, &["status", "updatedReplicas"]))
        .int(int(d, &["status", "availableReplicas"]))
        .since_field(created(d))
        .str(&names)
        .str(&images)
        .str(&selector);
}

fn replica_set(x: &Value, r: &mut RowBuilder) {
    replicas(x, r, &format_label_selector(at(x, &["spec", "selector"])));
}

/// A replication controller's selector is a plain label map.
fn replication_controller(x: &Value, r: &mut RowBuilder) {
    replicas(x, r, &format_labels(at(x, &["spec", "selector"])));
}

/// The row replica sets and replication controllers share.
fn replicas(x: &Value, r: &mut RowBuilder, selector: &str) {
    let (names, images) = template_containers(x);
    r.str(name(x))
        .int(int(x, &["spec", "replicas"]))
        .int(int(x, &["status", "replicas"]))
        .int(int(x, &["status", "readyReplicas"]))
        .since_field(created(x))
        .str(&names)
        .str(&images)
        .str(selector);
}

fn stateful_set(x: &Value, r: &mut RowBuilder) {
    let (names, images) = template_containers(x);
    r.str(name(x))
        .str(&format!(
            "{}/{}",
            int(x, &["status", "readyReplicas"]),
            int(x, &["spec", "replicas"])
        ))
        .since_field(created(x))
        .str(&names)
        .str(&images);
}

fn daemon_set(x: &Value, r: &mut RowBuilder) {
    let (names, images) = template_containers(x);
    r.str(name(x))
        .int(int(x, &["status", "desiredNumberScheduled"]))
        .int(int(x, &["status", "currentNumberScheduled"]))
        .int(int(x, &["status", "numberReady"]))
        .int(int(x, &["status", "updatedNumberScheduled"]))
        .int(int(x, &["status", "numberAvailable"]))
        .str(&format_labels(at(
            x,
            &["spec", "template", "spec", "nodeSelector"],
        )))
        .since_field(created(x))
        .str(&names)
        .str(&images)
        .str(&format_label_selector(at(x, &["spec", "selector"])));
}

/// v1.21's to v1.36's printers where they differ from v1.20's: a job's
/// Status (kubernetes#123226, 1.30; SuccessCriteriaMet among them from
/// 1.34), a cron job's Timezone (#122231, 1.30), a deployment's selector
/// that does not convert printed `<invalid>` (#107559, CHANGELOG-1.24
/// v1.24.0-alpha.2; v1.21 to v1.23 fail the Table as v1.20 does); and
/// batch/v1 cron jobs, which v1.20 did not serve.
pub fn lookup_since_v1_33(
    printers: Printers,
    group: &str,
    version: &str,
    resource: &str,
) -> Option<RowFn> {
    Some(match (group, version, resource) {
        // v1.29's: no Status column (v1.20's printer).
        ("batch", "v1", "jobs") if printers.minor() <= 29 => return None,
        ("batch", "v1", "jobs") if printers.minor() <= 33 => job_v1_33,
        ("batch", "v1", "jobs") => job_v1_36,
        ("batch", "v1", "cronjobs") if printers.minor() <= 29 => cron_job,
        ("batch", "v1", "cronjobs") => cron_job_v1_36,
        ("apps", "v1", "deployments") if printers.minor() >= 24 => deployment_v1_24,
        _ => return None,
    })
}

/// `printJob`'s Status (v1.36): the first condition of each type, in this
/// order, that is True; else Terminating while deleted; else Running.
/// SuccessCriteriaMet is shown from 1.34 (kubernetes#132832, in
/// CHANGELOG-1.34's v1.34.0-beta.0): v1.33 prints such a job Running.
fn job_status(j: &Value, success_criteria_met: bool) -> &'static str {
    let holds = |ty: &str| {
        arr(j, &["status", "conditions"])
            .iter()
            .find(|c| s(c, &["type"]) == ty)
            .is_some_and(|c| s(c, &["status"]) == "True")
    };
    let deleted = set(j, &["metadata", "deletionTimestamp"]).is_some();
    if holds("Complete") {
        "Complete"
    } else if holds("Failed") {
        "Failed"
    } else if deleted {
        "Terminating"
    } else if holds("Suspended") {
        "Suspended"
    } else if holds("FailureTarget") {
        "FailureTarget"
    } else if success_criteria_met && holds("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

/// `printJob`: completions as succeeded/wanted, and how long the job ran
/// (still counting while it has not completed).
fn job(j: &Value, r: &mut RowBuilder) {
    job_as(j, r, None)
}

/// v1.30's to v1.33's: no SuccessCriteriaMet status (kubernetes#132832,
/// v1.34.0-beta.0).
fn job_v1_33(j: &Value, r: &mut RowBuilder) {
    job_as(j, r, Some(Printers::V1_33))
}

fn job_v1_36(j: &Value, r: &mut RowBuilder) {
    job_as(j, r, Some(Printers::V1_36))
}

/// `printers`: None for v1.20's printer (no Status column).
fn job_as(j: &Value, r: &mut RowBuilder, printers: Option<Printers>) {
    let succeeded = int(j, &["status", "succeeded"]);
    let completions = match set(j, &["spec", "completions"]) {
        Some(c) => format!("{succeeded}/{}", c.as_i64().unwrap_or(0)),
        None => {
            let parallelism = int(j, &["spec", "parallelism"]);
            if parallelism > 1 {
                format!("{succeeded}/1 of {parallelism}")
            } else {
                format!("{succeeded}/1")
            }
        }
    };
    let time = |field| {
        set(j, &["status", field])
            .and_then(Value::as_str)
            .and_then(parse_rfc3339)
    };
    r.str(name(j));
    if let Some(p) = printers {
        r.str(job_status(j, p.minor() >= 34));
    }
    r.str(&completions);
    match (time("startTime"), time("completionTime")) {
        (None, _) => r.str(""),
        (Some(start), None) => r.since(Some(start)),
        (Some(start), Some(end)) => r.str(&human_duration(end - start)),
    };
    let (names, images) = template_containers(j);
    r.since_field(created(j))
        .str(&names)
        .str(&images)
        .str(&format_label_selector(at(j, &["spec", "selector"])));
}

fn cron_job(c: &Value, r: &mut RowBuilder) {
    cron_job_as(c, r, false)
}

fn cron_job_v1_36(c: &Value, r: &mut RowBuilder) {
    cron_job_as(c, r, true)
}

fn cron_job_as(c: &Value, r: &mut RowBuilder, v1_36: bool) {
    let suspend = match set(c, &["spec", "suspend"]).and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    r.str(name(c)).str(s(c, &["spec", "schedule"]));
    if v1_36 {
        let zone = set(c, &["spec", "timeZone"]).and_then(Value::as_str);
        r.str(zone.unwrap_or("<none>"));
    }
    r.str(suspend).int(count(c, &["status", "active"]) as i64);
    match set(c, &["status", "lastScheduleTime"]) {
        Some(t) => r.since_field(Some(t)),
        None => r.str("<none>"),
    };
    let job_spec = at(c, &["spec", "jobTemplate", "spec"]);
    let (names, images) = containers(job_spec.and_then(|j| at(j, &["template", "spec"])));
    r.since_field(created(c))
        .str(&names)
        .str(&images)
        .str(&format_label_selector(
            job_spec.and_then(|j| at(j, &["selector"])),
        ));
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{cells, cells_as, check, check_as};
    use super::selector_string;
    use crate::encode::personality::Personality;
    use crate::encode::print::Printer;
    use serde_json::{json, Value};

    const NOW: &str = "2026-01-01T01:00:00Z";

    fn meta() -> Value {
        json!({"name": "w", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"})
    }

    #[test]
    fn v1_30_added_jobs_status_and_cron_jobs_timezone_which_v1_29_lacks() {
        // kubernetes#123226 and #122231, both in CHANGELOG-1.30.
        let job = json!({"metadata": {"name": "j", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"completions": 1},
            "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}});
        let jobs = ("batch", "v1", "jobs");
        let cells = |minor, gvr, obj: &Value| {
            let row = cells_as(Personality::of(1, minor).0, gvr, obj.clone(), NOW);
            let v: Value = serde_json::from_str(&format!("{{{row}}}")).unwrap();
            v["cells"].as_array().unwrap()[..3].to_vec()
        };
        assert_eq!(cells(29, jobs, &job), [json!("j"), json!("1/1"), json!("")]);
        assert_eq!(
            cells(30, jobs, &job),
            [json!("j"), json!("Complete"), json!("1/1")]
        );
        let cj = json!({"metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"schedule": "*/5 * * * *", "timeZone": "Etc/UTC", "suspend": false,
                     "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}});
        let cronjobs = ("batch", "v1", "cronjobs");
        assert_eq!(
            cells(29, cronjobs, &cj),
            [json!("c"), json!("*/5 * * * *"), json!("False")]
        );
        assert_eq!(
            cells(30, cronjobs, &cj),
            [json!("c"), json!("*/5 * * * *"), json!("Etc/UTC")]
        );
    }

    #[test]
    fn selectors_sort_requirements_by_key_and_values() {
        let sel = |v: Value| selector_string(Some(&v));
        assert_eq!(sel(json!({})).as_deref(), Some(""));
        assert_eq!(selector_string(None).as_deref(), Some(""));
        assert_eq!(
            sel(
                json!({"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [
                    {"key": "c", "operator": "NotIn", "values": ["z", "y"]},
                    {"key": "a", "operator": "Exists"},
                    {"key": "0", "operator": "DoesNotExist"},
                    {"key": "b", "operator": "In", "values": ["x"]},
                ]})
            )
            .as_deref(),
            Some("!0,a=1,a,b=2,b in (x),c notin (y,z)")
        );
        // Past 12 requirements Go's sort.Sort reorders equal keys: as the
        // real apiserver printed this one.
        let mut exprs = Vec::new();
        for k in ["h", "g", "f", "e", "d", "c", "b", "a"] {
            exprs.push(json!({"key": k, "operator": "Exists"}));
            exprs.push(json!({"key": k, "operator": "In", "values": ["v", "w"]}));
        }
        exprs.push(json!({"key": "a", "operator": "NotIn", "values": ["z"]}));
        let labels: serde_json::Map<String, Value> = "abcdefgh"
            .chars()
            .map(|k| (k.to_string(), json!("v")))
            .collect();
        assert_eq!(
            sel(json!({"matchLabels": labels, "matchExpressions": exprs})).as_deref(),
            Some("a,a=v,a in (v,w),a notin (z),b=v,b,b in (v,w),c in (v,w),c,c=v,d in (v,w),d=v,d,e=v,e,e in (v,w),f in (v,w),f,f=v,g=v,g in (v,w),g,h=v,h,h in (v,w)")
        );
        // One that takes pdqsort's pattern breaking (its xorshift).
        let many: Value = serde_json::from_str(r#"{"matchLabels":{"k0":"v","k1":"v"},"matchExpressions":[{"key":"k1","operator":"Exists"},{"key":"k1","operator":"NotIn","values":["y1"]},{"key":"k0","operator":"Exists"},{"key":"k2","operator":"DoesNotExist"},{"key":"k1","operator":"NotIn","values":["y4"]},{"key":"k0","operator":"NotIn","values":["y5"]},{"key":"k0","operator":"Exists"},{"key":"k0","operator":"In","values":["v","x7"]},{"key":"k1","operator":"Exists"},{"key":"k0","operator":"Exists"},{"key":"k2","operator":"NotIn","values":["y10","a"]},{"key":"k0","operator":"NotIn","values":["y11"]},{"key":"k0","operator":"Exists"},{"key":"k2","operator":"DoesNotExist"},{"key":"k2","operator":"NotIn","values":["y14","a"]},{"key":"k0","operator":"Exists"},{"key":"k0","operator":"NotIn","values":["y16"]},{"key":"k0","operator":"In","values":["v","x17"]},{"key":"k1","operator":"Exists"},{"key":"k2","operator":"DoesNotExist"}]}"#).unwrap();
        assert_eq!(
            sel(many).as_deref(),
            Some("k0=v,k0 in (v,x7),k0 in (v,x17),k0,k0 notin (y16),k0,k0,k0,k0 notin (y5),k0 notin (y11),k0,k1,k1=v,k1 notin (y4),k1 notin (y1),k1,k1,!k2,k2 notin (a,y10),!k2,k2 notin (a,y14),!k2")
        );
        assert_eq!(
            sel(
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["bad value!"]}]})
            ),
            None
        );
        assert_eq!(
            sel(json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})),
            None
        );
    }

    #[test]
    fn deployments() {
        // As the real apiserver printed it (wide: all columns).
        let d = json!({
            "metadata": meta(),
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "x", "tier": "web"},
                    "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                        {"key": "app", "operator": "Exists"},
                        {"key": "zz", "operator": "NotIn", "values": ["b", "a"]},
                        {"key": "gone", "operator": "DoesNotExist"}]},
                "template": {"spec": {"containers": [
                    {"name": "a", "image": "nginx:1"}, {"name": "b", "image": "busybox"}]}},
            },
            "status": {"replicas": 3, "updatedReplicas": 2, "readyReplicas": 1, "availableReplicas": 1},
        });
        check(
            ("apps", "v1", "deployments"),
            d,
            r#""cells":["w","1/3",2,1,"60m","a,b","nginx:1,busybox","app=x,app,env in (dev,prod),!gone,tier=web,zz notin (a,b)"]"#,
        );
        check(
            ("apps", "v1", "deployments"),
            json!({"metadata": {"name": "e"}}),
            r#""cells":["e","0/0",0,0,"\u003cunknown\u003e","","",""]"#,
        );
    }

    #[test]
    fn v1_24_prints_a_deployments_selector_that_does_not_convert_as_invalid() {
        // kubernetes#107559: v1.20's printer fails on it (so does every
        // Table holding it); from v1.24 the cell reads <invalid>.
        let d = json!({"metadata": meta(), "spec": {"selector": {"matchExpressions": [
            {"key": "a", "operator": "In", "values": []}]}}});
        let deployments = ("apps", "v1", "deployments");
        let v1_20 = Printer::builtin(Personality::V1_20, "apps", "v1", "deployments").unwrap();
        assert!(v1_20.fallible());
        assert!(!v1_20.row_of(&d).printable());
        assert!(v1_20.row_of(&json!({"metadata": meta()})).printable());
        for minor in [24, 30, 36] {
            let p = Personality::of(1, minor).0;
            assert!(
                cells_as(p, deployments, d.clone(), NOW).ends_with(r#""","\u003cinvalid\u003e"]"#),
                "1.{minor}"
            );
        }
    }

    #[test]
    fn replica_sets_and_replication_controllers() {
        let spec = json!({"replicas": 2, "template": {"spec": {"containers": [{"name": "a", "image": "i"}]}}});
        let mut rs = json!({"metadata": meta(), "spec": spec, "status": {"replicas": 2, "readyReplicas": 1}});
        rs["spec"]["selector"] = json!({"matchLabels": {"app": "x"}});
        check(
            ("apps", "v1", "replicasets"),
            rs.clone(),
            r#""cells":["w",2,2,1,"60m","a","i","app=x"]"#,
        );
        rs["spec"]["selector"] = json!({});
        assert!(
            cells(("apps", "v1", "replicasets"), rs, NOW).ends_with(r#""i","\u003cnone\u003e"]"#)
        );
        let mut rc = json!({"metadata": meta(), "spec": spec, "status": {"replicas": 2}});
        rc["spec"]["selector"] = json!({"b": "2", "a": "1"});
        check(
            ("", "v1", "replicationcontrollers"),
            rc.clone(),
            r#""cells":["w",2,2,0,"60m","a","i","a=1,b=2"]"#,
        );
        rc["spec"].as_object_mut().unwrap().remove("selector");
        assert!(cells(("", "v1", "replicationcontrollers"), rc, NOW)
            .ends_with(r#""\u003cnone\u003e"]"#));
    }

    #[test]
    fn stateful_sets_and_daemon_sets() {
        let ss = json!({"metadata": meta(),
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "a", "image": "i"}]}}},
            "status": {"readyReplicas": 2}});
        check(
            ("apps", "v1", "statefulsets"),
            ss,
            r#""cells":["w","2/3","60m","a","i"]"#,
        );
        let ds = json!({"metadata": meta(),
            "spec": {"selector": {"matchLabels": {"app": "x"}},
                "template": {"spec": {"nodeSelector": {"zone": "b", "disk": "ssd"},
                    "containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "j"}]}}},
            "status": {"desiredNumberScheduled": 5, "currentNumberScheduled": 4, "numberReady": 3,
                "updatedNumberScheduled": 2, "numberAvailable": 1}});
        check(
            ("apps", "v1", "daemonsets"),
            ds.clone(),
            r#""cells":["w",5,4,3,2,1,"disk=ssd,zone=b","60m","a,b","i,j","app=x"]"#,
        );
        let mut ds = ds;
        ds["spec"]["template"]["spec"]
            .as_object_mut()
            .unwrap()
            .remove("nodeSelector");
        assert!(
            cells(("apps", "v1", "daemonsets"), ds, NOW).contains(r#"1,"\u003cnone\u003e","60m""#)
        );
    }

    #[test]
    fn jobs_count_completions_and_their_duration() {
        let job = |spec: Value, status: Value| {
            let mut spec = spec;
            spec["template"] = json!({"spec": {"containers": [{"name": "a", "image": "i"}]}});
            spec["selector"] = json!({"matchLabels": {"controller-uid": "u"}});
            json!({"metadata": meta(), "spec": spec, "status": status})
        };
        check(
            ("batch", "v1", "jobs"),
            job(
                json!({"completions": 3, "parallelism": 2}),
                json!({"succeeded": 2, "startTime": "2026-01-01T00:10:00Z"}),
            ),
            r#""cells":["w","2/3","50m","60m","a","i","controller-uid=u"]"#,
        );
        check(
            ("batch", "v1", "jobs"),
            job(
                json!({"parallelism": 4}),
                json!({"succeeded": 1, "startTime": "2026-01-01T00:10:00Z",
                    "completionTime": "2026-01-01T00:12:30Z"}),
            ),
            r#""cells":["w","1/1 of 4","2m30s","60m","a","i","controller-uid=u"]"#,
        );
        check(
            ("batch", "v1", "jobs"),
            job(json!({"parallelism": 1}), json!({})),
            r#""cells":["w","0/1","","60m","a","i","controller-uid=u"]"#,
        );
        // A selector NewRequirement refuses (expression values are not
        // validated): as the real apiserver printed it.
        let mut bad = job(json!({"completions": 1}), json!({}));
        bad["spec"]["selector"] = json!({"matchLabels": {"app": "x"},
            "matchExpressions": [{"key": "app", "operator": "In", "values": ["bad value!", "x"]}]});
        assert!(cells(("batch", "v1", "jobs"), bad, NOW)
            .ends_with(r#""0/1","","60m","a","i","\u003cerror\u003e"]"#));
    }

    #[test]
    fn cron_jobs() {
        let cj = json!({"metadata": meta(),
            "spec": {"schedule": "*/5 * * * *", "suspend": false,
                "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "i"}]}}}}},
            "status": {"active": [{"name": "j1"}, {"name": "j2"}], "lastScheduleTime": "2026-01-01T00:55:00Z"}});
        check(
            ("batch", "v1beta1", "cronjobs"),
            cj.clone(),
            r#""cells":["w","*/5 * * * *","False",2,"5m","60m","a","i","\u003cnone\u003e"]"#,
        );
        let mut cj = cj;
        cj["spec"]["suspend"] = json!(true);
        cj["status"] = json!({});
        cj["spec"]["jobTemplate"]["spec"]["selector"] = json!({"matchLabels": {"a": "b"}});
        check(
            ("batch", "v1beta1", "cronjobs"),
            cj.clone(),
            r#""cells":["w","*/5 * * * *","True",0,"\u003cnone\u003e","60m","a","i","a=b"]"#,
        );
        cj["spec"].as_object_mut().unwrap().remove("suspend");
        assert!(
            cells(("batch", "v1beta1", "cronjobs"), cj, NOW).contains(r#""\u003cunset\u003e",0"#)
        );
    }

    #[test]
    fn v1_30_a_jobs_status_follows_its_conditions() {
        let job = |conditions: Value, deleted: bool| {
            let mut meta = meta();
            if deleted {
                meta["deletionTimestamp"] = json!("2026-01-01T00:59:00Z");
            }
            json!({"metadata": meta,
                "spec": {"parallelism": 1, "completions": 1, "selector": {"matchLabels": {"controller-uid": "u"}},
                    "template": {"spec": {"containers": [{"name": "a", "image": "i"}]}}},
                "status": {"conditions": conditions, "startTime": "2026-01-01T00:10:00Z"}})
        };
        let status = |conditions: Value, deleted: bool| {
            let row = cells_as(
                Personality::NEWEST,
                ("batch", "v1", "jobs"),
                job(conditions, deleted),
                NOW,
            );
            let v: Value = serde_json::from_str(&format!("{{{row}}}")).unwrap();
            v["cells"][1].as_str().unwrap().to_string()
        };
        let c = |ty: &str, st: &str| json!({"type": ty, "status": st});
        check_as(
            Personality::NEWEST,
            ("batch", "v1", "jobs"),
            job(json!([]), false),
            r#""cells":["w","Running","0/1","50m","60m","a","i","controller-uid=u"]"#,
        );
        assert_eq!(status(json!([c("Complete", "True")]), true), "Complete");
        assert_eq!(
            status(json!([c("Failed", "True"), c("Complete", "False")]), false),
            "Failed"
        );
        assert_eq!(status(json!([c("Suspended", "True")]), true), "Terminating");
        assert_eq!(status(json!([c("Suspended", "True")]), false), "Suspended");
        assert_eq!(
            status(json!([c("FailureTarget", "True")]), false),
            "FailureTarget"
        );
        assert_eq!(
            status(json!([c("SuccessCriteriaMet", "True")]), false),
            "SuccessCriteriaMet"
        );
        // The first condition of a type decides it.
        assert_eq!(
            status(
                json!([c("Complete", "False"), c("Complete", "True")]),
                false
            ),
            "Running"
        );
    }

    #[test]
    fn v1_34_a_job_whose_success_criteria_are_met_shows_it_where_v1_33_prints_it_running() {
        let j = json!({"metadata": meta(),
            "spec": {"completions": 1, "selector": {"matchLabels": {"controller-uid": "u"}},
                "template": {"spec": {"containers": [{"name": "a", "image": "i"}]}}},
            "status": {"conditions": [{"type": "SuccessCriteriaMet", "status": "True"}],
                "startTime": "2026-01-01T00:10:00Z"}});
        let status = |minor| {
            let row = cells_as(
                Personality::of(1, minor).0,
                ("batch", "v1", "jobs"),
                j.clone(),
                NOW,
            );
            let v: Value = serde_json::from_str(&format!("{{{row}}}")).unwrap();
            v["cells"][1].as_str().unwrap().to_string()
        };
        assert_eq!(status(33), "Running");
        for minor in [34, 35, 36] {
            assert_eq!(status(minor), "SuccessCriteriaMet", "v1.{minor}");
        }
    }

    #[test]
    fn v1_27_a_cron_jobs_time_zone_has_a_column() {
        let mut cj = json!({"metadata": meta(),
            "spec": {"schedule": "0 * * * *", "suspend": false,
                "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "i"}]}}}}},
            "status": {}});
        check_as(
            Personality::NEWEST,
            ("batch", "v1", "cronjobs"),
            cj.clone(),
            r#""cells":["w","0 * * * *","\u003cnone\u003e","False",0,"\u003cnone\u003e","60m","a","i","\u003cnone\u003e"]"#,
        );
        cj["spec"]["timeZone"] = json!("Europe/Paris");
        assert!(
            cells_as(Personality::NEWEST, ("batch", "v1", "cronjobs"), cj, NOW)
                .starts_with(r#""cells":["w","0 * * * *","Europe/Paris","False""#)
        );
    }

    #[test]
    fn v1_36_prints_replication_controllers_as_v1_20_did() {
        let mut rc = json!({"metadata": meta(),
            "spec": {"replicas": 2, "selector": {"b": "2", "a": "1"},
                "template": {"spec": {"containers": [{"name": "a", "image": "i"}]}}},
            "status": {"replicas": 2, "readyReplicas": 1}});
        check_as(
            Personality::NEWEST,
            ("", "v1", "replicationcontrollers"),
            rc.clone(),
            r#""cells":["w",2,2,1,"60m","a","i","a=1,b=2"]"#,
        );
        // No template: no containers (`ptr.Deref`, a nil template's none).
        rc["spec"].as_object_mut().unwrap().remove("template");
        check_as(
            Personality::NEWEST,
            ("", "v1", "replicationcontrollers"),
            rc,
            r#""cells":["w",2,2,1,"60m","","","a=1,b=2"]"#,
        );
    }
}
