//! A bound on what one Redis reply may be, checked on the bytes before the
//! client's parser sees them. redis-rs parses whatever a server sends,
//! however large: an array announcing 2^31-1 elements followed by an
//! endless stream of `:0` makes it build values until memory runs out. The
//! store's replies are small (two integers, a script's SHA-1, a short
//! error, the handshake's few fields), so [`Scanner`] follows the RESP2 and
//! RESP3 framing (type byte, line, length or element count) without
//! building anything, and refuses a reply that announces more than
//! [`MAX_ELEMENTS`] elements or a string longer than [`MAX_REPLY_BYTES`],
//! nests deeper than [`MAX_DEPTH`], or takes more than [`MAX_REPLY_BYTES`]
//! on the wire before it ends.
//!
//! No I/O: bytes in, a verdict out; once refused it refuses everything.

/// The most bytes one reply may take on the wire. The longest the store
/// gets is an error a script raises (a few hundred bytes) or the
/// handshake's map of server fields.
pub(super) const MAX_REPLY_BYTES: u64 = 64 << 10;

/// The most elements an array, set, push or map (pairs) may announce. The
/// scripts answer with two; the handshake's map has seven fields.
pub(super) const MAX_ELEMENTS: u64 = 1024;

/// The most aggregates open at once (the handshake's map holds a list of
/// modules, each a map: three).
pub(super) const MAX_DEPTH: usize = 16;

/// Why a reply was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum ReplyError {
    #[error("Redis reply longer than {MAX_REPLY_BYTES} bytes")]
    TooLong,
    #[error("Redis reply announcing {0} elements (at most {MAX_ELEMENTS})")]
    TooMany(u64),
    #[error("Redis reply with a {0}-byte string (at most {MAX_REPLY_BYTES})")]
    TooLarge(u64),
    #[error("Redis reply nested deeper than {MAX_DEPTH}")]
    TooDeep,
    #[error("not a Redis reply (byte {0:#04x})")]
    Malformed(u8),
}

/// Follows the replies of one connection, byte by byte across reads.
#[derive(Debug, Default)]
pub(super) struct Scanner {
    state: State,
    /// Values still to come in each aggregate open, innermost last.
    open: Vec<u64>,
    /// Bytes of the reply under way so far.
    bytes: u64,
    /// The first refusal: every later call returns it again.
    failed: Option<ReplyError>,
}

#[derive(Clone, Copy, Debug, Default)]
enum State {
    /// At the type byte of the next value.
    #[default]
    Type,
    /// In a line whose content does not matter, up to its `\n`.
    Line,
    /// In the length of a string or the count of an aggregate.
    Number {
        kind: Sized,
        value: u64,
        negative: bool,
    },
    /// In a string's bytes, its `\r\n` included.
    Bulk { left: u64 },
}

/// What the number after a type byte counts.
#[derive(Clone, Copy, Debug)]
enum Sized {
    /// Bytes of a string (`$`, `!`, `=`).
    String,
    /// Values of an aggregate: `per` for each counted element, plus
    /// `extra` (an attribute `|` is followed by the value it annotates).
    Aggregate { per: u64, extra: u64 },
}

impl Scanner {
    /// Follows `data`, the next bytes the connection read; an error once
    /// the replies go past a bound (and for good).
    pub(super) fn feed(&mut self, data: &[u8]) -> Result<(), ReplyError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = self.run(data);
        if let Err(e) = &result {
            self.failed = Some(e.clone());
        }
        result
    }

    fn run(&mut self, mut data: &[u8]) -> Result<(), ReplyError> {
        while let Some(&b) = data.first() {
            if let State::Bulk { left } = self.state {
                let n = left.min(data.len() as u64);
                self.count(n)?;
                data = &data[n as usize..];
                self.state = State::Bulk { left: left - n };
                if left == n {
                    self.value_done();
                }
                continue;
            }
            self.count(1)?;
            data = &data[1..];
            self.state = match self.state {
                State::Type => start(b)?,
                State::Line if b == b'\n' => {
                    self.value_done();
                    State::Type
                }
                State::Line => State::Line,
                State::Number {
                    kind,
                    value,
                    negative,
                } => match b {
                    b'\n' => self.counted(kind, value, negative)?,
                    b'\r' => self.state,
                    b'-' if value == 0 && !negative => State::Number {
                        kind,
                        value,
                        negative: true,
                    },
                    b'0'..=b'9' => State::Number {
                        kind,
                        // Past any bound already: no need to grow further.
                        value: (value * 10 + u64::from(b - b'0')).min(u64::MAX / 100),
                        negative,
                    },
                    _ => return Err(ReplyError::Malformed(b)),
                },
                State::Bulk { .. } => unreachable!("handled above"),
            };
        }
        Ok(())
    }

    /// `n` more bytes of the reply under way.
    fn count(&mut self, n: u64) -> Result<(), ReplyError> {
        self.bytes += n;
        if self.bytes > MAX_REPLY_BYTES {
            return Err(ReplyError::TooLong);
        }
        Ok(())
    }

    /// The number of a string or an aggregate has been read.
    fn counted(&mut self, kind: Sized, value: u64, negative: bool) -> Result<State, ReplyError> {
        if negative {
            // A null string or aggregate (`$-1`, `*-1`): a whole value.
            self.value_done();
            return Ok(State::Type);
        }
        match kind {
            Sized::String if value > MAX_REPLY_BYTES => Err(ReplyError::TooLarge(value)),
            Sized::String => Ok(State::Bulk { left: value + 2 }),
            Sized::Aggregate { .. } if value > MAX_ELEMENTS => Err(ReplyError::TooMany(value)),
            Sized::Aggregate { per, extra } => {
                let values = value * per + extra;
                if values == 0 {
                    self.value_done();
                } else if self.open.len() == MAX_DEPTH {
                    return Err(ReplyError::TooDeep);
                } else {
                    self.open.push(values);
                }
                Ok(State::Type)
            }
        }
    }

    /// A value ended: one fewer in its aggregate, which may end too; the
    /// reply is over when no aggregate is open.
    fn value_done(&mut self) {
        self.state = State::Type;
        while let Some(left) = self.open.last_mut() {
            *left -= 1;
            if *left > 0 {
                return;
            }
            self.open.pop();
        }
        self.bytes = 0;
    }
}

