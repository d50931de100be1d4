//! Reading Triton's JSON, which is not always JSON: it writes NaN and the
//! infinities as bare `NaN`, `Infinity`, `-Infinity`. Outside strings these
//! become the strings `"NaN"`, `"Infinity"`, `"-Infinity"`, which is what
//! tensorgate writes, so both parse to the same value.

use serde_json::Value;

/// Parses `bytes` as JSON after quoting bare NaN/Infinity literals.
pub fn parse(bytes: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let quoted = quote_literals(text);
    serde_json::from_str(&quoted).map_err(|e| format!("not JSON ({e}): {}", preview(text)))
}

fn quote_literals(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let literal = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|l| rest.starts_with(l));
        if let Some(l) = literal {
            out.push('"');
            out.push_str(l);
            out.push('"');
            rest = &rest[l.len()..];
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

pub fn preview(text: &str) -> String {
    let cut: String = text.chars().take(300).collect();
    if cut.len() < text.len() {
        format!("{cut}...")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_bare_literals() {
        let v = parse(br#"{"a":[NaN,-Infinity,Infinity,1.5],"s":"NaN \" Infinity"}"#).unwrap();
        assert_eq!(v["a"][0], "NaN");
        assert_eq!(v["a"][1], "-Infinity");
        assert_eq!(v["a"][2], "Infinity");
        assert_eq!(v["s"], "NaN \" Infinity");
    }
}
