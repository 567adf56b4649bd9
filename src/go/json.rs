//! Go's `encoding/json` as the apiserver's answers show it: strings and
//! floats as it writes them, serde_json's output made byte-identical, and
//! the words of its syntax errors.

/// A JSON string as Go's encoding/json writes it: `<`, `>`, `&` and the
/// line separators escaped, which serde_json does not do.
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Any JSON value as Go's `json.Marshal` writes an unstructured one: map
/// keys sorted, Go's string escapes and float format.
pub fn value(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_f64() => float(n.as_f64().unwrap_or(0.0)),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(value).collect();
            format!("[{}]", items.join(","))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", string(k), value(&m[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
    }
}

/// serde_json's output made Go's: within strings `<`, `>`, `&`, U+2028 and
/// U+2029 escaped, and `\b` and `\f` written as `\u0008` and `\u000c`.
/// (None of these can occur outside a string.)
pub fn escape(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() + 16);
    let (mut in_string, mut i) = (false, 0);
    while i < json.len() {
        let c = json[i];
        match c {
            b'"' => in_string = !in_string,
            b'\\' if in_string && i + 1 < json.len() => {
                match json[i + 1] {
                    b'b' => out.extend_from_slice(b"\\u0008"),
                    b'f' => out.extend_from_slice(b"\\u000c"),
                    other => out.extend_from_slice(&[c, other]),
                }
                i += 2;
                continue;
            }
            b'<' if in_string => {
                out.extend_from_slice(b"\\u003c");
                i += 1;
                continue;
            }
            b'>' if in_string => {
                out.extend_from_slice(b"\\u003e");
                i += 1;
                continue;
            }
            b'&' if in_string => {
                out.extend_from_slice(b"\\u0026");
                i += 1;
                continue;
            }
            0xE2 if in_string
                && json.get(i + 1) == Some(&0x80)
                && matches!(json.get(i + 2), Some(0xA8 | 0xA9)) =>
            {
                out.extend_from_slice(if json[i + 2] == 0xA8 {
                    b"\\u2028"
                } else {
                    b"\\u2029"
                });
                i += 3;
                continue;
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Go's `encoding/json` float64 format: shortest representation, plain
/// between 1e-6 and 1e21, exponent form outside, its exponent as strconv
/// writes it but for a negative one's leading zero (`1e+21`, `1e-7`).
pub fn float(f: f64) -> String {
    if !f.is_finite() {
        // Go refuses to encode these; the apiserver never has them.
        return "null".into();
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
        return match exp.strip_prefix('-') {
            Some(digits) => format!("{mant}e-{digits}"),
            None => format!("{mant}e+{exp:0>2}"),
        };
    }
    format!("{f}")
}

/// Go's encoding/json error for input that is not JSON: the offending
/// character where serde stopped, with the Go scanner's words for what it
/// was looking for there. Errors inside strings and literals (Go names the
/// literal) fall back to "looking for beginning of value"; input that is
/// JSON of the wrong shape keeps serde's words.
pub fn syntax_error(input: &[u8], e: &serde_json::Error) -> String {
    syntax_error_quoting(input, e, super::strconv::quote_char)
}

/// `syntax_error` with the offending byte quoted by `quote` (Go's
/// `quoteChar` changed between releases: `strconv::quote_byte`).
pub fn syntax_error_quoting(
    input: &[u8],
    e: &serde_json::Error,
    quote: fn(u8) -> String,
) -> String {
    if e.is_eof() || input.iter().all(u8::is_ascii_whitespace) {
        return "unexpected end of JSON input".to_string();
    }
    if e.classify() != serde_json::error::Category::Syntax {
        return e.to_string();
    }
    // serde counts lines from 1 and columns from 1 within them, in bytes.
    let line_start: usize = input
        .split(|b| *b == b'\n')
        .take(e.line().saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    let at = (line_start + e.column().saturating_sub(1)).min(input.len() - 1);
    let message = e.to_string();
    let looking = if message.starts_with("expected `:`") {
        "after object key"
    } else if message.starts_with("expected `,` or `}`") {
        "after object key:value pair"
    } else if message.starts_with("expected `,` or `]`") {
        "after array element"
    } else if message.starts_with("key must be a string") {
        "looking for beginning of object key string"
    } else if message.starts_with("trailing characters") {
        "after top-level value"
    } else {
        "looking for beginning of value"
    };
    format!("invalid character {} {looking}", quote(input[at]))
}

/// How Go's encoding/json names a JSON value's type in its errors.
pub fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_output_is_escaped_as_go_escapes_it() {
        let v = serde_json::json!({"m": "a<b>&c \u{8}\u{c} \\b \u{2028}", "<k>": 1});
        let out = escape(&serde_json::to_vec(&v).unwrap());
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"m":"a\u003cb\u003e\u0026c \u0008\u000c \\b \u2028","\u003ck\u003e":1}"#
        );
        let s = "x<\u{8}\u{2029}\"\\";
        assert_eq!(
            escape(serde_json::to_string(s).unwrap().as_bytes()),
            string(s).into_bytes()
        );
    }

    #[test]
    fn floats_switch_to_exponents_outside_1e_minus_6_to_1e21() {
        assert_eq!(float(0.0), "0");
        assert_eq!(float(1.5), "1.5");
        assert_eq!(float(3.0), "3");
        assert_eq!(float(-2.25), "-2.25");
        assert_eq!(float(1e20), "100000000000000000000");
        assert_eq!(float(1e21), "1e+21");
        assert_eq!(float(1e-7), "1e-7");
        assert_eq!(float(-2e-7), "-2e-7");
        assert_eq!(float(3.5e-8), "3.5e-8");
        assert_eq!(float(1.5e300), "1.5e+300");
        assert_eq!(float(0.000001), "0.000001");
        assert_eq!(float(1.25e-10), "1.25e-10");
    }
}
