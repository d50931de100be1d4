//! Tensor values as typed numbers, so replies compare by value whatever the
//! text of their numbers: Triton prints FP32 widened to double
//! (`0.10000000149011612`), tensorgate the shortest FP32 digits (`0.1`);
//! both are the same FP32. NaN equals NaN; -0.0 does not equal 0.0.

use half::{bf16, f16};
use serde_json::Value;

/// The 14 V2 datatypes, each with an `identity_<lowercase>` test model.
pub const DTYPES: [&str; 14] = [
    "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16",
    "FP32", "FP64", "BF16", "BYTES",
];

pub fn identity_model(dtype: &str) -> String {
    format!("identity_{}", dtype.to_ascii_lowercase())
}

/// Values each datatype's identity model is sent, as JSON literal text
/// (bare `NaN`/`Infinity` where Triton accepts them).
pub fn literals(dtype: &str) -> &'static [&'static str] {
    match dtype {
        "BOOL" => &["true", "false", "true"],
        "UINT8" => &["0", "1", "127", "255"],
        "UINT16" => &["0", "1", "65535"],
        "UINT32" => &["0", "1", "4294967295"],
        "UINT64" => &["0", "1", "9007199254740993", "18446744073709551615"],
        "INT8" => &["-128", "-1", "0", "127"],
        "INT16" => &["-32768", "-1", "0", "32767"],
        "INT32" => &["-2147483648", "-1", "0", "2147483647"],
        "INT64" => &["-9223372036854775808", "-1", "0", "9223372036854775807"],
        "FP16" => &[
            "1.0",
            "-2.0",
            "0.1",
            "65504.0",
            "6.0e-8",
            "-0.0",
            "0.333",
            "NaN",
            "Infinity",
            "-Infinity",
        ],
        "BF16" => &[
            "1.0",
            "-2.0",
            "0.1",
            "3.0e38",
            "1.0e-40",
            "-0.0",
            "0.333",
            "NaN",
            "Infinity",
            "-Infinity",
        ],
        // 1.0000000596046448 rounds to the double 1 + 2^-24, exactly between
        // two FP32 values: Triton (and tensorgate) then round to even, 1.0.
        "FP32" => &[
            "NaN",
            "Infinity",
            "-Infinity",
            "-0.0",
            "0.1",
            "1.5",
            "3.4028235e38",
            "1e-45",
            "16777217",
            "1e10",
            "123456.789",
            "0.3",
            "-1.2",
            "1.0000000596046448",
        ],
        "FP64" => &[
            "NaN",
            "Infinity",
            "-Infinity",
            "-0.0",
            "0.1",
            "1.5",
            "1e300",
            "5e-324",
            "9007199254740993",
            "1e21",
            "1e-7",
            "1.7976931348623157e308",
        ],
        "BYTES" => &[
            r#""hello""#,
            r#""h\u00e9 \u2603 \ud83d\ude00""#,
            r#""quote \" backslash \\ newline \n tab \t""#,
            r#""\u0001 control""#,
            r#""""#,
        ],
        other => panic!("unknown datatype {other}"),
    }
}

/// Bytes per element, for fixed-size types.
pub fn width(dtype: &str) -> Option<usize> {
    Some(match dtype {
        "BOOL" | "UINT8" | "INT8" => 1,
        "UINT16" | "INT16" | "FP16" | "BF16" => 2,
        "UINT32" | "INT32" | "FP32" => 4,
        "UINT64" | "INT64" | "FP64" => 8,
        _ => return None,
    })
}

fn float_literal(text: &str) -> f64 {
    match text {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        "-Infinity" => f64::NEG_INFINITY,
        t => t
            .parse()
            .unwrap_or_else(|_| panic!("bad float literal {t}")),
    }
}

/// The binary-extension bytes for literal values, converted the way Triton
/// converts JSON input (nearest double, then nearest value of the type).
pub fn encode(dtype: &str, literals: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for &lit in literals {
        match dtype {
            "BOOL" => out.push(u8::from(lit == "true")),
            "BYTES" => {
                let s: String = serde_json::from_str(lit).expect("BYTES literal");
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
            "FP16" => out.extend_from_slice(&f16::from_f64(float_literal(lit)).to_le_bytes()),
            "BF16" => out.extend_from_slice(&bf16::from_f64(float_literal(lit)).to_le_bytes()),
            "FP32" => out.extend_from_slice(&(float_literal(lit) as f32).to_le_bytes()),
            "FP64" => out.extend_from_slice(&float_literal(lit).to_le_bytes()),
            int => {
                let v: i128 = lit.parse().expect("integer literal");
                let w = width(int).unwrap();
                out.extend_from_slice(&v.to_le_bytes()[..w]);
            }
        }
    }
    out
}

/// BYTES elements in the binary layout (4-byte little-endian length, bytes).
pub fn encode_bytes(elements: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in elements {
        out.extend_from_slice(&(e.len() as u32).to_le_bytes());
        out.extend_from_slice(e);
    }
    out
}

/// A float by its bits in its own type; every NaN is the same value.
#[derive(Clone, Copy, Debug)]
pub struct Float {
    pub bits: u64,
    pub nan: bool,
}

impl PartialEq for Float {
    fn eq(&self, other: &Float) -> bool {
        (self.nan && other.nan) || (!self.nan && !other.nan && self.bits == other.bits)
    }
}

/// A tensor's elements, typed.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    Bool(Vec<bool>),
    Int(Vec<i128>),
    Float(Vec<Float>),
    Bytes(Vec<Vec<u8>>),
}

