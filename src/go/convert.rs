//! Go's numeric conversions as the apiserver's platform (amd64) does them.

/// Go's `int64(f)` on amd64: out of range (and NaN) gives the minimum.
pub fn float_to_int(f: f64) -> i64 {
    if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}
