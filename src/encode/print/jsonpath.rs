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

use super::columns::Column;
use super::row::RowBuilder;
use super::time;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// A node of the parse tree (client-go's `node.go`).
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    List(Vec<Node>),
    Field(String),
    Identifier(String),
    /// start, end, step.
    Array([Param; 3]),
    Filter {
        left: Vec<Node>,
        right: Vec<Node>,
        op: String,
    },
    Int(i64),
    Float(f64),
    Wildcard,
    Recursive,
    Union(Vec<Vec<Node>>),
    Bool(bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Param {
    value: i64,
    known: bool,
    derived: bool,
}

const EOF: Option<char> = None;

/// client-go's `Parser`: positions are byte offsets into the template.
struct Parser<'s> {
    input: &'s str,
    pos: usize,
    start: usize,
    width: usize,
    root: Vec<Node>,
}

type ParseResult = Result<(), String>;

fn is_space(r: char) -> bool {
    r == ' ' || r == '\t'
}

fn is_end_of_line(r: char) -> bool {
    r == '\r' || r == '\n'
}

/// `unicode.IsDigit`: ASCII digits and Unicode's other decimal digits.
fn is_digit(r: char) -> bool {
    r.is_ascii_digit() || (!r.is_ascii() && is_nd(r))
}

/// Whether a char is a decimal digit (`Nd`), for the common scripts
/// (Rust's `is_numeric` also takes other numerals).
fn is_nd(r: char) -> bool {
    const ZEROS: &[u32] = &[
        0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
        0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
        0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0,
        0xFF10,
    ];
    let c = r as u32;
    ZEROS.iter().any(|z| (*z..z + 10).contains(&c))
}

/// `isAlphaNumeric`: `_`, `unicode.IsLetter` or `unicode.IsDigit`.
fn is_alpha_numeric(r: char) -> bool {
    r == '_' || r.is_alphabetic() || is_digit(r)
}

fn is_terminator(r: Option<char>) -> bool {
    match r {
        None => true,
        Some(r) => {
            is_space(r)
                || is_end_of_line(r)
                || matches!(r, '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}')
        }
    }
}

/// Parses a whole template (`Parse(name, text)`).
fn parse_template(text: &str) -> Result<Vec<Node>, String> {
    let mut p = Parser {
        input: text,
        pos: 0,
        start: 0,
        width: 0,
        root: Vec::new(),
    };
    p.parse_text()?;
    Ok(p.root)
}

/// `parseAction`: the first action of `{text}`.
fn parse_action(text: &str) -> Result<Vec<Node>, String> {
    let mut root = parse_template(&format!("{{{text}}}"))?;
    match root.swap_remove(0) {
        Node::List(nodes) => Ok(nodes),
        _ => unreachable!("a template starting with {{ starts with an action"),
    }
}

