//! Stage 2 for one `[backends.NAME]` table: exactly one of `url`, `urls`
//! and `dns`, the replica cap, and the health, ejection and retry keys
//! that only make sense together.

use super::{Check, apply};
use crate::config::raw::{MetricsUrl, RawBackend};
use crate::config::{Backend, MetricsSource, QueueSignal, Readyz, Replicas};

impl Check<'_> {
    /// Builds backend `name`, reporting every problem in it; `None` when it
    /// names no replica. Where `/readyz` depends on the backends
    /// (`readyz` other than `"process"`), health checks are on unless the
    /// file turns them off — and turning them off is an error there:
    /// without checks nothing ever marks a single replica down, so
    /// `/readyz` stayed 200 with every backend down.
    pub(super) fn backend(&mut self, name: &str, b: RawBackend, readyz: Readyz) -> Option<Backend> {
        let key = format!("backends.{name}");
        let replicas = self.replicas(&key, &b)?;
        let mut backend = Backend::with_replicas(name, replicas);
        apply!(backend, b; connect_timeout, request_timeout, pool_idle_timeout,
            pool_max_idle_per_host, max_connections, stream_idle_timeout, metadata_ttl);
        self.backend_tls(&mut backend, &b);
        let health = &mut backend.health;
        let readiness = readyz != Readyz::Process;
        match b.health_checks {
            Some(false) if readiness => {
                let mode = match readyz {
                    Readyz::AllRoutes => "all_routes",
                    _ => "any_route",
                };
                let message = format!(
                    "false, and server.readyz = \"{mode}\" reads readiness from health checks: \
                     without them /readyz stays ready with every replica down \
                     (remove the key, or set readyz = \"process\")"
                );
                self.error(format!("backends.{name}.health_checks"), message);
            }
            Some(on) => health.enabled = on,
            None if readiness => health.enabled = true,
            None => {}
        }
        set(b.health_interval.map(|v| v.0), &mut health.interval);
        set(b.health_timeout.map(|v| v.0), &mut health.timeout);
        set(
            b.healthy_threshold.map(|v| v.0),
            &mut health.healthy_threshold,
        );
        set(
            b.unhealthy_threshold.map(|v| v.0),
            &mut health.unhealthy_threshold,
        );
        set(
            b.max_checked_models.map(|v| v.0),
            &mut health.max_checked_models,
        );
        let e = &mut backend.ejection;
        set(b.eject_after.map(|v| v.0), &mut e.after);
        set(b.eject_time.map(|v| v.0), &mut e.base);
        set(b.max_eject_time.map(|v| v.0), &mut e.max);
        let r = &mut backend.retries;
        set(b.max_retries.map(|v| v.0), &mut r.max);
        set(b.retry_budget.map(|v| v.0), &mut r.budget_permille);
        set(b.min_retries_per_second.map(|v| v.0), &mut r.min_per_second);
        backend.queue = self.queue_signal(&key, &b, &backend.replicas);
        if backend.health.timeout > backend.health.interval {
            let message = format!(
                "{:?} must not be longer than health_interval ({:?})",
                backend.health.timeout, backend.health.interval
            );
            self.error(format!("{key}.health_timeout"), message);
        }
        if backend.ejection.base > backend.ejection.max {
            let message = format!(
                "{:?} must not be longer than max_eject_time ({:?})",
                backend.ejection.base, backend.ejection.max
            );
            self.error(format!("{key}.eject_time"), message);
        }
        if backend.health.max_checked_models > MAX_CHECKED_MODELS {
            let message = format!(
                "at most {MAX_CHECKED_MODELS}, got {}",
                backend.health.max_checked_models
            );
            self.error(format!("{key}.max_checked_models"), message);
        }
        Some(backend)
    }

    /// `url`, `urls` or `dns` (exactly one) with `dns_interval` and
    /// `max_replicas`.
    fn replicas(&mut self, key: &str, b: &RawBackend) -> Option<Replicas> {
        let given: Vec<&str> = [
            ("url", b.url.is_some()),
            ("urls", b.urls.is_some()),
            ("dns", b.dns.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, set)| set.then_some(k))
        .collect();
        if given.len() > 1 {
            let message = format!(
                "{} are exclusive: set one of url, urls and dns",
                given.join(" and ")
            );
            self.error(format!("{key}.{}", given[1]), message);
            return None;
        }
        let max = b
            .max_replicas
            .map_or(Backend::DEFAULT_MAX_REPLICAS, |m| m.0);
        if max > Backend::MAX_REPLICAS {
            let message = format!("at most {}, got {max}", Backend::MAX_REPLICAS);
            self.error(format!("{key}.max_replicas"), message);
        }
        if b.dns.is_none() && b.dns_interval.is_some() {
            self.error(format!("{key}.dns_interval"), "only applies with dns");
        }
        if let Some(dns) = &b.dns {
            return Some(Replicas::Dns {
                name: dns.0.clone(),
                interval: b
                    .dns_interval
                    .map_or(Backend::DEFAULT_DNS_INTERVAL, |d| d.0),
                max_replicas: max.min(Backend::MAX_REPLICAS),
            });
        }
        let urls: Vec<http::Uri> = match (&b.url, &b.urls) {
            (Some(url), _) => vec![url.0.clone()],
            (None, Some(urls)) => urls.iter().map(|u| u.0.clone()).collect(),
            (None, None) => {
                self.error(format!("{key}.url"), "required: one of url, urls or dns");
                return None;
            }
        };
        if urls.is_empty() {
            self.error(format!("{key}.urls"), "lists no URL");
            return None;
        }
        for (i, u) in urls.iter().enumerate() {
            if urls[..i].contains(u) {
                self.error(
                    format!("{key}.urls[{i}]"),
                    format!("\"{u}\" is listed twice"),
                );
            }
        }
        if urls.len() > max {
            let message = format!("{} URLs, more than max_replicas ({max})", urls.len());
            self.error(format!("{key}.urls"), message);
        }
        Some(Replicas::Urls(urls))
    }
}

