use super::*;

const LOOSE: ScanLimits = ScanLimits {
    max_depth: 100,
    max_len: usize::MAX,
    max_values: u64::MAX,
    count_containers: true,
};

fn whole(s: &str) -> Result<Option<usize>, ScanError> {
    ValueScan::default().scan(s.as_bytes(), true, &LOOSE)
}

/// Scans `s` whole and one byte more per call; both must agree. Returns
/// the result and the values counted.
fn check(s: &str, limits: ScanLimits) -> (Result<Option<usize>, ScanError>, u64) {
    let mut scan = ValueScan::default();
    let result = scan.scan(s.as_bytes(), true, &limits);
    let mut bytewise = ValueScan::default();
    let mut step = Ok(None);
    for n in 1..=s.len() {
        step = bytewise.scan(&s.as_bytes()[..n], n == s.len(), &limits);
        if !matches!(step, Ok(None)) {
            break;
        }
    }
    assert_eq!(step, result, "bytewise {s:?}");
    (result, scan.values())
}

#[test]
fn finds_value_ends() {
    assert_eq!(whole(r#"{"a":[1,"]}"]} ,"#), Ok(Some(14)));
    assert_eq!(whole(r#""x\"y","#), Ok(Some(6)));
    assert_eq!(whole("123,"), Ok(Some(3)));
    assert_eq!(whole("true}"), Ok(Some(4)));
    assert_eq!(
        whole("[[["),
        Err(ScanError::Syntax("unexpected end of input"))
    );
    assert_eq!(
        whole(&"[".repeat(101)),
        Err(ScanError::Syntax("JSON nests too deep"))
    );
}

#[test]
fn resumes_byte_by_byte() {
    let s = br#"{"k": ["a\\", {"b": "\""}]} tail"#;
    let mut scan = ValueScan::default();
    let mut end = None;
    for n in 1..=s.len() {
        if let Some(len) = scan.scan(&s[..n], false, &LOOSE).unwrap() {
            end = Some(len);
            break;
        }
    }
    assert_eq!(end, Some(27));
}

#[test]
fn counts_values() {
    // The object, four strings (two of them names), two numbers, a literal
    // and the array.
    let (r, n) = check(r#"{"a": [1, -2.5e3, null], "b": "c"} "#, LOOSE);
    assert_eq!((r, n), (Ok(Some(34)), 8));
    let scalars = ScanLimits {
        count_containers: false,
        ..LOOSE
    };
    assert_eq!(check("[[1,2],[3,4],[]]", scalars), (Ok(Some(16)), 4));
    assert_eq!(check("-17,", LOOSE), (Ok(Some(3)), 1));
}

#[test]
fn stops_at_the_value_limit() {
    let two = ScanLimits {
        max_values: 2,
        ..LOOSE
    };
    assert_eq!(check("[1, 2]", two).0, Err(ScanError::TooManyValues));
    assert_eq!(check("[1]", two).0, Ok(Some(3)));
    let none = ScanLimits {
        max_values: 0,
        ..LOOSE
    };
    assert_eq!(check("7,", none).0, Err(ScanError::TooManyValues));
    assert_eq!(check(r#""s""#, none).0, Err(ScanError::TooManyValues));
}

#[test]
fn stops_at_the_byte_limit() {
    let eight = ScanLimits {
        max_len: 8,
        ..LOOSE
    };
    assert_eq!(check("[1,2,3,4]", eight).0, Err(ScanError::TooLong));
    assert_eq!(check("[1,2,34]", eight).0, Ok(Some(8)));
    assert_eq!(check(r#""abcdef""#, eight).0, Ok(Some(8)));
    assert_eq!(check(r#""abcdefg""#, eight).0, Err(ScanError::TooLong));
    assert_eq!(check("123456789,", eight).0, Err(ScanError::TooLong));
    assert_eq!(check("12345678,", eight).0, Ok(Some(8)));
    // An error before the limit wins over the limit.
    let shallow = ScanLimits {
        max_depth: 1,
        ..eight
    };
    assert_eq!(
        check("[[1,2,3,4,5]]", shallow).0,
        Err(ScanError::Syntax("JSON nests too deep"))
    );
    // Nothing past the limit is looked at.
    let mut scan = ValueScan::default();
    let long = format!("[{}]", "1,".repeat(1 << 20));
    assert_eq!(
        scan.scan(long.as_bytes(), false, &eight),
        Err(ScanError::TooLong)
    );
    // The array and four numbers.
    assert_eq!(scan.values(), 5);
}

#[test]
fn long_scalars_are_refused_in_any_chunking() {
    let long = format!("{},", "1".repeat(MAX_NUMBER_LEN + 1));
    assert_eq!(
        check(&long, LOOSE).0,
        Err(ScanError::Syntax("number too long"))
    );
    let most = format!("{},", "1".repeat(MAX_NUMBER_LEN));
    assert_eq!(check(&most, LOOSE).0, Ok(Some(MAX_NUMBER_LEN)));
}
