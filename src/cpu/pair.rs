//! A helper thread kept for the fork-joins of one request: [`Pair`]
//! borrows a thread from tokio's blocking pool at its first
//! [`Pair::join`] and hands it job after job through one slot, instead of
//! one pool hand-off (a thread wake-up) per join. Between jobs the helper
//! spins for [`SPIN`], then parks for at most [`IDLE`], then goes back to
//! the pool (a later join borrows a thread again); dropping the pair (the
//! request done, or its future dropped) sends it back at once. A part the
//! helper has not started when the caller's part is done is taken back
//! and run by the caller, so a request never waits on the pool's queue; a
//! panic on either side goes on unwinding in the caller; outside a tokio
//! runtime both parts run on the caller. A 1M FP32 JSON request converts
//! faster this way than with a pool hand-off per 408 KiB chunk (`cargo
//! bench --bench two_threads`; see docs/PERFORMANCE.md, "What each
//! decision bought").

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long the helper spins for its next job before it parks: about
/// what the caller takes between two chunks already read.
pub(super) const SPIN: Duration = Duration::from_micros(50);
/// How long a parked helper waits for its next job before it goes back
/// to the pool: a request whose body trickles in does not hold a thread.
pub(super) const IDLE: Duration = Duration::from_millis(2);
/// How long the caller spins for the helper's part before it blocks.
const WAIT_SPIN: Duration = Duration::from_micros(200);

type Job = Box<dyn FnOnce() + Send>;

/// Where the slot stands (`Helper::state`).
mod state {
    /// No helper thread: the next job borrows one.
    pub(super) const GONE: u8 = 0;
    /// A helper thread waits for a job.
    pub(super) const EMPTY: u8 = 1;
    /// A job waits in the slot.
    pub(super) const POSTED: u8 = 2;
    /// The helper runs the job.
    pub(super) const RUNNING: u8 = 3;
    /// The helper ran the job; the caller collects it.
    pub(super) const DONE: u8 = 4;
    /// The pair is dropped: the helper leaves.
    pub(super) const CLOSED: u8 = 5;
}
use state::*;

/// The slot between a caller and its helper thread.
struct Helper {
    state: AtomicU8,
    /// How long a parked helper waits for a job ([`IDLE`]).
    idle: Duration,
    inner: Mutex<Inner>,
    /// The helper parks on it between jobs.
    wake: Condvar,
    /// The caller blocks on it for the helper's part.
    done: Condvar,
}

#[derive(Default)]
struct Inner {
    job: Option<Job>,
    /// The helper waits on `wake`.
    parked: bool,
    /// The caller waits on `done`.
    waiting: bool,
}

