//! The human-readable tensor description used by the golden vectors' `.json`
//! files and the `tensorgate tensor` debugging commands:
//! `{"type": "f32", "shape": [2], "values": [1.5, "NaN"]}`.
//!
//! Value encoding: integers exact; floats as Python's `repr` prints the
//! (widened) double, with NaN / Infinity / -Infinity as strings; binaries as
//! base64; media as `{"format", "data_b64"}`. Sans-I/O.

use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use serde_json::Value;

use crate::tensor::{
    BytesElements, DataType, DecthingsType, Semantic, Shape, Tensor, TensorError, bytes_layout,
};

/// A description could not be turned into a tensor.
#[derive(Debug, thiserror::Error)]
pub enum DescribeError {
    #[error("description is not a JSON object with \"type\", \"shape\" and \"values\"")]
    NotAnObject,
    #[error("unknown tensor type {0:?}")]
    UnknownType(String),
    #[error("\"shape\" must be an array of non-negative integers")]
    BadShape,
    #[error("\"values\" must be an array")]
    BadValues,
    #[error("value {index} ({value}) is not a valid {dtype}")]
    BadValue {
        index: usize,
        value: String,
        dtype: DecthingsType,
    },
    #[error(transparent)]
    Tensor(#[from] TensorError),
}

/// Writes one tensor as a single-line description.
pub fn describe(tensor: &Tensor) -> String {
    let dtype = tensor.decthings_type();
    let mut out = String::with_capacity(32 + tensor.data.len() * 2);
    let _ = write!(out, "{{\"type\":\"{}\",\"shape\":[", dtype.name());
    for (i, d) in tensor.shape.dims().iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{d}");
    }
    out.push_str("],\"values\":[");
    write_values(tensor, &mut out);
    out.push_str("]}");
    out
}

fn write_values(t: &Tensor, out: &mut String) {
    let mut sep = "";
    let mut each = |out: &mut String, f: &dyn Fn(&mut String)| {
        out.push_str(sep);
        sep = ",";
        f(out);
    };
    macro_rules! fixed {
        ($ty:ty, $n:expr, $fmt:expr) => {
            for c in t.data.chunks_exact($n) {
                let v = <$ty>::from_le_bytes(c.try_into().unwrap_or([0; $n]));
                each(out, &|o| $fmt(o, v));
            }
        };
    }
    let int = |o: &mut String, v: i128| {
        let _ = write!(o, "{v}");
    };
    match t.dtype {
        DataType::Bool => fixed!(u8, 1, |o: &mut String, v: u8| o.push_str(if v != 0 {
            "true"
        } else {
            "false"
        })),
        DataType::U8 => fixed!(u8, 1, |o, v| int(o, i128::from(v))),
        DataType::U16 => fixed!(u16, 2, |o, v| int(o, i128::from(v))),
        DataType::U32 => fixed!(u32, 4, |o, v| int(o, i128::from(v))),
        DataType::U64 => fixed!(u64, 8, |o, v| int(o, i128::from(v))),
        DataType::I8 => fixed!(i8, 1, |o, v| int(o, i128::from(v))),
        DataType::I16 => fixed!(i16, 2, |o, v| int(o, i128::from(v))),
        DataType::I32 => fixed!(i32, 4, |o, v| int(o, i128::from(v))),
        DataType::I64 => fixed!(i64, 8, |o, v| int(o, i128::from(v))),
        DataType::F16 => fixed!(u16, 2, |o, v| python_float(
            o,
            f64::from(half::f16::from_bits(v).to_f32())
        )),
        DataType::BF16 => fixed!(u16, 2, |o, v| python_float(
            o,
            f64::from(half::bf16::from_bits(v).to_f32())
        )),
        DataType::F32 => fixed!(f32, 4, |o, v| python_float(o, f64::from(v))),
        DataType::F64 => fixed!(f64, 8, python_float),
        DataType::Bytes => {
            let formats: &[String] = match &t.semantic {
                Semantic::Media { formats, .. } => formats,
                _ => &[],
            };
            for (i, e) in BytesElements::new(&t.data).enumerate() {
                let e = e.unwrap_or_default();
                each(out, &|o| match &t.semantic {
                    Semantic::String => json_string(o, &String::from_utf8_lossy(e)),
                    Semantic::Media { .. } => {
                        o.push_str("{\"format\":");
                        json_string(o, formats.get(i).map_or("", String::as_str));
                        o.push_str(",\"data_b64\":\"");
                        o.push_str(&BASE64.encode(e));
                        o.push_str("\"}");
                    }
                    _ => {
                        o.push('"');
                        o.push_str(&BASE64.encode(e));
                        o.push('"');
                    }
                });
            }
        }
    }
}

fn json_string(out: &mut String, s: &str) {
    // serde_json's string escaping, without building a Value.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

/// Formats a double the way Python's `repr` does: shortest round-trip
/// digits; positional notation for 1e-4 <= |x| < 1e16 with at least one
/// fractional digit; otherwise `d.ddde+XX`. Non-finite values become the
/// strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
pub fn python_float(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("\"NaN\"");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 {
            "\"Infinity\""
        } else {
            "\"-Infinity\""
        });
        return;
    }
    // `{:e}` prints the shortest round-trip digits: "-1.2345e-5".
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if neg {
        out.push('-');
    }
    // Python: value = 0.DIGITS × 10^decpt; positional when -4 < decpt <= 16.
    let decpt = exp + 1;
    if x == 0.0 || (-4 < decpt && decpt <= 16) {
        if decpt <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-decpt) as usize));
            out.push_str(&digits);
        } else if decpt as usize >= digits.len() {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', decpt as usize - digits.len()));
            out.push_str(".0");
        } else {
            let (int, frac) = digits.split_at(decpt as usize);
            out.push_str(int);
            out.push('.');
            out.push_str(frac);
        }
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
}

