//! Decthings unsigned varints: one byte below 253, else a marker byte (253,
//! 254, 255) and a 16-, 32- or 64-bit big-endian value. Only the shortest
//! form is valid: the official writers never emit another, so a longer one is
//! treated as corruption rather than silently accepted.

use bytes::BufMut;

/// Why a varint could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarintError {
    /// The input ends inside the varint.
    Incomplete,
    /// The value is encoded in a longer form than its size calls for.
    Overlong { value: u64 },
}

/// Reads a varint at the front of `input`: `(value, bytes used)`.
pub fn read(input: &[u8]) -> Result<(u64, usize), VarintError> {
    let (&first, rest) = input.split_first().ok_or(VarintError::Incomplete)?;
    let (value, width, min) = match first {
        0..=252 => return Ok((u64::from(first), 1)),
        253 => {
            let b = rest.first_chunk::<2>().ok_or(VarintError::Incomplete)?;
            (u64::from(u16::from_be_bytes(*b)), 2, 253)
        }
        254 => {
            let b = rest.first_chunk::<4>().ok_or(VarintError::Incomplete)?;
            (u64::from(u32::from_be_bytes(*b)), 4, 1 << 16)
        }
        255 => {
            let b = rest.first_chunk::<8>().ok_or(VarintError::Incomplete)?;
            (u64::from_be_bytes(*b), 8, 1 << 32)
        }
    };
    if value < min {
        return Err(VarintError::Overlong { value });
    }
    Ok((value, 1 + width))
}

/// Number of bytes [`write()`] uses for `value`.
pub const fn encoded_len(value: u64) -> usize {
    if value < 253 {
        1
    } else if value < 1 << 16 {
        3
    } else if value < 1 << 32 {
        5
    } else {
        9
    }
}

/// Appends the shortest encoding of `value`.
pub fn write(out: &mut impl BufMut, value: u64) {
    if value < 253 {
        out.put_u8(value as u8);
    } else if value < 1 << 16 {
        out.put_u8(253);
        out.put_u16(value as u16);
    } else if value < 1 << 32 {
        out.put_u8(254);
        out.put_u32(value as u32);
    } else {
        out.put_u8(255);
        out.put_u64(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(value: u64, bytes: &[u8]) {
        let mut out = Vec::new();
        write(&mut out, value);
        assert_eq!(out, bytes, "encoding {value}");
        assert_eq!(encoded_len(value), bytes.len());
        assert_eq!(read(bytes), Ok((value, bytes.len())), "decoding {value}");
    }

    #[test]
    fn boundaries() {
        check(0, &[0]);
        check(18, &[18]);
        check(252, &[252]);
        check(253, &[253, 0, 253]);
        check(819, &[253, 3, 51]);
        check(65535, &[253, 255, 255]);
        check(65536, &[254, 0, 1, 0, 0]);
        check(u32::MAX as u64, &[254, 255, 255, 255, 255]);
        check(1 << 32, &[255, 0, 0, 0, 1, 0, 0, 0, 0]);
        check(u64::MAX, &[255; 9]);
    }

    #[test]
    fn errors() {
        assert_eq!(read(&[]), Err(VarintError::Incomplete));
        assert_eq!(read(&[253, 1]), Err(VarintError::Incomplete));
        assert_eq!(read(&[254, 0, 0, 0]), Err(VarintError::Incomplete));
        assert_eq!(read(&[255, 0]), Err(VarintError::Incomplete));
        assert_eq!(read(&[253, 0, 5]), Err(VarintError::Overlong { value: 5 }));
        assert_eq!(
            read(&[254, 0, 0, 255, 255]),
            Err(VarintError::Overlong { value: 65535 })
        );
        assert_eq!(
            read(&[255, 0, 0, 0, 0, 0, 0, 0, 7]),
            Err(VarintError::Overlong { value: 7 })
        );
    }
}
