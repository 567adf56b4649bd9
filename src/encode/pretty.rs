//! The apiserver's pretty JSON (curl, Wget and browsers get it, or
//! `?pretty=true`), made from the compact bytes the cache already holds.
//!
//! The apiserver writes it with json-iterator's `MarshalIndent`, whose
//! layout is not encoding/json's, and kubecache reproduces it byte for
//! byte:
//! - two spaces per level, `"key": value`, no trailing newline;
//! - an empty object is `{`, a newline, the inner indentation, a newline
//!   and `}` (a struct or map writes its start and end regardless), while
//!   an empty array is `[]` and a field-less struct type is `{}`;
//! - values with their own `MarshalJSON` (managed fields, raw extensions
//!   such as a Table row's object, a CRD schema's `default`, `items`…) are
//!   copied compact;
//! - a map's values are encoded into a scratch stream that starts at
//!   indentation zero, so an object inside a map (a CRD schema's
//!   `properties`, a CSR's `extra`) is indented from the left margin;
//! - floats are written with `strconv.AppendFloat` alone: `1e-07` where
//!   encoding/json's compact form says `1e-7`.
//!
//! Which values are maps or raw is a property of the Go types; the few that
//! matter among built-in types are named in [`Ctx::field`]. Custom resources
//! are not re-indented at all: the unstructured encoder ignores `pretty`
//! apart from dropping the trailing newline ([`Layout::Unindented`]).

use super::recycle::{self, NoMemory};
use bytes::{BufMut, Bytes};

/// How a body is laid out for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Layout {
    /// Compact, as the cache holds it.
    #[default]
    Compact,
    /// json-iterator's indentation. `raw_data`: the object's top-level
    /// `data` is a raw extension (controller revisions).
    Indented { raw_data: bool },
    /// Compact without the trailing newline: a custom resource asked for pretty.
    Unindented,
}

impl Layout {
    /// The body laid out; compact bodies are returned as they are.
    pub fn apply(self, body: Bytes) -> Result<Bytes, NoMemory> {
        match self {
            Layout::Compact => Ok(body),
            Layout::Unindented => {
                let end = body.len() - usize::from(body.ends_with(b"\n"));
                Ok(body.slice(..end))
            }
            Layout::Indented { raw_data } => indent(&body, raw_data),
        }
    }
}

/// Where in a document a value sits, as far as its layout depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Plain,
    /// An object or list; a list's items and a Table are roots too.
    Root,
    Meta,
    ManagedFieldsEntry,
    Spec,
    TableRow,
    /// A CRD's `subresources`.
    Subresources,
    /// A CRD's JSONSchemaProps.
    Schema,
    /// Copied compact (a `MarshalJSON` value).
    Raw,
    /// An array of raw values (a schema's `enum`).
    RawItems,
    /// A Go map: its values start again at the left margin.
    MapOf(Value),
}

/// What a map holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    Plain,
    Schema,
    Raw,
}

impl Value {
    fn ctx(self) -> Ctx {
        match self {
            Value::Plain => Ctx::Plain,
            Value::Schema => Ctx::Schema,
            Value::Raw => Ctx::Raw,
        }
    }
}

impl Ctx {
    /// The context of the value under `key` in an object of this context.
    fn field(self, key: &[u8], raw_data: bool) -> Ctx {
        match (self, key) {
            (Ctx::MapOf(v), _) => v.ctx(),
            (Ctx::Root, b"metadata") => Ctx::Meta,
            (Ctx::Root, b"items") => Ctx::Root,
            (Ctx::Root, b"rows") => Ctx::TableRow,
            (Ctx::Root, b"spec") => Ctx::Spec,
            (Ctx::Root, b"data") if raw_data => Ctx::Raw,
            (Ctx::Meta, b"managedFields") => Ctx::ManagedFieldsEntry,
            (Ctx::ManagedFieldsEntry, b"fieldsV1") => Ctx::Raw,
            (Ctx::TableRow, b"object") => Ctx::Raw,
            // A CSR's user info extras: map[string]ExtraValue.
            (Ctx::Spec, b"extra") => Ctx::MapOf(Value::Plain),
            (Ctx::Subresources, b"status") => Ctx::Raw,
            (Ctx::Schema, b"properties" | b"patternProperties" | b"definitions") => {
                Ctx::MapOf(Value::Schema)
            }
            (Ctx::Schema, b"dependencies") => Ctx::MapOf(Value::Raw),
            (
                Ctx::Schema,
                b"items" | b"additionalProperties" | b"additionalItems" | b"default" | b"example",
            ) => Ctx::Raw,
            (Ctx::Schema, b"enum") => Ctx::RawItems,
            (Ctx::Schema, b"allOf" | b"oneOf" | b"anyOf" | b"not") => Ctx::Schema,
            (Ctx::Schema, _) => Ctx::Plain,
            // Only CRDs have these among built-in types.
            (_, b"openAPIV3Schema") => Ctx::Schema,
            (_, b"subresources") => Ctx::Subresources,
            _ => Ctx::Plain,
        }
    }
}

