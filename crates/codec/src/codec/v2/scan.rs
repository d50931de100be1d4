//! A resumable scanner that finds the end of any JSON value, so that values
//! the converter does not interpret (`parameters`, `outputs`, `id`, ...) can
//! be captured whole and handed to `serde_json`, which validates them.
//!
//! The scanner counts the values it passes and stops at the first byte that
//! crosses one of its [`ScanLimits`]: a value is never buffered past its
//! allowance, and since every limit is checked at the byte that crosses it,
//! the outcome does not depend on how the input was split.

use super::number::MAX_NUMBER_LEN;

/// Bounds on one scanned value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanLimits {
    /// Deepest nesting of arrays and objects.
    pub max_depth: u32,
    /// Most bytes the value may take.
    pub max_len: usize,
    /// Most values it may hold: strings (member names included), numbers
    /// and literals, and arrays and objects when `count_containers` is set.
    pub max_values: u64,
    pub count_containers: bool,
}

/// Why a value could not be scanned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScanError {
    /// Malformed JSON (or nesting past `max_depth`).
    #[error("{0}")]
    Syntax(&'static str),
    /// The value needs more than `max_len` bytes.
    #[error("value is longer than the limit")]
    TooLong,
    /// The value holds more than `max_values` values.
    #[error("value holds more values than the limit")]
    TooManyValues,
}

/// Progress through one JSON value that may arrive in pieces.
#[derive(Clone, Debug, Default)]
pub struct ValueScan {
    scanned: usize,
    depth: u32,
    in_string: bool,
    /// Inside a number or literal (counted at its first byte).
    in_scalar: bool,
    values: u64,
}

fn is_delimiter(c: u8) -> bool {
    matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
}

impl ValueScan {
    /// Values counted so far (all of them once the value is complete).
    pub fn values(&self) -> u64 {
        self.values
    }

    /// `s` starts at the value's first byte (the same position on every call
    /// until the value completes). Returns the value's length once its end is
    /// in `s`. Only structure is checked here; `serde_json` checks the rest.
    pub fn scan(
        &mut self,
        s: &[u8],
        eof: bool,
        limits: &ScanLimits,
    ) -> Result<Option<usize>, ScanError> {
        let Some(&first) = s.first() else {
            return if eof {
                Err(ScanError::Syntax("unexpected end of input"))
            } else {
                Ok(None)
            };
        };
        if !matches!(first, b'{' | b'[' | b'"') {
            return self.scalar(s, eof, limits);
        }
        // Only the bytes the value may take are looked at.
        let cut = s.len() > limits.max_len;
        let window = &s[..s.len().min(limits.max_len)];
        if let Some(len) = self.structure(window, limits)? {
            return Ok(Some(len));
        }
        if cut {
            Err(ScanError::TooLong)
        } else if eof {
            Err(ScanError::Syntax("unexpected end of input"))
        } else {
            Ok(None)
        }
    }

    /// A number or literal at the top: ends at the first delimiter.
    fn scalar(
        &mut self,
        s: &[u8],
        eof: bool,
        limits: &ScanLimits,
    ) -> Result<Option<usize>, ScanError> {
        if self.values == 0 {
            self.count(limits)?;
        }
        let cap = limits.max_len.min(MAX_NUMBER_LEN);
        let window = &s[..s.len().min(cap.saturating_add(1))];
        match window.iter().position(|&c| is_delimiter(c)) {
            Some(n) if n <= cap => Ok(Some(n)),
            _ if window.len() > cap => Err(if limits.max_len < MAX_NUMBER_LEN {
                ScanError::TooLong
            } else {
                ScanError::Syntax("number too long")
            }),
            _ if eof => Ok(Some(s.len())),
            _ => Ok(None),
        }
    }

    #[inline]
    fn count(&mut self, limits: &ScanLimits) -> Result<(), ScanError> {
        if self.values >= limits.max_values {
            return Err(ScanError::TooManyValues);
        }
        self.values += 1;
        Ok(())
    }

    /// Scans an array, object or string from where the last call stopped;
    /// its length once its end is in `s`.
    fn structure(&mut self, s: &[u8], limits: &ScanLimits) -> Result<Option<usize>, ScanError> {
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
                b'"' => {
                    self.in_string = true;
                    self.in_scalar = false;
                    self.count(limits)?;
                }
                b'{' | b'[' => {
                    self.depth += 1;
                    if self.depth > limits.max_depth {
                        return Err(ScanError::Syntax("JSON nests too deep"));
                    }
                    self.in_scalar = false;
                    if limits.count_containers {
                        self.count(limits)?;
                    }
                }
                b'}' | b']' => {
                    self.in_scalar = false;
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Ok(Some(i + 1));
                    }
                }
                b',' | b':' | b' ' | b'\n' | b'\r' | b'\t' => self.in_scalar = false,
                _ => {
                    if !self.in_scalar {
                        self.in_scalar = true;
                        self.count(limits)?;
                    }
                }
            }
            i += 1;
        }
        self.scanned = i;
        Ok(None)
    }
}

#[cfg(test)]
mod tests;
