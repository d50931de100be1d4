//! JSON records, read from a complete slice (a JSON Lines line, or a JSON
//! body) without building a document tree: numbers go straight into the
//! batch.
//!
//! A record is one of
//! - `[1.5, 2, ...]`: a bare list of numbers;
//! - `{"features": [...]}`;
//! - `{"data": {"features": {"values": [...]}}}`, or with `"keys"` and
//!   `"shape"` beside `"values"` for a sparse record (densified);
//!   `"features"` may also hold a tensor object directly, and `"data"`'s
//!   `"features"` a bare list.
//!
//! Other members (`"configuration"`, `"label"`, ...) are skipped. Elements
//! are JSON numbers, Python's bare `NaN` / `Infinity` / `-Infinity`, or
//! strings holding a number as a CSV field would (`"NaN"`, `"1.5"`).

mod cursor;

pub(super) use cursor::{Cursor, Key};

use super::batch::Rows;
use super::error::{Location, RecordError};
use super::value::Elem;
use super::value::value_error;
use crate::codec::v2::number;
use cursor::token;

/// Reads one record at the cursor into `rows`.
pub(super) fn record<T: Elem>(c: &mut Cursor<'_>, rows: &mut Rows) -> Result<(), RecordError> {
    let start = rows.buf.len();
    match c.peek() {
        Some(b'[') => numbers::<T>(c, rows, start)?,
        Some(b'{') => record_object::<T>(c, rows, start)?,
        _ => return Err(c.err("expected a record: a list of numbers or an object")),
    }
    rows.end_row(c.at, start)
}

fn record_object<T: Elem>(
    c: &mut Cursor<'_>,
    rows: &mut Rows,
    start: usize,
) -> Result<(), RecordError> {
    let mut found = false;
    if !c.open_object()? {
        loop {
            match c.key()? {
                Key::Features | Key::Data if found => {
                    return Err(RecordError::Layout {
                        at: c.at,
                        what: "the record has more than one \"features\" or \"data\"",
                    });
                }
                Key::Features => {
                    found = true;
                    features::<T>(c, rows, start)?;
                }
                Key::Data => {
                    found = true;
                    data::<T>(c, rows, start)?;
                }
                _ => c.skip_value(1)?,
            }
            if c.next_or_close(b'}')? {
                break;
            }
        }
    }
    if !found {
        return Err(RecordError::Layout {
            at: c.at,
            what: "the record has no \"features\" or \"data\"",
        });
    }
    Ok(())
}

/// `"data": {"features": ...}`.
fn data<T: Elem>(c: &mut Cursor<'_>, rows: &mut Rows, start: usize) -> Result<(), RecordError> {
    let mut found = false;
    if !c.open_object()? {
        loop {
            match c.key()? {
                Key::Features if found => {
                    return Err(c.err("\"features\" appears twice"));
                }
                Key::Features => {
                    found = true;
                    features::<T>(c, rows, start)?;
                }
                _ => c.skip_value(1)?,
            }
            if c.next_or_close(b'}')? {
                break;
            }
        }
    }
    if !found {
        return Err(RecordError::Layout {
            at: c.at,
            what: "\"data\" has no \"features\"",
        });
    }
    Ok(())
}

fn features<T: Elem>(c: &mut Cursor<'_>, rows: &mut Rows, start: usize) -> Result<(), RecordError> {
    match c.peek() {
        Some(b'[') => numbers::<T>(c, rows, start),
        Some(b'{') => tensor::<T>(c, rows, start),
        _ => Err(RecordError::Layout {
            at: c.at,
            what: "\"features\" must be a list of numbers or {\"values\", \"keys\", \"shape\"}",
        }),
    }
}

