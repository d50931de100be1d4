//! Bytes held as pieces (a body as it arrived, a tensor's data as slices
//! of the frames it came in), joined into one buffer only where something
//! needs them contiguous.

use bytes::{Bytes, BytesMut};

/// Joins pieces, without copying when at most one is non-empty.
pub fn concat(mut pieces: Vec<Bytes>) -> Bytes {
    pieces.retain(|p| !p.is_empty());
    match pieces.len() {
        0 => Bytes::new(),
        1 => pieces.pop().unwrap_or_default(),
        _ => {
            let mut out = BytesMut::with_capacity(pieces.iter().map(Bytes::len).sum());
            for p in pieces {
                out.extend_from_slice(&p);
            }
            out.freeze()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_piece_is_not_copied() {
        let data = Bytes::from_static(b"abc");
        let joined = concat(vec![Bytes::new(), data.clone(), Bytes::new()]);
        assert_eq!(joined.as_ptr(), data.as_ptr());
        assert_eq!(concat(Vec::new()), Bytes::new());
        assert_eq!(
            concat(vec![Bytes::from_static(b"ab"), Bytes::from_static(b"c")]),
            "abc"
        );
    }
}
