//! Typed tensor contents (`InferTensorContents`) to the V2 binary layout:
//! little-endian elements, or BYTES elements each a 4-byte little-endian
//! length and the bytes.
//!
//! Each datatype has exactly one field: BOOL `bool_contents`, INT8 / INT16 /
//! INT32 `int_contents`, INT64 `int64_contents`, UINT8 / UINT16 / UINT32
//! `uint_contents`, UINT64 `uint64_contents`, FP32 `fp32_contents`, FP64
//! `fp64_contents`, BYTES `bytes_contents`; FP16 and BF16 have none (raw
//! only). Anything in another field, an element count other than the
//! shape's, or a value that does not fit the datatype (300 for INT8; Triton
//! would keep its low byte) is refused.

use bytes::{BufMut, Bytes};

use super::proto::inference::InferTensorContents;
use crate::tensor::DataType;

/// Why typed contents do not fit a tensor.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContentsError {
    #[error("{dtype} has no typed contents; send its data in raw_input_contents")]
    NoTypedForm { dtype: DataType },
    #[error("{dtype} data must be in {expected}, not {found}")]
    WrongField {
        dtype: DataType,
        expected: &'static str,
        found: &'static str,
    },
    #[error("{field} holds {found} elements but the shape has {expected}")]
    Count {
        field: &'static str,
        expected: u64,
        found: u64,
    },
    #[error("element {index} ({value}) is out of range for {dtype}")]
    OutOfRange {
        dtype: DataType,
        index: usize,
        value: i64,
    },
    #[error("BYTES element {index} of {len} bytes is longer than the V2 layout can hold")]
    ElementTooLong { index: usize, len: usize },
}

/// The field that carries `dtype`, if any.
pub const fn field_for(dtype: DataType) -> Option<&'static str> {
    match dtype {
        DataType::Bool => Some("bool_contents"),
        DataType::I8 | DataType::I16 | DataType::I32 => Some("int_contents"),
        DataType::I64 => Some("int64_contents"),
        DataType::U8 | DataType::U16 | DataType::U32 => Some("uint_contents"),
        DataType::U64 => Some("uint64_contents"),
        DataType::F32 => Some("fp32_contents"),
        DataType::F64 => Some("fp64_contents"),
        DataType::Bytes => Some("bytes_contents"),
        DataType::F16 | DataType::BF16 => None,
    }
}

/// The names and element counts of the fields that hold something.
fn filled(c: &InferTensorContents) -> impl Iterator<Item = (&'static str, usize)> {
    [
        ("bool_contents", c.bool_contents.len()),
        ("int_contents", c.int_contents.len()),
        ("int64_contents", c.int64_contents.len()),
        ("uint_contents", c.uint_contents.len()),
        ("uint64_contents", c.uint64_contents.len()),
        ("fp32_contents", c.fp32_contents.len()),
        ("fp64_contents", c.fp64_contents.len()),
        ("bytes_contents", c.bytes_contents.len()),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
}

/// `c` as `count` elements of `dtype` in the V2 binary layout.
pub fn to_binary(
    dtype: DataType,
    count: u64,
    c: &InferTensorContents,
) -> Result<Bytes, ContentsError> {
    let Some(expected) = field_for(dtype) else {
        return match filled(c).next() {
            None if count == 0 => Ok(Bytes::new()),
            _ => Err(ContentsError::NoTypedForm { dtype }),
        };
    };
    if let Some((found, _)) = filled(c).find(|(f, _)| *f != expected) {
        return Err(ContentsError::WrongField {
            dtype,
            expected,
            found,
        });
    }
    let found = filled(c).next().map_or(0, |(_, n)| n as u64);
    if found != count {
        return Err(ContentsError::Count {
            field: expected,
            expected: count,
            found,
        });
    }
    Ok(match dtype {
        DataType::Bool => c.bool_contents.iter().map(|&b| u8::from(b)).collect(),
        DataType::I8 => narrow(
            dtype,
            &c.int_contents,
            |v| i8::try_from(v).ok(),
            |o, v| o.put_i8(v),
        )?,
        DataType::I16 => narrow(
            dtype,
            &c.int_contents,
            |v| i16::try_from(v).ok(),
            |o, v| o.put_i16_le(v),
        )?,
        DataType::I32 => le(&c.int_contents, |o, v| o.put_i32_le(v)),
        DataType::I64 => le(&c.int64_contents, |o, v| o.put_i64_le(v)),
        DataType::U8 => narrow(
            dtype,
            &c.uint_contents,
            |v| u8::try_from(v).ok(),
            |o, v| o.put_u8(v),
        )?,
        DataType::U16 => narrow(
            dtype,
            &c.uint_contents,
            |v| u16::try_from(v).ok(),
            |o, v| o.put_u16_le(v),
        )?,
        DataType::U32 => le(&c.uint_contents, |o, v| o.put_u32_le(v)),
        DataType::U64 => le(&c.uint64_contents, |o, v| o.put_u64_le(v)),
        DataType::F32 => le(&c.fp32_contents, |o, v| o.put_f32_le(v)),
        DataType::F64 => le(&c.fp64_contents, |o, v| o.put_f64_le(v)),
        DataType::Bytes => bytes_layout(&c.bytes_contents)?,
        DataType::F16 | DataType::BF16 => unreachable!("no typed field, returned above"),
    })
}

fn le<T: Copy>(values: &[T], put: impl Fn(&mut Vec<u8>, T)) -> Bytes {
    let mut out = Vec::with_capacity(std::mem::size_of_val(values));
    for &v in values {
        put(&mut out, v);
    }
    Bytes::from(out)
}

/// Narrows 32-bit values to a smaller type, refusing those out of range.
fn narrow<T: Copy + Into<i64>, N: Copy>(
    dtype: DataType,
    values: &[T],
    fit: impl Fn(T) -> Option<N>,
    put: impl Fn(&mut Vec<u8>, N),
) -> Result<Bytes, ContentsError> {
    let size = dtype.fixed_size().unwrap_or(1);
    let mut out = Vec::with_capacity(values.len() * size);
    for (index, &v) in values.iter().enumerate() {
        let n = fit(v).ok_or(ContentsError::OutOfRange {
            dtype,
            index,
            value: v.into(),
        })?;
        put(&mut out, n);
    }
    Ok(Bytes::from(out))
}

fn bytes_layout(elements: &[Bytes]) -> Result<Bytes, ContentsError> {
    let total: usize = elements.iter().map(|e| 4 + e.len()).sum();
    let mut out = Vec::with_capacity(total);
    for (index, e) in elements.iter().enumerate() {
        let len = u32::try_from(e.len()).map_err(|_| ContentsError::ElementTooLong {
            index,
            len: e.len(),
        })?;
        out.put_u32_le(len);
        out.extend_from_slice(e);
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests;
