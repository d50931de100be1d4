//! CSV replies: one line per record, every output's row flattened.

use half::{bf16, f16};

use crate::codec::v2::json_write::{finite_f32_text, finite_f64_text};
use crate::tensor::{BytesElements, DataType};

use super::{Column, ReplyError};

pub(super) fn records(
    columns: &[Column<'_>],
    records: usize,
    out: &mut Vec<u8>,
) -> Result<(), ReplyError> {
    for r in 0..records {
        let mut first = true;
        for col in columns {
            fields(col.dtype, col.row(r), &mut first, out).ok_or_else(|| col.not_utf8(r))?;
        }
        out.push(b'\n');
    }
    Ok(())
}

/// Appends the fields of one row; `None` for a BYTES element that is not
/// UTF-8.
fn fields(dtype: DataType, row: &[u8], first: &mut bool, out: &mut Vec<u8>) -> Option<()> {
    let mut sep = |out: &mut Vec<u8>| {
        if !std::mem::take(first) {
            out.push(b',');
        }
    };
    macro_rules! each {
        ($n:literal, |$b:ident| $write:expr) => {
            for c in row.chunks_exact($n) {
                sep(out);
                let $b: [u8; $n] = c.try_into().unwrap_or([0; $n]);
                $write;
            }
        };
    }
    match dtype {
        DataType::Bool => each!(1, |b| out.push(if b[0] != 0 { b'1' } else { b'0' })),
        DataType::U8 => each!(1, |b| int(out, b[0])),
        DataType::I8 => each!(1, |b| int(out, b[0] as i8)),
        DataType::U16 => each!(2, |b| int(out, u16::from_le_bytes(b))),
        DataType::I16 => each!(2, |b| int(out, i16::from_le_bytes(b))),
        DataType::U32 => each!(4, |b| int(out, u32::from_le_bytes(b))),
        DataType::I32 => each!(4, |b| int(out, i32::from_le_bytes(b))),
        DataType::U64 => each!(8, |b| int(out, u64::from_le_bytes(b))),
        DataType::I64 => each!(8, |b| int(out, i64::from_le_bytes(b))),
        DataType::F16 => each!(2, |b| float32(out, f16::from_le_bytes(b).to_f32())),
        DataType::BF16 => each!(2, |b| float32(out, bf16::from_le_bytes(b).to_f32())),
        DataType::F32 => each!(4, |b| float32(out, f32::from_le_bytes(b))),
        DataType::F64 => each!(8, |b| float64(out, f64::from_le_bytes(b))),
        DataType::Bytes => {
            for element in BytesElements::new(row) {
                sep(out);
                text_field(element.ok()?, out)?;
            }
        }
    }
    Some(())
}

fn int<I: itoa::Integer>(out: &mut Vec<u8>, v: I) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Python's spelling of the non-finite values (`str(float)`), or `None`.
fn non_finite(nan: bool, inf: bool, positive: bool) -> Option<&'static [u8]> {
    match (nan, inf, positive) {
        (true, _, _) => Some(b"nan"),
        (_, true, true) => Some(b"inf"),
        (_, true, false) => Some(b"-inf"),
        _ => None,
    }
}

fn float32(out: &mut Vec<u8>, v: f32) {
    match non_finite(v.is_nan(), v.is_infinite(), v.is_sign_positive()) {
        Some(text) => out.extend_from_slice(text),
        None => finite_f32_text(v, |t| out.extend_from_slice(t)),
    }
}

fn float64(out: &mut Vec<u8>, v: f64) {
    match non_finite(v.is_nan(), v.is_infinite(), v.is_sign_positive()) {
        Some(text) => out.extend_from_slice(text),
        None => finite_f64_text(v, |t| out.extend_from_slice(t)),
    }
}

/// A UTF-8 element as an RFC 4180 field: quoted (quotes doubled) when it
/// holds a comma, a quote or a line break, or is empty.
fn text_field(element: &[u8], out: &mut Vec<u8>) -> Option<()> {
    std::str::from_utf8(element).ok()?;
    let quote = element.is_empty()
        || element
            .iter()
            .any(|c| matches!(c, b',' | b'"' | b'\r' | b'\n'));
    if !quote {
        out.extend_from_slice(element);
        return Some(());
    }
    out.push(b'"');
    for &c in element {
        if c == b'"' {
            out.push(b'"');
        }
        out.push(c);
    }
    out.push(b'"');
    Some(())
}