impl<'s> Parser<'s> {
    fn rest(&self) -> &'s str {
        &self.input[self.pos..]
    }

    fn consume_text(&mut self) -> &'s str {
        let v = &self.input[self.start..self.pos];
        self.start = self.pos;
        v
    }

    fn next(&mut self) -> Option<char> {
        match self.rest().chars().next() {
            None => {
                self.width = 0;
                EOF
            }
            Some(c) => {
                self.width = c.len_utf8();
                self.pos += self.width;
                Some(c)
            }
        }
    }

    fn peek(&mut self) -> Option<char> {
        let r = self.next();
        self.backup();
        r
    }

    fn backup(&mut self) {
        self.pos -= self.width;
    }

    /// The byte two before the current position (`p.input[p.pos-2]`).
    fn byte_before_last(&self) -> u8 {
        self.input.as_bytes()[self.pos - 2]
    }

    fn parse_text(&mut self) -> ParseResult {
        loop {
            if self.rest().starts_with('{') {
                if self.pos > self.start {
                    let t = self.consume_text().to_string();
                    self.root.push(Node::Text(t));
                }
                // parseLeftDelim
                self.pos += 1;
                self.consume_text();
                let mut cur = Vec::new();
                let r = self.parse_inside_action(&mut cur);
                self.root.push(Node::List(cur));
                r?;
                // parseRightDelim went on with parseText.
                continue;
            }
            if self.next() == EOF {
                break;
            }
        }
        if self.pos > self.start {
            let t = self.consume_text().to_string();
            self.root.push(Node::Text(t));
        }
        Ok(())
    }

    /// Parses an action up to and including its `}`.
    fn parse_inside_action(&mut self, cur: &mut Vec<Node>) -> ParseResult {
        loop {
            let rest = self.rest();
            if rest.starts_with('}') {
                self.pos += 1;
                self.consume_text();
                return Ok(());
            }
            if rest.starts_with("[?(") {
                self.parse_filter(cur)?;
                continue;
            }
            if rest.starts_with("..") {
                self.parse_recursive(cur)?;
                continue;
            }
            match self.next() {
                None => return Err("unclosed action".into()),
                Some(r) if is_end_of_line(r) => return Err("unclosed action".into()),
                Some(' ') | Some('@') | Some('$') => {
                    self.consume_text();
                }
                Some('[') => self.parse_array(cur)?,
                Some(q @ ('"' | '\'')) => self.parse_quote(cur, q)?,
                Some('.') => self.parse_field(cur),
                Some(r) if r == '+' || r == '-' || is_digit(r) => {
                    self.backup();
                    self.parse_number(cur)?;
                }
                Some(r) if is_alpha_numeric(r) => {
                    self.backup();
                    self.parse_identifier(cur);
                }
                Some(r) => {
                    return Err(format!(
                        "unrecognized character in action: U+{:04X}",
                        r as u32
                    ))
                }
            }
        }
    }

    fn parse_identifier(&mut self, cur: &mut Vec<Node>) {
        loop {
            let r = self.next();
            if is_terminator(r) {
                self.backup();
                break;
            }
        }
        let value = self.consume_text();
        cur.push(match value {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            v => Node::Identifier(v.to_string()),
        });
    }

    fn parse_recursive(&mut self, cur: &mut Vec<Node>) -> ParseResult {
        if cur.last() == Some(&Node::Recursive) {
            return Err("invalid multiple recursive descent".into());
        }
        self.pos += 2;
        self.consume_text();
        cur.push(Node::Recursive);
        if self.peek().is_some_and(is_alpha_numeric) {
            self.parse_field(cur);
        }
        Ok(())
    }

    fn parse_number(&mut self, cur: &mut Vec<Node>) -> ParseResult {
        if matches!(self.peek(), Some('+' | '-')) {
            self.next();
        }
        loop {
            match self.next() {
                Some(r) if r == '.' || is_digit(r) => {}
                _ => {
                    self.backup();
                    break;
                }
            }
        }
        let value = self.consume_text();
        if let Some(i) = go_atoi(value) {
            cur.push(Node::Int(i));
            return Ok(());
        }
        if value
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b'+' || b == b'-')
        {
            if let Ok(f) = value.parse::<f64>() {
                if f.is_finite() {
                    cur.push(Node::Float(f));
                    return Ok(());
                }
            }
        }
        Err(format!("cannot parse number {value}"))
    }

    fn parse_array(&mut self, cur: &mut Vec<Node>) -> ParseResult {
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated array".into()),
                Some(']') => break,
                _ => {}
            }
        }
        let text = self.consume_text();
        let mut text = &text[1..text.len() - 1];
        if text == "*" {
            text = ":";
        }

        // union operator
        let strs: Vec<&str> = text.split(',').collect();
        if strs.len() > 1 {
            let mut union = Vec::new();
            for s in strs {
                union.push(parse_action(&format!("[{}]", s.trim_matches(' ')))?);
            }
            cur.push(Node::Union(union));
            return Ok(());
        }

        // dict key
        if let Some(key) = text
            .strip_prefix('\'')
            .and_then(|t| t.strip_suffix('\''))
            .filter(|k| !k.contains('\''))
        {
            cur.extend(parse_action(&format!(".{key}"))?);
            return Ok(());
        }

        // slice operator
        let groups = slice_groups(text).ok_or_else(|| format!("invalid array index {text}"))?;
        let mut params = [Param::default(); 3];
        for i in 0..3 {
            let mut v = groups[i];
            if !v.is_empty() {
                if i > 0 {
                    v = &v[1..];
                }
                if i > 0 && v.is_empty() {
                    params[i].known = false;
                } else {
                    params[i].known = true;
                    params[i].value =
                        go_atoi(v).ok_or_else(|| format!("array index {v} is not a number"))?;
                }
            } else if i == 1 {
                params[i].known = true;
                params[i].value = params[0].value.wrapping_add(1);
                params[i].derived = true;
            } else {
                params[i].known = false;
                params[i].value = 0;
            }
        }
        cur.push(Node::Array(params));
        Ok(())
    }

    fn parse_filter(&mut self, cur: &mut Vec<Node>) -> ParseResult {
        self.pos += 3;
        self.consume_text();
        let (mut begin, mut end) = (false, false);
        let mut pair = '"';
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated filter".into()),
                Some(r @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = r;
                        continue;
                    }
                    if self.byte_before_last() != b'\\' && r == pair {
                        end = true;
                    }
                }
                Some(')') if begin == end => break,
                _ => {}
            }
        }
        if self.next() != Some(']') {
            return Err("unclosed array expect ]".into());
        }
        let text = self.consume_text();
        let text = &text[..text.len() - 2];
        match filter_groups(text) {
            None => {
                let left = parse_action(text)?;
                cur.push(Node::Filter {
                    left,
                    right: Vec::new(),
                    op: "exists".into(),
                });
            }
            Some((l, op, r)) => {
                let left = parse_action(l)?;
                let right = parse_action(r)?;
                cur.push(Node::Filter {
                    left,
                    right,
                    op: op.into(),
                });
            }
        }
        Ok(())
    }

    fn parse_quote(&mut self, cur: &mut Vec<Node>, end: char) -> ParseResult {
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated quoted string".into()),
                Some(r) if r == end && self.byte_before_last() != b'\\' => break,
                _ => {}
            }
        }
        let value = self.consume_text();
        let s = unquote_extend(value)
            .ok_or_else(|| format!("unquote string {value} error invalid syntax"))?;
        cur.push(Node::Text(s));
        Ok(())
    }

    fn parse_field(&mut self, cur: &mut Vec<Node>) {
        self.consume_text();
        while self.advance() {}
        let value = self.consume_text();
        cur.push(if value == "*" {
            Node::Wildcard
        } else {
            Node::Field(value.replace('\\', ""))
        });
    }

    fn advance(&mut self) -> bool {
        let r = self.next();
        if r == Some('\\') {
            self.next();
        } else if is_terminator(r) {
            self.backup();
            return false;
        }
        true
    }
}