/// Builds a tensor from a description (`type`, `shape`, `values`; other keys
/// are ignored).
pub fn parse_description(value: &Value) -> Result<Tensor, DescribeError> {
    let obj = value.as_object().ok_or(DescribeError::NotAnObject)?;
    let type_name = obj
        .get("type")
        .and_then(Value::as_str)
        .ok_or(DescribeError::NotAnObject)?;
    let dtype = DecthingsType::from_name(type_name)
        .ok_or_else(|| DescribeError::UnknownType(type_name.to_owned()))?;
    let dims = obj
        .get("shape")
        .and_then(Value::as_array)
        .ok_or(DescribeError::BadShape)?
        .iter()
        .map(|d| d.as_u64().ok_or(DescribeError::BadShape))
        .collect::<Result<Vec<_>, _>>()?;
    let values = obj
        .get("values")
        .and_then(Value::as_array)
        .ok_or(DescribeError::BadValues)?;
    let mut data = Vec::new();
    let mut formats = Vec::new();
    for (index, v) in values.iter().enumerate() {
        let bad = || DescribeError::BadValue {
            index,
            value: v.to_string(),
            dtype,
        };
        push_value(dtype, v, &mut data, &mut formats).ok_or_else(bad)?;
    }
    let semantic = match dtype {
        DecthingsType::String => Semantic::String,
        DecthingsType::Binary => Semantic::Binary,
        kind if kind.is_media() => Semantic::Media { kind, formats },
        _ => Semantic::Plain,
    };
    Ok(Tensor::new(dtype.to_v2(), Shape::new(dims), Bytes::from(data))?.with_semantic(semantic))
}

fn push_value(
    dtype: DecthingsType,
    v: &Value,
    data: &mut Vec<u8>,
    formats: &mut Vec<String>,
) -> Option<()> {
    macro_rules! int {
        ($ty:ty) => {{
            let x: $ty = if let Some(u) = v.as_u64() {
                <$ty>::try_from(u).ok()?
            } else {
                <$ty>::try_from(v.as_i64()?).ok()?
            };
            data.extend_from_slice(&x.to_le_bytes());
        }};
    }
    match dtype {
        DecthingsType::F32 => data.extend_from_slice(&(float(v)? as f32).to_le_bytes()),
        DecthingsType::F64 => data.extend_from_slice(&float(v)?.to_le_bytes()),
        DecthingsType::I8 => int!(i8),
        DecthingsType::I16 => int!(i16),
        DecthingsType::I32 => int!(i32),
        DecthingsType::I64 => int!(i64),
        DecthingsType::U8 => int!(u8),
        DecthingsType::U16 => int!(u16),
        DecthingsType::U32 => int!(u32),
        DecthingsType::U64 => int!(u64),
        DecthingsType::Boolean => data.push(u8::from(v.as_bool()?)),
        DecthingsType::String => bytes_layout::push(data, v.as_str()?.as_bytes()),
        DecthingsType::Binary => bytes_layout::push(data, &BASE64.decode(v.as_str()?).ok()?),
        DecthingsType::Image | DecthingsType::Audio | DecthingsType::Video => {
            formats.push(v.get("format")?.as_str()?.to_owned());
            let payload = BASE64.decode(v.get("data_b64")?.as_str()?).ok()?;
            bytes_layout::push(data, &payload);
        }
    }
    Some(())
}

fn float(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => v.as_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(x: f64) -> String {
        let mut s = String::new();
        python_float(&mut s, x);
        s
    }

    #[test]
    fn python_repr() {
        let cases: &[(f64, &str)] = &[
            (1.5, "1.5"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (-2.25, "-2.25"),
            (100.0, "100.0"),
            (f64::from(0.1f32), "0.10000000149011612"),
            (f64::from(3e38f32), "3.0000000054977558e+38"),
            (f64::from(-1e-38f32), "-9.999999350456404e-39"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e300, "1e+300"),
            (5e-324, "5e-324"),
            (f64::NAN, "\"NaN\""),
            (f64::NEG_INFINITY, "\"-Infinity\""),
        ];
        for (x, s) in cases {
            assert_eq!(repr(*x), *s, "{x:e}");
        }
    }

    #[test]
    fn round_trip_media() {
        let desc: Value = serde_json::from_str(
            r#"{"type":"image","shape":[1],"values":[{"format":"png","data_b64":"AQ=="}]}"#,
        )
        .unwrap();
        let t = parse_description(&desc).unwrap();
        assert_eq!(
            describe(&t),
            r#"{"type":"image","shape":[1],"values":[{"format":"png","data_b64":"AQ=="}]}"#
        );
    }

    #[test]
    fn rejects_out_of_range() {
        let desc: Value =
            serde_json::from_str(r#"{"type":"u8","shape":[1],"values":[300]}"#).unwrap();
        let err = parse_description(&desc).unwrap_err();
        assert_eq!(err.to_string(), "value 0 (300) is not a valid u8");
    }
}
