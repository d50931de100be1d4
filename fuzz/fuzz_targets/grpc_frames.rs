//! gRPC length-prefixed message framing: `FrameDecoder` over fuzzer-chosen
//! limits and chunk sizes. Messages must come out exactly as a reference
//! reading of the stream gives them, a declared length over the limit must
//! be refused before its bytes arrive, and nothing is ever buffered beyond
//! one message plus the unread input.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use tensorgate_codec::codec::grpc::{FrameDecoder, FrameError, FrameLimits};

/// The reference reading: messages and the error (or truncation) that ends
/// the stream, in one pass over the whole input.
fn reference(stream: &[u8], limits: FrameLimits) -> (Vec<(bool, Vec<u8>)>, Result<(), FrameError>) {
    let mut out = Vec::new();
    let mut at = 0;
    while at < stream.len() {
        let Some(prefix) = stream[at..].first_chunk::<5>() else {
            return (out, Err(FrameError::Truncated { expected: 5, received: (stream.len() - at) as u64 }));
        };
        let compressed = match prefix[0] {
            0 => false,
            1 if limits.compression => true,
            1 => return (out, Err(FrameError::CompressedWithoutEncoding)),
            f => return (out, Err(FrameError::BadFlag(f))),
        };
        let len = u64::from(u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]));
        if len > limits.max_message_bytes {
            return (out, Err(FrameError::TooLarge { declared: len, limit: limits.max_message_bytes }));
        }
        let body = &stream[at + 5..];
        if (body.len() as u64) < len {
            return (out, Err(FrameError::Truncated { expected: len, received: body.len() as u64 }));
        }
        out.push((compressed, body[..len as usize].to_vec()));
        at += 5 + len as usize;
    }
    (out, Ok(()))
}

fuzz_target!(|data: &[u8]| {
    let Some((&[limit, flags, chunk], stream)) = data.split_first_chunk::<3>() else {
        return;
    };
    let limits = FrameLimits {
        max_message_bytes: u64::from(limit) * 4,
        compression: flags & 1 == 1,
    };
    let chunk = usize::from(chunk).max(1);
    let (want, end) = reference(stream, limits);
    let mut d = FrameDecoder::new(limits);
    let mut got = Vec::new();
    let mut failed = None;
    for piece in stream.chunks(chunk) {
        d.push(Bytes::copy_from_slice(piece));
        assert!(d.buffered() <= limits.max_message_bytes as usize + 5 + chunk);
        loop {
            match d.decode() {
                Ok(Some(f)) => got.push((f.compressed, f.message.to_vec())),
                Ok(None) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if failed.is_some() {
            break;
        }
    }
    assert_eq!(got, want);
    match failed {
        Some(e) => assert_eq!(Err(e), end),
        None => assert_eq!(d.finish(), end),
    }
});
