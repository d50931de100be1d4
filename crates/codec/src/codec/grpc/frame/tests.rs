use super::*;

const LIMITS: FrameLimits = FrameLimits {
    max_message_bytes: 64,
    compression: false,
};

fn framed(flag: u8, message: &[u8]) -> Vec<u8> {
    let mut out = vec![flag];
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// Feeds `chunks` one by one, decoding after each; returns the messages
/// and the result of `finish` (or the first error).
fn check(limits: FrameLimits, chunks: &[&[u8]]) -> (Vec<Frame>, Result<(), FrameError>) {
    let mut d = FrameDecoder::new(limits);
    let mut out = Vec::new();
    for chunk in chunks {
        d.push(Bytes::copy_from_slice(chunk));
        loop {
            match d.decode() {
                Ok(Some(f)) => out.push(f),
                Ok(None) => break,
                Err(e) => return (out, Err(e)),
            }
        }
    }
    let end = d.finish();
    (out, end)
}

fn plain(message: &'static [u8]) -> Frame {
    Frame {
        compressed: false,
        message: Bytes::from_static(message),
    }
}

#[test]
fn messages_in_one_chunk_and_across_chunks() {
    let mut stream = framed(0, b"hello");
    stream.extend(framed(0, b""));
    stream.extend(framed(0, b"world!"));
    let want = vec![plain(b"hello"), plain(b""), plain(b"world!")];
    assert_eq!(check(LIMITS, &[&stream]), (want.clone(), Ok(())));
    // Every cut of the stream into two chunks, and byte by byte.
    for cut in 0..=stream.len() {
        let (a, b) = stream.split_at(cut);
        assert_eq!(check(LIMITS, &[a, b]), (want.clone(), Ok(())), "cut {cut}");
    }
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(check(LIMITS, &bytes), (want, Ok(())));
}

#[test]
fn a_message_in_one_chunk_is_a_slice_of_it() {
    let chunk = Bytes::from(framed(0, &[7u8; 40]));
    let mut d = FrameDecoder::new(LIMITS);
    d.push(chunk.clone());
    let f = d.decode().unwrap().unwrap();
    assert_eq!(f.message.as_ptr(), chunk[PREFIX_LEN..].as_ptr());
    assert_eq!(f.message.len(), 40);
    assert_eq!(d.decode(), Ok(None));
    assert_eq!(d.buffered(), 0);
}

#[test]
fn the_limit_is_checked_on_the_prefix_before_buffering() {
    // The prefix alone declares 65 bytes: refused with nothing else sent.
    let (out, end) = check(LIMITS, &[&[0, 0, 0, 0, 65]]);
    assert!(out.is_empty());
    assert_eq!(
        end,
        Err(FrameError::TooLarge {
            declared: 65,
            limit: 64
        })
    );
    assert_eq!(
        end.unwrap_err().to_string(),
        "gRPC message of 65 bytes is over the limit of 64 bytes"
    );
    // 4 GiB - 1 declared: still refused at once.
    let (_, end) = check(LIMITS, &[&[0, 0xff, 0xff, 0xff, 0xff]]);
    assert_eq!(
        end,
        Err(FrameError::TooLarge {
            declared: u64::from(u32::MAX),
            limit: 64
        })
    );
    // Exactly the limit is fine.
    let (out, end) = check(LIMITS, &[&framed(0, &[1; 64])]);
    assert_eq!((out.len(), end), (1, Ok(())));
}

#[test]
fn flags() {
    let (_, end) = check(LIMITS, &[&framed(1, b"x")]);
    assert_eq!(end, Err(FrameError::CompressedWithoutEncoding));
    let negotiated = FrameLimits {
        compression: true,
        ..LIMITS
    };
    let (out, end) = check(negotiated, &[&framed(1, b"x")]);
    assert_eq!(
        out,
        vec![Frame {
            compressed: true,
            message: Bytes::from_static(b"x")
        }]
    );
    assert_eq!(end, Ok(()));
    let (_, end) = check(negotiated, &[&framed(2, b"x")]);
    assert_eq!(end, Err(FrameError::BadFlag(2)));
    assert_eq!(
        end.unwrap_err().to_string(),
        "gRPC message has compressed flag 2; only 0 and 1 exist"
    );
}

#[test]
fn the_first_error_is_final() {
    let mut d = FrameDecoder::new(LIMITS);
    d.push(Bytes::from_static(&[9, 0, 0, 0, 0]));
    assert_eq!(d.decode(), Err(FrameError::BadFlag(9)));
    d.push(Bytes::from(framed(0, b"ok")));
    assert_eq!(d.decode(), Err(FrameError::BadFlag(9)));
    assert_eq!(d.finish(), Err(FrameError::BadFlag(9)));
    assert_eq!(d.buffered(), 0);
}

#[test]
fn truncation_is_reported_at_the_end() {
    let stream = framed(0, b"hello");
    let (out, end) = check(LIMITS, &[&stream[..3]]);
    assert!(out.is_empty());
    assert_eq!(
        end,
        Err(FrameError::Truncated {
            expected: 5,
            received: 3
        })
    );
    let (_, end) = check(LIMITS, &[&stream[..7]]);
    assert_eq!(
        end,
        Err(FrameError::Truncated {
            expected: 5,
            received: 2
        })
    );
    assert_eq!(
        end.unwrap_err().to_string(),
        "gRPC stream ended inside a message: 2 of 5 bytes received"
    );
    assert_eq!(check(LIMITS, &[]), (vec![], Ok(())));
}

#[test]
fn encode_keeps_the_pieces() {
    let big = Bytes::from(vec![3u8; 1 << 20]);
    let framed = encode(vec![Bytes::from_static(b"ab"), big.clone(), Bytes::new()]).unwrap();
    assert_eq!(framed.len(), 3);
    assert_eq!(&framed[0][..], &[0, 0, 0x10, 0, 2]);
    assert_eq!(framed[2].as_ptr(), big.as_ptr());
    assert_eq!(prefix(true, 258), Ok([1, 0, 0, 1, 2]));
    assert_eq!(prefix(false, 1 << 32), Err(MessageTooLong(1 << 32)));
    // What encode writes, the decoder reads back.
    let limits = FrameLimits {
        max_message_bytes: 2 << 20,
        compression: false,
    };
    let mut d = FrameDecoder::new(limits);
    for piece in framed {
        d.push(piece);
    }
    let f = d.decode().unwrap().unwrap();
    assert_eq!(f.message.len(), 2 + (1 << 20));
    assert_eq!(&f.message[..3], &[b'a', b'b', 3]);
}
