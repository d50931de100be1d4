//! What a new connection's first bytes say: HTTP/1, or HTTP/2 and whether
//! its handshake (the client preface and its first SETTINGS frame) has
//! fully arrived. A pure state machine fed the bytes as they are read; the
//! connection's I/O wrapper ([`super::conn::Sniffed`]) feeds it. It never
//! buffers or alters the bytes: hyper reads them as they came.

/// The HTTP/2 client connection preface (RFC 9113, section 3.4).
pub(super) const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The SETTINGS frame type.
const SETTINGS: u8 = 0x4;
/// Length of an HTTP/2 frame header.
const FRAME_HEADER: usize = 9;

/// What is known about the connection so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Not enough bytes to tell (nothing, or a prefix of the preface).
    Undecided,
    /// Not the HTTP/2 preface: HTTP/1 (its handshake is the first request
    /// head, which only the HTTP parser can tell complete).
    Http1,
    /// The HTTP/2 preface; `handshaken` once the first frame (SETTINGS)
    /// has fully arrived.
    Http2 { handshaken: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// `matched` bytes of the preface seen, all matching.
    Preface {
        matched: usize,
    },
    /// The preface matched; `got` bytes of the first frame header seen.
    FrameHeader {
        header: [u8; FRAME_HEADER],
        got: usize,
    },
    /// The first frame is SETTINGS; this much of its payload is still due.
    Settings {
        remaining: u32,
    },
    Http1,
    /// Preface and the first frame complete (or the first frame was not
    /// SETTINGS: then the HTTP/2 layer refuses the connection itself).
    Http2Ready,
}

/// Follows a connection's first bytes.
#[derive(Clone, Debug)]
pub(super) struct Sniffer {
    state: State,
}

impl Default for Sniffer {
    fn default() -> Self {
        Sniffer {
            state: State::Preface { matched: 0 },
        }
    }
}

impl Sniffer {
    /// True once nothing more can change the verdict.
    pub(super) fn settled(&self) -> bool {
        matches!(self.state, State::Http1 | State::Http2Ready)
    }

    pub(super) fn verdict(&self) -> Verdict {
        match self.state {
            State::Preface { matched } if matched < H2_PREFACE.len() => Verdict::Undecided,
            State::Http1 => Verdict::Http1,
            State::Http2Ready => Verdict::Http2 { handshaken: true },
            _ => Verdict::Http2 { handshaken: false },
        }
    }

    /// Takes the next bytes read from the connection.
    pub(super) fn feed(&mut self, mut bytes: &[u8]) -> Verdict {
        while !bytes.is_empty() && !self.settled() {
            bytes = self.step(bytes);
        }
        self.verdict()
    }

    /// Consumes what the current state needs from `bytes`; returns the rest.
    fn step<'a>(&mut self, bytes: &'a [u8]) -> &'a [u8] {
        match &mut self.state {
            State::Preface { matched } => {
                let want = &H2_PREFACE[*matched..];
                let n = want.len().min(bytes.len());
                if bytes[..n] != want[..n] {
                    self.state = State::Http1;
                    return &[];
                }
                *matched += n;
                if *matched == H2_PREFACE.len() {
                    self.state = State::FrameHeader {
                        header: [0; FRAME_HEADER],
                        got: 0,
                    };
                }
                &bytes[n..]
            }
            State::FrameHeader { header, got } => {
                let n = (FRAME_HEADER - *got).min(bytes.len());
                header[*got..*got + n].copy_from_slice(&bytes[..n]);
                *got += n;
                if *got == FRAME_HEADER {
                    let len = u32::from_be_bytes([0, header[0], header[1], header[2]]);
                    self.state = if header[3] == SETTINGS && len > 0 {
                        State::Settings { remaining: len }
                    } else {
                        State::Http2Ready
                    };
                }
                &bytes[n..]
            }
            State::Settings { remaining } => {
                // `remaining` is at most 2^24 - 1: the cast is lossless.
                let n = (*remaining as usize).min(bytes.len());
                *remaining -= n as u32;
                if *remaining == 0 {
                    self.state = State::Http2Ready;
                }
                &bytes[n..]
            }
            State::Http1 | State::Http2Ready => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in pieces of `piece` bytes; checks the verdict after
    /// all of it.
    fn check(input: &[u8], expected: Verdict) {
        for piece in [1, 2, 7, input.len().max(1)] {
            let mut s = Sniffer::default();
            let mut last = s.verdict();
            for c in input.chunks(piece) {
                last = s.feed(c);
            }
            assert_eq!(last, expected, "input {input:?} in pieces of {piece}");
        }
    }

    fn settings(payload_len: usize, flags: u8) -> Vec<u8> {
        let len = (payload_len as u32).to_be_bytes();
        let mut f = vec![len[1], len[2], len[3], SETTINGS, flags, 0, 0, 0, 0];
        f.extend(std::iter::repeat_n(0u8, payload_len));
        f
    }

    fn preface_then(rest: &[u8]) -> Vec<u8> {
        let mut v = H2_PREFACE.to_vec();
        v.extend_from_slice(rest);
        v
    }

    #[test]
    fn silence_and_preface_prefixes_are_undecided() {
        check(b"", Verdict::Undecided);
        check(b"PRI * HTTP/2.0\r\n", Verdict::Undecided);
        check(b"P", Verdict::Undecided);
    }

    #[test]
    fn anything_else_is_http1() {
        check(b"GET / HTTP/1.1\r\n", Verdict::Http1);
        check(b"GET /v2/mo", Verdict::Http1);
        check(b"PRI * HTTP/1.1\r\n", Verdict::Http1);
        check(b"POST", Verdict::Http1);
    }

    #[test]
    fn http2_is_handshaken_after_its_first_settings_frame() {
        check(H2_PREFACE, Verdict::Http2 { handshaken: false });
        let whole = preface_then(&settings(12, 0));
        check(
            &whole[..whole.len() - 1],
            Verdict::Http2 { handshaken: false },
        );
        check(&whole, Verdict::Http2 { handshaken: true });
        // An empty SETTINGS frame completes the handshake with its header.
        check(
            &preface_then(&settings(0, 0)),
            Verdict::Http2 { handshaken: true },
        );
        // Bytes after the handshake change nothing.
        let mut more = whole.clone();
        more.extend_from_slice(b"\x00\x00\x04\x08\x00\x00\x00\x00\x00");
        check(&more, Verdict::Http2 { handshaken: true });
    }

    #[test]
    fn a_first_frame_other_than_settings_is_left_to_http2() {
        // A PING as the first frame: HTTP/2 refuses it, not the sniffer.
        let ping = b"\x00\x00\x08\x06\x00\x00\x00\x00\x00";
        check(&preface_then(ping), Verdict::Http2 { handshaken: true });
    }

    #[test]
    fn the_largest_settings_length_is_counted_without_overflow() {
        let mut s = Sniffer::default();
        s.feed(H2_PREFACE);
        s.feed(&[0xff, 0xff, 0xff, SETTINGS, 0, 0, 0, 0, 0]);
        assert_eq!(s.verdict(), Verdict::Http2 { handshaken: false });
        s.feed(&vec![0; 0xff_ffff - 1]);
        assert_eq!(s.verdict(), Verdict::Http2 { handshaken: false });
        assert_eq!(s.feed(&[0, 1, 2]), Verdict::Http2 { handshaken: true });
    }
}
