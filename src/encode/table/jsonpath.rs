//! Custom resources' printer columns: the CRD's `additionalPrinterColumns`
//! evaluated as the apiextensions-apiserver's table convertor does, with
//! client-go's JSONPath (missing keys allowed, the first result kept).

use super::columns::Column;
use super::time;
use super::RowBuilder;
use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

impl JsonPath {
    /// A column's `jsonPath` (`.spec.replicas`).
    pub fn parse(path: &str) -> Result<JsonPath, String> {
        let bad = || {
            format!(
                "unrecognized column definition {}",
                super::super::json::go_string(path)
            )
        };
        let rest = path.strip_prefix('.').ok_or_else(bad)?;
        let steps = rest
            .split('.')
            .map(|f| {
                if f.is_empty() {
                    Err(bad())
                } else {
                    Ok(Step::Field(f.to_string()))
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(JsonPath { steps })
    }

    /// The first value the path finds, if any.
    pub fn first<'a>(&self, obj: &'a Value) -> Option<&'a Value> {
        self.steps.iter().try_fold(obj, |v, step| match step {
            Step::Field(f) => v.get(f),
        })
    }
}

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

    /// The column's cell for an object: `null` when the path finds nothing.
    pub fn cell(&self, obj: &Value, r: &mut RowBuilder) {
        let Some(v) = self.path.first(obj).filter(|v| !v.is_null()) else {
            r.null();
            return;
        };
        match (self.ty.as_str(), v) {
            // Strings print as JSONPath prints: text as is, numbers and
            // booleans as Go formats them, objects and arrays as JSON.
            ("string", v) => r.str(&print_text(v)),
            ("integer", Value::Number(n)) => match n.as_i64() {
                Some(i) => r.int(i),
                None => r.int(n.as_f64().unwrap_or(0.0) as i64),
            },
            ("number", Value::Number(n)) => r.float(n.as_f64().unwrap_or(0.0)),
            ("boolean", Value::Bool(b)) => r.bool(*b),
            ("date", Value::String(s)) => match time::parse_rfc3339(s) {
                Some(t) => r.since(Some(t)),
                None => r.str("<invalid>"),
            },
            _ => r.null(),
        };
    }
}

/// A value as client-go's JSONPath prints it.
fn print_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_print_float(n.as_f64().unwrap_or(0.0)),
        },
        Value::Bool(b) => b.to_string(),
        Value::Null => "<nil>".into(),
        Value::Array(_) | Value::Object(_) => crate::encode::json::go_value(v),
    }
}

/// A float64 as `fmt.Sprint` formats it (`%v`: shortest, exponent when
/// the exponent is below -4 or at least 21).
fn go_print_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-4..1e21).contains(&abs) {
        super::go_float(f)
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn col(c: Value) -> CustomColumn {
        CustomColumn::parse(&c).unwrap().1
    }

    fn cell(c: &CustomColumn, obj: &Value) -> String {
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
        assert!(
            CustomColumn::parse(&json!({"name": "X", "type": "string", "jsonPath": "spec"}))
                .is_err()
        );
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
}
