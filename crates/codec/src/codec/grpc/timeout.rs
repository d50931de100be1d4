//! The `grpc-timeout` header: how long the client gives a call. Its value
//! is at most 8 ASCII digits and one unit: `H` hours, `M` minutes, `S`
//! seconds, `m` milliseconds, `u` microseconds, `n` nanoseconds.

use std::time::Duration;

/// The most digits a value may have.
const MAX_DIGITS: usize = 8;

/// Why a `grpc-timeout` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed grpc-timeout {value:?}: {reason}")]
pub struct TimeoutError {
    pub value: String,
    pub reason: &'static str,
}

/// Reads a `grpc-timeout` value.
pub fn parse(value: &[u8]) -> Result<Duration, TimeoutError> {
    let fail = |reason| TimeoutError {
        value: String::from_utf8_lossy(value).into_owned(),
        reason,
    };
    let (&unit, digits) = value.split_last().ok_or_else(|| fail("empty"))?;
    if digits.is_empty() || digits.len() > MAX_DIGITS {
        return Err(fail("1 to 8 digits before the unit"));
    }
    if !digits.iter().all(u8::is_ascii_digit) {
        return Err(fail("not a number"));
    }
    // 8 digits fit a u64 many times over.
    let n = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    Ok(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return Err(fail("unknown unit (H, M, S, m, u or n)")),
    })
}

/// A `grpc-timeout` value for `left`: the finest unit whose count fits in
/// 8 digits, rounded up so the backend never gets less time than there is
/// (and at least 1 ns, since 0 would mean the call is already over).
pub fn encode(left: Duration) -> String {
    let nanos = left.as_nanos().max(1);
    const UNITS: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    const MAX: u128 = 99_999_999;
    for (per, unit) in UNITS {
        let n = nanos.div_ceil(per);
        if n <= MAX {
            return format!("{n}{unit}");
        }
    }
    format!("{MAX}H")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit() {
        assert_eq!(parse(b"2H").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse(b"3M").unwrap(), Duration::from_secs(180));
        assert_eq!(parse(b"5S").unwrap(), Duration::from_secs(5));
        assert_eq!(parse(b"250m").unwrap(), Duration::from_millis(250));
        assert_eq!(
            parse(b"99999999u").unwrap(),
            Duration::from_micros(99_999_999)
        );
        assert_eq!(parse(b"7n").unwrap(), Duration::from_nanos(7));
        assert_eq!(parse(b"0m").unwrap(), Duration::ZERO);
    }

    #[test]
    fn malformed_values() {
        for bad in [
            &b""[..],
            b"m",
            b"123456789m",
            b"12x",
            b"1.5S",
            b"-1S",
            b"10",
            b" 1S",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.to_string().starts_with("malformed grpc-timeout"), "{e}");
        }
        assert_eq!(
            parse(b"10").unwrap_err().reason,
            "unknown unit (H, M, S, m, u or n)"
        );
        assert_eq!(
            parse(b"123456789m").unwrap_err().reason,
            "1 to 8 digits before the unit"
        );
    }

    #[test]
    fn encoded_in_the_finest_unit_that_fits_never_shorter() {
        assert_eq!(encode(Duration::from_nanos(1500)), "1500n");
        assert_eq!(encode(Duration::from_millis(250)), "250000u");
        assert_eq!(encode(Duration::from_secs(5)), "5000000u");
        assert_eq!(encode(Duration::from_secs(1000)), "1000000m");
        assert_eq!(encode(Duration::from_nanos(100_000_000_001)), "100001m");
        assert_eq!(encode(Duration::ZERO), "1n");
        assert_eq!(
            encode(Duration::from_secs(3600 * 99_999_999 * 2)),
            "99999999H"
        );
        for d in [
            Duration::from_nanos(123_456_789_012),
            Duration::from_millis(1),
            Duration::from_secs(86_400 * 30),
        ] {
            let back = parse(encode(d).as_bytes()).unwrap();
            assert!(back >= d, "{d:?} -> {back:?}");
        }
    }
}
