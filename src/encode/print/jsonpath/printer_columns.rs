//! CRD printer columns (`additionalPrinterColumns`) as the
//! apiextensions-apiserver's table convertor serves them: a column's
//! definition as the Table shows it, and its cell for an object, the
//! path's first value printed as client-go's JSONPath prints it and
//! converted by the column's type (`cellForJSONValue`). Built-in types'
//! columns are `print::columns`' concern.

use super::eval::V;
use super::JsonPath;
use crate::encode::print::columns::Column;
use crate::encode::print::row::RowBuilder;
use crate::go::json::value as go_value;
use crate::go::time;
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct CustomColumn {
    path: JsonPath,
    ty: String,
}

impl CustomColumn {
    /// A CRD's printer column, and its definition as the Table shows it.
    pub fn parse(c: &Value) -> Result<(Column, CustomColumn), String> {
        let field = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
        let json_path = field("jsonPath");
        let path = JsonPath::parse(json_path)?;
        let description = match field("description") {
            "" => format!("Custom resource definition column (in JSONPath format): {json_path}"),
            d => d.to_string(),
        };
        let mut def = Column::new(field("name"), field("type"), field("format"), &description);
        def.priority = c.get("priority").and_then(Value::as_i64).unwrap_or(0) as i32;
        let ty = def.ty.clone();
        Ok((def, CustomColumn { path, ty }))
    }

    /// The column's cell for an object: `null` when the path finds nothing
    /// or fails.
    pub fn cell(&self, obj: &Value, r: &mut RowBuilder) {
        let first = self
            .path
            .find(obj)
            .and_then(|results| results.into_iter().next())
            .and_then(|values| values.into_iter().next());
        let Some(v) = first else {
            r.null();
            return;
        };
        // `results[0][0].Interface()` panics on the zero Value (a range over
        // nulls); the apiserver's handler recovers, no cell to copy.
        if let V::Invalid = v {
            r.null();
            return;
        }
        if self.ty == "string" {
            r.str(&print_text(&v));
            return;
        }
        // cellForJSONValue
        match (self.ty.as_str(), &v) {
            ("integer", V::Data(Value::Number(n))) => {
                let i = n.as_i64();
                r.int(i.unwrap_or_else(|| {
                    crate::go::convert::float_to_int(n.as_f64().unwrap_or(f64::NAN))
                }));
            }
            ("integer", V::Float(f)) => {
                r.int(crate::go::convert::float_to_int(*f));
            }
            ("number", V::Data(Value::Number(n))) => {
                r.float(n.as_f64().unwrap_or(0.0));
            }
            ("number", V::Float(f)) => {
                r.float(*f);
            }
            ("boolean", V::Data(Value::Bool(b)) | V::Bool(b)) => {
                r.bool(*b);
            }
            ("date", V::Data(Value::String(s))) => date(s, r),
            ("date", V::Str(s)) => date(s, r),
            _ => {
                r.null();
            }
        }
    }
}

/// A `date` cell: `metav1.Time.UnmarshalQueryParameter`, then
/// `ConvertToHumanReadableDateType`.
fn date(s: &str, r: &mut RowBuilder) {
    if s.is_empty() || s == "null" {
        r.since(None);
        return;
    }
    // Parse with the year moved into 1800..2200 (same calendar), so that
    // any four-digit year parses without overflowing nanoseconds.
    let b = s.as_bytes();
    let year = match b.get(..4) {
        Some(y) if y.iter().all(u8::is_ascii_digit) && b.get(4) == Some(&b'-') => {
            i64::from(y[0] - b'0') * 1000
                + i64::from(y[1] - b'0') * 100
                + i64::from(y[2] - b'0') * 10
                + i64::from(y[3] - b'0')
        }
        _ => {
            r.str("<invalid>");
            return;
        }
    };
    let shifted = 1800 + (year - 1800).rem_euclid(400);
    let Some(t) = time::parse_rfc3339(&format!("{shifted}{}", &s[4..])) else {
        r.str("<invalid>");
        return;
    };
    const SECS_PER_400Y: i128 = 146_097 * 86_400;
    let t = i128::from(t) + i128::from((year - shifted) / 400) * SECS_PER_400Y * 1_000_000_000;
    // 0001-01-01T00:00:00Z, Go's zero time.
    const ZERO: i128 = -62_135_596_800 * 1_000_000_000;
    const SAFE: i128 = 4_000_000_000_000_000_000;
    if t == ZERO {
        r.since(None);
    } else if (-SAFE..=SAFE).contains(&t) {
        r.since(Some(t as i64));
    } else {
        // time.Since saturates at ±292 years.
        let d = (i128::from(time::now()) - t).clamp(i128::from(i64::MIN), i128::from(i64::MAX));
        r.str(&time::human_duration(d as i64));
    }
}

