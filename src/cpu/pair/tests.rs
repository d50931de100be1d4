use super::*;
use std::thread::{ThreadId, current};

fn here() -> ThreadId {
    current().id()
}

/// Long enough for a blocking thread to start.
fn slow() -> ThreadId {
    std::thread::sleep(Duration::from_millis(200));
    here()
}

/// A runtime whose blocking pool holds one thread: whether that thread is
/// back in the pool shows in whether another blocking task runs.
fn one_thread_pool() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(1)
        .build()
        .unwrap()
}

/// Whether a blocking task starts on `rt` within `within`.
fn pool_is_free(rt: &tokio::runtime::Runtime, within: Duration) -> bool {
    let (tx, rx) = std::sync::mpsc::channel();
    drop(rt.spawn_blocking(move || tx.send(()).unwrap()));
    rx.recv_timeout(within).is_ok()
}

#[test]
fn outside_a_runtime_both_run_here() {
    let mut pair = Pair::new();
    let (a, b) = pair.join(here, here);
    assert_eq!((a, b), (here(), here()));
    assert!(pair.helper.is_none());
}

#[tokio::test]
async fn one_helper_thread_runs_every_second_part() {
    let mut pair = Pair::with_idle(Duration::from_secs(60));
    let (a, b) = pair.join(slow, here);
    assert_eq!(a, here());
    assert_ne!(b, here());
    // Every later second part goes to that same thread. The first part
    // waits until the second has started, so that a helper the kernel
    // wakes late (a loaded machine) still takes it rather than the caller,
    // which is right then but not what this checks.
    for i in 0..20 {
        let started = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = started.clone();
        let (x, y) = pair.join(
            || {
                let until = Instant::now() + Duration::from_secs(10);
                while !started.load(Ordering::Acquire) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(1));
                }
                i
            },
            move || {
                seen.store(true, Ordering::Release);
                here()
            },
        );
        assert_eq!((x, y), (i, b));
    }
}

#[test]
fn a_busy_pool_is_not_waited_for() {
    let rt = one_thread_pool();
    let (release, hold) = std::sync::mpsc::channel::<()>();
    let busy = rt.spawn_blocking(move || {
        let _ = hold.recv();
    });
    let mut pair = Pair::new();
    let (a, b) = rt.block_on(async { pair.join(here, here) });
    assert_eq!((a, b), (here(), here()));
    release.send(()).unwrap();
    rt.block_on(busy).unwrap();
    // The helper borrowed for that join starts now, and serves the next.
    let (a, b) = rt.block_on(async { pair.join(slow, here) });
    assert_eq!(a, here());
    assert_ne!(b, here());
}

#[tokio::test]
#[should_panic(expected = "second part failed")]
async fn a_panic_on_the_helper_reaches_the_caller() {
    let mut pair = Pair::new();
    let _ = pair.join(slow, || panic!("second part failed"));
}

#[tokio::test]
async fn the_pair_survives_a_panic_on_the_helper() {
    let mut pair = Pair::new();
    let failed = catch_unwind(AssertUnwindSafe(|| {
        pair.join(slow, || panic!("second part failed"))
    }));
    assert!(failed.is_err());
    let (a, b) = pair.join(slow, here);
    assert_eq!(a, here());
    assert_ne!(b, here());
}

#[test]
fn a_dropped_pair_sends_its_helper_back_at_once() {
    let rt = one_thread_pool();
    let mut pair = Pair::with_idle(Duration::from_secs(60));
    let (_, b) = rt.block_on(async { pair.join(slow, here) });
    assert_ne!(b, here());
    // Parked for a minute, the helper holds the pool's only thread.
    assert!(!pool_is_free(&rt, Duration::from_millis(300)));
    drop(pair);
    assert!(pool_is_free(&rt, Duration::from_secs(5)));
}

#[test]
fn an_idle_helper_goes_back_to_the_pool() {
    let rt = one_thread_pool();
    let mut pair = Pair::with_idle(Duration::from_millis(20));
    let (_, first) = rt.block_on(async { pair.join(slow, here) });
    assert_ne!(first, here());
    std::thread::sleep(Duration::from_millis(100));
    assert!(pool_is_free(&rt, Duration::from_secs(5)));
    // The next join borrows a thread again.
    let (_, again) = rt.block_on(async { pair.join(slow, here) });
    assert_ne!(again, here());
}

#[test]
fn a_cancelled_request_sends_its_helper_back() {
    // A request's future holds its pair across awaits (the next body
    // chunk); a client that goes away drops it there.
    let rt = one_thread_pool();
    let (joined, was_joined) = tokio::sync::oneshot::channel();
    let request = rt.spawn(async move {
        let mut pair = Pair::with_idle(Duration::from_secs(60));
        let (_, b) = pair.join(slow, here);
        joined.send(b != here()).unwrap();
        std::future::pending::<()>().await;
        drop(pair);
    });
    assert!(rt.block_on(was_joined).unwrap());
    assert!(!pool_is_free(&rt, Duration::from_millis(300)));
    request.abort();
    assert!(rt.block_on(request).unwrap_err().is_cancelled());
    assert!(pool_is_free(&rt, Duration::from_secs(5)));
}

#[test]
fn a_panic_in_the_first_part_lets_the_helper_go() {
    let rt = one_thread_pool();
    let handle = rt.handle().clone();
    let (started, is_started) = std::sync::mpsc::channel();
    let (finish, finished) = std::sync::mpsc::channel::<()>();
    let caller = std::thread::spawn(move || {
        let _in_runtime = handle.enter();
        let mut pair = Pair::with_idle(Duration::from_secs(60));
        pair.join(
            || {
                is_started.recv().unwrap();
                panic!("first part failed")
            },
            move || {
                started.send(()).unwrap();
                finished.recv().unwrap();
            },
        )
    });
    assert!(caller.join().is_err());
    // The helper still runs its part; then it finds the pair gone.
    finish.send(()).unwrap();
    assert!(pool_is_free(&rt, Duration::from_secs(5)));
}
