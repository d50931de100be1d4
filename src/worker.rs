//! Which worker thread the caller runs on. The data port serves each
//! connection on one worker thread with its own single-threaded runtime
//! (`server::workers`); per-worker resources below the server (a replica's
//! backend connection pools) index by this number, so a worker's requests
//! reuse connections its own reactor drives. A floor of its own so that
//! the upstream client does not reach up into the server for it.

use std::cell::Cell;

thread_local! {
    /// 1 + this thread's worker number; 0 on every other thread.
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// The pool slot of the calling thread: `1 + n` on worker `n`, 0 anywhere
/// else (the main runtime: health checks, shadow copies started there,
/// tests).
pub(crate) fn current() -> usize {
    CURRENT.with(Cell::get)
}

/// Marks the calling thread as worker `n` (called once, as the worker
/// thread starts).
pub(crate) fn enter(n: usize) {
    CURRENT.with(|c| c.set(n + 1));
}
