//! Go's `strconv`: quoting as `%q` and `quoteChar` write it, and parsing
//! as `ParseBool` and `ParseFloat(s, 32)` read it.

/// Go's `%q` of a string (`strconv.Quote`), for the ASCII that field
/// labels are made of and the escapes anything else needs.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `quoteChar`: the byte as a rune, quoted, in single quotes.
pub fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".into(),
        b'"' => "'\"'".into(),
        _ => {
            let ch = char::from(c);
            if ch.is_ascii_graphic() || ch == ' ' {
                format!("'{ch}'")
            } else if (c as u32) < 0x20 || c == 0x7f {
                match c {
                    b'\n' => "'\\n'".into(),
                    b'\r' => "'\\r'".into(),
                    b'\t' => "'\\t'".into(),
                    0x07 => "'\\a'".into(),
                    0x08 => "'\\b'".into(),
                    0x0c => "'\\f'".into(),
                    0x0b => "'\\v'".into(),
                    _ => format!("'\\x{c:02x}'"),
                }
            } else if (0x80..0xa0).contains(&c) || c == 0xad {
                format!("'\\u{:04x}'", c as u32)
            } else {
                format!("'{ch}'")
            }
        }
    }
}

/// `quoteChar` as Go's encoding/json writes it in kube-apiserver v1.36
/// (recorded: `'\x81'` where v1.20 wrote `'\u0081'`): the byte quoted as
/// a one-byte string, `strconv.Quote(string([]byte{c}))`, so that every
/// byte past ASCII is a `\x` escape of itself rather than a rune.
pub fn quote_byte(c: u8) -> String {
    if c.is_ascii() {
        return quote_char(c);
    }
    format!("'\\x{c:02x}'")
}

/// Go's `strconv.ParseBool`.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `ParseFloat(s, 32)`: the float32 value, ±Inf when out of range,
/// 0 on a syntax error. Rust's grammar is Go's but for hex floats and
/// underscores, which no q-value uses.
pub fn parse_float32(s: &str) -> f64 {
    s.parse::<f32>().map(f64::from).unwrap_or(0.0)
}

/// `strconv.Atoi` on a 64-bit platform.
pub fn atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_past_ascii_are_runes_to_v1_20_and_hex_escapes_to_v1_36() {
        assert_eq!(quote_char(0x81), "'\\u0081'");
        assert_eq!(quote_byte(0x81), "'\\x81'");
        assert_eq!(quote_char(0xe9), "'é'");
        assert_eq!(quote_byte(0xe9), "'\\xe9'");
        for c in [b'a', b' ', b'\'', b'"', b'\n', 0x01, 0x7f] {
            assert_eq!(quote_byte(c), quote_char(c), "{c:#x}");
        }
    }
}
