//! The evaluator of client-go's `util/jsonpath` (v1.20): `jsonpath.go`'s
//! `FindResults` and its walks over a decoded object, with text/template's
//! comparisons for filters, and the `range`/`end` state a `JSONPath` keeps
//! from one object to the next.

use super::parse::{Node, Param};
use serde_json::Value;

/// A `reflect.Value` as the evaluator meets it: a value of the decoded
/// object (held in an `interface{}`, so JSON null is a nil interface), or
/// one a node made up.
#[derive(Debug, Clone)]
pub(super) enum V<'a> {
    Data(&'a Value),
    Str(String),
    /// Go `int`, from a number in the path.
    Int(i64),
    Float(f64),
    Bool(bool),
    /// A `uint8`: a byte of a string a wildcard or `..` went into.
    Byte(u8),
    /// The zero `reflect.Value` (`reflect.ValueOf(nil)`).
    Invalid,
}

impl<'a> V<'a> {
    /// What `template.Indirect` calls nil.
    fn is_nil(&self) -> bool {
        matches!(self, V::Data(Value::Null))
    }

    /// `reflect.ValueOf(v.Interface())`, as `FindResults` recurses with.
    fn interface(self) -> V<'a> {
        match self {
            V::Data(Value::Null) => V::Invalid,
            v => v,
        }
    }

    /// The elements wildcards and `..` go into (maps, slices, strings).
    fn children(&self) -> Vec<V<'a>> {
        match self {
            V::Data(Value::Object(m)) => m.values().map(V::Data).collect(),
            V::Data(Value::Array(a)) => a.iter().map(V::Data).collect(),
            V::Data(Value::String(s)) => s.bytes().map(V::Byte).collect(),
            V::Str(s) => s.bytes().map(V::Byte).collect(),
            _ => Vec::new(),
        }
    }
}

/// What Go's evaluation functions return on an error: the values they
/// had, which a filter's existence test still looks at.
type Eval<'a> = Result<Vec<V<'a>>, Vec<V<'a>>>;

/// `template.basicKind`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum BasicKind {
    Bool,
    Int,
    Uint,
    Float,
    String,
}

enum Basic<'v> {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    String(&'v str),
}

impl Basic<'_> {
    fn kind(&self) -> BasicKind {
        match self {
            Basic::Bool(_) => BasicKind::Bool,
            Basic::Int(_) => BasicKind::Int,
            Basic::Uint(_) => BasicKind::Uint,
            Basic::Float(_) => BasicKind::Float,
            Basic::String(_) => BasicKind::String,
        }
    }
}

fn basic<'v>(v: &'v V) -> Result<Basic<'v>, ()> {
    Ok(match v {
        V::Data(Value::Bool(b)) | V::Bool(b) => Basic::Bool(*b),
        V::Data(Value::Number(n)) => match n.as_i64() {
            Some(i) => Basic::Int(i),
            None => Basic::Float(n.as_f64().unwrap_or(0.0)),
        },
        V::Data(Value::String(s)) => Basic::String(s),
        V::Str(s) => Basic::String(s),
        V::Int(i) => Basic::Int(*i),
        V::Float(f) => Basic::Float(*f),
        V::Byte(b) => Basic::Uint(u64::from(*b)),
        _ => return Err(()),
    })
}

/// `template.eq` with one argument.
fn go_eq(a: &V, b: &V) -> Result<bool, ()> {
    let (a, b) = (basic(a)?, basic(b)?);
    Ok(match (a, b) {
        (Basic::Int(i), Basic::Uint(u)) | (Basic::Uint(u), Basic::Int(i)) => {
            i >= 0 && i as u64 == u
        }
        (Basic::Bool(x), Basic::Bool(y)) => x == y,
        (Basic::Int(x), Basic::Int(y)) => x == y,
        (Basic::Uint(x), Basic::Uint(y)) => x == y,
        (Basic::Float(x), Basic::Float(y)) => x == y,
        (Basic::String(x), Basic::String(y)) => x == y,
        _ => return Err(()),
    })
}

