//! The V2 BYTES element layout: each element is a 4-byte little-endian
//! length followed by that many bytes, elements back to back.

use bytes::{BufMut, Bytes};

/// A BYTES payload is not a whole number of well-formed elements.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BytesLayoutError {
    #[error("BYTES element {index} is truncated: its length prefix is cut off at byte {offset}")]
    TruncatedLength { index: u64, offset: usize },
    #[error(
        "BYTES element {index} declares {declared} bytes but only {available} remain at byte {offset}"
    )]
    TruncatedElement {
        index: u64,
        offset: usize,
        declared: u64,
        available: usize,
    },
    #[error("BYTES data holds {found} elements, expected {expected}")]
    CountMismatch { expected: u64, found: u64 },
}

/// Iterates over the elements of a V2 BYTES payload, yielding each element
/// as a slice of `data` (zero copy).
#[derive(Clone, Debug)]
pub struct BytesElements<'a> {
    data: &'a [u8],
    offset: usize,
    index: u64,
}

impl<'a> BytesElements<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        BytesElements {
            data,
            offset: 0,
            index: 0,
        }
    }
}

impl<'a> Iterator for BytesElements<'a> {
    type Item = Result<&'a [u8], BytesLayoutError>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = &self.data[self.offset..];
        if rest.is_empty() {
            return None;
        }
        let Some(len_bytes) = rest.first_chunk::<4>() else {
            let err = BytesLayoutError::TruncatedLength {
                index: self.index,
                offset: self.offset,
            };
            self.offset = self.data.len();
            return Some(Err(err));
        };
        let len = u32::from_le_bytes(*len_bytes) as usize;
        let body = &rest[4..];
        if body.len() < len {
            let err = BytesLayoutError::TruncatedElement {
                index: self.index,
                offset: self.offset,
                declared: len as u64,
                available: body.len(),
            };
            self.offset = self.data.len();
            return Some(Err(err));
        }
        self.offset += 4 + len;
        self.index += 1;
        Some(Ok(&body[..len]))
    }
}

/// Checks that `data` is exactly `expected` well-formed BYTES elements.
pub fn validate(data: &[u8], expected: u64) -> Result<(), BytesLayoutError> {
    let mut found = 0u64;
    for element in BytesElements::new(data) {
        element?;
        found += 1;
    }
    if found != expected {
        return Err(BytesLayoutError::CountMismatch { expected, found });
    }
    Ok(())
}

/// Builds a V2 BYTES payload from elements.
pub fn build<I, E>(elements: I) -> Bytes
where
    I: IntoIterator<Item = E>,
    E: AsRef<[u8]>,
{
    let mut out = Vec::new();
    for e in elements {
        push(&mut out, e.as_ref());
    }
    Bytes::from(out)
}

/// Appends one element. Elements longer than `u32::MAX` cannot be
/// represented; callers check that against their limits first (every limit in
/// this crate is far below 4 GiB), so this only asserts it in debug builds.
pub fn push(out: &mut impl BufMut, element: &[u8]) {
    debug_assert!(u32::try_from(element.len()).is_ok());
    out.put_u32_le(element.len() as u32);
    out.put_slice(element);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let data = build(["", "a", "hé"]);
        assert_eq!(
            &data[..],
            b"\x00\x00\x00\x00\x01\x00\x00\x00a\x03\x00\x00\x00h\xc3\xa9"
        );
        let items: Vec<&[u8]> = BytesElements::new(&data).map(|e| e.unwrap()).collect();
        assert_eq!(items, vec![&b""[..], b"a", "hé".as_bytes()]);
        assert_eq!(validate(&data, 3), Ok(()));
    }

    #[test]
    fn malformed() {
        assert_eq!(
            validate(b"\x01\x00", 1),
            Err(BytesLayoutError::TruncatedLength {
                index: 0,
                offset: 0
            })
        );
        assert_eq!(
            validate(b"\x05\x00\x00\x00ab", 1),
            Err(BytesLayoutError::TruncatedElement {
                index: 0,
                offset: 0,
                declared: 5,
                available: 2
            })
        );
        assert_eq!(
            validate(b"\x00\x00\x00\x00", 2),
            Err(BytesLayoutError::CountMismatch {
                expected: 2,
                found: 1
            })
        );
    }
}
