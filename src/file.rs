//! Reading a file the configuration names (the configuration itself, key
//! files, TLS certificates and keys), at load and on every reload poll:
//! only a regular file is read, and it is opened without blocking, so a
//! FIFO (or a device) put where a watched file was can neither block the
//! reload thread in `open()` — which stopped every later reload, SIGHUP
//! included, and held the process past `shutdown_grace` — nor feed it
//! without end. What is not a regular file is an error naming what it is.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Most bytes read from a configuration or TLS file: far past any real
/// one, and a bound on what a file replaced by something huge costs.
pub(crate) const MAX_FILE_BYTES: u64 = 16 << 20;

/// Opens `path` (through symlinks) for reading without blocking, if it is
/// a regular file; anything else is an [`io::ErrorKind::InvalidInput`]
/// error saying what it is.
pub(crate) fn open_regular(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A FIFO opened for reading waits for a writer without it.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    let what = describe(&kind);
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what}, not a regular file"),
    ))
}

/// The contents of the regular file at `path`, at most `max` bytes (more
/// is an error).
pub(crate) fn read_regular(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_regular(path)?
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {max} bytes"),
        ));
    }
    Ok(bytes)
}

/// [`read_regular`] bounded by [`MAX_FILE_BYTES`].
pub(crate) fn read(path: &Path) -> io::Result<Vec<u8>> {
    read_regular(path, MAX_FILE_BYTES)
}

fn describe(kind: &std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
    }
    "not a file"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tg-file-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn regular_files_are_read_within_the_limit() {
        let d = dir("regular");
        let f = d.join("a");
        std::fs::write(&f, b"12345").unwrap();
        assert_eq!(read_regular(&f, 5).unwrap(), b"12345");
        let e = read_regular(&f, 4).unwrap_err();
        assert_eq!(e.to_string(), "larger than 4 bytes");
        // Through a symlink.
        #[cfg(unix)]
        {
            let link = d.join("link");
            std::os::unix::fs::symlink(&f, &link).unwrap();
            assert_eq!(read(&link).unwrap(), b"12345");
        }
        let e = read(&d).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(e.to_string(), "a directory, not a regular file");
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A FIFO with no writer: refused at once (it used to block `open()`
    /// until a writer came).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = dir("fifo");
        let fifo = d.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            panic!("mkfifo failed");
        }
        let started = std::time::Instant::now();
        let e = read(&fifo).unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(e.to_string(), "a FIFO, not a regular file");
        let e = read(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e.to_string(), "a device, not a regular file");
        let _ = std::fs::remove_dir_all(&d);
    }
}
