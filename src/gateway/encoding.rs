//! Content codings: decompressing request bodies under a byte limit, and
//! compressing replies a client accepts compressed. HTTP's `deflate` is the
//! zlib format (RFC 9110 §8.4.1.2), as Triton uses it.

use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use flate2::Compression;
use http::HeaderMap;
use http::header;
use http_body::Frame;

use super::body::BoxError;
use super::error::GatewayError;

/// A content coding the gateway reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    Identity,
    Gzip,
    Deflate,
}

impl Coding {
    pub fn name(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
        }
    }
}

/// The coding of a request body, from `Content-Encoding`. Anything but
/// gzip, deflate or identity is a 415.
pub fn request_coding(headers: &HeaderMap) -> Result<Coding, GatewayError> {
    let mut coding = Coding::Identity;
    for value in headers.get_all(header::CONTENT_ENCODING) {
        let text = value.to_str().unwrap_or("?");
        for token in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let this = match token.to_ascii_lowercase().as_str() {
                "identity" => continue,
                "gzip" | "x-gzip" => Coding::Gzip,
                "deflate" => Coding::Deflate,
                _ => {
                    return Err(GatewayError::UnsupportedEncoding {
                        encoding: text.to_owned(),
                    });
                }
            };
            if coding != Coding::Identity {
                // Stacked codings are legal but nobody sends them.
                return Err(GatewayError::UnsupportedEncoding {
                    encoding: text.to_owned(),
                });
            }
            coding = this;
        }
    }
    Ok(coding)
}

/// Picks a reply coding from `Accept-Encoding`: gzip, then deflate, when
/// acceptable (q > 0); identity otherwise.
pub fn negotiate(headers: &HeaderMap) -> Coding {
    let mut gzip = None;
    let mut deflate = None;
    let mut star = None;
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(text) = value.to_str() else { continue };
        for item in text.split(',') {
            let mut parts = item.split(';').map(str::trim);
            let name = parts.next().unwrap_or("").to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            match name.as_str() {
                "gzip" | "x-gzip" => gzip = Some(q),
                "deflate" => deflate = Some(q),
                "*" => star = Some(q),
                _ => {}
            }
        }
    }
    let ok = |q: Option<f32>| q.or(star).is_some_and(|q| q > 0.0);
    if ok(gzip) {
        Coding::Gzip
    } else if ok(deflate) {
        Coding::Deflate
    } else {
        Coding::Identity
    }
}

/// Output sink that refuses to grow past a limit, so a decompression bomb
/// stops after at most the limit's worth of output.
#[derive(Debug)]
struct Limited {
    buf: Vec<u8>,
    total: u64,
    limit: u64,
}

impl Write for Limited {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.total += data.len() as u64;
        if self.total > self.limit {
            return Err(std::io::Error::other(LimitExceeded));
        }
        self.buf.extend_from_slice(data);
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
#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError {
    TooLarge,
    Corrupt(String),
}

enum Inner {
    Gzip(flate2::write::GzDecoder<Limited>),
    Deflate(flate2::write::ZlibDecoder<Limited>),
}

/// Streaming decompressor for a request body.
pub struct Decoder {
    inner: Inner,
    coding: Coding,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("coding", &self.coding)
            .finish()
    }
}

impl Decoder {
    /// `None` for identity.
    pub fn new(coding: Coding, limit: u64) -> Option<Decoder> {
        let sink = Limited {
            buf: Vec::new(),
            total: 0,
            limit,
        };
        let inner = match coding {
            Coding::Identity => return None,
            Coding::Gzip => Inner::Gzip(flate2::write::GzDecoder::new(sink)),
            Coding::Deflate => Inner::Deflate(flate2::write::ZlibDecoder::new(sink)),
        };
        Some(Decoder { inner, coding })
    }

    pub fn coding(&self) -> Coding {
        self.coding
    }

    fn sink(&mut self) -> &mut Limited {
        match &mut self.inner {
            Inner::Gzip(d) => d.get_mut(),
            Inner::Deflate(d) => d.get_mut(),
        }
    }

    /// Decompresses `data`; returns what it produced.
    pub fn push(&mut self, mut data: &[u8]) -> Result<Bytes, DecodeError> {
        while !data.is_empty() {
            let n = match &mut self.inner {
                Inner::Gzip(d) => d.write(data),
                Inner::Deflate(d) => d.write(data),
            }
            .map_err(classify)?;
            if n == 0 {
                return Err(DecodeError::Corrupt(
                    "data after the end of the compressed stream".into(),
                ));
            }
            data = &data[n..];
        }
        Ok(Bytes::from(std::mem::take(&mut self.sink().buf)))
    }

    /// Ends the stream: a truncated stream is an error.
    pub fn finish(&mut self) -> Result<Bytes, DecodeError> {
        let complete = match &mut self.inner {
            Inner::Gzip(d) => d.try_finish().map(|()| true),
            Inner::Deflate(d) => d.try_finish().map(|()| d.total_in() > 0),
        }
        .map_err(classify)?;
        if !complete {
            return Err(DecodeError::Corrupt("empty compressed stream".into()));
        }
        Ok(Bytes::from(std::mem::take(&mut self.sink().buf)))
    }
}

