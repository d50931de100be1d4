//! The errors loading reports: one [`ConfigError`] per problem, each at the
//! key path it is about.

use std::fmt;

/// One problem in the configuration, at a key path like
/// `routes[0].inputs.INPUT0.shape` (empty for the file as a whole).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

impl ConfigError {
    pub(crate) fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            key: key.into(),
            message: message.into(),
        }
    }

    /// Whether one of the two keys is the other or lies inside it
    /// (`routes[0]` and `routes[0].name`, `models` and `models[1]`).
    pub(crate) fn related(&self, key: &str) -> bool {
        fn inside(inner: &str, outer: &str) -> bool {
            inner
                .strip_prefix(outer)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        }
        inside(&self.key, key) || inside(key, &self.key)
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

/// Every problem found: type errors and unknown keys in file order, then
/// the semantic ones.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}