/// `template.lt`.
fn go_lt(a: &V, b: &V) -> Result<bool, ()> {
    let (a, b) = (basic(a)?, basic(b)?);
    if a.kind() == b.kind() && a.kind() == BasicKind::Bool {
        return Err(());
    }
    Ok(match (a, b) {
        (Basic::Int(i), Basic::Uint(u)) => i < 0 || (i as u64) < u,
        (Basic::Uint(u), Basic::Int(i)) => i >= 0 && u < i as u64,
        (Basic::Int(x), Basic::Int(y)) => x < y,
        (Basic::Uint(x), Basic::Uint(y)) => x < y,
        (Basic::Float(x), Basic::Float(y)) => x < y,
        (Basic::String(x), Basic::String(y)) => x < y,
        _ => return Err(()),
    })
}

fn compare(op: &str, a: &V, b: &V) -> Result<bool, ()> {
    match op {
        "<" => go_lt(a, b),
        ">" => Ok(!(go_lt(a, b)? || go_eq(a, b)?)),
        "==" => go_eq(a, b),
        "!=" => go_eq(a, b).map(|e| !e),
        "<=" => Ok(go_lt(a, b)? || go_eq(a, b)?),
        ">=" => go_lt(a, b).map(|l| !l),
        _ => Err(()),
    }
}

/// The part of Go's `JSONPath` that evaluation changes: `range` and `end`
/// count here, and a range makes the rest of the template after it the
/// template for good (`j.parser.Root.Nodes = nodes[i+1:]`).
#[derive(Debug, Default)]
pub(super) struct State {
    /// Where `Root.Nodes` starts in the parsed template.
    root: usize,
    begin_range: i64,
    in_range: i64,
    end_range: i64,
    /// `lastEndNode`, as an index into the parsed template.
    last_end: Option<usize>,
}

pub(super) struct Eval1<'t> {
    pub(super) template: &'t [Node],
    pub(super) st: &'t mut State,
}

impl<'t> Eval1<'t> {
    pub(super) fn find_results<'a>(&mut self, data: V<'a>) -> Result<Vec<Vec<V<'a>>>, ()> {
        let base = self.st.root;
        let n = self.template.len().saturating_sub(base);
        let cur = vec![data];
        let mut full = Vec::new();
        let mut i = 0;
        while i < n {
            let results = self.walk(&cur, &self.template[base + i]).map_err(|_| ())?;
            if self.st.end_range > 0 && self.st.end_range <= self.st.in_range {
                self.st.end_range -= 1;
                self.st.last_end = Some(base + i);
                break;
            }
            if self.st.begin_range > 0 {
                self.st.begin_range -= 1;
                self.st.in_range += 1;
                if !results.is_empty() {
                    for value in results {
                        self.st.root = base + i + 1;
                        full.extend(self.find_results(value.interface())?);
                    }
                } else {
                    self.st.root = base + i + 1;
                    self.find_results(V::Invalid)?;
                }
                self.st.in_range -= 1;
                if let Some(k) = (i + 1..n).find(|k| Some(base + k) == self.st.last_end) {
                    i = k;
                }
                i += 1;
                continue;
            }
            full.push(results);
            i += 1;
        }
        Ok(full)
    }

    fn walk<'a>(&mut self, input: &[V<'a>], node: &Node) -> Eval<'a> {
        match node {
            Node::List(nodes) => self.eval_list(input, nodes),
            Node::Text(t) => Ok(vec![V::Str(t.clone())]),
            Node::Field(f) => Ok(input
                .iter()
                .filter_map(|v| match v {
                    V::Data(Value::Object(m)) => m.get(f).map(V::Data),
                    _ => None,
                })
                .collect()),
            Node::Array(params) => eval_array(input, params),
            Node::Filter { left, right, op } => self.eval_filter(input, left, right, op),
            Node::Int(i) => Ok(vec![V::Int(*i); input.len()]),
            Node::Float(f) => Ok(vec![V::Float(*f); input.len()]),
            Node::Bool(b) => Ok(vec![V::Bool(*b); input.len()]),
            Node::Wildcard => Ok(input.iter().flat_map(V::children).collect()),
            Node::Recursive => Ok(eval_recursive(input)),
            Node::Union(lists) => {
                let mut result = Vec::new();
                for l in lists {
                    match self.eval_list(input, l) {
                        Ok(t) => result.extend(t),
                        Err(_) => return Err(input.to_vec()),
                    }
                }
                Ok(result)
            }
            Node::Identifier(name) => match name.as_str() {
                "range" => {
                    self.st.begin_range += 1;
                    Ok(input.to_vec())
                }
                "end" if self.st.in_range > 0 => {
                    self.st.end_range += 1;
                    Ok(Vec::new())
                }
                "end" => Err(Vec::new()),
                _ => Err(input.to_vec()),
            },
        }
    }

    fn eval_list<'a>(&mut self, input: &[V<'a>], nodes: &[Node]) -> Eval<'a> {
        let mut cur = input.to_vec();
        for node in nodes {
            cur = self.walk(&cur, node)?;
        }
        Ok(cur)
    }

    fn eval_filter<'a>(
        &mut self,
        input: &[V<'a>],
        left: &[Node],
        right: &[Node],
        op: &str,
    ) -> Eval<'a> {
        let mut results = Vec::new();
        for value in input {
            let V::Data(Value::Array(items)) = value else {
                return Err(input.to_vec());
            };
            for item in items {
                let temp = [V::Data(item)];
                let lefts = self.eval_list(&temp, left);
                if op == "exists" {
                    if !lefts.unwrap_or_else(|e| e).is_empty() {
                        results.push(V::Data(item));
                    }
                    continue;
                }
                let lefts = lefts.map_err(|_| input.to_vec())?;
                match lefts.len() {
                    0 => continue,
                    1 => {}
                    _ => return Err(input.to_vec()),
                }
                let rights = self.eval_list(&temp, right).map_err(|_| input.to_vec())?;
                match rights.len() {
                    0 => continue,
                    1 => {}
                    _ => return Err(input.to_vec()),
                }
                let l = lefts[0].clone().interface();
                let r = rights[0].clone().interface();
                match compare(op, &l, &r) {
                    Ok(true) => results.push(V::Data(item)),
                    Ok(false) => {}
                    Err(()) => return Err(results),
                }
            }
        }
        Ok(results)
    }
}

