//! The executor hyper spawns HTTP/2 streams on: tokio tasks that end when
//! the server aborts, so a request still running after the grace period
//! is cut off even though it lives outside its connection's task.

use std::future::Future;

use tokio::sync::watch;

/// Spawns futures that stop when `abort` turns true.
#[derive(Clone, Debug)]
pub struct Spawner {
    abort: watch::Receiver<bool>,
}

impl Spawner {
    pub fn new(abort: watch::Receiver<bool>) -> Self {
        Spawner { abort }
    }
}

impl<F> hyper::rt::Executor<F> for Spawner
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        let mut abort = self.abort.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = fut => {}
                () = until_true(&mut abort) => {}
            }
        });
    }
}

/// Resolves once `flag` is true; never if its sender is dropped without
/// setting it (the server is gone, and the runtime with it).
pub async fn until_true(flag: &mut watch::Receiver<bool>) {
    if flag.wait_for(|a| *a).await.is_err() {
        std::future::pending::<()>().await;
    }
}
