//! Element data types of both worlds and the one mapping table between them.
//!
//! V2 (KServe / Triton) names are the canonical [`DataType`]; Decthings element
//! types are [`DecthingsType`]. Every conversion between the two goes through
//! [`DecthingsType::to_v2`] and [`DataType::to_decthings`]: nothing else in the
//! crate knows the table.

use std::fmt;

/// A V2 tensor element type.
///
/// Fixed-size types have the same little-endian byte layout in every wire
/// format this crate speaks, so their data is never rewritten in transit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataType {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
    /// Variable-size byte strings; in the V2 binary layout each element is a
    /// 4-byte little-endian length followed by that many bytes.
    Bytes,
}

impl DataType {
    /// Every V2 data type, in the order the V2 protocol document lists them.
    pub const ALL: [DataType; 14] = [
        DataType::Bool,
        DataType::U8,
        DataType::U16,
        DataType::U32,
        DataType::U64,
        DataType::I8,
        DataType::I16,
        DataType::I32,
        DataType::I64,
        DataType::F16,
        DataType::BF16,
        DataType::F32,
        DataType::F64,
        DataType::Bytes,
    ];

    /// The V2 wire name (`"FP32"`, `"BYTES"`, ...).
    pub const fn v2_name(self) -> &'static str {
        match self {
            DataType::Bool => "BOOL",
            DataType::U8 => "UINT8",
            DataType::U16 => "UINT16",
            DataType::U32 => "UINT32",
            DataType::U64 => "UINT64",
            DataType::I8 => "INT8",
            DataType::I16 => "INT16",
            DataType::I32 => "INT32",
            DataType::I64 => "INT64",
            DataType::F16 => "FP16",
            DataType::BF16 => "BF16",
            DataType::F32 => "FP32",
            DataType::F64 => "FP64",
            DataType::Bytes => "BYTES",
        }
    }

    /// Parses a V2 wire name. Exact match, as Triton does.
    pub fn from_v2_name(name: &str) -> Option<DataType> {
        DataType::ALL.into_iter().find(|d| d.v2_name() == name)
    }

    /// Parses either naming: V2 (`FP32`) or Decthings (`f32`). Used by
    /// configuration, where operators may write either.
    pub fn from_any_name(name: &str) -> Option<DataType> {
        let upper = name.to_ascii_uppercase();
        DataType::from_v2_name(&upper)
            .or_else(|| DecthingsType::from_name(name).map(DecthingsType::to_v2))
            .or(match name {
                "f16" => Some(DataType::F16),
                "bf16" => Some(DataType::BF16),
                _ => None,
            })
    }

    /// Size in bytes of one element, or `None` for [`DataType::Bytes`].
    pub const fn fixed_size(self) -> Option<usize> {
        match self {
            DataType::Bool | DataType::U8 | DataType::I8 => Some(1),
            DataType::U16 | DataType::I16 | DataType::F16 | DataType::BF16 => Some(2),
            DataType::U32 | DataType::I32 | DataType::F32 => Some(4),
            DataType::U64 | DataType::I64 | DataType::F64 => Some(8),
            DataType::Bytes => None,
        }
    }

    /// The Decthings type a tensor of this V2 type becomes when a Decthings
    /// client receives it. FP16 and BF16 have no Decthings type and widen
    /// (exactly) to `f32`; BYTES becomes `binary` unless the tensor says
    /// otherwise (see [`crate::tensor::Semantic`]).
    pub const fn to_decthings(self) -> DecthingsType {
        match self {
            DataType::Bool => DecthingsType::Boolean,
            DataType::U8 => DecthingsType::U8,
            DataType::U16 => DecthingsType::U16,
            DataType::U32 => DecthingsType::U32,
            DataType::U64 => DecthingsType::U64,
            DataType::I8 => DecthingsType::I8,
            DataType::I16 => DecthingsType::I16,
            DataType::I32 => DecthingsType::I32,
            DataType::I64 => DecthingsType::I64,
            DataType::F16 | DataType::BF16 | DataType::F32 => DecthingsType::F32,
            DataType::F64 => DecthingsType::F64,
            DataType::Bytes => DecthingsType::Binary,
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.v2_name())
    }
}

/// A Decthings element type, with its wire type byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DecthingsType {
    F32 = 1,
    F64 = 2,
    I8 = 3,
    I16 = 4,
    I32 = 5,
    I64 = 6,
    U8 = 7,
    U16 = 8,
    U32 = 9,
    U64 = 10,
    String = 11,
    Binary = 12,
    Boolean = 13,
    Image = 14,
    Audio = 15,
    Video = 16,
}

