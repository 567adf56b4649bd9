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

/// Go's `strings.EqualFold`: equal under Unicode case folding, rune by
/// rune — so the Kelvin sign folds with 'k' and the long s 'ſ' with 's'.
/// A rune folds with another when their one-rune lower or upper cases
/// agree, which is simple folding for every rune with such cases.
pub fn equal_fold(a: &str, b: &str) -> bool {
    let one = |mut it: std::char::ToLowercase| match (it.next(), it.next()) {
        (Some(c), None) => Some(c),
        _ => None,
    };
    let upper = |c: char| {
        let mut it = c.to_uppercase();
        match (it.next(), it.next()) {
            (Some(u), None) => Some(u),
            _ => None,
        }
    };
    let folds = |x: char, y: char| {
        x == y
            || one(x.to_lowercase()).is_some_and(|l| Some(l) == one(y.to_lowercase()))
            || upper(x).is_some_and(|u| Some(u) == upper(y))
    };
    a.chars().count() == b.chars().count() && a.chars().zip(b.chars()).all(|(x, y)| folds(x, y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_fold_folds_as_go_does_kelvin_and_long_s_included() {
        assert!(equal_fold("WebSocket", "websocket"));
        assert!(equal_fold("web\u{17f}oc\u{212a}et", "websocket"));
        assert!(!equal_fold("websocket ", "websocket"));
        assert!(!equal_fold("websockets", "websocket"));
        assert!(!equal_fold("w\u{e9}bsocket", "websocket"));
    }

    #[test]
    fn kinds_lower_case_rune_by_rune() {
        assert_eq!(to_lower("ReplicaSet"), "replicaset");
        assert_eq!(to_lower("\u{130}X"), "ix");
    }
}
