//! When a certificate expires: its `notAfter`, read from the DER with a
//! reader of the few X.509 structures on the way there (RFC 5280 §4.1:
//! `Certificate` → `tbsCertificate` → `validity`), every length checked
//! against what is left before it is used. Nothing else of the
//! certificate is read, and no certificate is trusted for it: rustls
//! verifies certificates; this only tells operators the date.

use crate::calendar::days_from_civil;

/// The `notAfter` of a DER certificate, in seconds since the Unix epoch;
/// `None` when the DER is not a certificate this reader follows.
pub fn not_after(der: &[u8]) -> Option<i64> {
    let (cert, _) = element(der, SEQUENCE)?;
    let (tbs, _) = element(cert, SEQUENCE)?;
    let mut rest = tbs;
    // version [0] EXPLICIT, when present.
    if rest.first() == Some(&0xa0) {
        rest = element(rest, 0xa0)?.1;
    }
    rest = element(rest, INTEGER)?.1; // serialNumber
    rest = element(rest, SEQUENCE)?.1; // signature
    rest = element(rest, SEQUENCE)?.1; // issuer
    let (validity, _) = element(rest, SEQUENCE)?;
    let after = skip(validity)?; // notBefore
    match *after.first()? {
        UTC_TIME => time(element(after, UTC_TIME)?.0, 2),
        GENERALIZED_TIME => time(element(after, GENERALIZED_TIME)?.0, 4),
        _ => None,
    }
}

const INTEGER: u8 = 0x02;
const SEQUENCE: u8 = 0x30;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// The contents of the element of type `tag` at the start of `der`, and
/// what follows it.
fn element(der: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    if *der.first()? != tag {
        return None;
    }
    let (len, header) = length(&der[1..])?;
    let body = der.get(1 + header..)?;
    if len > body.len() {
        return None;
    }
    Some(body.split_at(len))
}

/// What follows the element at the start of `der`, whatever its type.
fn skip(der: &[u8]) -> Option<&[u8]> {
    element(der, *der.first()?).map(|(_, rest)| rest)
}

/// A DER length: the value and the bytes it took (definite forms only, at
/// most four length bytes).
fn length(der: &[u8]) -> Option<(usize, usize)> {
    let first = *der.first()?;
    if first < 0x80 {
        return Some((usize::from(first), 1));
    }
    let n = usize::from(first & 0x7f);
    if n == 0 || n > 4 {
        return None;
    }
    let bytes = der.get(1..=n)?;
    let len = bytes
        .iter()
        .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
    Some((len, 1 + n))
}

/// `YYMMDDHHMMSSZ` (UTCTime, `year_digits` 2: 50-99 → 19xx) or
/// `YYYYMMDDHHMMSSZ` (GeneralizedTime) → Unix seconds.
fn time(text: &[u8], year_digits: usize) -> Option<i64> {
    if text.len() != year_digits + 11 || text.last() != Some(&b'Z') {
        return None;
    }
    let digits = &text[..text.len() - 1];
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let num = |range: std::ops::Range<usize>| {
        digits[range]
            .iter()
            .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'))
    };
    let y = num(0..year_digits);
    let year = match year_digits {
        2 if y >= 50 => 1900 + y,
        2 => 2000 + y,
        _ => y,
    };
    let at = year_digits;
    let (month, day) = (num(at..at + 2), num(at + 2..at + 4));
    let (h, m, s) = (
        num(at + 4..at + 6),
        num(at + 6..at + 8),
        num(at + 8..at + 10),
    );
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_not_after_of_generated_certificates() {
        for (year, month, day) in [(2030, 1, 2), (2049, 12, 31), (2050, 6, 1), (2101, 3, 4)] {
            let mut params = rcgen::CertificateParams::new(vec!["example.test".into()]).unwrap();
            params.not_after = rcgen::date_time_ymd(year, month, day);
            let key = rcgen::KeyPair::generate().unwrap();
            let cert = params.self_signed(&key).unwrap();
            let want = days_from_civil(i64::from(year), i64::from(month), i64::from(day)) * 86_400;
            assert_eq!(not_after(cert.der()), Some(want), "{year}-{month}-{day}");
        }
    }

    #[test]
    fn times_and_lengths() {
        assert_eq!(time(b"700101000000Z", 2), Some(0));
        assert_eq!(time(b"491231235959Z", 2), Some(2_524_607_999));
        assert_eq!(time(b"20380119031408Z", 4), Some(2_147_483_648));
        assert_eq!(time(b"701301000000Z", 2), None);
        assert_eq!(time(b"7001010000Z", 2), None);
        assert_eq!(time(b"700101000000+", 2), None);
        assert_eq!(length(&[0x05]), Some((5, 1)));
        assert_eq!(length(&[0x82, 0x01, 0x00]), Some((256, 3)));
        assert_eq!(length(&[0x80]), None);
        assert_eq!(length(&[0x85, 1, 1, 1, 1, 1]), None);
    }

    #[test]
    fn never_panics_on_cut_or_corrupt_input() {
        let mut params = rcgen::CertificateParams::new(vec!["x.test".into()]).unwrap();
        params.not_after = rcgen::date_time_ymd(2031, 5, 6);
        let der = params
            .self_signed(&rcgen::KeyPair::generate().unwrap())
            .unwrap()
            .der()
            .to_vec();
        for cut in 0..der.len() {
            assert_eq!(not_after(&der[..cut]), None, "cut at {cut}");
        }
        for i in 0..der.len() {
            let mut bad = der.clone();
            bad[i] ^= 0xff;
            let _ = not_after(&bad);
        }
        assert_eq!(not_after(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
    }
}
