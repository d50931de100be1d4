//! The budget for JSON outside tensor data, and the limits each captured
//! value is scanned with: what is left of the budget for members, a cut-off
//! soon after `max_dims` for shapes, `max_elements` for early data.

use super::{DocError, DocParser, Level, MemberRef, Raw};
use crate::codec::v2::json_data::DataError;
use crate::codec::v2::scan::{ScanError, ScanLimits};
use crate::codec::v2::strings::{StringScan, Token};

/// What is left of the document's allowance for JSON outside tensor data.
#[derive(Clone, Copy, Debug)]
pub(super) struct Budget {
    pub bytes: u64,
    pub values: u64,
}

impl Budget {
    /// Bytes the next value may take.
    fn room(&self) -> usize {
        usize::try_from(self.bytes).unwrap_or(usize::MAX)
    }

    /// Takes what a value used; the scanners never let it exceed the rest.
    pub fn charge(&mut self, bytes: usize, values: u64) {
        self.bytes = self.bytes.saturating_sub(bytes as u64);
        self.values = self.values.saturating_sub(values);
    }
}

impl DocParser {
    /// Scans the member name at the start of `s` within what is left of the
    /// member budget; a name counts as one value.
    pub(super) fn scan_key(
        &mut self,
        scan: &mut StringScan,
        level: Level,
        s: &[u8],
        eof: bool,
        at: usize,
    ) -> Result<Option<Token>, DocError> {
        if self.budget.values == 0 {
            return Err(self.over_budget(ScanError::TooManyValues, level, None));
        }
        let room = self.budget.room();
        let cut = s.len() > room;
        let window = &s[..s.len().min(room)];
        match scan
            .scan(window, eof && !cut)
            .map_err(|e| self.syntax(at, e))?
        {
            Some(token) => {
                self.budget.charge(token.len, 1);
                Ok(Some(token))
            }
            None if cut => Err(self.over_budget(ScanError::TooLong, level, None)),
            None => Ok(None),
        }
    }

    /// Limits for a value captured whole.
    pub(super) fn scan_limits(&self, raw: Raw) -> ScanLimits {
        let member = ScanLimits {
            max_depth: self.limits.max_depth,
            max_len: self.budget.room(),
            max_values: self.budget.values,
            count_containers: true,
        };
        match raw {
            Raw::Member => member,
            Raw::Shape => ScanLimits {
                max_values: member.max_values.min(shape_values(self.limits.max_dims)),
                ..member
            },
            Raw::Data => ScanLimits {
                max_len: usize::MAX,
                max_values: self.limits.max_elements,
                count_containers: false,
                ..member
            },
        }
    }

    /// The error for a value that went over its limits while scanned.
    pub(super) fn scan_limit_error(&self, e: ScanError, level: Level, raw: Raw) -> DocError {
        match raw {
            Raw::Data => DocError::Data {
                subject: self.subject(),
                source: DataError::TooManyElements {
                    max: self.limits.max_elements,
                },
            },
            Raw::Shape
                if e == ScanError::TooManyValues
                    && shape_values(self.limits.max_dims) <= self.budget.values =>
            {
                DocError::ShapeTooLong {
                    subject: self.subject(),
                    read: shape_dims(self.limits.max_dims),
                    max: self.limits.max_dims,
                }
            }
            _ => self.over_budget(e, level, Some(self.key.clone())),
        }
    }

    /// The member budget ran out at the member named `key` (`None`: while
    /// its name was read).
    fn over_budget(&self, e: ScanError, level: Level, key: Option<String>) -> DocError {
        let member = MemberRef {
            tensor: (level == Level::Entry).then(|| self.subject()),
            key,
        };
        match e {
            ScanError::TooManyValues => DocError::TooManyValues {
                member,
                limit: self.limits.max_member_values,
            },
            _ => DocError::MemberTooLarge {
                member,
                limit: self.limits.max_member_bytes,
            },
        }
    }
}

/// Dimensions a shape may show before it is refused unread: twice the
/// limit (at least 8), so that a shape a little over the limit is still
/// quoted whole in [`DocError::TooManyDims`].
fn shape_dims(max_dims: usize) -> usize {
    max_dims.saturating_mul(2).max(8)
}

/// Values a shape may hold while scanned: its array and the dimensions.
fn shape_values(max_dims: usize) -> u64 {
    (shape_dims(max_dims) as u64).saturating_add(1)
}
