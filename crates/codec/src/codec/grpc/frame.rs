//! gRPC's length-prefixed messages: each message on a stream is a 1-byte
//! compressed flag, a 4-byte big-endian length and that many bytes.
//!
//! [`FrameDecoder`] is an explicit state machine fed `Bytes` chunks as they
//! arrive (HTTP/2 DATA frames cut messages anywhere). A message that sits
//! in one chunk comes out as a slice of it; one that spans chunks is joined
//! once, into a buffer of exactly its size. The declared length is checked
//! against the limit on the 5-byte prefix, **before** any of the message is
//! buffered, and the first error is final. [`encode`] writes a prefix and
//! keeps the message's own pieces, so a large message is never copied.
//!
//! Never does I/O, and knows nothing of compression: a compressed message
//! (flag 1) is handed out as it is, for a caller that negotiated a
//! `grpc-encoding` to decompress within its own limit.

use std::collections::VecDeque;

use bytes::{Buf, Bytes, BytesMut};

/// Bytes before each message: the compressed flag and the length.
pub const PREFIX_LEN: usize = 5;

/// What a decoder accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLimits {
    /// Largest message, in bytes as sent (compressed or not). Without it a
    /// peer declaring 4 GiB would make the decoder wait for, and buffer,
    /// 4 GiB.
    pub max_message_bytes: u64,
    /// Whether a `grpc-encoding` was negotiated for this stream: without
    /// one, a message flagged compressed cannot be read and is refused.
    pub compression: bool,
}

/// One message as it came off the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Flag 1: the message is compressed with the stream's `grpc-encoding`.
    pub compressed: bool,
    pub message: Bytes,
}

/// Why a stream of messages cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("gRPC message of {declared} bytes is over the limit of {limit} bytes")]
    TooLarge { declared: u64, limit: u64 },
    #[error("gRPC message is compressed but no grpc-encoding was negotiated")]
    CompressedWithoutEncoding,
    #[error("gRPC message has compressed flag {0}; only 0 and 1 exist")]
    BadFlag(u8),
    #[error("gRPC stream ended inside a message: {received} of {expected} bytes received")]
    Truncated { expected: u64, received: u64 },
}

#[derive(Debug)]
enum State {
    /// Reading the 5-byte prefix; `have` bytes of it are in `prefix`.
    Prefix {
        prefix: [u8; PREFIX_LEN],
        have: usize,
    },
    /// Reading a message of `len` bytes; `parts` holds what came so far
    /// (only when it spans chunks).
    Message {
        compressed: bool,
        len: usize,
        parts: Vec<Bytes>,
        received: usize,
    },
    /// Terminal: every later call returns this error.
    Failed(FrameError),
}

/// Splits a stream of chunks into gRPC messages.
#[derive(Debug)]
pub struct FrameDecoder {
    limits: FrameLimits,
    state: State,
    /// Chunks fed and not yet consumed, in order.
    input: VecDeque<Bytes>,
}

impl FrameDecoder {
    pub fn new(limits: FrameLimits) -> Self {
        FrameDecoder {
            limits,
            state: State::Prefix {
                prefix: [0; PREFIX_LEN],
                have: 0,
            },
            input: VecDeque::new(),
        }
    }

    /// Adds the next chunk of the stream. Nothing is read until
    /// [`FrameDecoder::decode`].
    pub fn push(&mut self, chunk: Bytes) {
        if !chunk.is_empty() && !matches!(self.state, State::Failed(_)) {
            self.input.push_back(chunk);
        }
    }

    /// The next whole message, `Ok(None)` when more bytes are needed.
    pub fn decode(&mut self) -> Result<Option<Frame>, FrameError> {
        loop {
            match &mut self.state {
                State::Failed(e) => return Err(e.clone()),
                State::Prefix { prefix, have } => {
                    *have += take_into(&mut self.input, &mut prefix[*have..]);
                    if *have < PREFIX_LEN {
                        return Ok(None);
                    }
                    let prefix = *prefix;
                    match self.start_message(prefix) {
                        Ok(state) => self.state = state,
                        Err(e) => return Err(self.fail(e)),
                    }
                }
                State::Message {
                    compressed,
                    len,
                    parts,
                    received,
                } => {
                    let (compressed, len) = (*compressed, *len);
                    // The whole message in the first chunk: a slice of it.
                    if parts.is_empty()
                        && let Some(front) = self.input.front_mut()
                        && front.len() >= len
                    {
                        let message = front.split_to(len);
                        if front.is_empty() {
                            self.input.pop_front();
                        }
                        self.reset();
                        return Ok(Some(Frame {
                            compressed,
                            message,
                        }));
                    }
                    while *received < len {
                        let Some(mut chunk) = self.input.pop_front() else {
                            return Ok(None);
                        };
                        let want = len - *received;
                        if chunk.len() > want {
                            self.input.push_front(chunk.split_off(want));
                        }
                        *received += chunk.len();
                        parts.push(chunk);
                    }
                    let message = join(std::mem::take(parts), len);
                    self.reset();
                    return Ok(Some(Frame {
                        compressed,
                        message,
                    }));
                }
            }
        }
    }

