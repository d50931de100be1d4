//! When to reload: at once when asked (SIGHUP), and when the contents of
//! a file the configuration was read from have changed and then stayed
//! the same for one more poll (the debounce: an editor writing in steps,
//! or a certificate and its key replaced one after the other, are reloaded
//! once, whole).
//!
//! Files are polled, not watched with inotify: every [`POLL_INTERVAL`]
//! each file is read through its symlinks and its contents hashed. That
//! sees every way a file can be replaced — written in place, renamed over,
//! or a Kubernetes ConfigMap or Secret volume swapping its `..data`
//! symlink (which an inotify watch on the file itself misses, since the
//! watched inode is not the one that changes) — on any filesystem, at the
//! cost of reading a few kilobytes a second. A change is applied one to
//! two polls after it happens; the kubelet takes up to a minute to update
//! a mounted ConfigMap anyway.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::{Reloaded, Reloader, WatchedFile, file_hash};
use crate::config::{ConfigError, ConfigErrors};

/// How often the watched files are read.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

type Reply = oneshot::Sender<Result<Reloaded, ConfigErrors>>;

/// The reload task; it stops when this is dropped.
#[derive(Debug)]
pub struct Handle {
    requests: mpsc::Sender<Option<Reply>>,
    task: JoinHandle<()>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Handle {
    /// Asks for a reload without waiting for it (what SIGHUP does). A
    /// request made while others wait is merged with them.
    pub fn request(&self) {
        let _ = self.requests.try_send(None);
    }

    /// Reloads now; the result once it is applied or refused.
    pub async fn reload(&self) -> Result<Reloaded, ConfigErrors> {
        let (tx, rx) = oneshot::channel();
        let gone = || ConfigErrors(vec![ConfigError::new("", "the reload task has stopped")]);
        self.requests.send(Some(tx)).await.map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }
}

/// Starts reloading with `reloader`: on request, and when one of `files`
/// (those the running configuration was read from) changes, polled every
/// `poll`.
pub fn spawn(reloader: Reloader, files: Vec<WatchedFile>, poll: Duration) -> Handle {
    let (requests, mut rx) = mpsc::channel::<Option<Reply>>(4);
    let reloader = Arc::new(reloader);
    let task = tokio::spawn(async move {
        let mut watched = Watched::default();
        watched.watch(files).await;
        let mut ticker = tokio::time::interval(poll);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                request = rx.recv() => {
                    let Some(reply) = request else { return };
                    let result = run(&reloader, "signal").await;
                    watched.reloaded(&result).await;
                    if let Some(reply) = reply {
                        let _ = reply.send(result);
                    }
                }
                _ = ticker.tick() => {
                    if watched.poll().await {
                        let result = run(&reloader, "file changed").await;
                        watched.reloaded(&result).await;
                    }
                }
            }
        }
    });
    Handle { requests, task }
}

/// Reloads on the blocking pool (it reads and parses files).
async fn run(reloader: &Arc<Reloader>, cause: &'static str) -> Result<Reloaded, ConfigErrors> {
    let reloader = reloader.clone();
    tokio::task::spawn_blocking(move || reloader.reload(cause))
        .await
        .unwrap_or_else(|e| {
            let e = ConfigError::new("", format!("the reload failed: {e}"));
            Err(ConfigErrors(vec![e]))
        })
}

/// The watched files and what they held when last read.
#[derive(Debug, Default)]
struct Watched {
    files: Vec<PathBuf>,
    /// Each file's content hash (`None`: unreadable).
    seen: Vec<Option<u64>>,
    /// A change was seen and has not been reloaded yet.
    changed: bool,
}

impl Watched {
    /// Watches `files` from the contents the configuration was loaded
    /// from (read now where they are not known).
    async fn watch(&mut self, files: Vec<WatchedFile>) {
        let unknown: Vec<PathBuf> = files
            .iter()
            .filter(|f| f.loaded.is_none())
            .map(|f| f.path.clone())
            .collect();
        let mut read = fingerprint(unknown).await.into_iter();
        self.seen = files
            .iter()
            .map(|f| f.loaded.or_else(|| read.next().flatten()))
            .collect();
        self.files = files.into_iter().map(|f| f.path).collect();
        self.changed = false;
    }

    /// Reads the files; true when a change has settled (seen on an earlier
    /// poll, nothing new on this one).
    async fn poll(&mut self) -> bool {
        let now = fingerprint(self.files.clone()).await;
        if now != self.seen {
            self.seen = now;
            self.changed = true;
            return false;
        }
        std::mem::take(&mut self.changed)
    }

    /// After a reload: a successful one is what is watched from now on; a
    /// failed one waits for the next change (the files as they are now are
    /// what it tried, whether a poll saw them first or a signal asked for
    /// it, so they are not tried again).
    async fn reloaded(&mut self, result: &Result<Reloaded, ConfigErrors>) {
        self.changed = false;
        match result {
            Ok(r) => self.watch(r.files.clone()).await,
            Err(_) => self.seen = fingerprint(self.files.clone()).await,
        }
    }
}

/// Each file's content hash, read through symlinks (`None`: unreadable,
/// or not a regular file: a FIFO put there is never opened for good).
async fn fingerprint(files: Vec<PathBuf>) -> Vec<Option<u64>> {
    let read = move || {
        files
            .iter()
            .map(|f| crate::file::read(f).ok().map(|b| file_hash(&b)))
            .collect::<Vec<_>>()
    };
    tokio::task::spawn_blocking(read).await.unwrap_or_default()
}
