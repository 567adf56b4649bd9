//! Comparing kubecache's Tables with the apiserver's: cells agree up to
//! the ages that moved between the two reads.

/// Seconds in a `duration.HumanDuration` string ("2m30s", "3d4h"), and
/// the size of its coarsest unit.
pub fn human_seconds(s: &str) -> Option<(i64, i64)> {
    let (mut total, mut num, mut unit_max) = (0i64, String::new(), 0);
    if s.is_empty() {
        return None;
    }
    for c in s.chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'y' => 365 * 86_400,
            _ => return None,
        };
        total += num.parse::<i64>().ok()? * unit;
        unit_max = unit_max.max(unit);
        num.clear();
    }
    num.is_empty().then_some((total, unit_max))
}

/// Two cells read a second apart agree: equal, or ages within a second
/// (or one step of their unit, at a rounding boundary).
pub fn cells_agree(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    if a == b {
        return true;
    }
    match (
        a.as_str().and_then(human_seconds),
        b.as_str().and_then(human_seconds),
    ) {
        (Some((x, ux)), Some((y, uy))) => {
            let step = if ux == 1 && uy == 1 {
                1
            } else {
                ux.min(uy).max(1)
            };
            (x - y).abs() <= step.max(1)
        }
        _ => false,
    }
}

/// A Table from kubecache equals the apiserver's: everything but the
/// cells exactly, rows matched by name and object (RV=0 order is
/// unspecified). An RV=0 list is as recent as each cache is: its version
/// is not compared.
pub fn assert_tables_agree(
    up: &serde_json::Value,
    kc: &serde_json::Value,
    what: &str,
    any_version: bool,
) {
    let strip = |t: &serde_json::Value| {
        let mut t = t.clone();
        if any_version {
            t["metadata"]["resourceVersion"] = serde_json::json!("any");
        }
        if let Some(rows) = t["rows"].as_array_mut() {
            for r in rows.iter_mut() {
                r["cells"] = serde_json::json!(null);
            }
            rows.sort_by_key(|r| r.to_string());
        }
        t
    };
    assert_eq!(
        strip(kc),
        strip(up),
        "{what}: tables differ beyond their cells"
    );
    let key = |r: &serde_json::Value| format!("{}|{}", r["cells"], r["object"]);
    let mut rows_up: Vec<&serde_json::Value> = up["rows"]
        .as_array()
        .map(|r| r.iter().collect())
        .unwrap_or_default();
    let mut rows_kc: Vec<&serde_json::Value> = kc["rows"]
        .as_array()
        .map(|r| r.iter().collect())
        .unwrap_or_default();
    rows_up.sort_by_key(|r| key(r));
    rows_kc.sort_by_key(|r| key(r));
    for (a, b) in rows_up.iter().zip(&rows_kc) {
        let (ca, cb) = (
            a["cells"].as_array().unwrap(),
            b["cells"].as_array().unwrap(),
        );
        assert_eq!(ca.len(), cb.len(), "{what}: {ca:?} vs {cb:?}");
        for (x, y) in ca.iter().zip(cb) {
            assert!(
                cells_agree(x, y),
                "{what}: cells {ca:?} (apiserver) vs {cb:?} (kubecache)"
            );
        }
    }
}
