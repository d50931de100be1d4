//! Binary tensor data extension framing: a body is a JSON header of
//! `Inference-Header-Content-Length` bytes followed by each binary tensor's
//! bytes, in the order the header lists them. This module finds the header,
//! splits what follows into per-tensor pieces (slices of the incoming frames,
//! never copies), and checks the sizes the way Triton does. Sizes come from
//! the wire: they are added up with checked arithmetic. Never does I/O.

use bytes::{Bytes, BytesMut};

/// The request/response header giving the JSON header length.
pub const IHCL_HEADER: &str = "inference-header-content-length";

/// SageMaker's binary+json content type; its `json-header-size=N` parameter
/// replaces the IHCL header.
pub const SAGEMAKER_BINARY_CONTENT_TYPE: &str = "application/vnd.sagemaker-triton.binary+json";

/// A body's framing is inconsistent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FramingError {
    #[error("invalid Inference-Header-Content-Length {value:?}: expected a non-negative integer")]
    BadHeaderValue { value: String },
    #[error("invalid json-header-size in content type {value:?}")]
    BadSagemakerContentType { value: String },
    #[error("inference header size should be in range (0, {body}), got: {header}")]
    HeaderOutOfRange { header: u64, body: u64 },
    #[error("inference header of {header} bytes is over the limit of {limit}")]
    HeaderTooLarge { header: u64, limit: u64 },
    #[error("unexpected size for {subject}, expecting {missing} additional bytes")]
    ShortBody { subject: String, missing: u64 },
    #[error("unexpected additional data: {extra} bytes after the last binary tensor")]
    TrailingBytes { extra: u64 },
}

/// The body ended before every binary tensor was complete. Callers name the
/// tensor from its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("binary tensor #{tensor} ends early: {missing} more bytes were expected")]
pub struct ShortTensor {
    /// Index in the document of the first tensor that is not complete.
    pub tensor: usize,
    /// Bytes missing from there to the end of the last binary tensor
    /// (`u64::MAX` when the declared sizes add up to more than that).
    pub missing: u64,
}

/// Parses an `Inference-Header-Content-Length` value.
pub fn parse_ihcl(value: &[u8]) -> Result<u64, FramingError> {
    std::str::from_utf8(value)
        .ok()
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| FramingError::BadHeaderValue {
            value: String::from_utf8_lossy(value).into_owned(),
        })
}

/// If `content_type` is the SageMaker binary+json type, its header size.
pub fn sagemaker_header_size(content_type: &str) -> Option<Result<u64, FramingError>> {
    // Shorter than the type itself (`application/json`): known without
    // splitting it into parameters.
    if content_type.len() < SAGEMAKER_BINARY_CONTENT_TYPE.len() {
        return None;
    }
    let mut parts = content_type.split(';').map(str::trim);
    let essence = parts.next()?;
    if !essence.eq_ignore_ascii_case(SAGEMAKER_BINARY_CONTENT_TYPE) {
        return None;
    }
    let bad = || FramingError::BadSagemakerContentType {
        value: content_type.to_owned(),
    };
    let size = parts
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("json-header-size"))
        .map(|(_, v)| parse_ihcl(v.trim().trim_matches('"').as_bytes()).map_err(|_| bad()));
    Some(size.unwrap_or_else(|| Err(bad())))
}

/// Checks a header length against the body length (when known) and a limit,
/// as Triton does: a header must be shorter than the body it starts.
pub fn check_header_length(header: u64, body: Option<u64>, limit: u64) -> Result<(), FramingError> {
    if let Some(body) = body
        && header > body
    {
        return Err(FramingError::HeaderOutOfRange { header, body });
    }
    if header > limit {
        return Err(FramingError::HeaderTooLarge { header, limit });
    }
    Ok(())
}

/// Collects the first `len` bytes of a body: the JSON header. When the first
/// frame holds the whole header it is sliced out, not copied.
#[derive(Debug)]
pub struct HeaderReader {
    len: usize,
    buf: BytesMut,
}

