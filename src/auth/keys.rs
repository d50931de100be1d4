//! Key files and the sets of keys read from them.
//!
//! A key file holds one `name:key` per line; `#` starts a comment line and
//! blank lines are ignored. Names are 1 to 64 of `A-Z a-z 0-9 _ . -` and
//! unique; keys are 16 to 512 printable ASCII characters without spaces
//! (so they fit an HTTP header as they are), and no key appears twice.
//!
//! Keys are held as SHA-256 digests and looked up by comparing the digest
//! of what a client presents with **every** stored digest in constant time
//! (no early exit), so how long a lookup takes says nothing about which key
//! matched or how much of one did. The key itself is kept only when SigV4
//! needs it (the secret of an HMAC cannot be recovered from a digest): see
//! [`KeySet::parse`]. Errors name the file and the line, nothing of the
//! line itself (a line written `KEY:name` holds the key where the name
//! goes), and nothing here formats a key or a digest.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest as _, Sha256};
use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};

/// Most keys one file may hold: bounds the cost of a lookup (every digest
/// is compared) and the series of the per-key metrics.
pub const MAX_KEYS: usize = 1000;
/// Shortest key accepted.
pub const MIN_KEY_LEN: usize = 16;
/// Longest key accepted.
pub const MAX_KEY_LEN: usize = 512;
/// Largest key file read.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// Longest key name.
pub const MAX_NAME_LEN: usize = 64;

/// A SHA-256 digest.
pub type Digest = [u8; 32];

/// SHA-256 of `bytes`.
pub fn digest(bytes: &[u8]) -> Digest {
    Sha256::digest(bytes).into()
}

/// A key kept whole for SigV4. Never printed.
#[derive(Clone, PartialEq, Eq)]
struct Secret(Box<[u8]>);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<secret>")
    }
}

/// The keys of one file: names, digests and, for SigV4, the keys.
#[derive(Clone, PartialEq, Eq)]
pub struct KeySet {
    file: PathBuf,
    names: Vec<Arc<str>>,
    digests: Vec<Digest>,
    /// Index-aligned with `names`; empty unless kept for SigV4.
    secrets: Vec<Secret>,
}

impl fmt::Debug for KeySet {
    /// The file and the names only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySet")
            .field("file", &self.file)
            .field("names", &self.names)
            .field("secrets_kept", &!self.secrets.is_empty())
            .finish()
    }
}

/// What is wrong with a key file.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    #[error("{}: cannot read: {source}", file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: larger than {MAX_FILE_BYTES} bytes", file.display())]
    TooLarge { file: PathBuf },
    #[error("{} line {line}: {problem}", file.display())]
    Line {
        file: PathBuf,
        line: usize,
        problem: LineProblem,
    },
    #[error("{}: holds no key", file.display())]
    Empty { file: PathBuf },
    #[error("{}: holds more than {MAX_KEYS} keys", file.display())]
    TooMany { file: PathBuf },
}

/// What is wrong with one line. Nothing of the line is quoted, not even
/// the name: a line written the wrong way round (`KEY:name`) holds a key
/// where the name goes. The line number says which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LineProblem {
    #[error("not UTF-8 text")]
    NotText,
    #[error("expected NAME:KEY")]
    NoColon,
    #[error("the name before ':' must be 1 to {MAX_NAME_LEN} letters, digits, '_', '.' or '-'")]
    BadName,
    #[error("the key is {len} characters; at least {MIN_KEY_LEN} are required")]
    TooShort { len: usize },
    #[error("the key is longer than {MAX_KEY_LEN} characters")]
    TooLong,
    #[error("the key holds a character other than printable ASCII without spaces")]
    BadKeyChar,
    #[error("the name is already used at line {first}")]
    DuplicateName { first: usize },
    #[error("the key is the key of line {first} too")]
    DuplicateKey { first: usize },
}

fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// One `name:key` line, checked.
fn parse_line(line: &str) -> Result<(&str, &str), LineProblem> {
    let (name, key) = line.split_once(':').ok_or(LineProblem::NoColon)?;
    let (name, key) = (name.trim(), key.trim());
    if !valid_name(name) {
        return Err(LineProblem::BadName);
    }
    if !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(LineProblem::BadKeyChar);
    }
    if key.len() < MIN_KEY_LEN {
        return Err(LineProblem::TooShort { len: key.len() });
    }
    if key.len() > MAX_KEY_LEN {
        return Err(LineProblem::TooLong);
    }
    Ok((name, key))
}

