use super::*;

fn f(s: &str) -> Result<Option<(f64, usize)>, NumError> {
    parse_f64(s.as_bytes(), true)
}

#[test]
fn floats_agree_with_std() {
    for s in [
        "0",
        "-0",
        "1",
        "1.5",
        "-2.25",
        "0.1",
        "3.4028235e38",
        "1e-45",
        "123456789012345678901",
        "0.7213459014892578",
        "9007199254740993",
        "1E+2",
        "2.5e-3",
        "1e400",
        "-1e-400",
        "0.30000000000000004",
        "4.9e-324",
        "17976931348623157e292",
    ] {
        let (v, n) = f(s).unwrap().unwrap();
        assert_eq!(n, s.len(), "{s}");
        let expect: f64 = s.parse().unwrap();
        assert_eq!(v.to_bits(), expect.to_bits(), "{s}");
    }
}

/// `parse_f32` must equal `parse_f64` then `as f32` (double rounding,
/// as Triton and numpy do). The hard cases are literals whose nearest
/// double is at, or a few ulp from, a point halfway between two floats:
/// those must take the exact path.
#[test]
fn f32_agrees_with_double_then_narrow() {
    let check = |text: &str| {
        let want = parse_f64(text.as_bytes(), true).map(|r| r.map(|(v, n)| (v as f32, n)));
        let got = parse_f32(text.as_bytes(), true);
        assert_eq!(
            got.map(|r| r.map(|(v, n)| (v.to_bits(), n))),
            want.map(|r| r.map(|(v, n)| (v.to_bits(), n))),
            "{text}"
        );
    };
    for text in [
        "0",
        "-0",
        "0.7213459014892578",
        "-0.9213459014892578",
        "16777217",
        "3.4028235e38",
        "3.4028236e38",
        "1e39",
        "1.1754942e-38",
        "1e-45",
        "7.038531e-26",
        "123456789012345678901",
        "0.000000000000000000001",
    ] {
        check(text);
    }
    let mut x = 0x3f12_3457_u32;
    for _ in 0..2000 {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let f = f32::from_bits(x & 0x7f7f_ffff);
        let next = f32::from_bits(f.to_bits() + 1);
        let mid = (f64::from(f) + f64::from(next)) / 2.0;
        for ulps in -3i64..=3 {
            let v = f64::from_bits((mid.to_bits() as i64 + ulps) as u64);
            check(&format!("{v:e}"));
            check(&format!("{v}"));
            check(&format!("{v:.17e}"));
        }
    }
}

#[test]
fn eight_digits_at_a_time() {
    assert_eq!(eight_digits(b"12345678", 0), Some(12_345_678));
    assert_eq!(eight_digits(b"x00000009", 1), Some(9));
    assert_eq!(eight_digits(b"1234567", 0), None);
    for bad in [b'/', b':', b'a', 0x80, 0xb0, 0xb9, 0xba, 0xff, 0] {
        for at in 0..8 {
            let mut chunk = *b"98765432";
            chunk[at] = bad;
            assert_eq!(eight_digits(&chunk, 0), None, "{bad:#x} at {at}");
        }
    }
    assert_eq!(
        f("12345678901234567890.12345678901234567890e-3")
            .unwrap()
            .unwrap()
            .0,
        12345678901234567.890123456789
    );
}

/// Runs of every length, ending at every kind of byte and at the end
/// of the input, read the same as the standard library reads them.
#[test]
fn digit_runs_of_every_length() {
    let digits = "98765432109876543210987";
    for len in 1..=digits.len() {
        let run = &digits[digits.len() - len..];
        let run = run.trim_start_matches('0');
        let int_want = run.parse::<u64>().map_err(|_| NumError::Overflow);
        let float_want: f64 = run.parse().unwrap();
        for tail in ["", ",", "]", " ", "}", "/", ":", "\u{ff}", "e5", ".5,", "x"] {
            let text = format!("{run}{tail}");
            let int = parse_int(text.as_bytes(), true).map(|r| r.unwrap().0.to_u64().unwrap());
            let float = f(&text).map(Option::unwrap);
            match tail {
                "e5" | ".5," => {
                    let end = run.len() + tail.trim_end_matches(',').len();
                    let want: f64 = text[..end].parse().unwrap();
                    assert_eq!(float, Ok((want, end)), "{text}");
                    let want = int_want.and(Err(NumError::NotInteger));
                    assert_eq!(int, want, "{text}");
                }
                "x" => {
                    assert_eq!(float, Err(NumError::Syntax), "{text}");
                    assert_eq!(int, int_want.and(Err(NumError::Syntax)), "{text}");
                }
                _ => {
                    assert_eq!(float, Ok((float_want, run.len())), "{text}");
                    assert_eq!(int, int_want, "{text}");
                }
            }
        }
    }
}

