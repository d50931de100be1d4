//! DNS backends: the name is resolved every `dns_interval` (every second
//! until a first answer), one replica per address, at most `max_replicas`
//! (the lowest addresses, so every gateway instance keeps the same ones).
//! Replicas that stay keep their pools, health and series; those gone are
//! dropped with their series. A failed or empty answer keeps the last
//! replicas: a resolver hiccup must not empty the backend.

use std::net::SocketAddr;
use std::sync::Weak;
use std::time::Duration;

use http::{HeaderValue, Uri};

use super::{Inner, Replica};
use crate::config::DnsName;

/// How often to try before the first answer.
const FIRST_RETRY: Duration = Duration::from_secs(1);

/// What to resolve and how.
#[derive(Debug)]
pub(super) struct Job {
    pub name: DnsName,
    pub interval: Duration,
    pub max: usize,
}

/// Resolves until the upstream is gone.
pub(super) async fn run(inner: Weak<Inner>, job: Job) {
    let host = job.name.to_string();
    let mut resolved_once = false;
    loop {
        let answer = tokio::time::timeout(
            job.interval.max(FIRST_RETRY),
            tokio::net::lookup_host(host.as_str()),
        )
        .await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let addrs = match answer {
            Ok(Ok(addrs)) => addrs.collect::<Vec<_>>(),
            Ok(Err(e)) => {
                tracing::warn!(backend = inner.backend.name, name = host, error = %e, "DNS resolution failed; keeping the last replicas");
                Vec::new()
            }
            Err(_) => {
                tracing::warn!(
                    backend = inner.backend.name,
                    name = host,
                    "DNS resolution timed out; keeping the last replicas"
                );
                Vec::new()
            }
        };
        let ok = !addrs.is_empty();
        if let Some(f) = &inner.families {
            let outcome = if ok { "ok" } else { "failed" };
            f.dns
                .with_label_values(&[&inner.backend.name, outcome])
                .inc();
        }
        if ok {
            apply(&inner, &job, &host, addrs);
            resolved_once = true;
        }
        drop(inner);
        let wait = if resolved_once {
            job.interval
        } else {
            FIRST_RETRY
        };
        tokio::time::sleep(wait).await;
    }
}

/// Makes the replicas those of `addrs`.
fn apply(inner: &Inner, job: &Job, host: &str, mut addrs: Vec<SocketAddr>) {
    addrs.sort();
    addrs.dedup();
    if addrs.len() > job.max {
        tracing::warn!(
            backend = inner.backend.name,
            name = host,
            found = addrs.len(),
            max_replicas = job.max,
            "more addresses than max_replicas; using the lowest"
        );
        addrs.truncate(job.max);
    }
    let labels: Vec<String> = addrs.iter().map(SocketAddr::to_string).collect();
    let backend = &inner.backend;
    let host_header = HeaderValue::from_str(host).unwrap_or(HeaderValue::from_static("localhost"));
    let make = |label: &str| {
        let base: Uri = format!("http://{label}").parse().unwrap_or_default();
        let slots = inner.models.slots();
        Replica::new(
            backend,
            label.to_owned(),
            base,
            host_header.clone(),
            slots,
            inner.families.as_ref(),
        )
    };
    let (added, removed) = inner.set.update(&labels, make);
    if let Some(f) = &inner.families {
        f.replicas
            .with_label_values(&[&backend.name])
            .set(labels.len() as i64);
    }
    if !added.is_empty() || !removed.is_empty() {
        tracing::info!(
            backend = backend.name,
            name = host,
            ?added,
            ?removed,
            replicas = labels.len(),
            "replicas changed"
        );
        // Check the new ones now rather than at the next round.
        inner.wake.notify_one();
    }
}
