//! JSON and JSON Lines replies: one object per record, each row written by
//! the crate's V2 [`ValueWriter`] (so numbers, NaN and strings look exactly
//! as in every other JSON tensorgate writes).

use crate::codec::v2::json_write::{ValueWriter, WriteError};
use crate::codec::v2::strings::write_json_string;
use crate::tensor::{BytesElements, DataType, element_count};

use super::{Column, ReplyError};

/// Writes `records` objects: comma-separated (after a previous batch when
/// `more`), or each followed by `\n` when `lines`.
pub(super) fn records(
    columns: &[Column<'_>],
    records: usize,
    more: bool,
    lines: bool,
    out: &mut Vec<u8>,
) -> Result<(), ReplyError> {
    for r in 0..records {
        if !lines && (more || r > 0) {
            out.push(b',');
        }
        out.push(b'{');
        for (j, col) in columns.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            write_json_string(col.name.as_bytes(), out);
            out.push(b':');
            value(col.dtype, col.dims, col.row(r), out).map_err(|_| col.not_utf8(r))?;
        }
        out.push(b'}');
        if lines {
            out.push(b'\n');
        }
    }
    Ok(())
}

/// One row of shape `dims`: a scalar, a list, or nested lists.
fn value(dtype: DataType, dims: &[u64], data: &[u8], out: &mut Vec<u8>) -> Result<(), WriteError> {
    let Some((&outer, inner)) = dims.split_first() else {
        return flat(dtype, data, out);
    };
    out.push(b'[');
    if inner.is_empty() {
        flat(dtype, data, out)?;
    } else {
        let per = element_count(inner).unwrap_or(0);
        let mut rest = data;
        for i in 0..outer {
            if i > 0 {
                out.push(b',');
            }
            let (head, tail) = split_elements(dtype, rest, per);
            value(dtype, inner, head, out)?;
            rest = tail;
        }
    }
    out.push(b']');
    Ok(())
}

/// Comma-separated values of `data`.
fn flat(dtype: DataType, data: &[u8], out: &mut Vec<u8>) -> Result<(), WriteError> {
    let mut w = ValueWriter::new(dtype);
    w.write(data, out)?;
    w.finish().map(|_| ())
}

/// The bytes of the first `count` elements of `data`, and the rest. The
/// layout was checked when the column was made.
fn split_elements(dtype: DataType, data: &[u8], count: u64) -> (&[u8], &[u8]) {
    let at = match dtype.fixed_size() {
        Some(size) => (count as usize).saturating_mul(size),
        None => BytesElements::new(data)
            .take(count as usize)
            .map(|e| e.map_or(0, |e| 4 + e.len()))
            .sum(),
    };
    data.split_at(at.min(data.len()))
}
