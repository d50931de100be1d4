//! SigV4 timestamps: `YYYYMMDD'T'HHMMSS'Z'` (UTC, the `X-Amz-Date` form)
//! to and from seconds since the Unix epoch.

use crate::calendar::{civil_from_days, days_from_civil};

/// Seconds since the epoch of an `X-Amz-Date` value; `None` unless it is
/// exactly 16 characters of that form with a real date and time.
pub fn parse(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = &b[range];
        digits.iter().all(u8::is_ascii_digit).then(|| {
            digits
                .iter()
                .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'))
        })
    };
    let (y, m, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (hh, mm, ss) = (num(9..11)?, num(11..13)?, num(13..15)?);
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) || hh > 23 || mm > 59 || ss > 59 {
        return None;
    }
    Some(days_from_civil(y, m, d) * 86_400 + hh * 3600 + mm * 60 + ss)
}

/// The `X-Amz-Date` form of `secs` since the epoch (years 0..=9999).
pub fn format(secs: i64) -> String {
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let t = secs.rem_euclid(86_400);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        // AWS's test-suite instant; `date -u -d 2015-08-30T12:36:00Z +%s`.
        assert_eq!(parse("20150830T123600Z"), Some(1_440_938_160));
        assert_eq!(parse("19700101T000000Z"), Some(0));
        assert_eq!(parse("20000229T235959Z"), Some(951_868_799));
        assert_eq!(format(1_440_938_160), "20150830T123600Z");
        assert_eq!(format(951_868_799), "20000229T235959Z");
        for s in [0, 1, 86_399, 1_700_000_000, 4_102_444_800] {
            assert_eq!(parse(&format(s)), Some(s), "{s}");
        }
    }

    #[test]
    fn malformed() {
        for bad in [
            "",
            "20150830T123600",
            "20150830 123600Z",
            "2015083OT123600Z",
            "20150230T000000Z",
            "20190229T000000Z",
            "20151301T000000Z",
            "20150800T000000Z",
            "20150830T240000Z",
            "20150830T126000Z",
            "+2015830T123600Z",
            "20150830T123600Zx",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }
}
