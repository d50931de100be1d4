use super::*;

/// The value of `text` as `T`, by the path the decoders take: the fast
/// parser when it takes the whole text, else the slow one. Both must agree
/// whenever the fast one answers.
fn read<T: Elem + std::fmt::Debug + PartialEq>(text: &str) -> Result<T, ValueFail> {
    let slow = T::slow(text.as_bytes());
    if let Some((v, n)) = T::fast(text.as_bytes())
        && n == text.len()
    {
        assert_eq!(Ok(v), slow, "fast and slow disagree on {text:?}");
    }
    slow
}

fn bits32(text: &str) -> Result<u32, ValueFail> {
    read::<f32>(text).map(f32::to_bits)
}

#[test]
fn python_float_spellings() {
    let check = |text: &str, want: f32| assert_eq!(bits32(text), Ok(want.to_bits()), "{text}");
    check("1e-05", 1e-5);
    check("1.5e+20", 1.5e20);
    check("-0.0", -0.0);
    check("1.", 1.0);
    check(".5", 0.5);
    check("+2", 2.0);
    check("3.4028235e+38", f32::MAX);
    check("1e-45", 1e-45);
    check("1e-50", 0.0);
    check("inf", f32::INFINITY);
    check("-inf", f32::NEG_INFINITY);
    check("Infinity", f32::INFINITY);
    check("+INF", f32::INFINITY);
    check("-Infinity", f32::NEG_INFINITY);
    assert!(read::<f32>("nan").unwrap().is_nan());
    assert!(read::<f32>("NaN").unwrap().is_nan());
    assert!(read::<f32>("-nan").unwrap().is_nan());
    // Nearest double first, then nearest float (numpy's two roundings).
    check("0.1", 0.1);
    check("16777217", 16777216.0);
}

#[test]
fn float_errors() {
    assert_eq!(read::<f32>("1e39"), Err(ValueFail::OutOfRange));
    assert_eq!(read::<f32>("-3.5e38"), Err(ValueFail::OutOfRange));
    assert_eq!(read::<f64>("1e400"), Err(ValueFail::OutOfRange));
    assert_eq!(read::<f64>("1e308"), Ok(1e308));
    assert_eq!(read::<half::f16>("70000"), Err(ValueFail::OutOfRange));
    for bad in ["", "abc", "1,5", "1.5.2", "0x10", "1_000", "e5", "-", " 1"] {
        assert_eq!(read::<f32>(bad), Err(ValueFail::NotNumber), "{bad:?}");
    }
}

#[test]
fn integer_rules() {
    assert_eq!(read::<u8>("255"), Ok(255));
    assert_eq!(read::<u8>("300"), Err(ValueFail::OutOfRange));
    assert_eq!(read::<u8>("-1"), Err(ValueFail::OutOfRange));
    assert_eq!(read::<u8>("-0"), Ok(0));
    assert_eq!(read::<i32>("1.0"), Ok(1));
    assert_eq!(read::<i32>("-2e3"), Ok(-2000));
    assert_eq!(read::<i32>("+7"), Ok(7));
    assert_eq!(read::<i32>("1.5"), Err(ValueFail::NotInteger));
    assert_eq!(read::<i32>("nan"), Err(ValueFail::NotInteger));
    assert_eq!(read::<i32>("inf"), Err(ValueFail::OutOfRange));
    assert_eq!(read::<i32>("2147483648"), Err(ValueFail::OutOfRange));
    assert_eq!(read::<i64>("-9223372036854775808"), Ok(i64::MIN));
    assert_eq!(read::<u64>("18446744073709551615"), Ok(u64::MAX));
    assert_eq!(
        read::<u64>("18446744073709551616"),
        Err(ValueFail::OutOfRange)
    );
    assert_eq!(
        read::<u64>("999999999999999999999999999999999999999999"),
        Err(ValueFail::OutOfRange)
    );
    assert_eq!(read::<i8>("1e300"), Err(ValueFail::OutOfRange));
    assert_eq!(read::<i16>("x"), Err(ValueFail::NotNumber));
}

#[test]
fn protobuf_numbers() {
    assert_eq!(f32::from_f64(1e39), Err(ValueFail::OutOfRange));
    assert!(f32::from_f64(f64::INFINITY).unwrap().is_infinite());
    assert_eq!(i32::from_f64(3.0), Ok(3));
    assert_eq!(i32::from_f64(3.5), Err(ValueFail::NotInteger));
    assert_eq!(u8::from_i64(256), Err(ValueFail::OutOfRange));
    assert_eq!(f32::from_i64(16777217), Ok(16777216.0));
}

#[test]
fn fast_path_stops_at_delimiters() {
    assert_eq!(f32::fast(b"1.5,2"), Some((1.5, 3)));
    assert_eq!(f32::fast(b"1.5x"), None);
    assert_eq!(f32::fast(b"1."), None);
    assert_eq!(f32::fast(b"1e39"), None);
    assert_eq!(i32::fast(b"12]"), Some((12, 2)));
    assert_eq!(u8::fast(b"300"), None);
}

#[test]
fn quotes_are_bounded() {
    assert_eq!(quote(b"abc"), "abc");
    assert_eq!(quote(&[b'7'; 50]), format!("{}...", "7".repeat(40)));
}