#[test]
fn float_syntax_errors() {
    for s in [
        "01", "1.", "-", ".5", "1e", "1e+", "+1", "--1", "1.e5", "0x10",
    ] {
        assert_eq!(f(s), Err(NumError::Syntax), "{s:?}");
    }
    assert_eq!(f(&"1".repeat(600)), Err(NumError::TooLong));
}

#[test]
fn stops_at_delimiter_and_waits_at_end() {
    assert_eq!(parse_f64(b"1.25,", false), Ok(Some((1.25, 4))));
    assert_eq!(parse_f64(b"1.25]", false), Ok(Some((1.25, 4))));
    assert_eq!(parse_f64(b"1.25", false), Ok(None));
    assert_eq!(parse_f64(b"1.", false), Ok(None));
    assert_eq!(parse_f64(b"1e", false), Ok(None));
    assert_eq!(parse_f64(b"-", false), Ok(None));
    assert_eq!(parse_f64(b"", false), Ok(None));
}

#[test]
fn integers() {
    let i = |s: &str| parse_int(s.as_bytes(), true);
    assert_eq!(i("0").unwrap().unwrap().0.to_i64(), Some(0));
    assert_eq!(
        i("-9223372036854775808").unwrap().unwrap().0.to_i64(),
        Some(i64::MIN)
    );
    assert_eq!(i("-9223372036854775809").unwrap().unwrap().0.to_i64(), None);
    assert_eq!(
        i("18446744073709551615").unwrap().unwrap().0.to_u64(),
        Some(u64::MAX)
    );
    assert_eq!(i("18446744073709551616"), Err(NumError::Overflow));
    assert_eq!(i("-1").unwrap().unwrap().0.to_u64(), None);
    assert_eq!(i("-0").unwrap().unwrap().0.to_u64(), Some(0));
    assert_eq!(i("1.0"), Err(NumError::NotInteger));
    assert_eq!(i("1e2"), Err(NumError::NotInteger));
    assert_eq!(i("1.x"), Err(NumError::Syntax));
    assert_eq!(i("007"), Err(NumError::Syntax));
    assert_eq!(parse_int(b"12", false), Ok(None));
    assert_eq!(parse_int(b"12,", false).unwrap().unwrap().1, 2);
}

/// The eight-byte fast path of `parse_int` agrees with the general path
/// (taken for inputs shorter than eight bytes) on values, lengths and
/// errors.
#[test]
fn short_integers_agree_with_the_general_path() {
    let literals = [
        "0", "-0", "7", "-7", "10", "1234567", "-1234567", "9999999", "-9999999", "12345678", "01",
        "-01", "00", "-", "--1", "-x", "1.5", "-2e3", "12a", "1E2", "+1",
    ];
    for lit in literals {
        for tail in [",", "]", " ", "}", ".", "e", "x", ""] {
            let text = format!("{lit}{tail}");
            let general = parse_int(text.as_bytes(), true);
            let padded = format!("{text}        ");
            let fast = parse_int(padded.as_bytes(), true);
            match (&general, &fast) {
                (Ok(Some(g)), Ok(Some(f))) => assert_eq!(g, f, "{text:?}"),
                // With more input after it, "1." is a complete error.
                _ => assert_eq!(
                    general.is_ok(),
                    fast.is_ok(),
                    "{text:?}: {general:?} {fast:?}"
                ),
            }
            if let (Err(g), Err(f)) = (general, fast) {
                assert_eq!(g, f, "{text:?}");
            }
        }
    }
}