impl Check<'_> {
    /// `metrics_url` and its timing keys.
    fn queue_signal(
        &mut self,
        key: &str,
        b: &RawBackend,
        replicas: &Replicas,
    ) -> Option<QueueSignal> {
        let timing = [
            ("metrics_interval", b.metrics_interval.is_some()),
            ("metrics_timeout", b.metrics_timeout.is_some()),
            ("metrics_stale_after", b.metrics_stale_after.is_some()),
        ];
        let Some(raw) = &b.metrics_url else {
            for (name, _) in timing.iter().filter(|(_, set)| *set) {
                self.error(format!("{key}.{name}"), "only applies with metrics_url");
            }
            return None;
        };
        let url_key = format!("{key}.metrics_url");
        let source = match raw {
            MetricsUrl::One(t) => {
                let several = !matches!(replicas, Replicas::Urls(u) if u.len() == 1);
                if several && !t.contains("{host}") {
                    let message = "one URL for several replicas must hold {host} (like \"http://{host}:8002/metrics\"), or give a list, one per entry of urls";
                    self.error(url_key, message);
                    return None;
                }
                if let Err(m) = metrics_url(&t.replace("{host}", "host")) {
                    self.error(url_key, m);
                    return None;
                }
                MetricsSource::Template(t.clone())
            }
            MetricsUrl::Many(list) => {
                let Replicas::Urls(urls) = replicas else {
                    self.error(
                        url_key,
                        "a list needs urls (with dns, give one URL holding {host})",
                    );
                    return None;
                };
                if list.len() != urls.len() {
                    let message = format!(
                        "{} URLs for {} entries of urls: give one per replica, in the same order",
                        list.len(),
                        urls.len()
                    );
                    self.error(url_key, message);
                    return None;
                }
                let mut parsed = Vec::new();
                for (i, u) in list.iter().enumerate() {
                    match metrics_url(u) {
                        Ok(u) => parsed.push(u),
                        Err(m) => self.error(format!("{url_key}[{i}]"), m),
                    }
                }
                if parsed.len() != list.len() {
                    return None;
                }
                MetricsSource::Urls(parsed)
            }
        };
        let interval = b
            .metrics_interval
            .map_or(QueueSignal::DEFAULT_INTERVAL, |v| v.0);
        let signal = QueueSignal {
            source,
            interval,
            timeout: b
                .metrics_timeout
                .map_or(QueueSignal::DEFAULT_TIMEOUT.min(interval), |v| v.0),
            stale_after: b
                .metrics_stale_after
                .map_or(QueueSignal::default_stale_after(interval), |v| v.0),
        };
        if signal.timeout > signal.interval {
            let message = format!(
                "{:?} must not be longer than metrics_interval ({:?})",
                signal.timeout, signal.interval
            );
            self.error(format!("{key}.metrics_timeout"), message);
        }
        if signal.stale_after < signal.interval {
            let message = format!(
                "{:?} must not be shorter than metrics_interval ({:?}): every value would be stale",
                signal.stale_after, signal.interval
            );
            self.error(format!("{key}.metrics_stale_after"), message);
        }
        Some(signal)
    }
}

/// A metrics endpoint: an `http://` URL with a host and a path.
fn metrics_url(text: &str) -> Result<http::Uri, String> {
    let u = crate::config::backend::parse_url(text)?;
    if u.scheme_str() != Some("http") {
        return Err(format!(
            "{text:?}: metrics are read over http:// (Triton serves them without TLS)"
        ));
    }
    Ok(u)
}

/// Overwrites `field` with `v` when set.
fn set<T>(v: Option<T>, field: &mut T) {
    if let Some(v) = v {
        *field = v;
    }
}

/// The most `max_checked_models` a backend may set: each checked model
/// costs one request per replica per round.
pub(super) const MAX_CHECKED_MODELS: usize = 1024;