/// Nesting beyond this is copied as it is rather than recursed into (the
/// cache's own parser stops far earlier).
const MAX_DEPTH: usize = 512;

/// What may be written between two checks for room: punctuation, `": "`.
const SLACK: usize = 64;

struct Indenter<'a> {
    src: &'a [u8],
    pos: usize,
    out: Vec<u8>,
    indent: usize,
    raw_data: bool,
    /// Growing `out` failed: nothing more is read, and what is still
    /// written (the open containers' closing bytes) goes to waste.
    failed: Option<NoMemory>,
}

/// `body` (compact JSON, as the cache and kubecache's encoders write it)
/// laid out as the apiserver's pretty serializer writes it. Whatever does
/// not parse is copied as it is.
pub fn indent(body: &[u8], raw_data: bool) -> Result<Bytes, NoMemory> {
    let mut i = Indenter {
        src: body,
        pos: 0,
        out: recycle::buffer(body.len() + body.len() / 2)?,
        indent: 0,
        raw_data,
        failed: None,
    };
    i.value(Ctx::Root, 0);
    i.skip_ws();
    // Nothing else follows a document; keep whatever does, unchanged.
    let rest = &i.src[i.pos..];
    if !rest.is_empty() && i.room(rest.len()) {
        i.out.extend_from_slice(&i.src[i.pos..]);
    }
    match i.failed {
        Some(e) => Err(e),
        None => Ok(recycle::freeze(i.out)),
    }
}

/// What a list's items are, as far as their layout depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListItems {
    /// Objects (a list's `items`).
    Objects,
    /// A Table's `rows`.
    Rows,
}

/// Stands for a list's items in its head and tail laid out alone: a string
/// no list head holds.
const ITEMS: &[u8] = b"\"\\u0000kubecache-items\\u0000\"";

/// A list's head and tail laid out indented, and where its items start.
pub struct IndentedEnds {
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
    /// The spaces each item starts at (after the first, each follows `,`,
    /// a newline and that many spaces).
    pub spaces: usize,
}

/// A list's compact `head` and `tail` (its bytes before and after the
/// items, which are an array's elements) laid out as [`indent`] lays them
/// out around at least one item. `None` if `head` and `tail` do not read
/// as a list around its items.
pub fn indent_list_ends(
    head: &[u8],
    tail: &[u8],
    raw_data: bool,
) -> Result<Option<IndentedEnds>, NoMemory> {
    let mut doc = recycle::buffer(head.len() + ITEMS.len() + tail.len())?;
    doc.extend_from_slice(head);
    doc.extend_from_slice(ITEMS);
    doc.extend_from_slice(tail);
    let laid = indent(&doc, raw_data)?;
    let Some(at) = laid.windows(ITEMS.len()).position(|w| w == ITEMS) else {
        return Ok(None);
    };
    let before = &laid[..at];
    let spaces = before.iter().rev().take_while(|&&b| b == b' ').count();
    if !before[..before.len() - spaces].ends_with(b"[\n") {
        return Ok(None);
    }
    Ok(Some(IndentedEnds {
        head: before.to_vec(),
        tail: laid[at + ITEMS.len()..].to_vec(),
        spaces,
    }))
}