impl DecthingsType {
    pub const ALL: [DecthingsType; 16] = [
        DecthingsType::F32,
        DecthingsType::F64,
        DecthingsType::I8,
        DecthingsType::I16,
        DecthingsType::I32,
        DecthingsType::I64,
        DecthingsType::U8,
        DecthingsType::U16,
        DecthingsType::U32,
        DecthingsType::U64,
        DecthingsType::String,
        DecthingsType::Binary,
        DecthingsType::Boolean,
        DecthingsType::Image,
        DecthingsType::Audio,
        DecthingsType::Video,
    ];

    pub const fn type_byte(self) -> u8 {
        self as u8
    }

    pub fn from_type_byte(byte: u8) -> Option<DecthingsType> {
        DecthingsType::ALL
            .into_iter()
            .find(|t| t.type_byte() == byte)
    }

    /// The Decthings name (`"f32"`, `"image"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            DecthingsType::F32 => "f32",
            DecthingsType::F64 => "f64",
            DecthingsType::I8 => "i8",
            DecthingsType::I16 => "i16",
            DecthingsType::I32 => "i32",
            DecthingsType::I64 => "i64",
            DecthingsType::U8 => "u8",
            DecthingsType::U16 => "u16",
            DecthingsType::U32 => "u32",
            DecthingsType::U64 => "u64",
            DecthingsType::String => "string",
            DecthingsType::Binary => "binary",
            DecthingsType::Boolean => "boolean",
            DecthingsType::Image => "image",
            DecthingsType::Audio => "audio",
            DecthingsType::Video => "video",
        }
    }

    pub fn from_name(name: &str) -> Option<DecthingsType> {
        DecthingsType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The V2 type carrying this Decthings type. Variable-size types all
    /// become BYTES; what they were is kept in [`crate::tensor::Semantic`].
    pub const fn to_v2(self) -> DataType {
        match self {
            DecthingsType::F32 => DataType::F32,
            DecthingsType::F64 => DataType::F64,
            DecthingsType::I8 => DataType::I8,
            DecthingsType::I16 => DataType::I16,
            DecthingsType::I32 => DataType::I32,
            DecthingsType::I64 => DataType::I64,
            DecthingsType::U8 => DataType::U8,
            DecthingsType::U16 => DataType::U16,
            DecthingsType::U32 => DataType::U32,
            DecthingsType::U64 => DataType::U64,
            DecthingsType::Boolean => DataType::Bool,
            DecthingsType::String
            | DecthingsType::Binary
            | DecthingsType::Image
            | DecthingsType::Audio
            | DecthingsType::Video => DataType::Bytes,
        }
    }

    /// True for image, audio and video: elements carry a media format.
    pub const fn is_media(self) -> bool {
        matches!(
            self,
            DecthingsType::Image | DecthingsType::Audio | DecthingsType::Video
        )
    }

    /// True for the types whose elements are length-prefixed on the wire.
    pub const fn is_variable(self) -> bool {
        matches!(self.to_v2(), DataType::Bytes)
    }
}

impl fmt::Display for DecthingsType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_names_round_trip() {
        for d in DataType::ALL {
            assert_eq!(DataType::from_v2_name(d.v2_name()), Some(d));
        }
        assert_eq!(DataType::from_v2_name("fp32"), None);
    }

    #[test]
    fn either_naming_is_accepted() {
        assert_eq!(DataType::from_any_name("f32"), Some(DataType::F32));
        assert_eq!(DataType::from_any_name("FP32"), Some(DataType::F32));
        assert_eq!(DataType::from_any_name("boolean"), Some(DataType::Bool));
        assert_eq!(DataType::from_any_name("image"), Some(DataType::Bytes));
        assert_eq!(DataType::from_any_name("fp16"), Some(DataType::F16));
        assert_eq!(DataType::from_any_name("f16"), Some(DataType::F16));
        assert_eq!(DataType::from_any_name("bf16"), Some(DataType::BF16));
        assert_eq!(DataType::from_any_name("float32"), None);
    }

    #[test]
    fn decthings_table_is_consistent() {
        for t in DecthingsType::ALL {
            assert_eq!(DecthingsType::from_type_byte(t.type_byte()), Some(t));
            assert_eq!(DecthingsType::from_name(t.name()), Some(t));
            if !t.is_variable() {
                assert_eq!(t.to_v2().to_decthings(), t, "{t}");
            }
        }
        assert_eq!(DecthingsType::from_type_byte(0), None);
        assert_eq!(DecthingsType::from_type_byte(17), None);
        assert_eq!(DataType::F16.to_decthings(), DecthingsType::F32);
        assert_eq!(DataType::BF16.to_decthings(), DecthingsType::F32);
    }
}
