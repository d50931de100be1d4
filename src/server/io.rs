//! The connection's byte stream, watched: the first bytes read are shown
//! to a [`Sniffer`] until it has decided, and its verdict goes to the
//! connection's [`ConnState`], as does whether a write waits for the
//! client. Bytes pass through unchanged and unbuffered.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::conn::ConnState;
use super::sniff::Sniffer;

pin_project! {
    /// A stream whose first bytes are sniffed.
    #[derive(Debug)]
    pub struct Sniffed<T> {
        #[pin]
        inner: T,
        sniffer: Option<Sniffer>,
        conn: Arc<ConnState>,
    }
}

impl<T> Sniffed<T> {
    pub(super) fn new(inner: T, conn: Arc<ConnState>) -> Self {
        Sniffed {
            inner,
            sniffer: Some(Sniffer::default()),
            conn,
        }
    }
}

impl<T: AsyncRead> AsyncRead for Sniffed<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.project();
        let before = buf.filled().len();
        let polled = this.inner.poll_read(cx, buf);
        if let Some(sniffer) = this.sniffer.as_mut()
            && polled.is_ready()
        {
            this.conn.sniffed(sniffer.feed(&buf.filled()[before..]));
            if sniffer.settled() {
                *this.sniffer = None;
            }
        }
        polled
    }
}

impl<T: AsyncWrite> AsyncWrite for Sniffed<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let polled = this.inner.poll_write(cx, buf);
        this.conn.write_waits(polled.is_pending());
        polled
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        let polled = this.inner.poll_flush(cx);
        this.conn.write_waits(polled.is_pending());
        polled
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let polled = this.inner.poll_write_vectored(cx, bufs);
        this.conn.write_waits(polled.is_pending());
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
