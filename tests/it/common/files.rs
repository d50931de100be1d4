//! Temporary files and directories, named after the test process so that
//! concurrent test binaries never share one.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh directory `tg-TAG-PID-N` under the system's temporary folder
/// (emptied if a dead process left one of that name).
fn fresh_dir(tag: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("tg-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A directory removed when dropped.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        TempDir(fresh_dir(tag))
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes `contents` to `name` atomically (a rename), returns its path.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(name);
        let tmp = self.path(&format!(".{name}.tmp"));
        std::fs::write(&tmp, contents).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh directory that is not removed on drop: the logs of the
/// processes a test starts there are read after a failure.
pub fn temp_dir(tag: &str) -> PathBuf {
    fresh_dir(tag)
}

/// Writes a key file (`name:key` lines) to a fresh temporary path and
/// returns the path, for `[routes.auth] keys_file`.
pub fn keys_file(lines: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("tg-test-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("keys-{}", N.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&path, lines).unwrap();
    path
}
