//! CPU-heavy work of one request off the runtime's threads: [`off_thread`]
//! for whole conversions of large payloads (at least [`OFF_THREAD_BYTES`])
//! on tokio's blocking pool, and [`Pair`], a helper thread kept for one
//! request's fork-joins, which converts a large tensor streaming in or
//! out on two cores at once (docs/PERFORMANCE.md).

mod pair;

pub use pair::Pair;

/// Requests and replies with at least this many data bytes are converted
/// on a blocking thread, never on the runtime's.
pub const OFF_THREAD_BYTES: u64 = 1 << 20;

/// Runs CPU-heavy work on tokio's blocking pool; a panic in it goes on
/// unwinding here.
pub async fn off_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) => match e.try_into_panic() {
            Ok(p) => std::panic::resume_unwind(p),
            Err(e) => panic!("blocking conversion did not finish: {e}"),
        },
    }
}
