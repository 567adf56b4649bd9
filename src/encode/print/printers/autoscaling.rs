//! The port of printers.go for horizontal pod autoscalers
//! (`printHorizontalPodAutoscaler` and its `formatHPAMetrics`), in all
//! three served versions.
//!
//! The apiserver prints from the internal type, which it decodes from
//! autoscaling/v1 (the storage version), so each version's JSON is read
//! back into what that internal object holds: v2beta2 has its shape;
//! v2beta1 and the v1 annotations have the flat v1 metric types, read as
//! their conversions to the internal type read them; v1 keeps the metrics
//! in annotations, the CPU target in its own fields, and defaults to an
//! 80% CPU target when it has no metric at all.

use super::fields::{arr, at, created, int, name, s, RowFn};
use crate::encode::personality::Printers;
use crate::encode::print::row::RowBuilder;
use serde_json::Value;

pub fn lookup(group: &str, version: &str, resource: &str) -> Option<RowFn> {
    Some(match (group, version, resource) {
        ("autoscaling", "v1", "horizontalpodautoscalers") => hpa_v1,
        ("autoscaling", "v2beta1", "horizontalpodautoscalers") => hpa_v2beta1,
        ("autoscaling", "v2beta2", "horizontalpodautoscalers") => hpa_v2beta2,
        _ => return None,
    })
}

/// The printer of a kind's empty object where it differs from the
/// version's: a bookmark is printed from the internal type's empty object,
/// unconverted, which has no metrics, where reading an empty v1 object
/// as its conversion does would add the default CPU target. v2beta2's
/// JSON has the internal type's shape, so its reader prints it.
pub fn zero(group: &str, version: &str, resource: &str) -> Option<RowFn> {
    match (group, version, resource) {
        ("autoscaling", "v1", "horizontalpodautoscalers") => Some(hpa_v2beta2),
        _ => None,
    }
}

/// The annotations autoscaling/v1 keeps the other versions' fields in.
const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";

/// The default target of an autoscaling/v1 object without one
/// (`autoscaling.DefaultCPUUtilization`).
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// A metric target or current value as the internal `MetricTarget` or
/// `MetricValueStatus` holds it: its quantities as `Quantity.String()`
/// writes them, which is how the apiserver's JSON has them.
#[derive(Default)]
struct Values {
    value: Option<String>,
    average_value: Option<String>,
    average_utilization: Option<i64>,
}

/// A spec's metric (its sources' targets) or a status's (their current
/// values): the type, and each source that is set.
#[derive(Default)]
struct Metric {
    ty: String,
    /// A resource or container resource metric's resource (`cpu`).
    resource_name: String,
    resource: Option<Values>,
    container_resource: Option<Values>,
    pods: Option<Values>,
    object: Option<Values>,
    external: Option<Values>,
}

/// A pointer field that is set (present and not null).
fn set<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    at(v, path).filter(|v| !v.is_null())
}

