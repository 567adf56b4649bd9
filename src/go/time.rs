//! Time as the API writes it: RFC 3339 timestamps parsed as Go's
//! `metav1.Time` reads them (for Table ages, protobuf `Timestamp`s and exec
//! credentials' expiry), and durations in apimachinery's
//! `duration.HumanDuration` form ("5m30s", "3h", "12d") for Table cells.

/// Nanoseconds since the Unix epoch.
pub type Nanos = i64;

const NANOS_PER_SEC: i64 = 1_000_000_000;

/// Days from 1970-01-01 to a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Howard Hinnant's `civil_from_days`: the date `days` after 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A time as Go's `time.RFC3339` in UTC writes it (`2006-01-02T15:04:05Z`),
/// to the second, as metav1.Time is.
pub fn format_rfc3339(t: std::time::SystemTime) -> String {
    let secs = match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs_f64().ceil() as i64),
    };
    format_unix(secs)
}

/// Unix seconds as [`format_rfc3339`] writes them.
pub fn format_unix(secs: i64) -> String {
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn digits(s: &[u8]) -> Option<i64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
}

/// An RFC 3339 time (`2006-01-02T15:04:05Z`, optional fraction, `Z` or a
/// numeric offset) on the nanosecond clock, or `None` for anything else
/// and for times beyond that clock (years before 1678 or after 2262).
pub fn parse_rfc3339(s: &str) -> Option<Nanos> {
    let (secs, nanos) = rfc3339(s)?;
    // Go's zero time (year 1) and others outside read as no time.
    secs.checked_mul(NANOS_PER_SEC)?
        .checked_add(i64::from(nanos))
}

/// An RFC 3339 time as Unix seconds and nanoseconds, for any year Go reads.
pub fn rfc3339(s: &str) -> Option<(i64, u32)> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    let (h, mi, sec) = (
        digits(&b[11..13])?,
        digits(&b[14..16])?,
        digits(&b[17..19])?,
    );
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 59
    {
        return None;
    }
    let mut rest = &b[19..];
    let mut frac = 0;
    if let Some(r) = rest.strip_prefix(b".") {
        let n = r.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        // Nanosecond precision; further digits are dropped, as Go does.
        let kept = &r[..n.min(9)];
        frac = digits(kept)? * 10_i64.pow(9 - kept.len() as u32);
        rest = &r[n..];
    }
    let offset = match rest {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), oh1, oh2, b':', om1, om2] => {
            let oh = digits(&[*oh1, *oh2])?;
            let om = digits(&[*om1, *om2])?;
            if oh > 23 || om > 59 {
                return None;
            }
            let o = (oh * 60 + om) * 60;
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - offset;
    Some((secs, frac as u32))
}

/// `time.ParseDuration` for the units flags use (`h`, `m`, `s`, `ms`):
/// `2m`, `1m30s`, `0.5s`, `300ms`. Negative durations are refused.
pub fn parse_duration(s: &str) -> Option<std::time::Duration> {
    if s == "0" {
        return Some(std::time::Duration::ZERO);
    }
    let mut rest = s;
    let mut total = 0f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|&n| n > 0)?;
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..u] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            _ => return None,
        };
        total += value * unit;
        rest = &rest[u..];
    }
    std::time::Duration::try_from_secs_f64(total).ok()
}

/// The current time.
pub fn now() -> Nanos {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// `duration.HumanDuration`: seconds below two minutes, then ever coarser
/// units; up to a second in the future still reads "0s" (clock skew).
pub fn human_duration(d: Nanos) -> String {
    let seconds = d / NANOS_PER_SEC;
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        return format!("{hours}h{m}m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        return format!("{}d{h}h", hours / 24);
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        return format!("{}y{dy}d", hours / 24 / 365);
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_gos_parse_duration_reads_flag_values() {
        let secs = |s: &str| parse_duration(s).map(|d| d.as_secs_f64());
        assert_eq!(secs("2m"), Some(120.0));
        assert_eq!(secs("1m30s"), Some(90.0));
        assert_eq!(secs("5m0s"), Some(300.0));
        assert_eq!(secs("0.5s"), Some(0.5));
        assert_eq!(secs("300ms"), Some(0.3));
        assert_eq!(secs("1h"), Some(3600.0));
        assert_eq!(secs("0"), Some(0.0));
        for bad in ["", "30", "s", "-1s", "1d", "1.2.3s", "1m s"] {
            assert_eq!(secs(bad), None, "{bad}");
        }
    }

    const S: i64 = NANOS_PER_SEC;

    #[test]
    fn rfc3339_times_parse_to_the_unix_clock() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339("2026-11-21T17:07:03Z"),
            Some(1_795_280_823 * S)
        );
        assert_eq!(
            parse_rfc3339("2026-11-21T17:07:03.250000Z"),
            Some(1_795_280_823 * S + 250_000_000)
        );
        assert_eq!(
            parse_rfc3339("2026-11-21T18:07:03+01:00"),
            Some(1_795_280_823 * S)
        );
        assert_eq!(parse_rfc3339("2000-02-29T00:00:00Z"), Some(951_782_400 * S));
    }

    #[test]
    fn times_beyond_the_nanosecond_clock_read_as_none() {
        assert_eq!(parse_rfc3339("0001-01-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("9999-12-31T23:59:59Z"), None);
        assert!(parse_rfc3339("1700-01-01T00:00:00Z").is_some());
    }

    #[test]
    fn malformed_times_do_not_parse() {
        for bad in [
            "",
            "2026-11-21",
            "2026-11-21 17:07:03Z",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-11-21T17:07:03",
            "2026-11-21T17:07:03.Z",
            "2026-11-21T17:07:03+0100",
            "2026-11-21T24:00:00Z",
            "２026-11-21T17:07:03Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn human_durations_coarsen_like_apimachinery() {
        let cases = [
            (-2 * S, "<invalid>"),
            (-S, "0s"),
            (0, "0s"),
            (119 * S, "119s"),
            (120 * S, "2m"),
            (150 * S, "2m30s"),
            (10 * 60 * S, "10m"),
            (179 * 60 * S, "179m"),
            (3 * 3600 * S, "3h"),
            (3 * 3600 * S + 60 * S, "3h1m"),
            (8 * 3600 * S, "8h"),
            (47 * 3600 * S, "47h"),
            (48 * 3600 * S, "2d"),
            (50 * 3600 * S, "2d2h"),
            (8 * 86_400 * S, "8d"),
            (729 * 86_400 * S, "729d"),
            (730 * 86_400 * S, "2y"),
            (731 * 86_400 * S, "2y1d"),
            (8 * 365 * 86_400 * S, "8y"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(d), want, "{d}");
        }
    }

    #[test]
    fn a_time_formats_as_go_writes_rfc3339_and_reads_back() {
        use std::time::{Duration, UNIX_EPOCH};
        for secs in [0u64, 951_782_400, 1_700_000_000, 4_102_444_799, 86_399] {
            let t = UNIX_EPOCH + Duration::from_secs(secs);
            let s = format_rfc3339(t);
            assert_eq!(rfc3339(&s), Some((secs as i64, 0)), "{s}");
        }
        assert_eq!(
            format_rfc3339(UNIX_EPOCH + Duration::from_secs(951_825_600)),
            "2000-02-29T12:00:00Z"
        );
    }
}
