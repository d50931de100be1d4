//! Compressing whole buffers (assembled replies, tests' request bodies).
//! The caller decides where this runs: large bodies belong on a blocking
//! thread.

use std::io::Write;

use bytes::Bytes;
use flate2::Compression;

use super::Coding;
use crate::codec::pieces::concat;

/// Compresses a complete buffer.
pub fn compress(data: &[u8], coding: Coding) -> Bytes {
    compress_all(&[Bytes::copy_from_slice(data)], coding)
}

/// Compresses a body held in pieces, as one stream (no joined copy).
pub fn compress_all(pieces: &[Bytes], coding: Coding) -> Bytes {
    let level = Compression::fast();
    let size: usize = pieces.iter().map(Bytes::len).sum();
    let sink = Vec::with_capacity(size / 4 + 64);
    let out = match coding {
        Coding::Identity => return concat(pieces.to_vec()),
        Coding::Gzip => {
            let mut e = flate2::write::GzEncoder::new(sink, level);
            pieces
                .iter()
                .try_for_each(|p| e.write_all(p))
                .and_then(|()| e.finish())
        }
        Coding::Deflate => {
            let mut e = flate2::write::ZlibEncoder::new(sink, level);
            pieces
                .iter()
                .try_for_each(|p| e.write_all(p))
                .and_then(|()| e.finish())
        }
    };
    // Writing to a Vec cannot fail.
    Bytes::from(out.unwrap_or_default())
}