fn classify(e: std::io::Error) -> DecodeError {
    if e.get_ref().is_some_and(|inner| inner.is::<LimitExceeded>()) {
        DecodeError::TooLarge
    } else {
        DecodeError::Corrupt(e.to_string())
    }
}

enum EncInner {
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
    Deflate(flate2::write::ZlibEncoder<Vec<u8>>),
}

/// Compresses a body frame by frame, flushing after each so streamed
/// replies stay streamed.
pub struct CompressBody<B> {
    inner: B,
    enc: Option<EncInner>,
}

impl<B> std::fmt::Debug for CompressBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompressBody").finish_non_exhaustive()
    }
}

impl<B> CompressBody<B> {
    pub fn new(inner: B, coding: Coding) -> Self {
        let level = Compression::fast();
        let enc = match coding {
            Coding::Gzip => Some(EncInner::Gzip(flate2::write::GzEncoder::new(
                Vec::new(),
                level,
            ))),
            Coding::Deflate => Some(EncInner::Deflate(flate2::write::ZlibEncoder::new(
                Vec::new(),
                level,
            ))),
            Coding::Identity => None,
        };
        CompressBody { inner, enc }
    }
}

/// Compresses a complete buffer.
pub fn compress(data: &[u8], coding: Coding) -> Bytes {
    let level = Compression::fast();
    let out = match coding {
        Coding::Identity => return Bytes::copy_from_slice(data),
        Coding::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::with_capacity(data.len() / 2), level);
            let _ = e.write_all(data);
            e.finish()
        }
        Coding::Deflate => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::with_capacity(data.len() / 2), level);
            let _ = e.write_all(data);
            e.finish()
        }
    };
    Bytes::from(out.unwrap_or_default())
}

impl<B> http_body::Body for CompressBody<B>
where
    B: http_body::Body<Data = Bytes, Error = BoxError> + Unpin,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            let Some(enc) = this.enc.as_mut() else {
                return Pin::new(&mut this.inner).poll_frame(cx);
            };
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    let out = match enc {
                        EncInner::Gzip(e) => e
                            .write_all(&data)
                            .and_then(|()| e.flush())
                            .map(|()| e.get_mut()),
                        EncInner::Deflate(e) => e
                            .write_all(&data)
                            .and_then(|()| e.flush())
                            .map(|()| e.get_mut()),
                    };
                    let buf = out.map_err(|e| Box::new(e) as BoxError)?;
                    if buf.is_empty() {
                        continue;
                    }
                    let bytes = Bytes::from(std::mem::take(buf));
                    return Poll::Ready(Some(Ok(Frame::data(bytes))));
                }
                Poll::Ready(None) => {
                    let tail = match this.enc.take() {
                        Some(EncInner::Gzip(e)) => e.finish(),
                        Some(EncInner::Deflate(e)) => e.finish(),
                        None => Ok(Vec::new()),
                    }
                    .map_err(|e| Box::new(e) as BoxError)?;
                    // Leave `enc` empty: the next poll reads the (ended) inner body.
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from(tail)))));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.enc.is_none() && self.inner.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(name: &str, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
        h
    }

    #[test]
    fn request_codings() {
        assert_eq!(request_coding(&HeaderMap::new()).unwrap(), Coding::Identity);
        assert_eq!(
            request_coding(&headers("content-encoding", "GZIP")).unwrap(),
            Coding::Gzip
        );
        assert_eq!(
            request_coding(&headers("content-encoding", "deflate")).unwrap(),
            Coding::Deflate
        );
        assert!(request_coding(&headers("content-encoding", "br")).is_err());
        assert!(request_coding(&headers("content-encoding", "gzip, deflate")).is_err());
    }

    #[test]
    fn negotiation() {
        assert_eq!(negotiate(&HeaderMap::new()), Coding::Identity);
        assert_eq!(
            negotiate(&headers("accept-encoding", "gzip, deflate")),
            Coding::Gzip
        );
        assert_eq!(
            negotiate(&headers("accept-encoding", "gzip;q=0, deflate")),
            Coding::Deflate
        );
        assert_eq!(
            negotiate(&headers("accept-encoding", "br")),
            Coding::Identity
        );
        assert_eq!(negotiate(&headers("accept-encoding", "*")), Coding::Gzip);
        assert_eq!(
            negotiate(&headers("accept-encoding", "identity")),
            Coding::Identity
        );
    }

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
        assert_eq!(result, Err(DecodeError::TooLarge));
        assert!(produced <= 1 << 20);
    }

    #[test]
    fn corrupt_and_truncated() {
        let mut d = Decoder::new(Coding::Gzip, 1 << 20).unwrap();
        assert!(matches!(
            d.push(b"not gzip at all"),
            Err(DecodeError::Corrupt(_))
        ));
        let packed = compress(b"hello world", Coding::Gzip);
        let mut d = Decoder::new(Coding::Gzip, 1 << 20).unwrap();
        let _ = d.push(&packed[..packed.len() - 4]).unwrap();
        assert!(matches!(d.finish(), Err(DecodeError::Corrupt(_))));
        let packed = compress(b"hello", Coding::Deflate);
        let mut d = Decoder::new(Coding::Deflate, 1 << 20).unwrap();
        let mut out = d.push(&packed).unwrap().to_vec();
        out.extend_from_slice(&d.finish().unwrap());
        assert_eq!(out, b"hello");
    }
}
