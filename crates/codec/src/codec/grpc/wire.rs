//! Protobuf messages written as pieces: the small fields encoded into a
//! buffer, each large `bytes` field kept as the caller's own `Bytes` with
//! its field key and length written around it. A 100 MB tensor in
//! `raw_input_contents` is never copied: the message is a list of slices
//! that a body writes one after another.

use bytes::{Bytes, BytesMut};
use prost::Message;
use prost::encoding::{WireType, encode_key, encode_varint};

/// `bytes` fields shorter than this are copied into the running buffer
/// (a piece of their own would cost more than the copy).
pub const INLINE_MAX: usize = 1024;

/// Builds one protobuf message as a list of pieces.
#[derive(Debug, Default)]
pub struct PieceWriter {
    pieces: Vec<Bytes>,
    buf: BytesMut,
    len: u64,
}

impl PieceWriter {
    pub fn new() -> Self {
        PieceWriter::default()
    }

    /// Encodes `message`'s fields (prost writes them in field order).
    pub fn message(&mut self, message: &impl Message) {
        let before = self.buf.len();
        self.buf.reserve(message.encoded_len());
        // Cannot fail: the buffer was just given the room.
        let _ = message.encode(&mut self.buf);
        self.len += (self.buf.len() - before) as u64;
    }

    /// A length-delimited `bytes` field `field` whose value is `pieces`
    /// back to back (one tensor's data in several slices). Pieces of
    /// [`INLINE_MAX`] bytes or more are kept as they are.
    pub fn bytes_field(&mut self, field: u32, pieces: &[Bytes]) {
        let len: u64 = pieces.iter().map(|p| p.len() as u64).sum();
        let before = self.buf.len();
        encode_key(field, WireType::LengthDelimited, &mut self.buf);
        encode_varint(len, &mut self.buf);
        self.len += (self.buf.len() - before) as u64 + len;
        for piece in pieces {
            if piece.len() < INLINE_MAX {
                self.buf.extend_from_slice(piece);
            } else {
                self.flush();
                self.pieces.push(piece.clone());
            }
        }
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The message's pieces, in order.
    pub fn finish(mut self) -> Vec<Bytes> {
        self.flush();
        self.pieces
    }

    fn flush(&mut self) {
        if !self.buf.is_empty() {
            self.pieces.push(self.buf.split().freeze());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::grpc::proto::inference::ModelInferRequest;

    #[test]
    fn pieces_are_the_message_prost_writes() {
        let big = Bytes::from(vec![5u8; 3000]);
        let small = Bytes::from_static(b"abc");
        let mut w = PieceWriter::new();
        let head = ModelInferRequest {
            model_name: "m".into(),
            ..Default::default()
        };
        w.message(&head);
        w.bytes_field(7, &[small.clone(), big.clone()]);
        w.bytes_field(7, &[]);
        let total = w.len();
        let pieces = w.finish();
        assert_eq!(pieces.len(), 3, "head and small, big, the empty field");
        assert_eq!(pieces[1].as_ptr(), big.as_ptr());
        let joined: Vec<u8> = pieces.iter().flat_map(|p| p.iter().copied()).collect();
        assert_eq!(joined.len() as u64, total);
        let whole = ModelInferRequest {
            model_name: "m".into(),
            raw_input_contents: vec![[&small[..], &big[..]].concat().into(), Bytes::new()],
            ..Default::default()
        };
        assert_eq!(joined, whole.encode_to_vec());
    }
}