/// `strconv.Atoi` on a 64-bit platform.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$`'s three groups ("" when unmatched).
fn slice_groups(text: &str) -> Option<[&str; 3]> {
    let b = text.as_bytes();
    let group = |from: usize, colon: bool| -> usize {
        let mut i = from;
        if colon {
            if b.get(i) != Some(&b':') {
                return from;
            }
            i += 1;
        }
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    let e0 = group(0, false);
    let e1 = group(e0, true);
    let e2 = group(e1, true);
    (e2 == b.len()).then(|| [&text[..e0], &text[e0..e1], &text[e1..e2]])
}

/// `^([^!<>=]+)([!<>=]+)(.+?)$`'s groups, or `None` when it does not match.
fn filter_groups(text: &str) -> Option<(&str, &str, &str)> {
    let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
    if text.contains('\n') {
        return None;
    }
    let k = text.find(is_op)?;
    if k == 0 {
        return None;
    }
    let m = text[k..].find(|c| !is_op(c)).map_or(text.len(), |i| k + i);
    if m < text.len() {
        Some((&text[..k], &text[k..m], &text[m..]))
    } else if m - k >= 2 {
        Some((&text[..k], &text[k..m - 1], &text[m - 1..]))
    } else {
        None
    }
}

/// `UnquoteExtend`: `strconv.Unquote` for single or double quotes.
fn unquote_extend(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let n = b.len();
    if n < 2 || b[0] != b[n - 1] || (b[0] != b'"' && b[0] != b'\'') {
        return None;
    }
    let quote = b[0];
    let inner = &s[1..n - 1];
    if !inner.bytes().any(|c| c == b'\\' || c == quote) {
        return Some(inner.to_string());
    }
    let mut out: Vec<u8> = Vec::with_capacity(inner.len());
    let mut rest = inner;
    while !rest.is_empty() {
        let (bytes, r) = unquote_char(rest, quote)?;
        out.extend_from_slice(&bytes);
        rest = r;
    }
    // Go keeps invalid UTF-8 (`\xff`) as is; no JSON key can match it.
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// `strconv.UnquoteChar`: the bytes of one (possibly escaped) character.
fn unquote_char(s: &str, quote: u8) -> Option<(Vec<u8>, &str)> {
    let c = s.as_bytes()[0];
    if c == quote {
        return None;
    }
    if c >= 0x80 {
        let ch = s.chars().next()?;
        return Some((ch.to_string().into_bytes(), &s[ch.len_utf8()..]));
    }
    if c != b'\\' {
        return Some((vec![c], &s[1..]));
    }
    let e = *s.as_bytes().get(1)?;
    let rest = &s[2..];
    let simple = |v: u8| Some((vec![v], rest));
    match e {
        b'a' => simple(7),
        b'b' => simple(8),
        b'f' => simple(12),
        b'n' => simple(b'\n'),
        b'r' => simple(b'\r'),
        b't' => simple(b'\t'),
        b'v' => simple(11),
        b'x' | b'u' | b'U' => {
            let n = match e {
                b'x' => 2,
                b'u' => 4,
                _ => 8,
            };
            let hex = rest.get(..n)?;
            if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                return None;
            }
            let v = u32::from_str_radix(hex, 16).ok()?;
            let rest = &rest[n..];
            if e == b'x' {
                return Some((vec![v as u8], rest));
            }
            let ch = char::from_u32(v)?;
            Some((ch.to_string().into_bytes(), rest))
        }
        b'0'..=b'7' => {
            let oct = s.get(1..4)?;
            if !oct.bytes().all(|o| (b'0'..=b'7').contains(&o)) {
                return None;
            }
            let v = u32::from_str_radix(oct, 8).ok()?;
            if v > 255 {
                return None;
            }
            Some((vec![v as u8], &s[4..]))
        }
        b'\\' => simple(b'\\'),
        b'\'' | b'"' if e == quote => simple(e),
        _ => None,
    }
}

/// A `reflect.Value` as the evaluator meets it: a value of the decoded
/// object (held in an `interface{}`, so JSON null is a nil interface), or
/// one a node made up.
#[derive(Debug, Clone)]
enum V<'a> {
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
struct State {
    /// Where `Root.Nodes` starts in the parsed template.
    root: usize,
    begin_range: i64,
    in_range: i64,
    end_range: i64,
    /// `lastEndNode`, as an index into the parsed template.
    last_end: Option<usize>,
}

struct Eval1<'t> {
    template: &'t [Node],
    st: &'t mut State,
}