/// `{"values": [...], "keys": [...], "shape": [...]}`.
fn tensor<T: Elem>(c: &mut Cursor<'_>, rows: &mut Rows, start: usize) -> Result<(), RecordError> {
    rows.keys.clear();
    rows.shape.clear();
    let mut seen = [false; 3];
    if !c.open_object()? {
        loop {
            let key = c.key()?;
            let slot = match key {
                Key::Values => Some(0),
                Key::Keys => Some(1),
                Key::Shape => Some(2),
                _ => None,
            };
            if let Some(k) = slot {
                if seen[k] {
                    return Err(c.err("a tensor member appears twice"));
                }
                seen[k] = true;
            }
            match key {
                Key::Values => numbers::<T>(c, rows, start)?,
                Key::Keys => {
                    let max = rows.max_features;
                    let too_many = RecordError::TooManyFeatures { at: c.at, max };
                    unsigned(c, &mut rows.keys, max, too_many)?;
                }
                Key::Shape => {
                    let too_many = RecordError::Layout {
                        at: c.at,
                        what: "a shape has at most 8 dimensions",
                    };
                    unsigned(c, &mut rows.shape, 8, too_many)?;
                }
                _ => c.skip_value(1)?,
            }
            if c.next_or_close(b'}')? {
                break;
            }
        }
    }
    rows.finish_tensor(c.at, start)
}

/// A list of numbers, appended to the record that started at `start`.
fn numbers<T: Elem>(c: &mut Cursor<'_>, rows: &mut Rows, start: usize) -> Result<(), RecordError> {
    c.eat(b'[', "expected a list of numbers")?;
    if c.peek() == Some(b']') {
        c.i += 1;
        return Ok(());
    }
    rows.reserve_row((c.s.len() - c.i) / 2);
    let max = rows.max_features;
    loop {
        let feature = rows.count(start);
        if feature == max {
            return Err(RecordError::TooManyFeatures { at: c.at, max });
        }
        c.ws();
        let rest = &c.s[c.i..];
        // The fast path refuses a number followed by a letter, digit or
        // dot, so what follows is for `next_or_close` to judge.
        let v = match T::fast(rest) {
            Some((v, n)) => {
                c.i += n;
                v
            }
            None => element::<T>(c, feature)?,
        };
        v.put(&mut rows.buf);
        if c.next_or_close(b']')? {
            return Ok(());
        }
    }
}

/// An element the fast path did not take.
#[cold]
fn element<T: Elem>(c: &mut Cursor<'_>, feature: usize) -> Result<T, RecordError> {
    let text = match c.s.get(c.i) {
        Some(b'"') => {
            let (text, _) = c.string()?;
            text
        }
        Some(b'[' | b'{') => {
            return Err(RecordError::Layout {
                at: c.at,
                what: "features must be numbers, not lists or objects",
            });
        }
        _ => {
            let text = token(&c.s[c.i..]);
            if text.is_empty() {
                return Err(c.err("expected a number"));
            }
            c.i += text.len();
            text
        }
    };
    T::slow(text).map_err(|fail| value_error::<T>(fail, c.at, feature, text))
}

/// A list of non-negative integers (sparse keys, a shape), at most `max`.
fn unsigned(
    c: &mut Cursor<'_>,
    out: &mut Vec<u64>,
    max: usize,
    too_many: RecordError,
) -> Result<(), RecordError> {
    c.eat(b'[', "expected a list of integers")?;
    if c.peek() == Some(b']') {
        c.i += 1;
        return Ok(());
    }
    loop {
        if out.len() == max {
            return Err(too_many);
        }
        c.ws();
        let v = match number::parse_int(&c.s[c.i..], true) {
            Ok(Some((v, n))) => {
                c.i += n;
                v.to_u64()
            }
            _ => None,
        };
        out.push(v.ok_or(RecordError::Layout {
            at: c.at,
            what: "sparse keys and shapes must be non-negative integers",
        })?);
        if c.next_or_close(b']')? {
            return Ok(());
        }
    }
}

/// Reads a JSON Lines line: one record and nothing else.
pub(super) fn line_record<T: Elem>(
    line: &[u8],
    at: Location,
    rows: &mut Rows,
) -> Result<(), RecordError> {
    let mut c = Cursor::new(line, at);
    record::<T>(&mut c, rows)?;
    if c.peek().is_some() {
        return Err(c.err("unexpected text after the record"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
