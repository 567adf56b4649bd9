//! A Table row as a printer makes it: cells appended as Go values, each
//! encoded as `encoding/json` writes it, with holes for the time-relative
//! cells that are filled in when the row is served.

use crate::go::json::{float as go_float, string as go_string};
use crate::go::time::{self, Nanos};
use bytes::{BufMut, Bytes};
use serde_json::Value;

/// One piece of an encoded row.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Fixed(Bytes),
    /// `translateTimestampSince`: how long ago, or "<unknown>" for no time.
    Since(Option<Nanos>),
    /// A string cell with how long ago inside it: `before`, the age,
    /// `after`.
    Within {
        before: Box<str>,
        at: Nanos,
        after: Box<str>,
    },
}

/// A row's `"cells":[…]` and conditions, encoded but for its
/// time-relative cells; or none, where the release's printer returns an
/// error for the object (`RowBuilder::fail`).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Empty for a row the printer failed on: a printed row always ends
    /// with its fixed tail (kept this way, rows cached on entries cost no
    /// flag).
    parts: Box<[Part]>,
}

impl Row {
    /// Whether the printer printed it (see `RowBuilder::fail`).
    pub fn printable(&self) -> bool {
        !self.parts.is_empty()
    }

    /// The row's cells (and conditions) with the ages as of `now`.
    pub fn put(&self, b: &mut Vec<u8>, now: Nanos) {
        for p in self.parts.iter() {
            match p {
                Part::Fixed(bytes) => b.put_slice(bytes),
                Part::Since(None) => b.put_slice(br#""\u003cunknown\u003e""#),
                Part::Since(Some(t)) => {
                    b.put_slice(go_string(&time::human_duration(now.saturating_sub(*t))).as_bytes())
                }
                Part::Within { before, at, after } => {
                    let age = time::human_duration(now.saturating_sub(*at));
                    b.put_slice(go_string(&format!("{before}{age}{after}")).as_bytes())
                }
            }
        }
    }

    /// The most [`Row::put`] writes: its fixed bytes, and for each age the
    /// longest it can be (`"\u003cunknown\u003e"`, or a duration such as
    /// `"292y"`).
    pub fn max_len(&self) -> usize {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Fixed(bytes) => bytes.len(),
                Part::Since(_) => 24,
                Part::Within { before, after, .. } => before.len() * 6 + after.len() * 6 + 24,
            })
            .sum()
    }

    /// The cells alone, as JSON, for tests and diagnostics.
    pub fn to_json(&self, now: Nanos) -> String {
        let mut b = Vec::new();
        self.put(&mut b, now);
        String::from_utf8_lossy(&b).into_owned()
    }
}

/// Builds a row cell by cell, as a printer appends Go values to
/// `row.Cells`: each cell is encoded as `encoding/json` writes it.
pub struct RowBuilder {
    buf: String,
    parts: Vec<Part>,
    cells: usize,
    conditions: Option<&'static str>,
    failed: bool,
}

impl Default for RowBuilder {
    fn default() -> Self {
        RowBuilder {
            buf: String::from("\"cells\":["),
            parts: Vec::new(),
            cells: 0,
            conditions: None,
            failed: false,
        }
    }
}

impl RowBuilder {
    fn next(&mut self) {
        if self.cells > 0 {
            self.buf.push(',');
        }
        self.cells += 1;
    }

    pub fn str(&mut self, s: &str) -> &mut Self {
        self.next();
        self.buf.push_str(&go_string(s));
        self
    }

    pub fn int(&mut self, n: i64) -> &mut Self {
        self.next();
        self.buf.push_str(&n.to_string());
        self
    }

    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.next();
        self.buf.push_str(if v { "true" } else { "false" });
        self
    }

    /// A float64 as Go's encoding/json writes it.
    pub fn float(&mut self, f: f64) -> &mut Self {
        self.next();
        self.buf.push_str(&go_float(f));
        self
    }

    pub fn null(&mut self) -> &mut Self {
        self.next();
        self.buf.push_str("null");
        self
    }

    /// A cell already encoded as JSON.
    pub fn raw(&mut self, json: &str) -> &mut Self {
        self.next();
        self.buf.push_str(json);
        self
    }

    /// `translateTimestampSince(t)`: the age, computed when served.
    pub fn since(&mut self, t: Option<Nanos>) -> &mut Self {
        self.next();
        let fixed = std::mem::take(&mut self.buf);
        self.parts.push(Part::Fixed(Bytes::from(fixed)));
        self.parts.push(Part::Since(t));
        self
    }

    /// A string cell holding how long ago `at` was between `before` and
    /// `after` (`fmt.Sprintf("%d (%s ago)", n, translateTimestampSince(t))`),
    /// computed when served.
    pub fn since_within(&mut self, before: &str, at: Nanos, after: &str) -> &mut Self {
        self.next();
        let fixed = std::mem::take(&mut self.buf);
        self.parts.push(Part::Fixed(Bytes::from(fixed)));
        self.parts.push(Part::Within {
            before: before.into(),
            at,
            after: after.into(),
        });
        self
    }

    /// The age of an RFC 3339 timestamp field (missing or zero: unknown).
    pub fn since_field(&mut self, ts: Option<&Value>) -> &mut Self {
        let t = ts.and_then(Value::as_str).and_then(time::parse_rfc3339);
        self.since(t)
    }

    /// The row's conditions, encoded (printers use a few fixed ones).
    pub fn conditions(&mut self, json: &'static str) -> &mut Self {
        self.conditions = Some(json);
        self
    }

    pub fn cells(&self) -> usize {
        self.cells
    }

    /// The printer returns an error for this object, as printers.go's do
    /// where an object cannot be printed (a v1.20 deployment whose
    /// selector does not convert): the apiserver then fails the whole
    /// Table, so kubecache leaves any Table holding it to the upstream.
    pub fn fail(&mut self) {
        self.failed = true;
    }

    pub fn finish(mut self) -> Row {
        if self.failed {
            return Row {
                parts: Box::default(),
            };
        }
        self.buf.push(']');
        if let Some(c) = self.conditions {
            self.buf.push_str(",\"conditions\":");
            self.buf.push_str(c);
        }
        self.parts.push(Part::Fixed(Bytes::from(self.buf)));
        Row {
            parts: self.parts.into_boxed_slice(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_encode_cells_as_go_does_and_fill_in_ages_when_served() {
        let mut r = RowBuilder::default();
        r.str("a<b>")
            .int(3)
            .since(Some(0))
            .bool(true)
            .since(None)
            .null();
        let row = r.finish();
        let now = 150 * 1_000_000_000;
        assert_eq!(
            row.to_json(now),
            r#""cells":["a\u003cb\u003e",3,"2m30s",true,"\u003cunknown\u003e",null]"#
        );
    }

    #[test]
    fn conditions_follow_the_cells() {
        let mut r = RowBuilder::default();
        r.str("p")
            .conditions(r#"[{"type":"Completed","status":"True"}]"#);
        assert_eq!(
            r.finish().to_json(0),
            r#""cells":["p"],"conditions":[{"type":"Completed","status":"True"}]"#
        );
    }
}