impl<'t> Eval1<'t> {
    fn find_results<'a>(&mut self, data: V<'a>) -> Result<Vec<Vec<V<'a>>>, ()> {
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
        let template = parse_template(&format!("{{{path}}}")).map_err(|_| {
            format!(
                "unrecognized column definition {}",
                super::super::json::go_string(path)
            )
        })?;
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
                r.int(i.unwrap_or_else(|| go_float_to_int(n.as_f64().unwrap_or(f64::NAN))));
            }
            ("integer", V::Float(f)) => {
                r.int(go_float_to_int(*f));
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

/// Go's `int64(f)` on amd64: out of range (and NaN) gives the minimum.
fn go_float_to_int(f: f64) -> i64 {
    if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
        i64::MIN
    } else {
        f as i64
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
            None => go_print_float(n.as_f64().unwrap_or(0.0)),
        },
        V::Data(Value::Bool(b)) | V::Bool(b) => b.to_string(),
        // `reflect.ValueOf(nil)` prints as text/template's "<no value>".
        V::Data(Value::Null) | V::Invalid => "<no value>".into(),
        V::Data(v @ (Value::Array(_) | Value::Object(_))) => crate::encode::json::go_value(v),
        V::Int(i) => i.to_string(),
        V::Float(f) => go_print_float(*f),
        V::Byte(b) => b.to_string(),
    }
}

/// A float64 as `fmt.Sprint` formats it: `%v` is strconv's shortest
/// `%g`, which switches to an exponent (at least two digits) below 1e-4
/// and from 1e6 on: `123456.5`, `1.2345675e+06`, `1e-05`.
fn go_print_float(f: f64) -> String {
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if f == 0.0 || (-4..6).contains(&exp) {
        return format!("{f}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", exp.abs())
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
    /// apiserver used (the cells below are what it served).
    fn probe() -> Value {
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

    fn probe_cell(ty: &str, path: &str) -> String {
        let c = col(json!({"name": "c", "type": ty, "jsonPath": path}));
        let cells = cell(&c, &probe());
        cells["\"cells\":[".len()..cells.len() - 1].to_string()
    }

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

    #[test]
    fn paths_that_do_not_parse_are_refused() {
        // v1.20 takes any path starting with "."; the table convertor
        // drops the column that does not parse and those after it.
        for path in [
            ".spec[\"s\"]",
            ".spec.s[",
            "..*",
            ".spec.x[0].n\t",
            ".spec.a[-]",
            ".spec[?(@.a==1]",
            ".spec.s 1.2.3",
        ] {
            let err =
                CustomColumn::parse(&json!({"name": "c", "type": "string", "jsonPath": path}));
            assert!(err.is_err(), "{path:?}");
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
