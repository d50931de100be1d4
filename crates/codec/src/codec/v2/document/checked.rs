//! Checks that a captured value is JSON, with exactly the errors that
//! parsing it into a `serde_json::Value` gives, but without building it: a
//! tensor's `data` that comes before its `datatype` is kept as text, and
//! must not cost a DOM (about 80 bytes a value) before it is converted.

use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};

/// Parses `text` as `serde_json::from_slice::<Value>` does, keeping nothing.
pub(super) fn check_json(text: &[u8]) -> Result<(), serde_json::Error> {
    serde_json::from_slice::<Checked>(text).map(drop)
}

/// A JSON value that was read and dropped. Like `Value`, it asks for
/// `deserialize_any`, so numbers are range-checked and strings unescaped
/// and UTF-8-checked as they would be for a `Value`.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_key::<Checked>()?.is_some() {
            map.next_value::<Checked>()?;
        }
        Ok(Checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same verdict and message as parsing into a `Value`.
    #[test]
    fn errors_match_value_parsing() {
        for text in [
            r#"[1, 2, {"a": [true, null, "x\u00e9"]}]"#,
            "[true,false,]",
            "[1,,2]",
            r#"["\ud83d6\ude00"]"#,
            r#"["\ud83d\de00"]"#,
            r#"["ud83d\ude00"]"#,
            "[1e400]",
            "[-1e400, 2]",
            "[NaN]",
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            "[\"\u{1}\"]",
            "[1] x",
            "[18446744073709551616, -9223372036854775809]",
        ] {
            let want = serde_json::from_slice::<serde_json::Value>(text.as_bytes())
                .map(drop)
                .map_err(|e| e.to_string());
            assert_eq!(
                check_json(text.as_bytes()).map_err(|e| e.to_string()),
                want,
                "{text}"
            );
        }
        let bad_utf8 = b"[\"\xc3\x28\"]";
        assert_eq!(
            check_json(bad_utf8).map_err(|e| e.to_string()),
            serde_json::from_slice::<serde_json::Value>(bad_utf8)
                .map(drop)
                .map_err(|e| e.to_string())
        );
    }
}
