//! Custom resources' printer columns: the CRD's `additionalPrinterColumns`
//! evaluated as the apiextensions-apiserver's table convertor does, with a
//! port of client-go's `util/jsonpath` (v1.20): the column's path parsed as
//! the template `{<jsonPath>}`, missing keys allowed, the first value of
//! the first result kept.
//!
//! The port follows the Go code closely, quirks included: `["a"]` does not
//! parse (only `['a']`), `[1:3]` past the end is an error rather than a
//! shorter slice, an error anywhere in the template empties the cell,
//! filters compare only values of one kind, and `range`/`end` leave their
//! state behind in the column's path for the next object as Go's
//! `JSONPath` does. Go visits a map's values in random order (wildcards,
//! `..`); here they come in the object's key order.
//!
//! It is three parts, as client-go's package is: `parse` (the parser and
//! its tree), `eval` (the walk of a template over an object) and
//! `printer_columns` (a column's definition and cells, the table
//! convertor's side; built-in types' columns are `print::columns`). The
//! rest of the crate uses `CustomColumn` alone; `JsonPath` here is what
//! joins the parser to the evaluator.

mod eval;
mod parse;
mod printer_columns;

pub use printer_columns::CustomColumn;

use crate::go::json::string as go_string;
use eval::{Eval1, State, V};
use parse::{parse_template, Node};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// A column's JSONPath, parsed as the template `{<jsonPath>}`, with the
/// state Go's `JSONPath` keeps between evaluations.
#[derive(Debug, Clone)]
pub struct JsonPath {
    template: Arc<[Node]>,
    state: Arc<Mutex<State>>,
}

impl JsonPath {
    /// A column's `jsonPath` (`.spec.replicas`), or the error the table
    /// convertor gives for one that does not parse.
    pub fn parse(path: &str) -> Result<JsonPath, String> {
        let template = parse_template(&format!("{{{path}}}"))
            .map_err(|_| format!("unrecognized column definition {}", go_string(path)))?;
        Ok(JsonPath {
            template: template.into(),
            state: Arc::default(),
        })
    }

    /// `FindResults`: each action's values, or `None` on an error.
    fn find<'a>(&self, obj: &'a Value) -> Option<Vec<Vec<V<'a>>>> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        Eval1 {
            template: &self.template,
            st: &mut st,
        }
        .find_results(V::Data(obj))
        .ok()
    }
}