impl Values {
    pub fn len(&self) -> usize {
        match self {
            Values::Bool(v) => v.len(),
            Values::Int(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Bytes(v) => v.len(),
        }
    }
}

fn float_of(dtype: &str, v: f64) -> Float {
    let bits = match dtype {
        "FP16" => u64::from(f16::from_f64(v).to_bits()),
        "BF16" => u64::from(bf16::from_f64(v).to_bits()),
        "FP32" => u64::from((v as f32).to_bits()),
        _ => v.to_bits(),
    };
    Float {
        bits,
        nan: v.is_nan(),
    }
}

/// Decodes binary tensor data.
pub fn from_binary(dtype: &str, data: &[u8]) -> Result<Values, String> {
    if dtype == "BYTES" {
        let mut out = Vec::new();
        let mut rest = data;
        while !rest.is_empty() {
            if rest.len() < 4 {
                return Err(format!("BYTES data ends inside a length: {rest:?}"));
            }
            let n = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
            rest = &rest[4..];
            if rest.len() < n {
                return Err(format!("BYTES element of {n} bytes, {} left", rest.len()));
            }
            out.push(rest[..n].to_vec());
            rest = &rest[n..];
        }
        return Ok(Values::Bytes(out));
    }
    let w = width(dtype).ok_or_else(|| format!("unknown datatype {dtype}"))?;
    if !data.len().is_multiple_of(w) {
        return Err(format!(
            "{} bytes is not a whole number of {dtype}",
            data.len()
        ));
    }
    let chunks = data.chunks_exact(w);
    Ok(match dtype {
        "BOOL" => Values::Bool(chunks.map(|c| c[0] != 0).collect()),
        "FP16" | "BF16" | "FP32" | "FP64" => Values::Float(
            chunks
                .map(|c| {
                    let mut b = [0u8; 8];
                    b[..w].copy_from_slice(c);
                    let bits = u64::from_le_bytes(b);
                    let nan = match dtype {
                        "FP16" => f16::from_bits(bits as u16).is_nan(),
                        "BF16" => bf16::from_bits(bits as u16).is_nan(),
                        "FP32" => f32::from_bits(bits as u32).is_nan(),
                        _ => f64::from_bits(bits).is_nan(),
                    };
                    Float { bits, nan }
                })
                .collect(),
        ),
        signed if signed.starts_with("INT") => Values::Int(
            chunks
                .map(|c| {
                    let mut b = [if c[w - 1] & 0x80 != 0 { 0xff } else { 0 }; 16];
                    b[..w].copy_from_slice(c);
                    i128::from_le_bytes(b)
                })
                .collect(),
        ),
        _ => Values::Int(
            chunks
                .map(|c| {
                    let mut b = [0u8; 16];
                    b[..w].copy_from_slice(c);
                    i128::from_le_bytes(b)
                })
                .collect(),
        ),
    })
}

fn flatten<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    match v {
        Value::Array(a) => a.iter().for_each(|e| flatten(e, out)),
        other => out.push(other),
    }
}

/// Decodes JSON `data` (strings "NaN"/"Infinity"/"-Infinity" for floats, as
/// [`super::lenient`] leaves them).
pub fn from_json(dtype: &str, data: &Value) -> Result<Values, String> {
    let mut flat = Vec::new();
    flatten(data, &mut flat);
    let bad = |v: &Value| format!("{dtype} element {v} is not valid");
    Ok(match dtype {
        "BOOL" => Values::Bool(
            flat.iter()
                .map(|v| v.as_bool().ok_or_else(|| bad(v)))
                .collect::<Result<_, _>>()?,
        ),
        "BYTES" => Values::Bytes(
            flat.iter()
                .map(|v| {
                    v.as_str()
                        .map(|s| s.as_bytes().to_vec())
                        .ok_or_else(|| bad(v))
                })
                .collect::<Result<_, _>>()?,
        ),
        "FP16" | "BF16" | "FP32" | "FP64" => Values::Float(
            flat.iter()
                .map(|v| {
                    let f = match v {
                        Value::String(s) if s == "NaN" => f64::NAN,
                        Value::String(s) if s == "Infinity" => f64::INFINITY,
                        Value::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
                        Value::Number(n) => n.as_f64().ok_or_else(|| bad(v))?,
                        _ => return Err(bad(v)),
                    };
                    Ok(float_of(dtype, f))
                })
                .collect::<Result<_, _>>()?,
        ),
        _ => Values::Int(
            flat.iter()
                .map(|v| match v {
                    Value::Number(n) if n.is_i64() => Ok(i128::from(n.as_i64().unwrap())),
                    Value::Number(n) if n.is_u64() => Ok(i128::from(n.as_u64().unwrap())),
                    _ => Err(bad(v)),
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}
