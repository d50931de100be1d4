//! Passthrough request bodies in gzip or deflate go to the backend as they
//! came, but their decompressed size is counted against the route's limit
//! on the way, so a decompression bomb is stopped at the limit instead of
//! being inflated by the backend.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;

use super::Coding;
use super::Decoder;
use crate::http::body::BoxError;

/// A compressed body passed on as it is, while its decompressed size is
/// counted against a limit: a frame goes on only once everything up to its
/// end inflated within the limit, and the last frame only once the stream
/// ended whole, so neither a decompression bomb past the limit nor a
/// corrupt or truncated stream ever reaches the backend complete. Frames go
/// on one behind.
#[derive(Debug)]
pub struct Inflated<B> {
    inner: B,
    decoder: Decoder,
    /// The frame being counted.
    counting: Option<Frame<Bytes>>,
    /// A counted frame, let go when the next one arrives or the stream
    /// ended whole.
    held: Option<Frame<Bytes>>,
    ended: bool,
}

impl<B> Inflated<B> {
    /// `Err(inner)` for identity (nothing to count).
    pub fn new(inner: B, coding: Coding, limit: u64) -> Result<Inflated<B>, B> {
        match Decoder::counting(coding, limit) {
            Some(decoder) => Ok(Inflated {
                inner,
                decoder,
                counting: None,
                held: None,
                ended: false,
            }),
            None => Err(inner),
        }
    }
}

impl<B> http_body::Body for Inflated<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if this.counting.is_some() {
                if let Err(e) = this.decoder.step() {
                    return Poll::Ready(Some(Err(Box::new(e))));
                }
                if this.decoder.has_pending() {
                    // One step per poll: let other tasks run.
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                let counted = this.counting.take();
                if let Some(previous) = std::mem::replace(&mut this.held, counted) {
                    return Poll::Ready(Some(Ok(previous)));
                }
                continue;
            }
            if this.ended {
                return Poll::Ready(this.held.take().map(Ok));
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e.into()))),
                Poll::Ready(Some(Ok(frame))) => {
                    if let Some(data) = frame.data_ref() {
                        this.decoder.feed(data.clone());
                    }
                    this.counting = Some(frame);
                }
                Poll::Ready(None) => {
                    if let Err(e) = this.decoder.finish() {
                        return Poll::Ready(Some(Err(Box::new(e))));
                    }
                    this.ended = true;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended && self.held.is_none() && self.counting.is_none()
    }
}