/// A value as client-go's JSONPath prints it (`PrintResults`): maps and
/// slices as JSON, the rest with `fmt.Fprint`.
fn print_text(v: &V) -> String {
    match v {
        V::Data(Value::String(s)) => s.clone(),
        V::Str(s) => s.clone(),
        V::Data(Value::Number(n)) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => crate::go::fmt::float(n.as_f64().unwrap_or(0.0)),
        },
        V::Data(Value::Bool(b)) | V::Bool(b) => b.to_string(),
        // `reflect.ValueOf(nil)` prints as text/template's "<no value>".
        V::Data(Value::Null) | V::Invalid => "<no value>".into(),
        V::Data(v @ (Value::Array(_) | Value::Object(_))) => go_value(v),
        V::Int(i) => i.to_string(),
        V::Float(f) => crate::go::fmt::float(*f),
        V::Byte(b) => b.to_string(),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    pub(in crate::encode::print::jsonpath) fn col(c: Value) -> CustomColumn {
        CustomColumn::parse(&c).unwrap().1
    }

    pub(in crate::encode::print::jsonpath) fn cell(c: &CustomColumn, obj: &Value) -> String {
        let mut r = RowBuilder::default();
        c.cell(obj, &mut r);
        r.finish()
            .to_json(time::parse_rfc3339("2026-01-01T00:10:00Z").unwrap())
    }

    #[test]
    fn columns_are_defined_with_a_default_description() {
        let (def, _) = CustomColumn::parse(&json!({"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 1})).unwrap();
        assert_eq!(
            def.description,
            "Custom resource definition column (in JSONPath format): .spec.replicas"
        );
        assert_eq!(def.priority, 1);
        // CRD validation wants a leading "."; the convertor parses "{spec}"
        // (an identifier) and fails each evaluation.
        let c = col(json!({"name": "X", "type": "string", "jsonPath": "spec"}));
        assert_eq!(cell(&c, &json!({"spec": 1})), r#""cells":[null]"#);
    }

    #[test]
    fn cells_follow_the_columns_type() {
        let obj = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"n": 3, "f": 1.5, "b": true, "s": "x<y", "m": {"b": 1, "a": [1, "<"]}}});
        let c = |t: &str, p: &str| cell(&col(json!({"name": "c", "type": t, "jsonPath": p})), &obj);
        assert_eq!(c("integer", ".spec.n"), r#""cells":[3]"#);
        assert_eq!(c("integer", ".spec.f"), r#""cells":[1]"#);
        assert_eq!(c("number", ".spec.n"), r#""cells":[3]"#);
        assert_eq!(c("number", ".spec.f"), r#""cells":[1.5]"#);
        assert_eq!(c("boolean", ".spec.b"), r#""cells":[true]"#);
        assert_eq!(c("boolean", ".spec.n"), r#""cells":[null]"#);
        assert_eq!(c("string", ".spec.s"), r#""cells":["x\u003cy"]"#);
        assert_eq!(c("string", ".spec.n"), r#""cells":["3"]"#);
        assert_eq!(c("string", ".spec.f"), r#""cells":["1.5"]"#);
        assert_eq!(
            c("string", ".spec.m"),
            r#""cells":["{\"a\":[1,\"\\u003c\"],\"b\":1}"]"#
        );
        assert_eq!(
            c("date", ".metadata.creationTimestamp"),
            r#""cells":["10m"]"#
        );
        assert_eq!(c("date", ".spec.s"), r#""cells":["\u003cinvalid\u003e"]"#);
        assert_eq!(c("string", ".spec.missing"), r#""cells":[null]"#);
    }

    /// An object like the ones the verification against a v1.20
    /// apiserver used (the cells the tests expect are what it served).
    pub(in crate::encode::print::jsonpath) fn probe() -> Value {
        json!({
            "metadata": {"name": "o00", "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"app.kubernetes.io/name": "lab"}},
            "spec": {"s": "str", "n": 3, "f1": 1_234_567.5, "f2": 123_456.5, "f4": 0.0001,
                "f5": 1e20, "tiny": 0.00001, "big": 18_446_744_073_709_551_615_u64,
                "a": [1, 2, 3, 4], "nul": null, "u": "caf\u{e9} \u{2028} <tag>",
                "m": {"b": 1, "a": [1, "<x>"]},
                "x": [{"n": 1, "s": "a", "y": [1, 2], "b": true},
                      {"n": 2, "s": "b", "y": [], "b": false},
                      {"n": 3.5, "s": "a'b"}]},
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "message": "ok"},
                {"type": "Synced", "status": "False", "reason": "Err"},
                {"type": "Other", "status": "Unknown"}]}
        })
    }

    pub(in crate::encode::print::jsonpath) fn probe_cell(ty: &str, path: &str) -> String {
        let c = col(json!({"name": "c", "type": ty, "jsonPath": path}));
        let cells = cell(&c, &probe());
        cells["\"cells\":[".len()..cells.len() - 1].to_string()
    }

    #[test]
    fn values_print_and_convert_as_go_does() {
        for (ty, path, want) in [
            ("string", ".spec.f1", r#""1.2345675e+06""#),
            ("string", ".spec.f2", r#""123456.5""#),
            ("string", ".spec.f4", r#""0.0001""#),
            ("string", ".spec.f5", r#""1e+20""#),
            ("string", ".spec.tiny", r#""1e-05""#),
            ("string", ".spec.big", r#""1.8446744073709552e+19""#),
            ("integer", ".spec.f5", "-9223372036854775808"),
            ("integer", ".spec.big", "-9223372036854775808"),
            ("number", ".spec.big", "18446744073709552000"),
            ("integer", ".spec.nul", "null"),
            ("integer", ".spec.s", "null"),
            ("integer", ".spec.s.*", "null"),
            ("integer", ".spec.n 5", "null"),
            ("integer", ".spec.s -3", "null"),
            ("number", ".spec.n", "3"),
            ("number", ".spec.s 1.25", "1.25"),
            ("boolean", ".spec.s true", "true"),
            ("boolean", ".spec.n", "null"),
            ("date", ".spec.s \"2025-01-01T00:00:00Z\"", r#""365d""#),
            ("date", ".spec.s", r#""\u003cinvalid\u003e""#),
        ] {
            assert_eq!(probe_cell(ty, path), want, "{ty} {path}");
        }
        let obj = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {
            "empty": "", "zero": "0001-01-01T00:00:00Z", "old": "1500-01-01T00:00:00Z",
            "future": "3000-01-01T00:00:00Z"}});
        let c = |p: &str| {
            cell(
                &col(json!({"name": "c", "type": "date", "jsonPath": p})),
                &obj,
            )
        };
        assert_eq!(c(".spec.empty"), r#""cells":["\u003cunknown\u003e"]"#);
        assert_eq!(c(".spec.zero"), r#""cells":["\u003cunknown\u003e"]"#);
        assert_eq!(c(".spec.old"), r#""cells":["292y"]"#);
        assert_eq!(c(".spec.future"), r#""cells":["\u003cinvalid\u003e"]"#);
    }
}