/// A `*resource.Quantity` field: its string, `None` when unset.
fn quantity(v: &Value, key: &str) -> Option<String> {
    set(v, &[key]).map(|q| match q {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// A `resource.Quantity` field (not a pointer): a zero quantity's "0"
/// when unset.
fn quantity_or_zero(v: &Value, key: &str) -> Option<String> {
    Some(quantity(v, key).unwrap_or_else(|| "0".into()))
}

/// An `*int32` field.
fn opt_int(v: &Value, path: &[&str]) -> Option<i64> {
    set(v, path).and_then(Value::as_i64)
}

/// The resource a resource or container resource metric names.
fn resource_name(m: &Value) -> String {
    let source = match s(m, &["type"]) {
        "ContainerResource" => "containerResource",
        _ => "resource",
    };
    s(m, &[source, "name"]).to_string()
}

/// A metric of v2beta2, whose sources hold their values under `field`
/// (`target` or `current`) with the internal type's names.
fn v2beta2_metric(m: &Value, field: &str) -> Metric {
    let values = |source: &str| {
        set(m, &[source]).map(|src| {
            let v = at(src, &[field]).unwrap_or(&Value::Null);
            Values {
                value: quantity(v, "value"),
                average_value: quantity(v, "averageValue"),
                average_utilization: opt_int(v, &["averageUtilization"]),
            }
        })
    };
    Metric {
        ty: s(m, &["type"]).to_string(),
        resource_name: resource_name(m),
        resource: values("resource"),
        container_resource: values("containerResource"),
        pods: values("pods"),
        object: values("object"),
        external: values("external"),
    }
}

/// A spec metric of v2beta1 or of v1's annotation, as their conversions
/// to the internal type read it: pods' target average and objects' target
/// value are quantities, not pointers, so they are always set.
fn flat_spec_metric(m: &Value) -> Metric {
    let source = |name: &str, read: fn(&Value) -> Values| set(m, &[name]).map(read);
    let resource = |src: &Value| Values {
        average_value: quantity(src, "targetAverageValue"),
        average_utilization: opt_int(src, &["targetAverageUtilization"]),
        ..Values::default()
    };
    Metric {
        ty: s(m, &["type"]).to_string(),
        resource_name: resource_name(m),
        resource: source("resource", resource),
        container_resource: source("containerResource", resource),
        pods: source("pods", |src| Values {
            average_value: quantity_or_zero(src, "targetAverageValue"),
            ..Values::default()
        }),
        object: source("object", |src| Values {
            value: quantity_or_zero(src, "targetValue"),
            average_value: quantity(src, "averageValue"),
            ..Values::default()
        }),
        external: source("external", |src| Values {
            value: quantity(src, "targetValue"),
            average_value: quantity(src, "targetAverageValue"),
            ..Values::default()
        }),
    }
}

/// A status metric of v2beta1 or of v1's annotation, as their conversions
/// read it: the current averages of resources and pods and the current
/// values of objects and external metrics are always set.
fn flat_status_metric(m: &Value) -> Metric {
    let source = |name: &str, read: fn(&Value) -> Values| set(m, &[name]).map(read);
    let resource = |src: &Value| Values {
        average_value: quantity_or_zero(src, "currentAverageValue"),
        average_utilization: opt_int(src, &["currentAverageUtilization"]),
        ..Values::default()
    };
    Metric {
        ty: s(m, &["type"]).to_string(),
        resource_name: resource_name(m),
        resource: source("resource", resource),
        container_resource: source("containerResource", resource),
        pods: source("pods", |src| Values {
            average_value: quantity_or_zero(src, "currentAverageValue"),
            ..Values::default()
        }),
        object: source("object", |src| Values {
            value: quantity_or_zero(src, "currentValue"),
            average_value: quantity(src, "averageValue"),
            ..Values::default()
        }),
        external: source("external", |src| Values {
            value: quantity_or_zero(src, "currentValue"),
            average_value: quantity(src, "currentAverageValue"),
            ..Values::default()
        }),
    }
}

/// A CPU utilization metric (target or current), as v1's own fields
/// convert to: no average value.
fn cpu_utilization(percent: i64) -> Metric {
    Metric {
        ty: "Resource".into(),
        resource_name: "cpu".into(),
        resource: Some(Values {
            average_utilization: Some(percent),
            ..Values::default()
        }),
        ..Metric::default()
    }
}

/// One of v1's annotations as its conversion decodes it: the metrics when
/// it holds a JSON list of them (`null` is an empty one), `None` when it
/// is missing or does not decode, and is then ignored.
fn annotation_metrics(h: &Value, key: &str, read: fn(&Value) -> Metric) -> Option<Vec<Metric>> {
    let text = at(h, &["metadata", "annotations", key]).and_then(Value::as_str)?;
    match serde_json::from_str::<Value>(text).ok()? {
        Value::Null => Some(Vec::new()),
        Value::Array(items) if items.iter().all(|i| i.is_object() || i.is_null()) => {
            Some(items.iter().map(read).collect())
        }
        _ => None,
    }
}

/// `Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`
/// for the metrics: the annotation's, then the CPU target, or the default
/// CPU target when there are none; the current metrics from their
/// annotation, else the current CPU utilization.
fn hpa_v1(h: &Value, r: &mut RowBuilder) {
    hpa_v1_as(h, r, false)
}

/// v1.36's, of autoscaling/v1: its conversion to the internal type reads
/// the annotations and the CPU target as v1.20's did (the 80% default
/// included), and the printer names resource targets (kubernetes#122804).
fn hpa_v1_v1_36(h: &Value, r: &mut RowBuilder) {
    hpa_v1_as(h, r, true)
}

fn hpa_v1_as(h: &Value, r: &mut RowBuilder, named: bool) {
    let mut specs = annotation_metrics(h, METRICS, flat_spec_metric).unwrap_or_default();
    if let Some(target) = opt_int(h, &["spec", "targetCPUUtilizationPercentage"]) {
        specs.push(cpu_utilization(target));
    }
    if specs.is_empty() {
        specs.push(cpu_utilization(DEFAULT_CPU_UTILIZATION));
    }
    let statuses =
        annotation_metrics(h, CURRENT_METRICS, flat_status_metric).unwrap_or_else(|| {
            opt_int(h, &["status", "currentCPUUtilizationPercentage"])
                .map(|current| vec![cpu_utilization(current)])
                .unwrap_or_default()
        });
    hpa_with(h, &specs, &statuses, r, named);
}

fn hpa_v2beta1(h: &Value, r: &mut RowBuilder) {
    let specs: Vec<Metric> = arr(h, &["spec", "metrics"])
        .iter()
        .map(flat_spec_metric)
        .collect();
    let statuses: Vec<Metric> = arr(h, &["status", "currentMetrics"])
        .iter()
        .map(flat_status_metric)
        .collect();
    hpa(h, &specs, &statuses, r);
}

fn hpa_v2beta2(h: &Value, r: &mut RowBuilder) {
    hpa_v2_as(h, r, false)
}

/// v1.36's, of autoscaling/v2 (whose metrics are v2beta2's): resource
/// targets name their resource (kubernetes#122804, 1.30).
fn hpa_v2_v1_36(h: &Value, r: &mut RowBuilder) {
    hpa_v2_as(h, r, true)
}

fn hpa_v2_as(h: &Value, r: &mut RowBuilder, named: bool) {
    let specs: Vec<Metric> = arr(h, &["spec", "metrics"])
        .iter()
        .map(|m| v2beta2_metric(m, "target"))
        .collect();
    let statuses: Vec<Metric> = arr(h, &["status", "currentMetrics"])
        .iter()
        .map(|m| v2beta2_metric(m, "current"))
        .collect();
    hpa_with(h, &specs, &statuses, r, named);
}

/// v1.21's to v1.36's printers where they differ from v1.20's: from 1.30
/// both served versions name resource targets (kubernetes#122804); v1.23
/// (autoscaling/v2's first) to v1.29 print autoscaling/v2 as v1.20 printed
/// v2beta2, its shape.
pub fn lookup_since_v1_29(
    printers: Printers,
    group: &str,
    version: &str,
    resource: &str,
) -> Option<RowFn> {
    if printers.minor() <= 29 {
        return match (group, version, resource) {
            ("autoscaling", "v2", "horizontalpodautoscalers") => Some(hpa_v2beta2),
            _ => None,
        };
    }
    match (group, version, resource) {
        ("autoscaling", "v2", "horizontalpodautoscalers") => Some(hpa_v2_v1_36),
        ("autoscaling", "v1", "horizontalpodautoscalers") => Some(hpa_v1_v1_36),
        _ => None,
    }
}

/// `printHorizontalPodAutoscaler`: the reference as kind/name, the
/// targets, the minimum as a string ("<unset>" without one), the maximum
/// and current replicas as integers.
fn hpa(h: &Value, specs: &[Metric], statuses: &[Metric], r: &mut RowBuilder) {
    hpa_with(h, specs, statuses, r, false)
}

fn hpa_with(h: &Value, specs: &[Metric], statuses: &[Metric], r: &mut RowBuilder, named: bool) {
    let min = match at(h, &["spec", "minReplicas"]).and_then(Value::as_i64) {
        Some(n) => n.to_string(),
        None => "<unset>".into(),
    };
    r.str(name(h))
        .str(&format!(
            "{}/{}",
            s(h, &["spec", "scaleTargetRef", "kind"]),
            s(h, &["spec", "scaleTargetRef", "name"])
        ))
        .str(&format_hpa_metrics(specs, statuses, named))
        .str(&min)
        .int(int(h, &["spec", "maxReplicas"]))
        .int(int(h, &["status", "currentReplicas"]))
        .since_field(created(h));
}

/// `Quantity.String()` of a pointer: "<nil>" for none.
fn q(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("<nil>")
}

/// `formatHPAMetrics`: "current/target" per spec metric, the current
/// value from the status metric at the same index (whatever its type) if
/// that has the same source, "<unknown>" if not; the first two, then
/// "+ N more...". A spec without the source its type names panics in Go;
/// validation makes sure it has one, and here it reads as unset.
fn format_hpa_metrics(specs: &[Metric], statuses: &[Metric], named: bool) -> String {
    if specs.is_empty() {
        return "<none>".into();
    }
    const MAX: usize = 2;
    let unknown = || "<unknown>".to_string();
    let none = Values::default();
    let mut list = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        let status = statuses.get(i);
        let current = |pick: fn(&Metric) -> &Option<Values>| status.and_then(|m| pick(m).as_ref());
        let cell = match spec.ty.as_str() {
            "External" | "Object" => {
                let pick: fn(&Metric) -> &Option<Values> = if spec.ty == "External" {
                    |m| &m.external
                } else {
                    |m| &m.object
                };
                let target = pick(spec).as_ref().unwrap_or(&none);
                match &target.average_value {
                    Some(avg) => {
                        let cur = current(pick)
                            .and_then(|c| c.average_value.clone())
                            .unwrap_or_else(unknown);
                        format!("{cur}/{avg} (avg)")
                    }
                    None => {
                        let cur = current(pick).map_or_else(unknown, |c| q(&c.value).to_string());
                        format!("{cur}/{}", q(&target.value))
                    }
                }
            }
            "Pods" => {
                let target = spec.pods.as_ref().unwrap_or(&none);
                let cur =
                    current(|m| &m.pods).map_or_else(unknown, |c| q(&c.average_value).to_string());
                format!("{cur}/{}", q(&target.average_value))
            }
            "Resource" | "ContainerResource" => {
                let pick: fn(&Metric) -> &Option<Values> = if spec.ty == "Resource" {
                    |m| &m.resource
                } else {
                    |m| &m.container_resource
                };
                let target = pick(spec).as_ref().unwrap_or(&none);
                // v1.36 names the resource: "cpu: 20%/50%".
                let name = if named {
                    format!("{}: ", spec.resource_name)
                } else {
                    String::new()
                };
                match &target.average_value {
                    Some(avg) => {
                        let cur =
                            current(pick).map_or_else(unknown, |c| q(&c.average_value).to_string());
                        format!("{name}{cur}/{avg}")
                    }
                    None => {
                        let cur = current(pick)
                            .and_then(|c| c.average_utilization)
                            .map_or_else(unknown, |u| format!("{u}%"));
                        let target = target
                            .average_utilization
                            .map_or_else(|| "<auto>".to_string(), |u| format!("{u}%"));
                        format!("{name}{cur}/{target}")
                    }
                }
            }
            _ => "<unknown type>".into(),
        };
        list.push(cell);
    }
    let count = list.len();
    if count > MAX {
        list.truncate(MAX);
        return format!("{} + {} more...", list.join(", "), count - MAX);
    }
    list.join(", ")
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{cells, cells_as, check, check_as, column_count_as};
    use crate::encode::personality::Personality;
    use serde_json::{json, Value};

    const V1: (&str, &str, &str) = ("autoscaling", "v1", "horizontalpodautoscalers");
    const V2BETA1: (&str, &str, &str) = ("autoscaling", "v2beta1", "horizontalpodautoscalers");
    const V2BETA2: (&str, &str, &str) = ("autoscaling", "v2beta2", "horizontalpodautoscalers");

    // Objects made on the real v1.20 apiserver (mostly through v2beta2),
    // read back in each version, with the cells its Tables showed for
    // them: the same in every version, as it prints the internal object.
    // The CPU target moves behind the other metrics through v1 storage,
    // while the current metrics keep their order, so a status can sit at
    // another metric's index ("res").
    const V1_CASES: &[(&str, &str)] = &[
        (
            r#"{"metadata":{"name":"ext","creationTimestamp":"2026-01-01T00:00:00Z","annotations":{"autoscaling.alpha.kubernetes.io/current-metrics":"[{\"type\":\"External\",\"external\":{\"metricName\":\"q\",\"currentValue\":\"0\",\"currentAverageValue\":\"1\"}},{\"type\":\"External\",\"external\":{\"metricName\":\"q\",\"currentValue\":\"3\",\"currentAverageValue\":\"1500m\"}}]","autoscaling.alpha.kubernetes.io/metrics":"[{\"type\":\"External\",\"external\":{\"metricName\":\"q\",\"targetValue\":\"30\"}},{\"type\":\"External\",\"external\":{\"metricName\":\"q\",\"targetAverageValue\":\"2\"}}]"}},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":4},"status":{"currentReplicas":1,"desiredReplicas":1}}"#,
            r#""ext","Deployment/web","0/30, 1500m/2 (avg)","1",4,1,"60m""#,
        ),
        (
            r#"{"metadata":{"name":"obj","creationTimestamp":"2026-01-01T00:00:00Z","annotations":{"autoscaling.alpha.kubernetes.io/current-metrics":"[{\"type\":\"Object\",\"object\":{\"target\":{\"kind\":\"Service\",\"name\":\"web\"},\"metricName\":\"h\",\"currentValue\":\"7\"}},{\"type\":\"Object\",\"object\":{\"target\":{\"kind\":\"Service\",\"name\":\"web\"},\"metricName\":\"h\",\"currentValue\":\"1\",\"averageValue\":\"250m\"}}]","autoscaling.alpha.kubernetes.io/metrics":"[{\"type\":\"Object\",\"object\":{\"target\":{\"kind\":\"Service\",\"name\":\"web\"},\"metricName\":\"h\",\"targetValue\":\"10\"}},{\"type\":\"Object\",\"object\":{\"target\":{\"kind\":\"Service\",\"name\":\"web\"},\"metricName\":\"h\",\"targetValue\":\"0\",\"averageValue\":\"500m\"}}]"}},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":4},"status":{"currentReplicas":2,"desiredReplicas":1}}"#,
            r#""obj","Deployment/web","7/10, 250m/500m (avg)","1",4,2,"60m""#,
        ),
        (
            r#"{"metadata":{"name":"res","creationTimestamp":"2026-01-01T00:00:00Z","annotations":{"autoscaling.alpha.kubernetes.io/current-metrics":"[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"currentAverageUtilization\":20,\"currentAverageValue\":\"100m\"}},{\"type\":\"Resource\",\"resource\":{\"name\":\"memory\",\"currentAverageValue\":\"60Mi\"}}]","autoscaling.alpha.kubernetes.io/metrics":"[{\"type\":\"Resource\",\"resource\":{\"name\":\"memory\",\"targetAverageValue\":\"100Mi\"}}]"}},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":4,"targetCPUUtilizationPercentage":50},"status":{"currentReplicas":3,"desiredReplicas":1,"currentCPUUtilizationPercentage":20}}"#,
            r#""res","Deployment/web","100m/100Mi, <unknown>/50%","1",4,3,"60m""#,
        ),
        (
            r#"{"metadata":{"name":"mis","creationTimestamp":"2026-01-01T00:00:00Z","annotations":{"autoscaling.alpha.kubernetes.io/current-metrics":"[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"currentAverageUtilization\":20,\"currentAverageValue\":\"0\"}}]","autoscaling.alpha.kubernetes.io/metrics":"[{\"type\":\"Pods\",\"pods\":{\"metricName\":\"qps\",\"targetAverageValue\":\"10\"}}]"}},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":4},"status":{"currentReplicas":3,"desiredReplicas":1,"currentCPUUtilizationPercentage":20}}"#,
            r#""mis","Deployment/web","<unknown>/10","1",4,3,"60m""#,
        ),
        (
            r#"{"metadata":{"name":"three","creationTimestamp":"2026-01-01T00:00:00Z","annotations":{"autoscaling.alpha.kubernetes.io/metrics":"[{\"type\":\"Resource\",\"resource\":{\"name\":\"memory\",\"targetAverageUtilization\":70}},{\"type\":\"Pods\",\"pods\":{\"metricName\":\"qps\",\"targetAverageValue\":\"10\"}},{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"targetAverageValue\":\"200m\"}}]"}},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":4},"status":{"currentReplicas":0,"desiredReplicas":0}}"#,
            r#""three","Deployment/web","<unknown>/70%, <unknown>/10 + 1 more...","1",4,0,"60m""#,
        ),
        (
            r#"{"metadata":{"name":"v1-annot","creationTimestamp":"2026-01-01T00:00:00Z","annotations":{"autoscaling.alpha.kubernetes.io/metrics":"[{\"type\":\"Pods\",\"pods\":{\"metricName\":\"qps\",\"targetAverageValue\":\"1\"}}]","other":"x"}},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"minReplicas":1,"maxReplicas":3},"status":{"currentReplicas":0,"desiredReplicas":0}}"#,
            r#""v1-annot","Deployment/web","<unknown>/1","1",3,0,"60m""#,
        ),
        (
            r#"{"metadata":{"name":"v1-cpu","creationTimestamp":"2026-01-01T00:00:00Z","annotations":{"autoscaling.alpha.kubernetes.io/current-metrics":"[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"currentAverageUtilization\":30,\"currentAverageValue\":\"0\"}}]"}},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":2,"maxReplicas":5,"targetCPUUtilizationPercentage":50},"status":{"currentReplicas":2,"desiredReplicas":2,"currentCPUUtilizationPercentage":30}}"#,
            r#""v1-cpu","Deployment/web","30%/50%","2",5,2,"60m""#,
        ),
    ];

    const V2BETA1_CASES: &[(&str, &str)] = &[
        (
            r#"{"metadata":{"name":"ext","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":4,"metrics":[{"type":"External","external":{"metricName":"q","targetValue":"30"}},{"type":"External","external":{"metricName":"q","targetAverageValue":"2"}}]},"status":{"currentReplicas":1,"desiredReplicas":1,"currentMetrics":[{"type":"External","external":{"metricName":"q","currentValue":"0","currentAverageValue":"1"}},{"type":"External","external":{"metricName":"q","currentValue":"3","currentAverageValue":"1500m"}}],"conditions":null}}"#,
            r#""ext","Deployment/web","0/30, 1500m/2 (avg)","1",4,1,"60m""#,
        ),
        (
            r#"{"metadata":{"name":"obj","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":4,"metrics":[{"type":"Object","object":{"target":{"kind":"Service","name":"web"},"metricName":"h","targetValue":"10"}},{"type":"Object","object":{"target":{"kind":"Service","name":"web"},"metricName":"h","targetValue":"0","averageValue":"500m"}}]},"status":{"currentReplicas":2,"desiredReplicas":1,"currentMetrics":[{"type":"Object","object":{"target":{"kind":"Service","name":"web"},"metricName":"h","currentValue":"7"}},{"type":"Object","object":{"target":{"kind":"Service","name":"web"},"metricName":"h","currentValue":"1","averageValue":"250m"}}],"conditions":null}}"#,
            r#""obj","Deployment/web","7/10, 250m/500m (avg)","1",4,2,"60m""#,
        ),
        (
            r#"{"metadata":{"name":"res","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":4,"metrics":[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"100Mi"}},{"type":"Resource","resource":{"name":"cpu","targetAverageUtilization":50}}]},"status":{"currentReplicas":3,"desiredReplicas":1,"currentMetrics":[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":20,"currentAverageValue":"100m"}},{"type":"Resource","resource":{"name":"memory","currentAverageValue":"60Mi"}}],"conditions":null}}"#,
            r#""res","Deployment/web","100m/100Mi, <unknown>/50%","1",4,3,"60m""#,
        ),
        (
            r#"{"metadata":{"name":"mis","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":4,"metrics":[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]},"status":{"currentReplicas":3,"desiredReplicas":1,"currentMetrics":[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":20,"currentAverageValue":"0"}}],"conditions":null}}"#,
            r#""mis","Deployment/web","<unknown>/10","1",4,3,"60m""#,
        ),
    ];

    const V2BETA2_CASES: &[(&str, &str)] = &[
        (
            r#"{"metadata":{"name":"ext","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":4,"metrics":[{"type":"External","external":{"metric":{"name":"q"},"target":{"type":"Value","value":"30"}}},{"type":"External","external":{"metric":{"name":"q"},"target":{"type":"AverageValue","averageValue":"2"}}}]},"status":{"currentReplicas":1,"desiredReplicas":1,"currentMetrics":[{"type":"External","external":{"metric":{"name":"q"},"current":{"value":"0","averageValue":"1"}}},{"type":"External","external":{"metric":{"name":"q"},"current":{"value":"3","averageValue":"1500m"}}}],"conditions":null}}"#,
            r#""ext","Deployment/web","0/30, 1500m/2 (avg)","1",4,1,"60m""#,
        ),
        (
            r#"{"metadata":{"name":"obj","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":4,"metrics":[{"type":"Object","object":{"describedObject":{"kind":"Service","name":"web"},"target":{"type":"Value","value":"10"},"metric":{"name":"h"}}},{"type":"Object","object":{"describedObject":{"kind":"Service","name":"web"},"target":{"type":"AverageValue","value":"0","averageValue":"500m"},"metric":{"name":"h"}}}]},"status":{"currentReplicas":2,"desiredReplicas":1,"currentMetrics":[{"type":"Object","object":{"metric":{"name":"h"},"current":{"value":"7"},"describedObject":{"kind":"Service","name":"web"}}},{"type":"Object","object":{"metric":{"name":"h"},"current":{"value":"1","averageValue":"250m"},"describedObject":{"kind":"Service","name":"web"}}}],"conditions":null}}"#,
            r#""obj","Deployment/web","7/10, 250m/500m (avg)","1",4,2,"60m""#,
        ),
        (
            r#"{"metadata":{"name":"res","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":4,"metrics":[{"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"100Mi"}}},{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":50}}}]},"status":{"currentReplicas":3,"desiredReplicas":1,"currentMetrics":[{"type":"Resource","resource":{"name":"cpu","current":{"averageValue":"100m","averageUtilization":20}}},{"type":"Resource","resource":{"name":"memory","current":{"averageValue":"60Mi"}}}],"conditions":null}}"#,
            r#""res","Deployment/web","100m/100Mi, <unknown>/50%","1",4,3,"60m""#,
        ),
        (
            r#"{"metadata":{"name":"mis","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":4,"metrics":[{"type":"Pods","pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue","averageValue":"10"}}}]},"status":{"currentReplicas":3,"desiredReplicas":1,"currentMetrics":[{"type":"Resource","resource":{"name":"cpu","current":{"averageValue":"0","averageUtilization":20}}}],"conditions":null}}"#,
            r#""mis","Deployment/web","<unknown>/10","1",4,3,"60m""#,
        ),
        (
            r#"{"metadata":{"name":"three","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":1,"maxReplicas":4,"metrics":[{"type":"Resource","resource":{"name":"memory","target":{"type":"Utilization","averageUtilization":70}}},{"type":"Pods","pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue","averageValue":"10"}}},{"type":"Resource","resource":{"name":"cpu","target":{"type":"AverageValue","averageValue":"200m"}}}]},"status":{"currentReplicas":0,"desiredReplicas":0,"currentMetrics":null,"conditions":null}}"#,
            r#""three","Deployment/web","<unknown>/70%, <unknown>/10 + 1 more...","1",4,0,"60m""#,
        ),
        (
            r#"{"metadata":{"name":"v1-cpu","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":2,"maxReplicas":5,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":50}}}]},"status":{"currentReplicas":2,"desiredReplicas":2,"currentMetrics":[{"type":"Resource","resource":{"name":"cpu","current":{"averageValue":"0","averageUtilization":30}}}],"conditions":null}}"#,
            r#""v1-cpu","Deployment/web","30%/50%","2",5,2,"60m""#,
        ),
    ];

    fn cases(gvr: (&str, &str, &str), cases: &[(&str, &str)]) {
        for (obj, want) in cases {
            let obj: Value = serde_json::from_str(obj).unwrap();
            // Go's encoding/json escapes what the Tables showed as < and >.
            let want = want.replace('<', r"\u003c").replace('>', r"\u003e");
            check(gvr, obj, &format!(r#""cells":[{want}]"#));
        }
    }

    #[test]
    fn autoscaling_v1_reads_its_metrics_from_annotations_and_its_cpu_fields() {
        cases(V1, V1_CASES);
    }

    #[test]
    fn autoscaling_v2beta1_reads_flat_metric_sources() {
        cases(V2BETA1, V2BETA1_CASES);
    }

    #[test]
    fn autoscaling_v2beta2_reads_targets_and_current_values() {
        cases(V2BETA2, V2BETA2_CASES);
    }

    fn meta() -> Value {
        json!({"name": "h", "creationTimestamp": "2026-01-01T00:00:00Z"})
    }

    #[test]
    fn a_v1_object_without_metrics_targets_80_percent_cpu() {
        // As the conversion from v1 defaults it (v1.20 printed this for an
        // object created through v1 without a target).
        let h = json!({"metadata": meta(), "spec": {"scaleTargetRef": {"kind": "ReplicaSet", "name": "rs"},
            "minReplicas": 1, "maxReplicas": 3}, "status": {"currentReplicas": 0, "desiredReplicas": 0}});
        check(
            V1,
            h,
            r#""cells":["h","ReplicaSet/rs","\u003cunknown\u003e/80%","1",3,0,"60m"]"#,
        );
        // An annotation that is not a list of metrics is ignored; `null`
        // is an empty list, which replaces the current CPU utilization.
        let mut h = json!({"metadata": meta(), "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"},
            "maxReplicas": 2, "targetCPUUtilizationPercentage": 40},
            "status": {"currentReplicas": 1, "currentCPUUtilizationPercentage": 55}});
        h["metadata"]["annotations"] =
            json!({"autoscaling.alpha.kubernetes.io/metrics": "{not json"});
        check(
            V1,
            h.clone(),
            r#""cells":["h","Deployment/d","55%/40%","\u003cunset\u003e",2,1,"60m"]"#,
        );
        h["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/current-metrics"] =
            json!("null");
        check(
            V1,
            h,
            r#""cells":["h","Deployment/d","\u003cunknown\u003e/40%","\u003cunset\u003e",2,1,"60m"]"#,
        );
    }

    /// A v2beta2 object with these metrics and current metrics.
    fn v2(metrics: Value, current: Value) -> Value {
        json!({"metadata": meta(), "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"},
            "minReplicas": 1, "maxReplicas": 5, "metrics": metrics},
            "status": {"currentReplicas": 2, "desiredReplicas": 2, "currentMetrics": current}})
    }

    fn targets(gvr: (&str, &str, &str), obj: Value, want: &str) {
        let want = want.replace('<', r"\u003c").replace('>', r"\u003e");
        check(
            gvr,
            obj,
            &format!(r#""cells":["h","Deployment/d","{want}","1",5,2,"60m"]"#),
        );
    }

    // Beyond what the apiserver lets through (validation requires a
    // target of each type's kind; container resources are behind a
    // disabled feature gate), the cases follow printers.go.

    #[test]
    fn targets_without_metrics_or_of_unknown_types() {
        targets(V2BETA2, v2(json!([]), json!(null)), "<none>");
        targets(V2BETA2, v2(json!(null), json!(null)), "<none>");
        targets(V2BETA1, v2(json!([]), json!(null)), "<none>");
        targets(
            V2BETA2,
            v2(json!([{"type": "Other"}]), json!([])),
            "<unknown type>",
        );
    }

    #[test]
    fn resource_targets_without_a_utilization_are_auto() {
        let m = json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}]);
        targets(V2BETA2, v2(m.clone(), json!(null)), "<unknown>/<auto>");
        let cur = json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12}}}]);
        targets(V2BETA2, v2(m, cur), "12%/<auto>");
    }

    #[test]
    fn container_resources_print_as_resources() {
        let m = json!([
            {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app",
                "target": {"type": "Utilization", "averageUtilization": 60}}},
            {"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app",
                "target": {"type": "AverageValue", "averageValue": "1Gi"}}}]);
        targets(
            V2BETA2,
            v2(m.clone(), json!(null)),
            "<unknown>/60%, <unknown>/1Gi",
        );
        let cur = json!([
            {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app",
                "current": {"averageUtilization": 75}}},
            {"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app",
                "current": {}}}]);
        targets(V2BETA2, v2(m, cur), "75%/60%, <nil>/1Gi");
        let flat = json!([
            {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app", "targetAverageUtilization": 60}},
            {"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app", "targetAverageValue": "1Gi"}}]);
        let cur = json!([
            {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app", "currentAverageUtilization": 75}},
            {"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app"}}]);
        targets(V2BETA1, v2(flat, cur), "75%/60%, 0/1Gi");
    }

    #[test]
    fn a_current_value_of_another_source_is_unknown() {
        let m = json!([{"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "3"}}},
            {"type": "Object", "object": {"metric": {"name": "o"}, "target": {"type": "AverageValue", "averageValue": "2"}}}]);
        let cur = json!([{"type": "Pods", "pods": {"metric": {"name": "q"}, "current": {"averageValue": "1"}}},
            {"type": "Object", "object": {"metric": {"name": "o"}, "current": {"value": "9"}}}]);
        targets(V2BETA2, v2(m, cur), "<unknown>/3, <unknown>/2 (avg)");
        // A set source without the value printed: Go's nil Quantity.
        let m = json!([{"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "3"}}}]);
        let cur = json!([{"type": "External", "external": {"metric": {"name": "q"}, "current": {"averageValue": "1"}}}]);
        targets(V2BETA2, v2(m, cur), "<nil>/3");
    }

    #[test]
    fn past_two_metrics_the_rest_are_counted() {
        let pods = |n: &str| json!({"type": "Pods", "pods": {"metric": {"name": n}, "target": {"type": "AverageValue", "averageValue": n}}});
        let m = |k: usize| Value::Array((1..=k).map(|i| pods(&i.to_string())).collect());
        targets(V2BETA2, v2(m(2), json!(null)), "<unknown>/1, <unknown>/2");
        targets(
            V2BETA2,
            v2(m(3), json!(null)),
            "<unknown>/1, <unknown>/2 + 1 more...",
        );
        targets(
            V2BETA2,
            v2(m(12), json!(null)),
            "<unknown>/1, <unknown>/2 + 10 more...",
        );
    }

    #[test]
    fn bookmarks_print_the_internal_empty_object_in_every_version() {
        // v1.20's Table bookmark, whatever the version: no metrics.
        let want =
            r#""cells":["","/","\u003cnone\u003e","\u003cunset\u003e",0,0,"\u003cunknown\u003e"]"#;
        let bookmarks = [
            (
                V1,
                r#"{"kind":"HorizontalPodAutoscaler","apiVersion":"autoscaling/v1","metadata":{"resourceVersion":"109","creationTimestamp":null},"spec":{"scaleTargetRef":{"kind":"","name":""},"maxReplicas":0},"status":{"currentReplicas":0,"desiredReplicas":0}}"#,
            ),
            (
                V2BETA1,
                r#"{"kind":"HorizontalPodAutoscaler","apiVersion":"autoscaling/v2beta1","metadata":{"resourceVersion":"109","creationTimestamp":null},"spec":{"scaleTargetRef":{"kind":"","name":""},"maxReplicas":0},"status":{"currentReplicas":0,"desiredReplicas":0,"currentMetrics":null,"conditions":null}}"#,
            ),
            (
                V2BETA2,
                r#"{"kind":"HorizontalPodAutoscaler","apiVersion":"autoscaling/v2beta2","metadata":{"resourceVersion":"109","creationTimestamp":null},"spec":{"scaleTargetRef":{"kind":"","name":""},"maxReplicas":0},"status":{"currentReplicas":0,"desiredReplicas":0,"currentMetrics":null,"conditions":null}}"#,
            ),
        ];
        for (gvr, obj) in bookmarks {
            let p = crate::encode::print::Printer::builtin(
                crate::encode::personality::Personality::V1_20,
                gvr.0,
                gvr.1,
                gvr.2,
            )
            .unwrap();
            assert_eq!(p.zero_row(obj.as_bytes()).to_json(0), want, "{gvr:?}");
        }
        // A v1 object read as v1 reads it has the default target.
        let p = crate::encode::print::Printer::builtin(
            crate::encode::personality::Personality::V1_20,
            V1.0,
            V1.1,
            V1.2,
        )
        .unwrap();
        assert!(p.row(bookmarks[0].1.as_bytes()).to_json(0).contains("80%"));
    }

    #[test]
    fn v1_30_resource_targets_name_their_resource() {
        const V2: (&str, &str, &str) = ("autoscaling", "v2", "horizontalpodautoscalers");
        let hpa = |metrics: Value, current: Value| {
            json!({"metadata": {"name": "h", "creationTimestamp": "2026-01-01T00:00:00Z"},
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                    "minReplicas": 1, "maxReplicas": 4, "metrics": metrics},
                "status": {"currentReplicas": 1, "desiredReplicas": 1, "currentMetrics": current}})
        };
        let cpu = json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 50}}}]);
        check(
            V2BETA2,
            hpa(cpu.clone(), json!(null)),
            r#""cells":["h","Deployment/web","\u003cunknown\u003e/50%","1",4,1,"60m"]"#,
        );
        check_as(
            Personality::NEWEST,
            V2,
            hpa(cpu.clone(), json!(null)),
            r#""cells":["h","Deployment/web","cpu: \u003cunknown\u003e/50%","1",4,1,"60m"]"#,
        );
        check_as(
            Personality::NEWEST,
            V2,
            hpa(
                cpu,
                json!([{"type": "Resource", "resource": {"name": "cpu",
            "current": {"averageUtilization": 20, "averageValue": "100m"}}}]),
            ),
            r#""cells":["h","Deployment/web","cpu: 20%/50%","1",4,1,"60m"]"#,
        );
        let memory = json!([{"type": "ContainerResource", "containerResource": {"name": "memory", "container": "c",
            "target": {"type": "AverageValue", "averageValue": "200Mi"}}},
            {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "30"}}}]);
        check_as(
            Personality::NEWEST,
            V2,
            hpa(memory, json!(null)),
            r#""cells":["h","Deployment/web","memory: \u003cunknown\u003e/200Mi, \u003cunknown\u003e/30","1",4,1,"60m"]"#,
        );
        // autoscaling/v1 is printed by the same printer, with the
        // recorded autoscaling/v2 columns.
        assert_eq!(column_count_as(Personality::NEWEST, V1), 7);
        // v1.29, before kubernetes#122804: autoscaling/v2 as v1.20 printed
        // v2beta2, autoscaling/v1 as v1.20 printed it.
        let v1_29 = Personality::of(1, 29).0;
        check_as(
            v1_29,
            V2,
            hpa(cpu_target(), json!(null)),
            r#""cells":["h","Deployment/web","\u003cunknown\u003e/50%","1",4,1,"60m"]"#,
        );
        let v1 = json!({"metadata": {"name": "h", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 4,
                "targetCPUUtilizationPercentage": 50}});
        assert_eq!(
            cells_as(v1_29, V1, v1.clone(), "2026-01-01T01:00:00Z"),
            cells(V1, v1, "2026-01-01T01:00:00Z")
        );
    }

    fn cpu_target() -> Value {
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 50}}}])
    }

    #[test]
    fn v1_30_autoscaling_v1_names_its_resource_targets_too() {
        let v1_36 = Personality::NEWEST;
        let hpa = |annotations: Value, spec: Value, status: Value| {
            let mut o = json!({"metadata": {"name": "h", "creationTimestamp": "2026-01-01T00:00:00Z",
                    "annotations": annotations},
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                    "minReplicas": 1, "maxReplicas": 4},
                "status": {"currentReplicas": 2, "desiredReplicas": 2}});
            o["spec"]
                .as_object_mut()
                .unwrap()
                .extend(spec.as_object().unwrap().clone());
            o["status"]
                .as_object_mut()
                .unwrap()
                .extend(status.as_object().unwrap().clone());
            o
        };
        // The CPU target of its own fields, and its current utilization.
        check_as(
            v1_36,
            V1,
            hpa(
                json!({}),
                json!({"targetCPUUtilizationPercentage": 50}),
                json!({"currentCPUUtilizationPercentage": 20}),
            ),
            r#""cells":["h","Deployment/web","cpu: 20%/50%","1",4,2,"60m"]"#,
        );
        // No metric at all: the conversion's default 80% CPU target.
        check_as(
            v1_36,
            V1,
            hpa(json!({}), json!({}), json!({})),
            r#""cells":["h","Deployment/web","cpu: \u003cunknown\u003e/80%","1",4,2,"60m"]"#,
        );
        // Other metrics from the annotation, the CPU target after them.
        check_as(
            v1_36,
            V1,
            hpa(
                json!({"autoscaling.alpha.kubernetes.io/metrics":
                    "[{\"type\":\"Resource\",\"resource\":{\"name\":\"memory\",\"targetAverageValue\":\"200Mi\"}}]"}),
                json!({"targetCPUUtilizationPercentage": 50}),
                json!({}),
            ),
            r#""cells":["h","Deployment/web","memory: \u003cunknown\u003e/200Mi, cpu: \u003cunknown\u003e/50%","1",4,2,"60m"]"#,
        );
    }
}
