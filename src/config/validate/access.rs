//! Stage 2 for `[routes.auth]` and `[routes.rate_limit]`: the key file is
//! required and read (every problem in it reported at `auth.keys_file`,
//! naming the file and line, never a key), rates get their default bursts,
//! and per-key limits need keys.

use std::path::Path;

use super::Check;
use crate::config::access::resolve;
use crate::config::raw::{RawAuth, RawRateLimit, RawRates};
use crate::config::{Rate, RateLimit, Rates, RouteAuth};

impl Check<'_> {
    /// `[routes.auth]` of the route at `route`; `None` when absent or its
    /// key file cannot be used (reported).
    pub(super) fn auth(
        &mut self,
        route: &str,
        raw: Option<RawAuth>,
        sagemaker: bool,
    ) -> Option<RouteAuth> {
        let raw = raw?;
        let key = format!("{route}.auth.keys_file");
        let Some(file) = raw.keys_file else {
            self.error(key, "required");
            return None;
        };
        let keys_file = resolve(Path::new(&file.0), self.base);
        let sigv4 = raw.sigv4.unwrap_or(sagemaker);
        match self.key_files.load(&keys_file, sigv4, &key) {
            Ok(keys) => Some(RouteAuth {
                keys_file,
                sigv4,
                keys,
            }),
            Err(e) => {
                self.errors.extend(e);
                None
            }
        }
    }

    /// `[routes.rate_limit]` of the route at `route`.
    pub(super) fn rate_limit(
        &mut self,
        route: &str,
        raw: Option<RawRateLimit>,
        has_auth: bool,
    ) -> RateLimit {
        let Some(raw) = raw else {
            return RateLimit::default();
        };
        let key = format!("{route}.rate_limit");
        let own = RawRates {
            requests_per_second: raw.requests_per_second,
            burst: raw.burst,
            elements_per_second: raw.elements_per_second,
            elements_burst: raw.elements_burst,
        };
        let route_rates = self.rates(&key, own, raw.per_key.is_some());
        let per_key = match raw.per_key {
            Some(t) => {
                let key = format!("{key}.per_key");
                if !has_auth {
                    let message = "per-key limits need [routes.auth]: requests without keys cannot be told apart";
                    self.error(&key, message);
                }
                self.rates(&key, t.0, false)
            }
            None => Rates::default(),
        };
        RateLimit {
            route: route_rates,
            per_key,
        }
    }

    /// One table of rates at `key`; it must set a rate unless `may_be_empty`.
    fn rates(&mut self, key: &str, raw: RawRates, may_be_empty: bool) -> Rates {
        let mut rate = |per_second: Option<f64>, burst: Option<u64>, names: [&str; 2]| match (
            per_second, burst,
        ) {
            (Some(per_second), burst) => Some(Rate {
                per_second,
                burst: burst.unwrap_or_else(|| Rate::default_burst(per_second)),
            }),
            (None, Some(_)) => {
                let message = format!("needs {}", names[0]);
                self.errors.push(crate::config::ConfigError::new(
                    format!("{key}.{}", names[1]),
                    message,
                ));
                None
            }
            (None, None) => None,
        };
        let rates = Rates {
            requests: rate(
                raw.requests_per_second.map(|r| r.0),
                raw.burst.map(|b| b.0),
                ["requests_per_second", "burst"],
            ),
            elements: rate(
                raw.elements_per_second.map(|r| r.0),
                raw.elements_burst.map(|b| b.0),
                ["elements_per_second", "elements_burst"],
            ),
        };
        let set_any = raw.requests_per_second.is_some() || raw.elements_per_second.is_some();
        if !set_any && !may_be_empty {
            let message = "sets no limit: give requests_per_second and/or elements_per_second";
            self.error(key, message);
        }
        rates
    }
}
