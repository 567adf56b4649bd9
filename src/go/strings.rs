//! Go's `strings` package where its answers differ from Rust's.

/// Go's `strings.ToLower`: each rune to its one lower-case rune.
pub fn to_lower(v: &str) -> String {
    v.chars()
        .map(|c| {
            let mut l = c.to_lowercase();
            match (l.next(), l.next()) {
                (Some(one), None) => one,
                // U+0130 lower-cases to "i̇" in Rust, to 'i' in Go.
                _ if c == '\u{130}' => 'i',
                _ => c,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_lower_case_rune_by_rune() {
        assert_eq!(to_lower("ReplicaSet"), "replicaset");
        assert_eq!(to_lower("\u{130}X"), "ix");
    }
}
