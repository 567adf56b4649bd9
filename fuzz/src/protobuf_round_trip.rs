//! The protobuf decoder's round trip, checked by the fuzz target and by
//! `tests/fuzz_parsers.rs`'s proptest alike (which includes this file).

/// A decoded object, transcoded back into its kind's message, decodes to
/// itself.
pub fn decodes_again(api_version: &str, kind: &str, obj: &serde_json::Value) {
    use kubecache::encode::protobuf::{decode_message, object_message};
    let mut fields = obj.clone();
    let o = fields.as_object_mut().expect("an object");
    // The envelope's, and not every kind's message has them.
    o.shift_remove("kind");
    o.shift_remove("apiVersion");
    let json = serde_json::to_vec(&fields).expect("JSON");
    let m = object_message(api_version, kind, &json).unwrap_or_else(|e| {
        panic!("{api_version}/{kind} decoded to {obj} that transcodes not: {e}")
    });
    // A pointer to a zero time is written null, which reads back as no
    // pointer: so in Go too. Nulls aside, the same (floats in raw JSON to
    // 12 digits: serde_json's parse of them is not exact).
    let again = decode_message(api_version, kind, &m).expect("a transcoded message decodes");
    assert_eq!(
        without_nulls(again),
        without_nulls(obj.clone()),
        "{api_version}/{kind}"
    );
}

/// `v` without the object members that are null, its fractional
/// numbers to 12 digits.
fn without_nulls(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(n) if n.is_f64() => Value::from(format!("{:.12e}", n.as_f64().unwrap())),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(without_nulls).collect()),
        v => v,
    }
}