    /// Ends the stream: an error if it stopped inside a message (or the
    /// decoder had failed), otherwise `Ok`. Call after `decode` returned
    /// `Ok(None)` for the last time.
    pub fn finish(&self) -> Result<(), FrameError> {
        let buffered: usize = self.input.iter().map(Bytes::len).sum();
        match &self.state {
            State::Failed(e) => Err(e.clone()),
            State::Prefix { have: 0, .. } if buffered == 0 => Ok(()),
            State::Prefix { have, .. } => Err(FrameError::Truncated {
                expected: PREFIX_LEN as u64,
                received: (have + buffered) as u64,
            }),
            State::Message { len, received, .. } => Err(FrameError::Truncated {
                expected: *len as u64,
                received: (received + buffered) as u64,
            }),
        }
    }

    /// Bytes held for the message in progress and chunks not yet read.
    pub fn buffered(&self) -> usize {
        let held = match &self.state {
            State::Message { received, .. } => *received,
            _ => 0,
        };
        held + self.input.iter().map(Bytes::len).sum::<usize>()
    }

    /// Checks a prefix and starts its message.
    fn start_message(&self, prefix: [u8; PREFIX_LEN]) -> Result<State, FrameError> {
        let compressed = match prefix[0] {
            0 => false,
            1 if self.limits.compression => true,
            1 => return Err(FrameError::CompressedWithoutEncoding),
            flag => return Err(FrameError::BadFlag(flag)),
        };
        let declared = u64::from(u32::from_be_bytes([
            prefix[1], prefix[2], prefix[3], prefix[4],
        ]));
        if declared > self.limits.max_message_bytes {
            return Err(FrameError::TooLarge {
                declared,
                limit: self.limits.max_message_bytes,
            });
        }
        let len = usize::try_from(declared).map_err(|_| FrameError::TooLarge {
            declared,
            limit: self.limits.max_message_bytes,
        })?;
        Ok(State::Message {
            compressed,
            len,
            parts: Vec::new(),
            received: 0,
        })
    }

    fn reset(&mut self) {
        self.state = State::Prefix {
            prefix: [0; PREFIX_LEN],
            have: 0,
        };
    }

    fn fail(&mut self, e: FrameError) -> FrameError {
        self.state = State::Failed(e.clone());
        self.input.clear();
        e
    }
}

/// Moves bytes from the front of `input` into `out`; returns how many.
fn take_into(input: &mut VecDeque<Bytes>, out: &mut [u8]) -> usize {
    let mut filled = 0;
    while filled < out.len() {
        let Some(front) = input.front_mut() else {
            break;
        };
        let n = front.len().min(out.len() - filled);
        out[filled..filled + n].copy_from_slice(&front[..n]);
        front.advance(n);
        filled += n;
        if front.is_empty() {
            input.pop_front();
        }
    }
    filled
}

/// The pieces of one message in one buffer of exactly `len` bytes (already
/// checked against the limit).
fn join(parts: Vec<Bytes>, len: usize) -> Bytes {
    if parts.len() == 1 {
        return parts.into_iter().next().unwrap_or_default();
    }
    let mut out = BytesMut::with_capacity(len);
    for p in parts {
        out.extend_from_slice(&p);
    }
    out.freeze()
}

/// The message is longer than a gRPC length prefix can say (4 GiB - 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("gRPC message of {0} bytes is longer than a length prefix can hold")]
pub struct MessageTooLong(pub u64);

/// The 5-byte prefix of a message of `len` bytes.
pub fn prefix(compressed: bool, len: u64) -> Result<[u8; PREFIX_LEN], MessageTooLong> {
    let len = u32::try_from(len).map_err(|_| MessageTooLong(len))?;
    let [a, b, c, d] = len.to_be_bytes();
    Ok([u8::from(compressed), a, b, c, d])
}

/// An uncompressed message made of `pieces`, framed: the prefix, then the
/// pieces themselves (not copied).
pub fn encode(pieces: Vec<Bytes>) -> Result<Vec<Bytes>, MessageTooLong> {
    let len = pieces.iter().map(|p| p.len() as u64).sum();
    let mut out = Vec::with_capacity(pieces.len() + 1);
    out.push(Bytes::copy_from_slice(&prefix(false, len)?));
    out.extend(pieces.into_iter().filter(|p| !p.is_empty()));
    Ok(out)
}

#[cfg(test)]
mod tests;
