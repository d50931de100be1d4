//! The errors loading reports: one [`ConfigError`] per problem, each at the
//! key path it is about. They go to the log, to `check-config` and to the
//! status page (unauthenticated), so none of them shows a secret: the
//! credentials of any URL in a message are masked, and a message about a
//! key whose value is a secret (the store's URL, the collector's headers)
//! shows no value at all.

use std::borrow::Cow;
use std::fmt;

/// One problem in the configuration, at a key path like
/// `routes[0].inputs.INPUT0.shape` (empty for the file as a whole).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

impl ConfigError {
    /// The problem `message` at `key`, with no secret left in it.
    pub(crate) fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        let key = key.into();
        let mut message = message.into();
        if let Cow::Owned(masked) = redact(&message) {
            message = masked;
        }
        if holds_secret(&key) {
            message = hide_values(&message);
        }
        ConfigError { key, message }
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

/// Whether the value at `key` is a secret as a whole: the store's URL
/// (its password), the headers sent to the trace collector (tokens).
fn holds_secret(key: &str) -> bool {
    key == "rate_limit_store.url" || key == "tracing.headers" || key.starts_with("tracing.headers.")
}

/// `text` with every value it quotes (`"..."`, as serde and `{:?}` write
/// strings, and `` `...` ``, as serde writes other values) shown as `***`.
fn hide_values(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c != '"' && c != '`' {
            continue;
        }
        out.push_str("***");
        let mut escaped = false;
        for inner in chars.by_ref() {
            if inner == c && !escaped {
                out.push(c);
                break;
            }
            escaped = c == '"' && inner == '\\' && !escaped;
        }
    }
    out
}

/// `text` with the user part of every URL in it (`scheme://user:password@`)
/// shown as `***`. A URL runs from its `://` to the first space, quote or
/// backtick; everything before its last `@` is masked (a path holding `@`
/// is masked too: better too much than a password).
pub(crate) fn redact(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut done = 0;
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let start = from + found + 3;
        let end = text[start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`'))
            .map_or(text.len(), |n| start + n);
        if let Some(at) = text[start..end].rfind('@') {
            out.push_str(&text[done..start]);
            out.push_str("***");
            done = start + at;
        }
        from = end;
    }
    if done == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[done..]);
    Cow::Owned(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_credentials_are_masked_wherever_they_are() {
        for (text, shown) in [
            (
                "redis://user:hunter2@127.0.0.1:6379",
                "redis://***@127.0.0.1:6379",
            ),
            (
                "\"http://a:b@h:1/x?y\" is not a URL; nor https://c@d",
                "\"http://***@h:1/x?y\" is not a URL; nor https://***@d",
            ),
            ("rediss://:p@ss@host", "rediss://***@host"),
            ("redis://u:p@", "redis://***@"),
            ("http://127.0.0.1:8000/v2", "http://127.0.0.1:8000/v2"),
            ("no URL at all", "no URL at all"),
        ] {
            assert_eq!(redact(text), shown, "{text}");
        }
        assert!(matches!(redact("http://h:1"), Cow::Borrowed(_)));
    }

    #[test]
    fn values_of_secret_keys_are_never_shown() {
        let e = ConfigError::new(
            "tracing.headers",
            "invalid type: string \"Bearer s3\\\"cret\", expected a map",
        );
        assert_eq!(e.message, "invalid type: string \"***\", expected a map");
        let e = ConfigError::new("tracing.headers.x-token", "invalid type: integer `1234`");
        assert_eq!(e.message, "invalid type: integer `***`");
        let e = ConfigError::new("routes[0].name", "invalid type: string \"kept\"");
        assert_eq!(e.message, "invalid type: string \"kept\"");
        let e = ConfigError::new("backends.b.url", "\"http://u:hunter2@h:1/?q\" is not");
        assert_eq!(
            e.to_string(),
            "backends.b.url: \"http://***@h:1/?q\" is not"
        );
    }
}