impl HeaderReader {
    pub fn new(len: usize) -> Self {
        HeaderReader {
            len,
            buf: BytesMut::new(),
        }
    }

    /// Takes header bytes from the front of `frame`; returns the header once
    /// complete. What follows the header stays in `frame`.
    pub fn push(&mut self, frame: &mut Bytes) -> Option<Bytes> {
        if self.buf.is_empty() && frame.len() >= self.len {
            return Some(frame.split_to(self.len));
        }
        let take = (self.len - self.buf.len()).min(frame.len());
        self.buf.extend_from_slice(&frame.split_to(take));
        (self.buf.len() == self.len).then(|| std::mem::take(&mut self.buf).freeze())
    }

    /// Header bytes still missing.
    pub fn missing(&self) -> usize {
        self.len - self.buf.len()
    }
}

/// A slice of one tensor's binary data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Index of the tensor in the document.
    pub tensor: usize,
    pub data: Bytes,
    /// This piece completes the tensor.
    pub last: bool,
}

/// Splits the bytes after the header into per-tensor pieces.
#[derive(Debug)]
pub struct ChunkSplitter {
    /// `(tensor index, size)` of each binary tensor, in body order.
    sizes: Vec<(usize, u64)>,
    at: usize,
    /// Bytes still to come for `sizes[at]`.
    remaining: u64,
}

impl ChunkSplitter {
    pub fn new(sizes: Vec<(usize, u64)>) -> Self {
        let remaining = sizes.first().map_or(0, |s| s.1);
        ChunkSplitter {
            sizes,
            at: 0,
            remaining,
        }
    }

    /// How many binary tensors it splits a body into.
    pub fn tensors(&self) -> usize {
        self.sizes.len()
    }

    /// The declared size of the document's tensor `tensor` (0 when it is
    /// not binary).
    pub fn size_of(&self, tensor: usize) -> u64 {
        self.sizes.iter().find(|s| s.0 == tensor).map_or(0, |s| s.1)
    }

    /// Total bytes still expected; `None` when the declared sizes add up to
    /// more than `u64::MAX` (no body can hold them).
    pub fn remaining_total(&self) -> Option<u64> {
        self.sizes
            .iter()
            .skip(self.at + 1)
            .try_fold(self.remaining, |total, s| total.checked_add(s.1))
    }

    /// Splits `frame` into pieces appended to `out`. Bytes past the last
    /// tensor are an error.
    pub fn push(&mut self, mut frame: Bytes, out: &mut Vec<Piece>) -> Result<(), FramingError> {
        loop {
            let Some(&(tensor, _)) = self.sizes.get(self.at) else {
                if frame.is_empty() {
                    return Ok(());
                }
                return Err(FramingError::TrailingBytes {
                    extra: frame.len() as u64,
                });
            };
            if self.remaining == 0 {
                // Zero-size tensors still get their (empty) final piece.
                out.push(Piece {
                    tensor,
                    data: Bytes::new(),
                    last: true,
                });
                self.advance();
                continue;
            }
            if frame.is_empty() {
                return Ok(());
            }
            let take = self.remaining.min(frame.len() as u64) as usize;
            self.remaining -= take as u64;
            let last = self.remaining == 0;
            out.push(Piece {
                tensor,
                data: frame.split_to(take),
                last,
            });
            if last {
                self.advance();
            }
        }
    }

    fn advance(&mut self) {
        self.at += 1;
        self.remaining = self.sizes.get(self.at).map_or(0, |s| s.1);
    }

