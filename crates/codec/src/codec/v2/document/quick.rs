//! The small member values every document carries (`"INPUT0"`, `"INT32"`,
//! `[1, 16]`, `64`, `true`) turned into a `serde_json::Value` without going
//! through serde, which took much of the document parser's time on a small
//! infer request (see docs/PERFORMANCE.md, "What each decision bought").
//! Anything else — escapes, floats, objects, nesting, a form JSON refuses —
//! is left to `serde_json`, so errors and every unusual value stay exactly
//! serde's.

use serde_json::Value;

/// The value of `text` when it is one of the plain forms, else `None`.
/// `text` is a whole JSON value as the scanner captured it (no surrounding
/// whitespace).
pub(super) fn quick_value(text: &[u8]) -> Option<Value> {
    match text.first()? {
        b'"' => plain_string(text).map(Value::String),
        b'[' => int_array(text),
        b't' if text == b"true" => Some(Value::Bool(true)),
        b'f' if text == b"false" => Some(Value::Bool(false)),
        b'n' if text == b"null" => Some(Value::Null),
        _ => int(text).map(Value::from),
    }
}

/// `"..."` with no escape and no control character.
fn plain_string(text: &[u8]) -> Option<String> {
    let inner = text.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if inner.iter().any(|&b| b == b'\\' || b == b'"' || b < 0x20) {
        return None;
    }
    String::from_utf8(inner.to_vec()).ok()
}

/// `[` integers separated by `,` `]`, with JSON whitespace around them.
fn int_array(text: &[u8]) -> Option<Value> {
    let inner = text.strip_prefix(b"[")?.strip_suffix(b"]")?;
    if trim(inner).is_empty() {
        return Some(Value::Array(Vec::new()));
    }
    let mut items = Vec::with_capacity(4);
    for part in inner.split(|&b| b == b',') {
        items.push(Value::from(int(trim(part))?));
    }
    Some(Value::Array(items))
}

/// An integer JSON allows, of at most 18 digits (so it fits an `i64`);
/// `-0` is left to serde, which reads it as a float.
fn int(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if digits.is_empty()
        || digits.len() > 18
        || !digits.iter().all(u8::is_ascii_digit)
        || (digits.len() > 1 && digits[0] == b'0')
        || (negative && digits == b"0")
    {
        return None;
    }
    let v = digits
        .iter()
        .fold(0i64, |v, &d| v * 10 + i64::from(d - b'0'));
    Some(if negative { -v } else { v })
}

fn trim(s: &[u8]) -> &[u8] {
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let start = s.iter().position(|b| !ws(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !ws(b)).map_or(start, |e| e + 1);
    &s[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every input either takes the fast path to exactly serde's value or
    /// is left to serde.
    fn check(text: &str, fast: bool) {
        let quick = quick_value(text.as_bytes());
        assert_eq!(quick.is_some(), fast, "{text}");
        if let Some(v) = quick {
            let serde: Value = serde_json::from_str(text).unwrap();
            assert_eq!(v, serde, "{text}");
            assert_eq!(v.to_string(), serde.to_string(), "{text}");
        }
    }

    #[test]
    fn plain_forms_match_serde() {
        for t in [
            r#""INPUT0""#,
            r#""""#,
            r#""ünïcödé ✓""#,
            "[1,16]",
            "[ -1 , 16 ]",
            "[\n1,\t2\r]",
            "[]",
            "[ ]",
            "0",
            "64",
            "-5",
            "999999999999999999",
            "-999999999999999999",
            "true",
            "false",
            "null",
        ] {
            check(t, true);
        }
    }

    #[test]
    fn everything_else_is_left_to_serde() {
        for t in [
            r#""a\"b""#,
            r#""tab	""#,
            "\"\u{1}\"",
            "-0",
            "01",
            "[01]",
            "[1,]",
            "[,1]",
            "[1 2]",
            "1.5",
            "1e3",
            "1000000000000000000",
            "[[1]]",
            "{}",
            "-",
            "[-]",
            "tru",
        ] {
            check(t, false);
        }
    }

    #[test]
    fn invalid_utf8_is_left_to_serde() {
        assert_eq!(quick_value(b"\"\xff\""), None);
    }

    proptest! {
        #[test]
        fn agrees_with_serde_on_any_text(text in "[\\[\\]0-9, \"a-z\\\\-]{0,12}") {
            if let Some(v) = quick_value(text.as_bytes()) {
                let serde: Value = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(v, serde);
            }
        }

        #[test]
        fn int_arrays_agree_with_serde(shape in proptest::collection::vec(-1i64..1_000_000, 0..6)) {
            let text = serde_json::to_string(&shape).unwrap();
            check(&text, true);
        }
    }
}
