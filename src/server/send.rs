//! A connection's writes, timed (nginx's `send_timeout`): once a write
//! has waited `limit` for the client to take more bytes, the write fails,
//! hyper drops the connection, and the requests on it end (their slots
//! freed). Only a write that cannot go on is timed: a client reading
//! slowly but steadily resets the timer with every byte it takes. No timer
//! exists while writes go through.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

pin_project! {
    /// A stream whose stalled writes time out.
    #[derive(Debug)]
    pub struct SendTimed<T> {
        #[pin]
        inner: T,
        limit: Duration,
        timer: Option<Pin<Box<Sleep>>>,
    }
}

impl<T> SendTimed<T> {
    pub(super) fn new(inner: T, limit: Duration) -> Self {
        SendTimed {
            inner,
            limit,
            timer: None,
        }
    }
}

/// What a write returned, checked against the timer: progress disarms it;
/// waiting arms it (once) and fails the write when it has run out.
fn timed<R>(
    polled: Poll<io::Result<R>>,
    timer: &mut Option<Pin<Box<Sleep>>>,
    limit: Duration,
    cx: &mut Context<'_>,
) -> Poll<io::Result<R>> {
    if polled.is_ready() {
        *timer = None;
        return polled;
    }
    let sleep = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
    match sleep.as_mut().poll(cx) {
        Poll::Pending => Poll::Pending,
        Poll::Ready(()) => {
            *timer = None;
            Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the client took no reply bytes for {:.3}s (send_timeout)",
                    limit.as_secs_f64()
                ),
            )))
        }
    }
}

impl<T: AsyncRead> AsyncRead for SendTimed<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.project().inner.poll_read(cx, buf)
    }
}

impl<T: AsyncWrite> AsyncWrite for SendTimed<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        timed(this.inner.poll_write(cx, buf), this.timer, *this.limit, cx)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        timed(this.inner.poll_flush(cx), this.timer, *this.limit, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        timed(this.inner.poll_shutdown(cx), this.timer, *this.limit, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        timed(
            this.inner.poll_write_vectored(cx, bufs),
            this.timer,
            *this.limit,
            cx,
        )
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test(start_paused = true)]
    async fn a_write_the_peer_does_not_take_fails_after_the_limit() {
        let (client, _server) = tokio::io::duplex(16);
        let mut timed = SendTimed::new(client, Duration::from_secs(5));
        let started = tokio::time::Instant::now();
        timed.write_all(&[7; 16]).await.unwrap();
        let e = timed.write_all(&[7; 1]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_peer_taking_bytes_in_time_is_never_cut() {
        use tokio::io::AsyncReadExt;
        let (client, mut server) = tokio::io::duplex(16);
        let mut timed = SendTimed::new(client, Duration::from_secs(5));
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 8];
            let mut got = 0;
            while got < 160 {
                tokio::time::sleep(Duration::from_secs(4)).await;
                got += server.read(&mut buf).await.unwrap();
            }
            got
        });
        // Each wait is under the limit; all of them together far over it.
        timed.write_all(&[1; 160]).await.unwrap();
        timed.flush().await.unwrap();
        assert_eq!(reader.await.unwrap(), 160);
    }
}
