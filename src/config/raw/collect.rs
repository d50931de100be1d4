//! Runs stage 1 so that every error is found, not only the first: serde
//! stops at the first error, so on each one we record it with its key path
//! (from `serde_path_to_error`), cut the offending node out of the TOML
//! tree, and deserialize again, until the rest deserializes cleanly. A cut
//! key falls back to its default; the error already reported it.
//!
//! Cutting an array element shifts the elements after it, so the cuts are
//! remembered and [`Stage1::original`] maps an index back to the file's.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Deserialize;
use serde_path_to_error::{Segment, Track};
use toml::Value;

use super::RawConfig;
use crate::config::ConfigError;

/// Errors reported before giving up: each one costs a pass over the file.
const MAX_ERRORS: usize = 100;

/// What stage 1 found.
#[derive(Debug)]
pub(crate) struct Stage1 {
    /// The file without the nodes that had errors; `None` when the text is
    /// not TOML or had more than [`MAX_ERRORS`] errors.
    pub raw: Option<RawConfig>,
    pub errors: Vec<ConfigError>,
    /// Array key path → the file indices of the elements cut, ascending.
    cut: BTreeMap<String, Vec<usize>>,
}

/// Parses TOML text into the raw structs, collecting every error.
pub(crate) fn parse(text: &str) -> Stage1 {
    let mut out = Stage1 {
        raw: None,
        errors: Vec::new(),
        cut: BTreeMap::new(),
    };
    let mut tree = match text.parse::<toml::Table>() {
        Ok(table) => Value::Table(table),
        Err(e) => {
            out.errors.push(ConfigError::new("", syntax(text, &e)));
            return out;
        }
    };
    while out.errors.len() < MAX_ERRORS {
        let mut track = Track::new();
        let de = serde_path_to_error::Deserializer::new(tree.clone(), &mut track);
        let error = match RawConfig::deserialize(de) {
            Ok(raw) => {
                out.raw = Some(raw);
                return out;
            }
            Err(e) => e,
        };
        let path: Vec<Segment> = track.path().iter().cloned().collect();
        let message = match error.message().strip_prefix("unknown field") {
            Some(rest) => format!("unknown key{rest}"),
            None => error.message().to_owned(),
        };
        out.errors.push(ConfigError::new(out.key(&path), message));
        if !out.cut(&mut tree, &path) {
            return out;
        }
    }
    out.errors.push(ConfigError::new(
        "",
        format!("stopped after {MAX_ERRORS} errors"),
    ));
    out
}

/// A TOML syntax error, placed by line and column but without the line
/// itself: toml's own message quotes it, and the line may be the store's
/// URL with its password or a header with a token.
fn syntax(text: &str, e: &toml::de::Error) -> String {
    let what = e.message().trim();
    let Some(at) = e.span().map(|s| s.start.min(text.len())) else {
        return format!("invalid TOML: {what}");
    };
    let before = &text.as_bytes()[..at];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    format!("invalid TOML at line {line}, column {column}: {what}")
}

impl Stage1 {
    /// The file index of what is now element `index` of the array at key
    /// path `array` (written as in error keys, with file indices).
    pub(crate) fn original(&self, array: &str, index: usize) -> usize {
        let cut = self.cut.get(array).map_or(&[][..], Vec::as_slice);
        cut.iter()
            .fold(index, |i, &c| if c <= i { i + 1 } else { i })
    }

    /// The key path of a serde path, with file indices.
    fn key(&self, path: &[Segment]) -> String {
        let mut key = String::new();
        for segment in path {
            match segment {
                Segment::Seq { index } => {
                    let i = self.original(&key, *index);
                    let _ = write!(key, "[{i}]");
                }
                Segment::Map { key: k } | Segment::Enum { variant: k } => {
                    if !key.is_empty() {
                        key.push('.');
                    }
                    key.push_str(k);
                }
                Segment::Unknown => key.push_str(".?"),
            }
        }
        key
    }

    /// Removes the node at `path` from `tree`; false if there is none.
    fn cut(&mut self, tree: &mut Value, path: &[Segment]) -> bool {
        let Some((last, parents)) = path.split_last() else {
            return false;
        };
        let mut node = tree;
        for segment in parents {
            let next = match (segment, node) {
                (Segment::Map { key }, Value::Table(t)) => t.get_mut(key),
                (Segment::Seq { index }, Value::Array(a)) => a.get_mut(*index),
                _ => None,
            };
            let Some(next) = next else {
                return false;
            };
            node = next;
        }
        match (last, node) {
            (Segment::Map { key }, Value::Table(t)) => t.remove(key).is_some(),
            (Segment::Seq { index }, Value::Array(a)) if *index < a.len() => {
                a.remove(*index);
                let array = self.key(parents);
                let file_index = self.original(&array, *index);
                let cut = self.cut.entry(array).or_default();
                let at = cut.partition_point(|&c| c < file_index);
                cut.insert(at, file_index);
                true
            }
            _ => false,
        }
    }
}
