//! Compressing streamed replies frame by frame, flushing after each so a
//! streamed reply stays streamed (assembled ones are compressed whole by
//! the codec's `compress_all`, on a blocking thread when they are large).

use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use flate2::Compression;
use http_body::Frame;

use super::Coding;
use crate::http::body::BoxError;

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
