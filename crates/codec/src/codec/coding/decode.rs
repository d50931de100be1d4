//! Decompressing request bodies under a byte limit, a bounded amount of
//! work at a time: one network frame of a few kilobytes can inflate to
//! the whole limit, so output is produced in steps of [`STEP`] bytes with a
//! chance for other tasks to run between them.
//!
//! gzip bodies may have several members (`cat a.gz b.gz`), as RFC 1952
//! allows and Python's `gzip` and zlib-based servers read them.

use std::io::Write;

use bytes::Bytes;

use super::Coding;

/// Most output one step produces (plus at most one 32 KiB inflate block):
/// small enough that what a reader does with one step (parse it as JSON)
/// is a short stretch on a runtime thread.
pub const STEP: usize = 256 << 10;

/// Output sink that refuses to grow past a limit, so a decompression bomb
/// stops after at most the limit's worth of output. When only counting,
/// the output is not kept.
#[derive(Debug)]
struct Sink {
    buf: Vec<u8>,
    keep: bool,
    total: u64,
    limit: u64,
}

impl Write for Sink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.total = self.total.saturating_add(data.len() as u64);
        if self.total > self.limit {
            return Err(std::io::Error::other(LimitExceeded));
        }
        if self.keep {
            self.buf.extend_from_slice(data);
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("decompressed size limit exceeded")]
struct LimitExceeded;

/// Why decompression stopped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InflateError {
    #[error("decompressed body is over the limit")]
    TooLarge,
    #[error("{0}")]
    Corrupt(String),
}

#[derive(Debug)]
enum Inner {
    Gzip(flate2::write::MultiGzDecoder<Sink>),
    Deflate(flate2::write::ZlibDecoder<Sink>),
}

/// Streaming decompressor for a request body.
#[derive(Debug)]
pub struct Decoder {
    inner: Inner,
    coding: Coding,
    /// Compressed input not yet consumed, and how far into it.
    pending: Bytes,
    /// Compressed bytes seen (an empty stream is an error).
    seen: u64,
}

impl Decoder {
    /// `None` for identity.
    pub fn new(coding: Coding, limit: u64) -> Option<Decoder> {
        Decoder::with_sink(coding, limit, true)
    }

    /// A decoder that only counts the output against `limit`.
    pub fn counting(coding: Coding, limit: u64) -> Option<Decoder> {
        Decoder::with_sink(coding, limit, false)
    }

    fn with_sink(coding: Coding, limit: u64, keep: bool) -> Option<Decoder> {
        let sink = Sink {
            buf: Vec::new(),
            keep,
            total: 0,
            limit,
        };
        let inner = match coding {
            Coding::Identity => return None,
            Coding::Gzip => Inner::Gzip(flate2::write::MultiGzDecoder::new(sink)),
            Coding::Deflate => Inner::Deflate(flate2::write::ZlibDecoder::new(sink)),
        };
        Some(Decoder {
            inner,
            coding,
            pending: Bytes::new(),
            seen: 0,
        })
    }

    pub fn coding(&self) -> Coding {
        self.coding
    }

    fn sink(&mut self) -> &mut Sink {
        match &mut self.inner {
            Inner::Gzip(d) => d.get_mut(),
            Inner::Deflate(d) => d.get_mut(),
        }
    }

    /// Queues compressed input for [`Decoder::step`].
    pub fn feed(&mut self, data: Bytes) {
        self.seen += data.len() as u64;
        if self.pending.is_empty() {
            self.pending = data;
        } else {
            let mut joined = Vec::with_capacity(self.pending.len() + data.len());
            joined.extend_from_slice(&self.pending);
            joined.extend_from_slice(&data);
            self.pending = Bytes::from(joined);
        }
    }

    /// Whether queued input is left for another step.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Decompresses queued input until about [`STEP`] bytes came out or
    /// the input is used up; returns the output (kept decoders only).
    pub fn step(&mut self) -> Result<Bytes, InflateError> {
        let start = self.sink().total;
        while !self.pending.is_empty() && self.sink().total - start < STEP as u64 {
            let n = match &mut self.inner {
                Inner::Gzip(d) => d.write(&self.pending),
                Inner::Deflate(d) => d.write(&self.pending),
            }
            .map_err(classify)?;
            if n == 0 {
                return Err(InflateError::Corrupt(
                    "data after the end of the compressed stream".into(),
                ));
            }
            self.pending = self.pending.slice(n..);
        }
        // Output the decompressor still holds goes to the sink now, so it is
        // counted against the limit before the input is let go.
        match &mut self.inner {
            Inner::Gzip(d) => d.flush(),
            Inner::Deflate(d) => d.flush(),
        }
        .map_err(classify)?;
        Ok(Bytes::from(std::mem::take(&mut self.sink().buf)))
    }

    /// Decompresses `data` whole in one call (tests and small inputs).
    pub fn push(&mut self, data: &[u8]) -> Result<Bytes, InflateError> {
        self.feed(Bytes::copy_from_slice(data));
        let mut out = Vec::new();
        while self.has_pending() {
            out.extend_from_slice(&self.step()?);
        }
        Ok(Bytes::from(out))
    }

