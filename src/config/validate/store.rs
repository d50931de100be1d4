//! Stage 2 for `[rate_limit_store]`: the URL is required, the timeout must
//! leave room for the probes, and the key prefix must fit in a key.

use super::{Check, apply};
use crate::config::RateLimitStore;
use crate::config::raw::RawStore;

/// The longest `key_prefix`: every bucket key starts with it.
const MAX_KEY_PREFIX: usize = 64;

impl Check<'_> {
    /// `[rate_limit_store]`; `None` (reported) without a URL.
    pub(super) fn store(&mut self, raw: RawStore) -> Option<RateLimitStore> {
        let key = "rate_limit_store";
        let Some(url) = raw.url else {
            self.error(
                format!("{key}.url"),
                "required: redis://HOST:PORT or rediss://HOST:PORT",
            );
            return None;
        };
        let mut store = RateLimitStore::new(url.0);
        apply!(store, raw; timeout, probe_interval, key_prefix);
        if let Some(policy) = raw.on_store_error {
            store.on_store_error = policy.0;
        }
        if store.timeout > store.probe_interval {
            let message = format!(
                "{:?} must not be longer than probe_interval ({:?})",
                store.timeout, store.probe_interval
            );
            self.error(format!("{key}.timeout"), message);
        }
        let prefix = &store.key_prefix;
        if prefix.len() > MAX_KEY_PREFIX
            || prefix.contains(|c: char| c.is_whitespace() || c.is_control())
        {
            let message =
                format!("at most {MAX_KEY_PREFIX} characters, no spaces or control characters");
            self.error(format!("{key}.key_prefix"), message);
        }
        Some(store)
    }
}