impl Helper {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the posted job, moving the state to `to`: the helper (to run
    /// it) or the caller (to take it back) wins, never both.
    fn claim(&self, to: u8) -> Option<Job> {
        self.state
            .compare_exchange(POSTED, to, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        self.lock().job.take()
    }

    /// The helper's loop: runs jobs until the pair is dropped or none
    /// comes for [`IDLE`].
    fn serve(&self) {
        while let Some(job) = self.next_job() {
            job();
            if self
                .state
                .compare_exchange(RUNNING, DONE, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                return; // closed while running
            }
            let inner = self.lock();
            if inner.waiting {
                self.done.notify_one();
            }
        }
    }

    fn next_job(&self) -> Option<Job> {
        let spin_until = Instant::now() + SPIN;
        loop {
            match self.state.load(Ordering::Acquire) {
                POSTED => {
                    if let Some(job) = self.claim(RUNNING) {
                        return Some(job);
                    }
                }
                CLOSED => return None,
                _ if Instant::now() >= spin_until => break,
                _ => std::hint::spin_loop(),
            }
        }
        let deadline = Instant::now() + self.idle;
        let mut inner = self.lock();
        loop {
            match self.state.load(Ordering::Acquire) {
                POSTED => {
                    drop(inner);
                    if let Some(job) = self.claim(RUNNING) {
                        return Some(job);
                    }
                    inner = self.lock();
                    continue;
                }
                CLOSED => return None,
                _ => {}
            }
            let now = Instant::now();
            if now >= deadline {
                // Only an idle slot is given up (its last job's result
                // collected or not); a job posted meanwhile is claimed on
                // the next turn.
                let idle = self.state.load(Ordering::Acquire);
                if matches!(idle, EMPTY | DONE)
                    && self
                        .state
                        .compare_exchange(idle, GONE, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                {
                    return None;
                }
                continue;
            }
            inner.parked = true;
            inner = self
                .wake
                .wait_timeout(inner, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            inner.parked = false;
        }
    }

    /// Puts `job` in the slot; true when no helper thread serves it yet.
    fn post(&self, job: Job) -> bool {
        let mut inner = self.lock();
        inner.job = Some(job);
        let before = self.state.swap(POSTED, Ordering::AcqRel);
        if inner.parked {
            self.wake.notify_one();
        }
        before == GONE
    }

    /// Waits for the helper's job to end.
    fn wait_done(&self) {
        // A helper that ran the job may have left since (`GONE`).
        let running = || self.state.load(Ordering::Acquire) == RUNNING;
        let spin_until = Instant::now() + WAIT_SPIN;
        while running() {
            if Instant::now() >= spin_until {
                let mut inner = self.lock();
                while running() {
                    inner.waiting = true;
                    inner = self
                        .done
                        .wait(inner)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                inner.waiting = false;
                break;
            }
            std::hint::spin_loop();
        }
        // Collected: the slot takes the next job (unless the helper left).
        let _ = self
            .state
            .compare_exchange(DONE, EMPTY, Ordering::AcqRel, Ordering::Acquire);
    }

    fn close(&self) {
        let mut inner = self.lock();
        self.state.store(CLOSED, Ordering::Release);
        let job = inner.job.take();
        if inner.parked {
            self.wake.notify_one();
        }
        drop(inner);
        drop(job);
    }
}

/// One request's helper thread, borrowed at the first [`Pair::join`].
/// Costs nothing until then. Dropping it lets the helper go.
pub struct Pair {
    helper: Option<(tokio::runtime::Handle, Arc<Helper>)>,
    idle: Duration,
}

impl std::fmt::Debug for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pair")
            .field("borrowed", &self.helper.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for Pair {
    fn default() -> Pair {
        Pair::new()
    }
}

impl Pair {
    pub fn new() -> Pair {
        Pair {
            helper: None,
            idle: IDLE,
        }
    }

    /// A pair whose helper waits `idle` for a job before it leaves.
    #[cfg(test)]
    fn with_idle(idle: Duration) -> Pair {
        Pair { helper: None, idle }
    }

    /// Runs `first` here and `second` on the helper thread when it takes
    /// it in time (else here, after `first`); returns both results. A
    /// panic in either goes on unwinding in the caller. Outside a tokio
    /// runtime both run here in turn.
    pub fn join<A, B, F>(&mut self, first: impl FnOnce() -> A, second: F) -> (A, B)
    where
        F: FnOnce() -> B + Send + 'static,
        B: Send + 'static,
    {
        let Some((rt, helper)) = self.helper() else {
            return (first(), second());
        };
        let out = Arc::new(Mutex::new(None));
        let into = out.clone();
        let job: Job = Box::new(move || {
            let r = catch_unwind(AssertUnwindSafe(second));
            *into.lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
        });
        if helper.post(job) {
            let serving = helper.clone();
            // The handle is not awaited: the state says how it went.
            drop(rt.spawn_blocking(move || serving.serve()));
        }
        let a = first();
        match helper.claim(EMPTY) {
            Some(job) => job(),
            None => helper.wait_done(),
        }
        let b = out.lock().unwrap_or_else(PoisonError::into_inner).take();
        match b {
            Some(Ok(b)) => (a, b),
            Some(Err(panic)) => resume_unwind(panic),
            None => unreachable!("the job ran here or on the helper"),
        }
    }

    fn helper(&mut self) -> Option<(&tokio::runtime::Handle, &Arc<Helper>)> {
        if self.helper.is_none() {
            let rt = tokio::runtime::Handle::try_current().ok()?;
            let helper = Arc::new(Helper {
                state: AtomicU8::new(GONE),
                idle: self.idle,
                inner: Mutex::new(Inner::default()),
                wake: Condvar::new(),
                done: Condvar::new(),
            });
            self.helper = Some((rt, helper));
        }
        self.helper.as_ref().map(|(rt, h)| (rt, h))
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        if let Some((_, helper)) = &self.helper {
            helper.close();
        }
    }
}

#[cfg(test)]
mod tests;