    /// Ends the stream: a truncated or empty stream is an error.
    pub fn finish(&mut self) -> Result<Bytes, InflateError> {
        let mut out = Vec::new();
        while self.has_pending() {
            out.extend_from_slice(&self.step()?);
        }
        match &mut self.inner {
            Inner::Gzip(d) => d.try_finish(),
            Inner::Deflate(d) => d.try_finish(),
        }
        .map_err(classify)?;
        if self.seen == 0 {
            return Err(InflateError::Corrupt("empty compressed stream".into()));
        }
        out.extend_from_slice(&std::mem::take(&mut self.sink().buf));
        Ok(Bytes::from(out))
    }
}

fn classify(e: std::io::Error) -> InflateError {
    if e.get_ref().is_some_and(|inner| inner.is::<LimitExceeded>()) {
        InflateError::TooLarge
    } else {
        InflateError::Corrupt(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::super::compress;
    use super::*;

    #[test]
    fn round_trip_in_pieces() {
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for coding in [Coding::Gzip, Coding::Deflate] {
            let packed = compress(&data, coding);
            let mut d = Decoder::new(coding, 1 << 30).unwrap();
            let mut out = Vec::new();
            for piece in packed.chunks(777) {
                out.extend_from_slice(&d.push(piece).unwrap());
            }
            out.extend_from_slice(&d.finish().unwrap());
            assert_eq!(out, data, "{coding:?}");
        }
    }

    #[test]
    fn bombs_stop_at_the_limit() {
        let zeros = vec![0u8; 10 << 20];
        let packed = compress(&zeros, Coding::Gzip);
        assert!(packed.len() < 100 << 10);
        let mut d = Decoder::new(Coding::Gzip, 1 << 20).unwrap();
        let mut produced = 0;
        let mut result = Ok(());
        for piece in packed.chunks(4096) {
            match d.push(piece) {
                Ok(b) => produced += b.len(),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        assert_eq!(result, Err(InflateError::TooLarge));
        assert!(produced <= 1 << 20);
    }

    #[test]
    fn one_frame_inflates_in_bounded_steps() {
        let zeros = vec![0u8; 20 << 20];
        let packed = compress(&zeros, Coding::Gzip);
        let mut d = Decoder::new(Coding::Gzip, 64 << 20).unwrap();
        d.feed(packed);
        let mut steps = 0;
        let mut total = 0;
        while d.has_pending() {
            let out = d.step().unwrap();
            assert!(out.len() <= STEP + (64 << 10), "{}", out.len());
            total += out.len();
            steps += 1;
        }
        total += d.finish().unwrap().len();
        assert_eq!(total, 20 << 20);
        assert!(steps >= 60, "{steps} steps");
    }

    #[test]
    fn multi_member_gzip_is_one_stream() {
        let mut packed = compress(b"hello ", Coding::Gzip).to_vec();
        packed.extend_from_slice(&compress(b"world", Coding::Gzip));
        for split in [1, 7, packed.len() / 2, packed.len()] {
            let mut d = Decoder::new(Coding::Gzip, 1 << 20).unwrap();
            let mut out = d.push(&packed[..split]).unwrap().to_vec();
            out.extend_from_slice(&d.push(&packed[split..]).unwrap());
            out.extend_from_slice(&d.finish().unwrap());
            assert_eq!(out, b"hello world", "split at {split}");
        }
        // Garbage after a member is still refused.
        let mut bad = compress(b"hello", Coding::Gzip).to_vec();
        bad.extend_from_slice(b"garbage!");
        let mut d = Decoder::new(Coding::Gzip, 1 << 20).unwrap();
        let r = d.push(&bad).and_then(|_| d.finish());
        assert!(matches!(r, Err(InflateError::Corrupt(_))), "{r:?}");
    }

    #[test]
    fn corrupt_and_truncated() {
        let mut d = Decoder::new(Coding::Gzip, 1 << 20).unwrap();
        assert!(matches!(
            d.push(b"not gzip at all"),
            Err(InflateError::Corrupt(_))
        ));
        let packed = compress(b"hello world", Coding::Gzip);
        let mut d = Decoder::new(Coding::Gzip, 1 << 20).unwrap();
        let _ = d.push(&packed[..packed.len() - 4]).unwrap();
        assert!(matches!(d.finish(), Err(InflateError::Corrupt(_))));
        let packed = compress(b"hello", Coding::Deflate);
        let mut d = Decoder::new(Coding::Deflate, 1 << 20).unwrap();
        let mut out = d.push(&packed).unwrap().to_vec();
        out.extend_from_slice(&d.finish().unwrap());
        assert_eq!(out, b"hello");
        let mut d = Decoder::new(Coding::Deflate, 1 << 20).unwrap();
        assert!(matches!(d.finish(), Err(InflateError::Corrupt(_))));
    }
}
