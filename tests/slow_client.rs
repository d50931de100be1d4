//! A client reading a 200 MB streamed reply at about 1 MB/s: the gateway
//! reads the backend only as fast as the client takes the bytes, so what
//! the backend has produced stays within a bound of what the client has
//! read (socket buffers and a few frames), and the process does not grow by
//! the reply's size. A test binary of its own, not a module of `tests/it`,
//! so the memory it measures (this process's resident set, bounded to
//! 64 MiB of growth) is its own.

#[path = "it/common/mod.rs"]
mod common;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use http_body::Frame;
use http_body_util::BodyExt;

const TOTAL: u64 = 200_000_000;
const FRAME: usize = 64 << 10;

/// 200 MB made up as it is read, counting what was handed out.
struct Endless {
    produced: Arc<AtomicU64>,
    frame: Bytes,
}

impl http_body::Body for Endless {
    type Data = Bytes;
    type Error = tensorgate::http::body::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let done = self.produced.load(Ordering::SeqCst);
        if done >= TOTAL {
            return Poll::Ready(None);
        }
        let n = (TOTAL - done).min(FRAME as u64) as usize;
        self.produced.fetch_add(n as u64, Ordering::SeqCst);
        Poll::Ready(Some(Ok(Frame::data(self.frame.slice(..n)))))
    }
}

/// Resident set size of this process, from /proc (Linux).
fn rss_bytes() -> Option<u64> {
    Some(common::procs::status_kib(None, "VmRSS")? * 1024)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_keeps_the_gateway_bounded() {
    let produced = Arc::new(AtomicU64::new(0));
    let p = produced.clone();
    let backend = TestBackend::start(move |_| {
        let body = Endless {
            produced: p.clone(),
            frame: Bytes::from(vec![b'x'; FRAME]),
        };
        async move {
            let mut r = http::Response::new(body.boxed_unsync());
            r.headers_mut()
                .insert("content-type", "application/octet-stream".parse().unwrap());
            r
        }
    })
    .await;
    let gw = gateway(&simple_config(&backend.url(), "")).await;
    let before = rss_bytes();
    let resp = open(gw.data_addr, "GET", "/v2/models/m/stream", &[], "").await;
    assert_eq!(resp.status(), 200);
    let mut body = resp.into_body();
    let started = Instant::now();
    let mut received = 0u64;
    let mut peak_ahead = 0u64;
    // About 1 MB/s for three seconds.
    while started.elapsed() < Duration::from_secs(3) {
        let frame = body.frame().await.unwrap().unwrap();
        if let Ok(data) = frame.into_data() {
            received += data.len() as u64;
        }
        let due = Duration::from_secs_f64(received as f64 / 1e6);
        if let Some(wait) = due.checked_sub(started.elapsed()) {
            tokio::time::sleep(wait).await;
        }
        peak_ahead = peak_ahead.max(produced.load(Ordering::SeqCst) - received);
    }
    let after = rss_bytes();
    drop(body);
    assert!(received > 2_000_000 && received < 5_000_000, "{received}");
    // Socket buffers on both hops, hyper's buffers and the two frames the
    // gateway moves at a time: tens of megabytes at most, never the reply.
    assert!(
        peak_ahead < 48 << 20,
        "the backend ran {peak_ahead} bytes ahead"
    );
    if let (Some(before), Some(after)) = (before, after) {
        let grown = after.saturating_sub(before);
        assert!(grown < 64 << 20, "the process grew by {grown} bytes");
        eprintln!("ahead at most {peak_ahead} bytes; RSS grew {grown} bytes");
    }
}
