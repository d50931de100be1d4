//! Entry points: a file or TOML text in, a [`Config`] or every problem out.

use super::raw;
use super::validate;
use super::{Config, ConfigError, ConfigErrors};

/// Reads and validates a configuration file.
pub fn load_file(path: &std::path::Path) -> Result<Config, ConfigErrors> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        let message = format!("cannot read {}: {e}", path.display());
        ConfigErrors(vec![ConfigError::new("", message)])
    })?;
    from_str(&text)
}

/// Parses and validates configuration text: stage 1 (types, unknown keys),
/// then stage 2 (meaning) on what stage 1 could read. A stage 2 problem at
/// or around a key stage 1 already reported is left out: it is most likely
/// the same problem seen again.
pub fn from_str(text: &str) -> Result<Config, ConfigErrors> {
    let mut stage1 = raw::parse(text);
    let Some(raw) = stage1.raw.take() else {
        return Err(ConfigErrors(stage1.errors));
    };
    let later = match validate::config(&stage1, raw) {
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
