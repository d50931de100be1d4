//! Fork-join for one request's CPU work: [`join`] hands the second part
//! to tokio's blocking pool and does the first on the calling thread; if
//! no blocking thread has started the second part by the time the first
//! is done, the caller does it as well. So a request never waits on the
//! pool's queue, and on an idle machine a large tensor is converted by
//! two cores at once (docs/PERFORMANCE.md: binary -> JSON FP32). And
//! [`off_thread`]: whole conversions of large payloads (at least
//! [`OFF_THREAD_BYTES`]) on the blocking pool, never on a runtime thread.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

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

/// Where the second part is.
enum State<F, B> {
    /// Not started: whoever takes it runs it.
    Waiting(F),
    /// Running on a blocking thread.
    Running,
    /// Done on a blocking thread (or it panicked there).
    Done(std::thread::Result<B>),
    /// Taken back by the caller.
    Gone,
}

struct Shared<F, B> {
    state: Mutex<State<F, B>>,
    done: Condvar,
}

/// Runs `first` here and `second` on the blocking pool when a thread
/// there is free in time (else here, after `first`); returns both results.
/// A panic in either goes on unwinding in the caller. Outside a tokio
/// runtime both run here in turn.
pub fn join<A, B, F>(first: impl FnOnce() -> A, second: F) -> (A, B)
where
    F: FnOnce() -> B + Send + 'static,
    B: Send + 'static,
{
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return (first(), second());
    };
    let shared = Arc::new(Shared {
        state: Mutex::new(State::Waiting(second)),
        done: Condvar::new(),
    });
    let helper = shared.clone();
    // The handle is not awaited: the state says how it went.
    drop(rt.spawn_blocking(move || {
        let f = {
            let mut state = helper.state.lock().unwrap_or_else(PoisonError::into_inner);
            match std::mem::replace(&mut *state, State::Running) {
                State::Waiting(f) => f,
                other => {
                    *state = other;
                    return;
                }
            }
        };
        let out = catch_unwind(AssertUnwindSafe(f));
        let mut state = helper.state.lock().unwrap_or_else(PoisonError::into_inner);
        *state = State::Done(out);
        helper.done.notify_one();
    }));
    let a = first();
    let mut state = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
    if let State::Waiting(_) = &*state {
        let State::Waiting(f) = std::mem::replace(&mut *state, State::Gone) else {
            unreachable!("checked above");
        };
        drop(state);
        return (a, f());
    }
    loop {
        match std::mem::replace(&mut *state, State::Gone) {
            State::Done(Ok(b)) => return (a, b),
            State::Done(Err(panic)) => resume_unwind(panic),
            other => {
                *state = other;
                state = shared
                    .done
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn outside_a_runtime_both_run_here() {
        let here = std::thread::current().id();
        let (a, b) = join(
            || std::thread::current().id(),
            || std::thread::current().id(),
        );
        assert_eq!((a, b), (here, here));
    }

    #[tokio::test]
    async fn the_second_part_runs_on_the_pool_when_a_thread_is_free() {
        let here = std::thread::current().id();
        let (a, b) = join(
            || {
                // Long enough for a blocking thread to start.
                std::thread::sleep(Duration::from_millis(200));
                std::thread::current().id()
            },
            || std::thread::current().id(),
        );
        assert_eq!(a, here);
        assert_ne!(b, here);
    }

    #[test]
    fn a_busy_pool_is_not_waited_for() {
        let here = std::thread::current().id();
        // No blocking thread may start while `first` runs: the caller
        // does the second part itself.
        let rt = tokio::runtime::Builder::new_current_thread()
            .max_blocking_threads(1)
            .build()
            .unwrap();
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let busy = rt.spawn_blocking(move || {
            let _ = hold.recv();
        });
        let (a, b) = rt.block_on(async {
            join(
                || std::thread::current().id(),
                || std::thread::current().id(),
            )
        });
        assert_eq!((a, b), (here, here));
        release.send(()).unwrap();
        rt.block_on(busy).unwrap();
        drop(rt);
    }

    #[tokio::test]
    #[should_panic(expected = "second part failed")]
    async fn a_panic_on_the_pool_reaches_the_caller() {
        let _ = join(
            || std::thread::sleep(Duration::from_millis(200)),
            || panic!("second part failed"),
        );
    }
}