    /// Called at the end of the body: flushes trailing zero-size tensors and
    /// reports the first tensor that is short.
    pub fn finish(&mut self, out: &mut Vec<Piece>) -> Result<(), ShortTensor> {
        let _ = self.push(Bytes::new(), out);
        match self.sizes.get(self.at) {
            None => Ok(()),
            Some(&(tensor, _)) => Err(ShortTensor {
                tensor,
                missing: self.remaining_total().unwrap_or(u64::MAX),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ihcl_values() {
        assert_eq!(parse_ihcl(b"123"), Ok(123));
        assert_eq!(parse_ihcl(b" 0 "), Ok(0));
        for bad in [&b"-1"[..], b"", b"1e3", b"0x10", b"99999999999999999999999"] {
            assert!(parse_ihcl(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sagemaker_content_type() {
        assert_eq!(sagemaker_header_size("application/json"), None);
        assert_eq!(
            sagemaker_header_size(
                "application/vnd.sagemaker-triton.binary+json;json-header-size=42"
            ),
            Some(Ok(42))
        );
        assert_eq!(
            sagemaker_header_size(
                "Application/Vnd.Sagemaker-Triton.Binary+Json; json-header-size = 7"
            ),
            Some(Ok(7))
        );
        assert!(matches!(
            sagemaker_header_size("application/vnd.sagemaker-triton.binary+json"),
            Some(Err(_))
        ));
    }

    #[test]
    fn header_range() {
        assert_eq!(check_header_length(10, Some(20), 100), Ok(()));
        assert_eq!(
            check_header_length(30, Some(20), 100)
                .unwrap_err()
                .to_string(),
            "inference header size should be in range (0, 20), got: 30"
        );
        assert!(check_header_length(200, None, 100).is_err());
    }

    #[test]
    fn header_reader_slices_or_collects() {
        let mut r = HeaderReader::new(4);
        let mut f = Bytes::from_static(b"{}{}rest");
        assert_eq!(r.push(&mut f), Some(Bytes::from_static(b"{}{}")));
        assert_eq!(&f[..], b"rest");
        let mut r = HeaderReader::new(4);
        let mut a = Bytes::from_static(b"{}");
        assert_eq!(r.push(&mut a), None);
        assert_eq!(r.missing(), 2);
        let mut b = Bytes::from_static(b"{}x");
        assert_eq!(r.push(&mut b), Some(Bytes::from_static(b"{}{}")));
        assert_eq!(&b[..], b"x");
    }

    #[test]
    fn splits_across_frames() {
        let mut s = ChunkSplitter::new(vec![(0, 3), (2, 0), (3, 2)]);
        let mut out = Vec::new();
        s.push(Bytes::from_static(b"ab"), &mut out).unwrap();
        s.push(Bytes::from_static(b"cd"), &mut out).unwrap();
        assert_eq!(s.remaining_total(), Some(1));
        assert_eq!(
            s.finish(&mut out),
            Err(ShortTensor {
                tensor: 3,
                missing: 1
            })
        );
        s.push(Bytes::from_static(b"e"), &mut out).unwrap();
        assert_eq!(s.finish(&mut out), Ok(()));
        let got: Vec<(usize, &[u8], bool)> = out
            .iter()
            .map(|p| (p.tensor, &p.data[..], p.last))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, &b"ab"[..], false),
                (0, b"c", true),
                (2, b"", true),
                (3, b"d", false),
                (3, b"e", true)
            ]
        );
    }

    #[test]
    fn trailing_bytes() {
        let mut s = ChunkSplitter::new(vec![(0, 1)]);
        let mut out = Vec::new();
        assert_eq!(
            s.push(Bytes::from_static(b"abc"), &mut out),
            Err(FramingError::TrailingBytes { extra: 2 })
        );
    }

    /// Sizes from the wire near `u64::MAX`: the totals do not wrap.
    #[test]
    fn totals_do_not_overflow() {
        let mut s = ChunkSplitter::new(vec![(0, u64::MAX - 1), (1, 2), (2, 5)]);
        assert_eq!(s.remaining_total(), None);
        let mut out = Vec::new();
        s.push(Bytes::from_static(b"abc"), &mut out).unwrap();
        assert_eq!(s.remaining_total(), None);
        assert_eq!(
            s.finish(&mut out),
            Err(ShortTensor {
                tensor: 0,
                missing: u64::MAX
            })
        );
        let s = ChunkSplitter::new(vec![(0, u64::MAX - 1), (1, 1)]);
        assert_eq!(s.remaining_total(), Some(u64::MAX));
    }
}
