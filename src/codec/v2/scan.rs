//! A resumable scanner that finds the end of any JSON value, so that values
//! the converter does not interpret (`parameters`, `outputs`, `id`, ...) can
//! be captured whole and handed to `serde_json`, which validates them.

/// Progress through one JSON value that may arrive in pieces.
#[derive(Clone, Debug, Default)]
pub struct ValueScan {
    scanned: usize,
    depth: u32,
    in_string: bool,
}

impl ValueScan {
    /// `s` starts at the value's first byte (the same position on every call
    /// until the value completes). Returns the value's length once its end is
    /// in `s`. Only structure is checked here; `serde_json` checks the rest.
    pub fn scan(
        &mut self,
        s: &[u8],
        eof: bool,
        max_depth: u32,
    ) -> Result<Option<usize>, &'static str> {
        let Some(&first) = s.first() else {
            return if eof {
                Err("unexpected end of input")
            } else {
                Ok(None)
            };
        };
        if !matches!(first, b'{' | b'[' | b'"') {
            // A number or literal: ends at the first delimiter.
            let end = s
                .iter()
                .position(|&c| matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'));
            return match end {
                Some(n) => Ok(Some(n)),
                None if eof => Ok(Some(s.len())),
                None if s.len() > super::number::MAX_NUMBER_LEN => Err("number too long"),
                None => Ok(None),
            };
        }
        let mut i = self.scanned;
        while i < s.len() {
            if self.in_string {
                let Some(k) = memchr::memchr2(b'"', b'\\', &s[i..]) else {
                    i = s.len();
                    break;
                };
                let j = i + k;
                if s[j] == b'\\' {
                    if j + 1 >= s.len() {
                        i = j;
                        break;
                    }
                    i = j + 2;
                    continue;
                }
                self.in_string = false;
                i = j + 1;
                if self.depth == 0 {
                    return Ok(Some(i));
                }
                continue;
            }
            match s[i] {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.depth += 1;
                    if self.depth > max_depth {
                        return Err("JSON nests too deep");
                    }
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Ok(Some(i + 1));
                    }
                }
                _ => {}
            }
            i += 1;
        }
        self.scanned = i;
        if eof {
            Err("unexpected end of input")
        } else {
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(s: &str) -> Result<Option<usize>, &'static str> {
        ValueScan::default().scan(s.as_bytes(), true, 100)
    }

    #[test]
    fn finds_value_ends() {
        assert_eq!(whole(r#"{"a":[1,"]}"]} ,"#), Ok(Some(14)));
        assert_eq!(whole(r#""x\"y","#), Ok(Some(6)));
        assert_eq!(whole("123,"), Ok(Some(3)));
        assert_eq!(whole("true}"), Ok(Some(4)));
        assert_eq!(whole("[[["), Err("unexpected end of input"));
        assert_eq!(whole(&"[".repeat(101)), Err("JSON nests too deep"));
    }

    #[test]
    fn resumes_byte_by_byte() {
        let s = br#"{"k": ["a\\", {"b": "\""}]} tail"#;
        let mut scan = ValueScan::default();
        let mut end = None;
        for n in 1..=s.len() {
            if let Some(len) = scan.scan(&s[..n], false, 100).unwrap() {
                end = Some(len);
                break;
            }
        }
        assert_eq!(end, Some(27));
    }
}