impl KeySet {
    /// Reads and parses `file` (see [`KeySet::parse`]).
    pub fn load(file: &Path, keep_secrets: bool) -> Result<KeySet, KeyFileError> {
        use std::io::Read;
        let read_error = |source| KeyFileError::Read {
            file: file.to_owned(),
            source,
        };
        let f = crate::file::open_regular(file).map_err(read_error)?;
        let mut bytes = Vec::new();
        f.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(read_error)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(KeyFileError::TooLarge {
                file: file.to_owned(),
            });
        }
        KeySet::parse(&bytes, file, keep_secrets)
    }

    /// Parses a key file's bytes; `file` names it in errors. With
    /// `keep_secrets` the keys are kept whole beside their digests (SigV4
    /// signs with the key itself); without, only digests are kept.
    pub fn parse(bytes: &[u8], file: &Path, keep_secrets: bool) -> Result<KeySet, KeyFileError> {
        let mut set = KeySet {
            file: file.to_owned(),
            names: Vec::new(),
            digests: Vec::new(),
            secrets: Vec::new(),
        };
        let mut lines: Vec<usize> = Vec::new();
        for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
            let line = i + 1;
            let error = |problem| KeyFileError::Line {
                file: file.to_owned(),
                line,
                problem,
            };
            let text = std::str::from_utf8(raw)
                .map_err(|_| error(LineProblem::NotText))?
                .trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let (name, key) = parse_line(text).map_err(error)?;
            if let Some(at) = set.names.iter().position(|n| &**n == name) {
                let first = lines[at];
                return Err(error(LineProblem::DuplicateName { first }));
            }
            let d = digest(key.as_bytes());
            if let Some(at) = set.digests.iter().position(|x| x == &d) {
                let first = lines[at];
                return Err(error(LineProblem::DuplicateKey { first }));
            }
            if set.names.len() == MAX_KEYS {
                return Err(KeyFileError::TooMany {
                    file: file.to_owned(),
                });
            }
            set.names.push(Arc::from(name));
            set.digests.push(d);
            if keep_secrets {
                set.secrets.push(Secret(key.as_bytes().into()));
            }
            lines.push(line);
        }
        if set.names.is_empty() {
            return Err(KeyFileError::Empty {
                file: file.to_owned(),
            });
        }
        Ok(set)
    }

    /// An empty set that accepts nothing (before a file is loaded).
    pub fn empty(file: &Path) -> KeySet {
        KeySet {
            file: file.to_owned(),
            names: Vec::new(),
            digests: Vec::new(),
            secrets: Vec::new(),
        }
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The key names, in file order.
    pub fn names(&self) -> &[Arc<str>] {
        &self.names
    }

    /// Whether the keys themselves are held (for SigV4).
    pub fn holds_secrets(&self) -> bool {
        !self.secrets.is_empty()
    }

    /// The name of the key `presented` is, if any: its digest is compared
    /// with every stored digest, in time independent of which (if any)
    /// matches.
    pub fn find(&self, presented: &[u8]) -> Option<&Arc<str>> {
        let wanted = digest(presented);
        let mut found = Choice::from(0);
        let mut index = 0u32;
        for (i, stored) in self.digests.iter().enumerate() {
            let eq = stored.ct_eq(&wanted);
            // MAX_KEYS keeps every index within u32.
            index = u32::conditional_select(&index, &(i as u32), eq);
            found |= eq;
        }
        bool::from(found).then(|| &self.names[index as usize])
    }

    /// The key of `name`, when keys are held (SigV4's secret).
    pub fn secret(&self, name: &str) -> Option<(&Arc<str>, &[u8])> {
        let at = self.names.iter().position(|n| &**n == name)?;
        self.secrets.get(at).map(|s| (&self.names[at], &*s.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef";
    const B: &str = "fedcba9876543210-x";

    fn parse(text: &str) -> Result<KeySet, String> {
        KeySet::parse(text.as_bytes(), Path::new("keys.txt"), true).map_err(|e| e.to_string())
    }

    #[test]
    fn names_digests_and_lookup() {
        let set = parse(&format!(
            "# clients\n\nalice:{A}\n  bob.2 : {B}  \r\nc_3:{A}:more\n"
        ))
        .unwrap();
        let names: Vec<&str> = set.names().iter().map(|n| &**n).collect();
        assert_eq!(names, ["alice", "bob.2", "c_3"]);
        assert_eq!(set.find(A.as_bytes()).map(|n| &**n), Some("alice"));
        assert_eq!(set.find(B.as_bytes()).map(|n| &**n), Some("bob.2"));
        assert_eq!(
            set.find(format!("{A}:more").as_bytes()).map(|n| &**n),
            Some("c_3")
        );
        assert_eq!(set.find(b"0123456789abcdeF"), None);
        assert_eq!(set.find(b""), None);
        assert_eq!(set.secret("bob.2").map(|(_, s)| s), Some(B.as_bytes()));
        assert_eq!(set.secret("carol"), None);
        // The digest is SHA-256 (`printf %s 0123456789abcdef | sha256sum`).
        let hex: String = digest(A.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hex,
            "9f9f5111f7b27a781f1f1ddde5ebc2dd2b796bfc7365c9c28b548e564176929f"
        );
    }

    #[test]
    fn secrets_are_kept_only_when_asked_and_never_printed() {
        let text = format!("alice:{A}\n");
        let hashed = KeySet::parse(text.as_bytes(), Path::new("k"), false).unwrap();
        assert!(!hashed.holds_secrets());
        assert_eq!(hashed.secret("alice"), None);
        assert!(hashed.find(A.as_bytes()).is_some());
        let kept = KeySet::parse(text.as_bytes(), Path::new("k"), true).unwrap();
        let shown = format!("{kept:?}");
        assert!(!shown.contains(A), "{shown}");
        assert!(shown.contains("alice"), "{shown}");
    }

    #[test]
    fn every_problem_names_the_file_and_line_but_never_the_key() {
        let check = |text: &str, expected: &str| {
            let e = parse(text).unwrap_err();
            assert_eq!(e, expected, "in {text:?}");
            assert!(!e.contains(A) && !e.contains(B), "{e}");
        };
        check(
            &format!("alice {A}\n"),
            "keys.txt line 1: expected NAME:KEY",
        );
        check(
            &format!("\n{A}.:alice\n"),
            "keys.txt line 2: the key is 5 characters; at least 16 are required",
        );
        check(
            &format!("\n{A}+:alice\n"),
            "keys.txt line 2: the name before ':' must be 1 to 64 letters, digits, '_', '.' or '-'",
        );
        check(
            &format!("a b:{A}\n"),
            "keys.txt line 1: the name before ':' must be 1 to 64 letters, digits, '_', '.' or '-'",
        );
        check(
            "alice:short\n",
            "keys.txt line 1: the key is 5 characters; at least 16 are required",
        );
        // Written the wrong way round, with a key that looks like a name.
        check(
            &format!("\n{A}:alice\n"),
            "keys.txt line 2: the key is 5 characters; at least 16 are required",
        );
        check(
            "alice:0123456789 abcdef\n",
            "keys.txt line 1: the key holds a character other than printable ASCII without spaces",
        );
        check(
            &format!("alice:{}\n", "k".repeat(513)),
            "keys.txt line 1: the key is longer than 512 characters",
        );
        check(
            &format!("alice:{A}\n# x\nalice:{B}\n"),
            "keys.txt line 3: the name is already used at line 1",
        );
        check(
            &format!("alice:{A}\nbob:{A}\n"),
            "keys.txt line 2: the key is the key of line 1 too",
        );
        check("# nothing\n\n", "keys.txt: holds no key");
        let e = KeySet::parse(b"alice:\xff\xfe0123456789abcdef", Path::new("k"), false);
        assert_eq!(e.unwrap_err().to_string(), "k line 1: not UTF-8 text");
        let many: String = (0..=MAX_KEYS).map(|i| format!("k{i}:{A}{i}\n")).collect();
        check(&many, "keys.txt: holds more than 1000 keys");
    }

    #[test]
    fn files_are_read_with_a_size_limit() {
        let dir = std::env::temp_dir().join(format!("tg-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys");
        std::fs::write(&path, format!("alice:{A}\n")).unwrap();
        assert_eq!(KeySet::load(&path, false).unwrap().names().len(), 1);
        std::fs::write(&path, vec![b'#'; MAX_FILE_BYTES as usize + 1]).unwrap();
        let e = KeySet::load(&path, false).unwrap_err().to_string();
        assert!(e.ends_with(": larger than 1048576 bytes"), "{e}");
        let e = KeySet::load(&dir.join("missing"), false).unwrap_err();
        assert!(e.to_string().contains("cannot read"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
