//! Tensor shapes with checked element counts.

use std::fmt;

/// A concrete tensor shape: every dimension is a size (no wildcards; rules
/// with `-1` live in the rules module).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Shape(Vec<u64>);

/// The product of a shape's dimensions does not fit in 64 bits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("shape {shape} has more elements than fit in 64 bits")]
pub struct ShapeOverflow {
    pub shape: Shape,
}

impl Shape {
    pub fn new(dims: Vec<u64>) -> Shape {
        Shape(dims)
    }

    pub fn scalar() -> Shape {
        Shape(Vec::new())
    }

    pub fn dims(&self) -> &[u64] {
        &self.0
    }

    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// Number of elements: the product of the dimensions, checked. A scalar
    /// (rank 0) has one element; any zero dimension makes it empty.
    #[inline]
    pub fn element_count(&self) -> Result<u64, ShapeOverflow> {
        element_count(&self.0).ok_or_else(|| ShapeOverflow {
            shape: self.clone(),
        })
    }
}

/// Checked product of `dims`; `None` on overflow. A zero anywhere wins over
/// an overflowing neighbour: `[0, 2^40, 2^40]` has zero elements.
///
/// One pass over the (few) dimensions: a search for a zero and then a fold
/// cost a call and twice the loop for the one or two dimensions most
/// tensors have, three times per tensor read.
#[inline]
pub fn element_count(dims: &[u64]) -> Option<u64> {
    let mut count = Some(1u64);
    for &d in dims {
        if d == 0 {
            return Some(0);
        }
        count = count.and_then(|c| c.checked_mul(d));
    }
    count
}

impl From<Vec<u64>> for Shape {
    fn from(dims: Vec<u64>) -> Shape {
        Shape(dims)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_dims(f, &self.0)
    }
}

/// `[2,3]`: how shapes and shape patterns are written in messages.
pub fn write_dims<T: fmt::Display>(f: &mut fmt::Formatter<'_>, dims: &[T]) -> fmt::Result {
    f.write_str("[")?;
    for (i, d) in dims.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{d}")?;
    }
    f.write_str("]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(Shape::scalar().element_count(), Ok(1));
        assert_eq!(Shape::new(vec![2, 3, 4]).element_count(), Ok(24));
        assert_eq!(Shape::new(vec![0, 65536]).element_count(), Ok(0));
        assert_eq!(
            Shape::new(vec![u64::MAX, u64::MAX, 0]).element_count(),
            Ok(0)
        );
        assert!(Shape::new(vec![1 << 32, 1 << 32]).element_count().is_err());
        assert_eq!(
            Shape::new(vec![1 << 31, 1 << 32]).element_count(),
            Ok(1 << 63)
        );
    }

    #[test]
    fn display_is_compact() {
        assert_eq!(Shape::new(vec![2, 3]).to_string(), "[2,3]");
        assert_eq!(Shape::scalar().to_string(), "[]");
    }
}