fn eval_array<'a>(input: &[V<'a>], params: &[Param; 3]) -> Eval<'a> {
    let mut result = Vec::new();
    for value in input {
        if value.is_nil() {
            continue;
        }
        let V::Data(Value::Array(items)) = value else {
            return Err(input.to_vec());
        };
        let len = items.len() as i64;
        let mut p = *params;
        if !p[0].known {
            p[0].value = 0;
        }
        if p[0].value < 0 {
            p[0].value = p[0].value.wrapping_add(len);
        }
        if !p[1].known {
            p[1].value = len;
        }
        if p[1].value < 0 || (p[1].value == 0 && p[1].derived) {
            p[1].value = p[1].value.wrapping_add(len);
        }
        if p[1].value == p[0].value {
            return Ok(result);
        }
        if p[0].value >= len || p[0].value < 0 || p[1].value > len || p[1].value < 0 {
            return Err(input.to_vec());
        }
        if p[0].value > p[1].value {
            return Err(input.to_vec());
        }
        let slice = &items[p[0].value as usize..p[1].value as usize];
        let step = if p[2].known {
            if p[2].value <= 0 {
                return Err(input.to_vec());
            }
            p[2].value as usize
        } else {
            1
        };
        result.extend(slice.iter().step_by(step).map(V::Data));
    }
    Ok(result)
}

fn eval_recursive<'a>(input: &[V<'a>]) -> Vec<V<'a>> {
    let mut result = Vec::new();
    for value in input {
        if value.is_nil() {
            continue;
        }
        let children = value.children();
        if !children.is_empty() {
            result.push(value.clone());
            result.extend(eval_recursive(&children));
        }
    }
    result
}

#[cfg(test)]
mod tests {
    // Paths are checked through a string column: the cells are what a
    // v1.20 apiserver served for them.
    use super::super::printer_columns::tests::{cell, col, probe, probe_cell};
    use serde_json::json;

