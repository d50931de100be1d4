//! Human-readable durations in configuration: `"250ms"`, `"30s"`, `"2m"`,
//! `"1h"`. Whether zero is allowed is the caller's business; a duration
//! whose milliseconds overflow `u64` is refused.

use std::time::Duration;

/// Parses `<integer><unit>` with unit `ms`, `s`, `m` or `h`.
pub(super) fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{text:?} has no unit (use ms, s, m or h)"))?;
    let (number, unit) = text.split_at(split);
    if number.is_empty() {
        return Err(format!("{text:?} does not start with a whole number"));
    }
    let too_long = || format!("{text:?} is too long");
    let n: u64 = number.parse().map_err(|_| too_long())?;
    let ms = match unit.trim() {
        "ms" => Some(n),
        "s" => n.checked_mul(1000),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?} (use ms, s, m or h)"
            ));
        }
    };
    ms.map(Duration::from_millis).ok_or_else(too_long)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse(" 2m "), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        assert!(parse("30").unwrap_err().contains("no unit"));
        assert!(parse("1.5s").unwrap_err().contains("unknown unit"));
        assert!(parse("s").unwrap_err().contains("whole number"));
        assert!(parse("10d").unwrap_err().contains("unknown unit"));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
        assert_eq!(
            parse("18446744073709551615ms"),
            Ok(Duration::from_millis(u64::MAX))
        );
        for long in [
            "18446744073709551616ms",
            "5124095576030432h",
            "99999999999999999999999s",
        ] {
            assert_eq!(parse(long), Err(format!("{long:?} is too long")));
        }
    }
}
