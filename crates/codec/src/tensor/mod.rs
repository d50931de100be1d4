//! The one tensor model every wire format decodes into and encodes from.
//!
//! A [`Tensor`] is a data type, a shape and its data in the V2 binary layout
//! (little-endian fixed-size elements, or length-prefixed BYTES elements),
//! held as a [`Bytes`] that is usually a slice of the incoming body. This
//! module never does I/O and never knows about HTTP.

mod bytes_elems;
mod dtype;
mod shape;

pub use bytes_elems::{BytesElements, BytesLayoutError};
pub use dtype::{DataType, DecthingsType};
pub use shape::{Shape, ShapeOverflow, element_count, write_dims};

pub mod bytes_layout {
    //! Helpers for the V2 BYTES element layout.
    pub use super::bytes_elems::{build, push, validate};
}

use bytes::Bytes;

/// What a BYTES (or BOOL) tensor meant in the format it came from. V2 has a
/// single BYTES type; Decthings distinguishes strings, binaries and media,
/// and media elements each carry a format (`"png"`, `"mp3"`, ...) beside
/// their data.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Semantic {
    /// No extra meaning: a plain V2 tensor.
    #[default]
    Plain,
    /// BYTES whose elements are UTF-8 text (Decthings `string`).
    String,
    /// BYTES of opaque bytes (Decthings `binary`).
    Binary,
    /// BYTES of media files (Decthings `image` / `audio` / `video`), one
    /// format per element, in element order.
    Media {
        kind: DecthingsType,
        formats: Vec<String>,
    },
}

/// A tensor's data does not match its type and shape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TensorError {
    #[error(transparent)]
    Shape(#[from] ShapeOverflow),
    #[error("{dtype} data of shape {shape} needs {expected} bytes, got {actual}")]
    ByteSize {
        dtype: DataType,
        shape: Shape,
        expected: u64,
        actual: u64,
    },
    #[error(transparent)]
    BytesLayout(#[from] BytesLayoutError),
}

/// A typed, shaped tensor whose data is in the V2 binary layout.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub dtype: DataType,
    pub shape: Shape,
    /// Little-endian elements, or V2 BYTES elements for [`DataType::Bytes`].
    pub data: Bytes,
    pub semantic: Semantic,
}

impl Tensor {
    /// Builds a tensor, checking that `data` holds exactly the elements the
    /// shape calls for.
    pub fn new(dtype: DataType, shape: Shape, data: Bytes) -> Result<Tensor, TensorError> {
        check_data(dtype, &shape, &data)?;
        Ok(Tensor {
            dtype,
            shape,
            data,
            semantic: Semantic::Plain,
        })
    }

    pub fn with_semantic(mut self, semantic: Semantic) -> Tensor {
        self.semantic = semantic;
        self
    }

    /// Number of elements (the shape product; checked when built).
    pub fn element_count(&self) -> u64 {
        self.shape.element_count().unwrap_or(0)
    }

    /// The Decthings type this tensor has when a Decthings client sees it.
    pub fn decthings_type(&self) -> DecthingsType {
        match (&self.semantic, self.dtype) {
            (Semantic::String, DataType::Bytes) => DecthingsType::String,
            (Semantic::Media { kind, .. }, DataType::Bytes) => *kind,
            (_, dtype) => dtype.to_decthings(),
        }
    }
}

/// Checks `data` against `dtype` and `shape`: the exact byte size for
/// fixed-size types, exactly `count` well-formed elements for BYTES.
pub fn check_data(dtype: DataType, shape: &Shape, data: &[u8]) -> Result<(), TensorError> {
    let count = shape.element_count()?;
    match dtype.fixed_size() {
        Some(size) => {
            let expected = count
                .checked_mul(size as u64)
                .ok_or_else(|| ShapeOverflow {
                    shape: shape.clone(),
                })?;
            if expected != data.len() as u64 {
                return Err(TensorError::ByteSize {
                    dtype,
                    shape: shape.clone(),
                    expected,
                    actual: data.len() as u64,
                });
            }
            Ok(())
        }
        None => Ok(bytes_elems::validate(data, count)?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_size_is_checked() {
        let t = Tensor::new(
            DataType::I32,
            Shape::new(vec![2]),
            Bytes::from_static(&[0; 8]),
        );
        assert!(t.is_ok());
        let err = Tensor::new(
            DataType::I32,
            Shape::new(vec![3]),
            Bytes::from_static(&[0; 8]),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "INT32 data of shape [3] needs 12 bytes, got 8"
        );
    }

    #[test]
    fn overflowing_byte_size_is_an_error() {
        let err = Tensor::new(DataType::F64, Shape::new(vec![1 << 62]), Bytes::new()).unwrap_err();
        assert!(matches!(err, TensorError::Shape(_)), "{err}");
    }

    #[test]
    fn decthings_type_follows_semantic() {
        let t = Tensor::new(DataType::Bytes, Shape::new(vec![0]), Bytes::new()).unwrap();
        assert_eq!(t.decthings_type(), DecthingsType::Binary);
        assert_eq!(
            t.clone().with_semantic(Semantic::String).decthings_type(),
            DecthingsType::String
        );
        let media = Semantic::Media {
            kind: DecthingsType::Audio,
            formats: vec![],
        };
        assert_eq!(
            t.with_semantic(media).decthings_type(),
            DecthingsType::Audio
        );
    }
}