    #[test]
    fn paths_evaluate_as_client_go_jsonpath_does() {
        for (path, want) in [
            (
                ".status.conditions[?(@.type==\"Ready\")].status",
                r#""True""#,
            ),
            (".status.conditions[?(@.type=='Ready')].message", r#""ok""#),
            (
                ".status.conditions[?(@.status!=\"True\")].type",
                r#""Synced""#,
            ),
            (".status.conditions[?(@.reason)].reason", r#""Err""#),
            (".status.conditions[0].type", r#""Ready""#),
            (".status.conditions[-1].type", r#""Other""#),
            (".status.conditions[*].type", r#""Ready""#),
            (".status.conditions[5].type", "null"),
            (
                ".status.conditions[::2]",
                r#""{\"message\":\"ok\",\"status\":\"True\",\"type\":\"Ready\"}""#,
            ),
            ("..type", r#""Ready""#),
            (".spec.missing", "null"),
            (".spec.nul", r#""\u003cno value\u003e""#),
            (".spec.nul.x", "null"),
            (".spec.nul[0]", "null"),
            (".spec.nul[?(@.a)]", "null"),
            (".spec['s']", r#""str""#),
            (".spec.m['b','a']", r#""1""#),
            (".spec.a[0,2]", r#""1""#),
            (".spec.a[]", r#""1""#),
            (".spec.a[1:3]", r#""2""#),
            (".spec.a[1:5]", "null"),
            (".spec.a[-2:]", r#""3""#),
            (".spec.a[:-1]", r#""1""#),
            (".spec.a[3:3]", "null"),
            (".spec.a[::0]", "null"),
            (".spec.a[0].x", "null"),
            (".spec.a[?(@)]", r#""1""#),
            (".spec.a[?(@!=1)]", r#""2""#),
            (".spec.a[?(@>1)]", r#""2""#),
            (".spec.x[*].y", r#""[1,2]""#),
            (".spec.x[*].y[0]", "null"),
            (".spec.x[?(@.y[5])].n", r#""1""#),
            (".spec.x[?(@.y)].n", r#""1""#),
            (".spec.x[?(@.n>1)].n", "null"),
            (".spec.x[?(@.n<2)].n", "null"),
            (".spec.x[?(@.n==1.0)].n", "null"),
            (".spec.x[?(@.s<'b')].s", r#""a""#),
            (".spec.x[?(@.s == \"b\")].s", r#""b""#),
            (".spec.x[?(@.b==true)].n", r#""1""#),
            (".spec.x[?(@.nope==1)].n", "null"),
            (".spec.x[?(@.s=='a\\'b')].n", r#""3.5""#),
            (".spec.x[ 0 , 1 ].n", r#""1""#),
            (".spec.x[0]['n','s']", r#""1""#),
            (".spec['x'][1].s", r#""b""#),
            (".spec.x[-1]", r#""{\"n\":3.5,\"s\":\"a'b\"}""#),
            (".spec.x..n", r#""1""#),
            (".spec.x.n", "null"),
            (".spec.s[0]", "null"),
            (".spec.s[?(@.a)]", "null"),
            (".spec.m[0]", "null"),
            (".spec.s.*", r#""115""#),
            ("..[0]", "null"),
            ("..s", r#""str""#),
            (".metadata.labels.app\\.kubernetes\\.io/name", r#""lab""#),
            (".metadata.labels['app.kubernetes.io/name']", "null"),
            (".", "null"),
            (".spec.s 5", r#""5""#),
            (".spec.s \"lit\"", r#""lit""#),
            (".spec.s bogus", "null"),
            (".spec.f1 true", r#""true""#),
            (".spec.x[*].n 7", r#""7""#),
            (".spec.a[0]}{.spec.a[9]", "null"),
            (".spec.a[0]} x {.spec.s", r#""1""#),
            (".spec.s}{end", "null"),
            (".spec.u", "\"caf\u{e9} \\u2028 \\u003ctag\\u003e\""),
        ] {
            assert_eq!(probe_cell("string", path), want, "{path}");
        }
    }

    #[test]
    fn a_range_leaves_the_rest_of_the_template_behind() {
        // The first object gets the first action's value; after that the
        // template is what followed the range, and `end` outside a range
        // fails (as the apiserver served it, first request and second).
        let c = col(json!({"name": "c", "type": "string",
            "jsonPath": ".spec.s}{range .spec.x[*]}{.n}{end"}));
        let obj = probe();
        assert_eq!(cell(&c, &obj), r#""cells":["str"]"#);
        assert_eq!(cell(&c, &obj), r#""cells":[null]"#);
        assert_eq!(cell(&c.clone(), &obj), r#""cells":[null]"#);
    }
}