/// One of a list's items (compact) appended to `out` as [`indent`] lays it
/// out inside the list, starting at `spaces` (from [`indent_list_ends`]).
pub fn indent_item(
    out: &mut Vec<u8>,
    item: &[u8],
    raw_data: bool,
    items: ListItems,
    spaces: usize,
) -> Result<(), NoMemory> {
    let mut i = Indenter {
        src: item,
        pos: 0,
        out: std::mem::take(out),
        indent: spaces,
        raw_data,
        failed: None,
    };
    if i.room(item.len() + item.len() / 2) {
        let ctx = match items {
            ListItems::Objects => Ctx::Root,
            ListItems::Rows => Ctx::TableRow,
        };
        // An item is two levels down: the list, its array.
        i.value(ctx, 2);
    }
    *out = i.out;
    match i.failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

impl Indenter<'_> {
    /// Room for `n` bytes and the punctuation after them, had fallibly. On
    /// failure the input is given up and the output emptied: the closing
    /// bytes still written (one per open container, fewer than the input
    /// has bytes) fit in what it held.
    fn room(&mut self, n: usize) -> bool {
        if self.failed.is_some() {
            return false;
        }
        match recycle::room(&mut self.out, n + SLACK) {
            Ok(()) => true,
            Err(e) => {
                self.failed = Some(e);
                self.pos = self.src.len();
                self.out.clear();
                false
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.pos += 1;
        }
    }

    fn newline(&mut self, spaces: usize) {
        if !self.room(spaces + 1) {
            return;
        }
        self.out.put_u8(b'\n');
        self.out.resize(self.out.len() + spaces, b' ');
    }

    fn value(&mut self, ctx: Ctx, depth: usize) {
        self.skip_ws();
        let raw = matches!(ctx, Ctx::Raw) || depth > MAX_DEPTH;
        match self.peek() {
            Some(b'{' | b'[') if raw => self.copy_raw(),
            Some(b'{') => self.object(ctx, depth),
            Some(b'[') => self.array(ctx, depth),
            Some(b'"') => self.string(),
            Some(_) => self.scalar(raw),
            None => {}
        }
    }

    fn object(&mut self, ctx: Ctx, depth: usize) {
        self.pos += 1;
        self.indent += 2;
        self.out.put_u8(b'{');
        self.newline(self.indent);
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                self.skip_ws();
                let key_start = self.pos;
                self.string();
                // The key without its quotes: the names matched are plain.
                let key = self
                    .src
                    .get(key_start + 1..self.pos.saturating_sub(1))
                    .unwrap_or_default();
                let child = ctx.field(key, self.raw_data);
                self.skip_ws();
                if self.peek() != Some(b':') {
                    return self.bail();
                }
                self.pos += 1;
                self.out.extend_from_slice(b": ");
                if matches!(ctx, Ctx::MapOf(_)) {
                    let outer = std::mem::replace(&mut self.indent, 0);
                    self.value(child, depth + 1);
                    self.indent = outer;
                } else {
                    self.value(child, depth + 1);
                }
                match self.after_member(b'}') {
                    Some(true) => {}
                    Some(false) => break,
                    None => return self.bail(),
                }
            }
        }
        self.close(b'}');
    }

    /// After a member or element: a comma goes out with a new line
    /// (`Some(true)`: another follows), `close` is consumed (`Some(false)`),
    /// anything else is malformed (`None`).
    fn after_member(&mut self, close: u8) -> Option<bool> {
        self.skip_ws();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                self.out.put_u8(b',');
                self.newline(self.indent);
                Some(true)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// Ends an object or array opened at the indent before this one.
    fn close(&mut self, close: u8) {
        self.newline(self.indent - 2);
        self.indent -= 2;
        self.out.put_u8(close);
    }

    fn array(&mut self, ctx: Ctx, depth: usize) {
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.out.extend_from_slice(b"[]");
            return;
        }
        let item = match ctx {
            Ctx::RawItems => Ctx::Raw,
            c => c,
        };
        self.indent += 2;
        self.out.put_u8(b'[');
        self.newline(self.indent);
        loop {
            self.value(item, depth + 1);
            match self.after_member(b']') {
                Some(true) => {}
                Some(false) => break,
                None => return self.bail(),
            }
        }
        self.close(b']');
    }

    /// A string token, escapes and all.
    fn string(&mut self) {
        let start = self.pos;
        let mut i = self.pos + 1;
        while i < self.src.len() {
            match self.src[i] {
                b'\\' => i += 2,
                b'"' => {
                    i += 1;
                    break;
                }
                _ => i += 1,
            }
        }
        self.pos = i.min(self.src.len());
        if self.room(self.pos - start) {
            self.out.extend_from_slice(&self.src[start..self.pos]);
        }
    }

    /// A number or literal. A float's exponent gets the two digits
    /// `strconv.AppendFloat` writes and encoding/json trims.
    fn scalar(&mut self, raw: bool) {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t' | b':') {
                break;
            }
            self.pos += 1;
        }
        if self.pos == start {
            // A stray byte: let the caller stop on it.
            return;
        }
        if !self.room(self.pos - start + 1) {
            return;
        }
        let token = &self.src[start..self.pos];
        let n = token.len();
        if !raw && n >= 3 && token[n - 3] == b'e' && token[n - 2] == b'-' {
            self.out.extend_from_slice(&token[..n - 1]);
            self.out.put_u8(b'0');
            self.out.put_u8(token[n - 1]);
        } else {
            self.out.extend_from_slice(token);
        }
    }

    /// A whole value copied as it is.
    fn copy_raw(&mut self) {
        let start = self.pos;
        let mut depth = 0usize;
        let mut i = self.pos;
        while i < self.src.len() {
            match self.src[i] {
                b'"' => {
                    i += 1;
                    while i < self.src.len() && self.src[i] != b'"' {
                        i += if self.src[i] == b'\\' { 2 } else { 1 };
                    }
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        self.pos = i.min(self.src.len());
        if self.room(self.pos - start) {
            self.out.extend_from_slice(&self.src[start..self.pos]);
        }
    }

    /// Not JSON after all: the rest goes out as it came, and the open
    /// containers are left as they are (the caller unwinds).
    fn bail(&mut self) {
        if self.room(self.src.len() - self.pos) {
            self.out.extend_from_slice(&self.src[self.pos..]);
        }
        self.pos = self.src.len();
        self.indent = self.indent.saturating_sub(2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pretty(s: &str) -> String {
        String::from_utf8(indent(s.as_bytes(), false).unwrap().to_vec()).unwrap()
    }

    #[test]
    fn objects_are_indented_two_spaces_with_a_space_after_colons_and_no_newline_at_the_end() {
        assert_eq!(
            pretty("{\"kind\":\"Namespace\",\"spec\":{\"finalizers\":[\"kubernetes\"]}}\n"),
            "{\n  \"kind\": \"Namespace\",\n  \"spec\": {\n    \"finalizers\": [\n      \"kubernetes\"\n    ]\n  }\n}"
        );
    }

    #[test]
    fn empty_objects_keep_a_blank_indented_line_and_empty_arrays_stay_closed() {
        // As a Status's empty metadata and a pod's `resources: {}` come out.
        assert_eq!(
            pretty("{\"metadata\":{},\"items\":[]}"),
            "{\n  \"metadata\": {\n    \n  },\n  \"items\": []\n}"
        );
    }

    #[test]
    fn managed_fields_and_table_row_objects_stay_compact() {
        assert_eq!(
            pretty("{\"metadata\":{\"managedFields\":[{\"manager\":\"m\",\"fieldsV1\":{\"f:a\":{}}}]},\"rows\":[{\"cells\":[\"x\",1],\"object\":{\"a\":[1]}}]}"),
            "{\n  \"metadata\": {\n    \"managedFields\": [\n      {\n        \"manager\": \"m\",\n        \"fieldsV1\": {\"f:a\":{}}\n      }\n    ]\n  },\n  \"rows\": [\n    {\n      \"cells\": [\n        \"x\",\n        1\n      ],\n      \"object\": {\"a\":[1]}\n    }\n  ]\n}"
        );
    }

    #[test]
    fn a_crd_schemas_property_map_values_restart_at_the_left_margin() {
        // What v1.20 printed for spec.versions[0].schema of a CRD.
        let got = pretty(
            "{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\",\"properties\":{\"size\":{\"type\":\"integer\",\"default\":3},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}}}}",
        );
        let want = r#"{
  "openAPIV3Schema": {
    "type": "object",
    "properties": {
      "spec": {
  "type": "object",
  "properties": {
    "size": {
  "type": "integer",
  "default": 3
},
    "tags": {
  "type": "array",
  "items": {"type":"string"}
}
  }
}
    }
  }
}"#;
        assert_eq!(got, want);
    }

    #[test]
    fn schema_enums_defaults_and_subresource_status_stay_compact() {
        let got = pretty(
            "{\"subresources\":{\"status\":{},\"scale\":{\"specReplicasPath\":\".spec.r\"}},\"openAPIV3Schema\":{\"enum\":[{\"a\":1},\"b\"],\"minimum\":1e-7,\"default\":{\"x\":1e-7}}}",
        );
        let want = "{\n  \"subresources\": {\n    \"status\": {},\n    \"scale\": {\n      \"specReplicasPath\": \".spec.r\"\n    }\n  },\n  \"openAPIV3Schema\": {\n    \"enum\": [\n      {\"a\":1},\n      \"b\"\n    ],\n    \"minimum\": 1e-07,\n    \"default\": {\"x\":1e-7}\n  }\n}";
        assert_eq!(got, want);
    }

    #[test]
    fn a_csrs_extra_values_restart_at_the_left_margin() {
        assert_eq!(
            pretty("{\"spec\":{\"extra\":{\"k\":[\"v\"]},\"usages\":[\"a\"]}}"),
            "{\n  \"spec\": {\n    \"extra\": {\n      \"k\": [\n  \"v\"\n]\n    },\n    \"usages\": [\n      \"a\"\n    ]\n  }\n}"
        );
    }

    #[test]
    fn a_controller_revisions_data_is_raw_only_when_asked() {
        let body = b"{\"data\":{\"spec\":{}}}";
        assert_eq!(
            String::from_utf8(indent(body, true).unwrap().to_vec()).unwrap(),
            "{\n  \"data\": {\"spec\":{}}\n}"
        );
        assert_eq!(
            pretty("{\"data\":{\"k\":\"v\"}}"),
            "{\n  \"data\": {\n    \"k\": \"v\"\n  }\n}"
        );
    }

    #[test]
    fn strings_with_escaped_quotes_and_structural_characters_pass_unchanged() {
        assert_eq!(
            pretty(r#"{"a":"x\"}{,:[","b":"\\"}"#),
            "{\n  \"a\": \"x\\\"}{,:[\",\n  \"b\": \"\\\\\"\n}"
        );
    }

    #[test]
    fn unindented_drops_only_the_trailing_newline() {
        let b = bytes::Bytes::from_static(b"{\"a\":1}\n");
        assert_eq!(&Layout::Unindented.apply(b).unwrap()[..], b"{\"a\":1}");
        let b = bytes::Bytes::from_static(b"{\"a\":1}");
        assert_eq!(&Layout::Unindented.apply(b).unwrap()[..], b"{\"a\":1}");
        assert_eq!(
            &Layout::Unindented.apply(bytes::Bytes::new()).unwrap()[..],
            b""
        );
    }

    #[test]
    fn garbage_never_panics_and_keeps_its_bytes() {
        for s in [
            "",
            "{",
            "}",
            "[",
            "]",
            "{\"a\"",
            "{\"a\":",
            "{\"a\":1",
            "[1,",
            "\"",
            "\"\\",
            "{\"a\"1}",
            "[}",
            "{]",
            "nul",
            "{\"a\":{\"b\":[1,2}",
            "{,}",
            "[,]",
            "{\"\":\"\"}x",
        ] {
            let out = indent(s.as_bytes(), true).unwrap();
            let squeezed: Vec<u8> = out
                .iter()
                .copied()
                .filter(|c| !c.is_ascii_whitespace())
                .collect();
            let original: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
            // Only whitespace is added (and a float exponent's zero).
            assert_eq!(squeezed, original, "{s:?}");
        }
        let deep = "[".repeat(2000) + &"]".repeat(2000);
        assert_eq!(
            indent(deep.as_bytes(), false)
                .unwrap()
                .iter()
                .filter(|c| !c.is_ascii_whitespace())
                .count(),
            4000
        );
    }
}
