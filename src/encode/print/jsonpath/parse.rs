//! The parser of client-go's `util/jsonpath` (v1.20): `parser.go`, with
//! the tree of `node.go`, ported function for function so that a path
//! parses, or fails, where the apiserver's does. Positions are byte
//! offsets into the template, and the Go regular expressions it matches
//! with are written out by hand.

/// A node of the parse tree (client-go's `node.go`).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
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
pub(super) struct Param {
    pub(super) value: i64,
    pub(super) known: bool,
    pub(super) derived: bool,
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
pub(super) fn parse_template(text: &str) -> Result<Vec<Node>, String> {
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
        if let Some(i) = crate::go::strconv::atoi(value) {
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
                    params[i].value = crate::go::strconv::atoi(v)
                        .ok_or_else(|| format!("array index {v} is not a number"))?;
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
    // No escape is of a character past ASCII (ErrSyntax), whose bytes
    // `rest` would cut.
    if !e.is_ascii() {
        return None;
    }
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

#[cfg(test)]
mod tests {
    use super::super::CustomColumn;
    use serde_json::json;

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
    fn a_backslash_before_a_multibyte_character_is_refused_without_panicking() {
        // Go's UnquoteChar knows no such escape: invalid syntax. (Found by
        // fuzz/run's jsonpath target.)
        for path in ["\"\\ƀ\"", "'\\é'", ".spec[?(@.a==\"\\耀\")]"] {
            let err =
                CustomColumn::parse(&json!({"name": "c", "type": "string", "jsonPath": path}));
            assert!(err.is_err(), "{path:?}");
        }
    }
}
