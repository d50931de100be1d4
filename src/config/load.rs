//! Entry points: a file or TOML text in, a [`Config`] or every problem out.

use std::path::Path;

use super::raw;
use super::validate;
use super::{Config, ConfigError, ConfigErrors};

/// Reads and validates a configuration file. Files it names (TLS
/// certificates and keys, key files) are read relative to its directory.
pub fn load_file(path: &Path) -> Result<Config, ConfigErrors> {
    let one = |message: String| ConfigErrors(vec![ConfigError::new("", message)]);
    let bytes =
        crate::file::read(path).map_err(|e| one(format!("cannot read {}: {e}", path.display())))?;
    let text = String::from_utf8(bytes)
        .map_err(|e| one(format!("{} is not UTF-8: {e}", path.display())))?;
    let dir = path.parent().unwrap_or(Path::new(""));
    from_str_in(&text, Some(dir))
}

/// Parses and validates configuration text; files it names (TLS files,
/// key files) are read relative to the current directory.
pub fn from_str(text: &str) -> Result<Config, ConfigErrors> {
    from_str_in(text, None)
}

/// Parses and validates configuration text: stage 1 (types, unknown keys),
/// then stage 2 (meaning) on what stage 1 could read. A stage 2 problem at
/// or around a key stage 1 already reported is left out: it is most likely
/// the same problem seen again. Relative paths in it are taken against
/// `base` (the current directory when `None`).
pub fn from_str_in(text: &str, base: Option<&Path>) -> Result<Config, ConfigErrors> {
    let mut stage1 = raw::parse(text);
    let Some(raw) = stage1.raw.take() else {
        return Err(ConfigErrors(stage1.errors));
    };
    let later = match validate::config(&stage1, raw, base) {
        Ok(config) if stage1.errors.is_empty() => return Ok(config),
        Ok(_) => Vec::new(),
        Err(later) => later,
    };
    let mut errors = stage1.errors;
    let fresh: Vec<_> = later
        .into_iter()
        .filter(|e| !errors.iter().any(|s| s.related(&e.key)))
        .collect();
    errors.extend(fresh);
    Err(ConfigErrors(errors))
}

#[cfg(test)]
mod tests;