/// The state after a value's type byte `b`.
fn start(b: u8) -> Result<State, ReplyError> {
    let number = |kind| State::Number {
        kind,
        value: 0,
        negative: false,
    };
    let aggregate = |per, extra| number(Sized::Aggregate { per, extra });
    Ok(match b {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => State::Line,
        b'$' | b'!' | b'=' => number(Sized::String),
        b'*' | b'~' | b'>' => aggregate(1, 0),
        b'%' => aggregate(2, 0),
        b'|' => aggregate(2, 1),
        b => return Err(ReplyError::Malformed(b)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` whole, then one byte at a time to a second scanner:
    /// both must agree.
    fn check(input: &[u8]) -> Result<(), ReplyError> {
        let whole = Scanner::default().feed(input);
        let mut s = Scanner::default();
        let bytewise = input.iter().try_for_each(|b| s.feed(&[*b]));
        assert_eq!(whole, bytewise, "{:?}", String::from_utf8_lossy(input));
        whole
    }

    #[test]
    fn the_replies_the_store_gets_pass() {
        let hello = b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n\
            $5\r\nproto\r\n:3\r\n$2\r\nid\r\n:5\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n\
            $4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*1\r\n%2\r\n+name\r\n+json\r\n+ver\r\n:1\r\n";
        let replies: [&[u8]; 9] = [
            b"+OK\r\n",
            b"+PONG\r\n",
            b"*2\r\n:0\r\n:0\r\n",
            b"*2\r\n:1\r\n:1500\r\n",
            b":3\r\n",
            b"$40\r\n0123456789012345678901234567890123456789\r\n",
            b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
            b"$-1\r\n*-1\r\n_\r\n*0\r\n$0\r\n\r\n",
            hello,
        ];
        for r in replies {
            assert_eq!(check(r), Ok(()), "{:?}", String::from_utf8_lossy(r));
        }
        // A thousand replies in a row: each is bounded on its own.
        assert_eq!(check(&b"*2\r\n:0\r\n:12345\r\n".repeat(1000)), Ok(()));
        assert_eq!(check(&b"|1\r\n+ttl\r\n:3\r\n:7\r\n".repeat(10)), Ok(()));
    }

    #[test]
    fn sizes_past_the_bounds_are_refused_from_the_header() {
        assert_eq!(
            check(b"*2147483647\r\n:0\r\n"),
            Err(ReplyError::TooMany(2147483647))
        );
        assert_eq!(check(b"%1025\r\n"), Err(ReplyError::TooMany(1025)), "pairs");
        assert_eq!(check(b"*1024\r\n"), Ok(()));
        assert_eq!(
            check(b"$9999999999999999999999\r\n"),
            Err(ReplyError::TooLarge(u64::MAX / 100))
        );
        assert_eq!(check(b"$65537\r\n"), Err(ReplyError::TooLarge(65537)));
        assert_eq!(check(&b"*1\r\n".repeat(17)), Err(ReplyError::TooDeep));
        assert_eq!(check(b"*2\r\n:0\r\n?"), Err(ReplyError::Malformed(b'?')));
        assert_eq!(check(b"$1x\r\n"), Err(ReplyError::Malformed(b'x')));
    }

    #[test]
    fn a_reply_that_never_ends_is_refused_at_the_byte_bound() {
        // Within every announced count and length, yet longer in all.
        let string = [b"$40000\r\n".as_slice(), &[b'a'; 40_000], b"\r\n"].concat();
        let endless = [b"*1000\r\n".as_slice(), &string, &string].concat();
        assert_eq!(check(&endless), Err(ReplyError::TooLong));
        assert_eq!(check(&[b"*1\r\n".as_slice(), &string].concat()), Ok(()));
        let line = [b"+".as_slice(), &[b'a'; 70_000]].concat();
        assert_eq!(check(&line), Err(ReplyError::TooLong));
        // Once refused, always refused.
        let mut s = Scanner::default();
        assert!(s.feed(&line).is_err());
        assert_eq!(s.feed(b"+OK\r\n"), Err(ReplyError::TooLong));
    }
}
