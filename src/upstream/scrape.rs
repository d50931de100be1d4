//! Reading each replica's queue from its own metrics (`metrics_url`):
//! every `metrics_interval`, `GET` of the replica's Prometheus endpoint
//! over HTTP/1.1 whatever the replica speaks (Triton's metrics port has
//! no HTTP/2, also when its inference is gRPC), within `metrics_timeout`
//! and at most [`MAX_METRICS_BYTES`], and from
//! Triton's series per model — `nv_inference_pending_request_count` (the
//! requests waiting now), `nv_inference_queue_duration_us` and
//! `nv_inference_compute_infer_duration_us` (cumulative) — how many
//! requests wait there: the larger of the pending count and the time
//! requests spent queued over the last interval divided by the time they
//! spent computing (how many service times a request waited). Every
//! gateway reads the same endpoint, so each sees the queue the others and
//! direct clients build. A failed or slow scrape only lets the last value
//! grow stale ([`super::queue`]); it never holds a request.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use http::{Method, Request, header};
use http_body_util::{BodyExt, Limited};
use tokio::task::JoinSet;

use super::{Inner, Replica, now_ms};
use crate::config::{QueueSignal, Replicas};
use crate::http::body::empty;

/// Most bytes of a metrics page read: Triton's page is a few kilobytes
/// per model.
pub(super) const MAX_METRICS_BYTES: usize = 4 << 20;

/// Triton's cumulative and instant numbers for one model (summed over its
/// versions), or for the whole replica.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Sample {
    pub pending: f64,
    pub queue_us: f64,
    pub compute_us: f64,
}

/// What one page says, for each model `slot_of` knows, and in total.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Page {
    pub models: HashMap<usize, Sample>,
    pub total: Sample,
}

/// Reads the three series from a Prometheus text page. Lines it does not
/// know, and values that are not finite numbers, are skipped.
pub(super) fn parse(text: &str, slot_of: impl Fn(&str) -> Option<usize>) -> Page {
    let mut page = Page::default();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("nv_inference_") else {
            continue;
        };
        let field: fn(&mut Sample) -> &mut f64 = if rest.starts_with("pending_request_count{") {
            |s| &mut s.pending
        } else if rest.starts_with("queue_duration_us{") {
            |s| &mut s.queue_us
        } else if rest.starts_with("compute_infer_duration_us{") {
            |s| &mut s.compute_us
        } else {
            continue;
        };
        let Some((labels, value)) = rest.split_once('{').and_then(|(_, r)| r.rsplit_once('}'))
        else {
            continue;
        };
        let Some(value) = value
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
        else {
            continue;
        };
        *field(&mut page.total) += value;
        if let Some(slot) = label(labels, "model").and_then(|m| slot_of(&m)) {
            *field(page.models.entry(slot).or_default()) += value;
        }
    }
    page
}

/// The value of label `name` in `a="x",b="y"` (escapes undone).
fn label(labels: &str, name: &str) -> Option<String> {
    let mut rest = labels;
    loop {
        let (key, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next()? {
                (_, '\\') => match chars.next()? {
                    (_, 'n') => value.push('\n'),
                    (_, c) => value.push(c),
                },
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        if key.trim_start_matches(',').trim() == name {
            return Some(value);
        }
        rest = &after[end + 1..];
    }
}

/// Requests waiting, in thousandths, from two readings of one model: the
/// pending count now, or the queued time per computed time between them,
/// whichever is larger. A counter that went back (a restarted server)
/// gives only the pending count.
pub(super) fn waiting_milli(before: Option<&Sample>, now: &Sample) -> u64 {
    let queued = before
        .map(|b| (now.queue_us - b.queue_us, now.compute_us - b.compute_us))
        .filter(|(q, c)| *q >= 0.0 && *c > 0.0)
        .map_or(0.0, |(q, c)| q / c);
    let waiting = now.pending.max(queued);
    (waiting * 1000.0).round().clamp(0.0, 1e12) as u64
}

/// Scrapes every `signal.interval` until the upstream is gone; `last`
/// keeps each replica's previous page for the deltas.
pub(super) async fn run(inner: Weak<Inner>, signal: QueueSignal) {
    let mut last: HashMap<String, Page> = HashMap::new();
    loop {
        {
            let Some(inner) = inner.upgrade() else {
                return;
            };
            round(&inner, &signal, &mut last).await;
        }
        tokio::time::sleep(signal.interval).await;
    }
}

/// One scrape of every replica, concurrently.
async fn round(inner: &Arc<Inner>, signal: &QueueSignal, last: &mut HashMap<String, Page>) {
    let replicas = inner.set.snapshot();
    let followed = inner.models.to_check();
    let slots: Arc<HashMap<String, usize>> =
        Arc::new(followed.iter().map(|t| (t.name.clone(), t.slot)).collect());
    let mut scrapes = JoinSet::new();
    for (i, r) in replicas.iter().enumerate() {
        let index = match &inner.backend.replicas {
            Replicas::Urls(urls) => urls.iter().position(|u| *u == r.base).or(Some(i)),
            Replicas::Dns { .. } => None,
        };
        let Some(url) = signal.source.url_for(&r.base, index) else {
            continue;
        };
        let (r, slots, timeout) = (r.clone(), slots.clone(), signal.timeout);
        scrapes.spawn(async move {
            let page = fetch(&r, url, timeout).await;
            let page = page.map(|text| parse(&text, |m| slots.get(m).copied()));
            (r, page)
        });
    }
    let now = now_ms();
    let stale_ms = u64::try_from(signal.stale_after.as_millis()).unwrap_or(u64::MAX);
    let mut seen = Vec::new();
    while let Some(Ok((r, page))) = scrapes.join_next().await {
        seen.push(r.label.clone());
        let Some(page) = page else {
            tracing::debug!(
                backend = inner.backend.name,
                replica = r.label,
                "metrics scrape failed"
            );
            if let Some(s) = &r.series {
                s.scraped(false, r.queue.waiting(None, now, stale_ms));
            }
            continue;
        };
        let before = last.get(&r.label);
        for t in &followed {
            match page.models.get(&t.slot) {
                Some(now_sample) => {
                    let prev = before.and_then(|b| b.models.get(&t.slot));
                    r.queue
                        .set(Some(t.slot), waiting_milli(prev, now_sample), now);
                }
                None => r.queue.clear(t.slot),
            }
        }
        let total = waiting_milli(before.map(|b| &b.total), &page.total);
        r.queue.set(None, total, now);
        if let Some(s) = &r.series {
            s.scraped(true, total);
            s.queue_pending(page.total.pending as i64);
        }
        last.insert(r.label.clone(), page);
    }
    last.retain(|label, _| seen.contains(label));
}

/// The page at `url`, or `None` when it did not come whole, in time, as a
/// 200, within [`MAX_METRICS_BYTES`].
async fn fetch(r: &Replica, url: http::Uri, timeout: std::time::Duration) -> Option<String> {
    let mut req = Request::new(empty());
    *req.method_mut() = Method::GET;
    if let Some(a) = url.authority().and_then(|a| a.as_str().parse().ok()) {
        req.headers_mut().insert(header::HOST, a);
    }
    *req.uri_mut() = url;
    let exchange = async {
        let resp = r.request_metrics(req).await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let body = Limited::new(resp.into_body(), MAX_METRICS_BYTES)
            .collect()
            .await
            .ok()?;
        String::from_utf8(body.to_bytes().to_vec()).ok()
    };
    tokio::time::timeout(timeout, exchange).await.ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As Triton 2.51 writes it (abridged).
    const PAGE: &str = r#"# HELP nv_inference_pending_request_count Instantaneous number of pending requests awaiting execution per-model.
# TYPE nv_inference_pending_request_count gauge
nv_inference_pending_request_count{model="slow",version="1"} 6
nv_inference_pending_request_count{model="simple",version="1"} 0
nv_inference_pending_request_count{model="simple",version="2"} 1
# TYPE nv_inference_queue_duration_us counter
nv_inference_queue_duration_us{model="slow",version="1"} 700000
nv_inference_queue_duration_us{model="simple",version="1"} 25
nv_inference_compute_infer_duration_us{model="slow",version="1"} 100000
nv_inference_compute_infer_duration_us{model="simple",version="1"} 50
nv_inference_request_success{model="slow",version="1"} 10
nv_inference_queue_duration_us{model="odd \"name\"",version="1"} NaN
"#;

    fn slots(m: &str) -> Option<usize> {
        match m {
            "simple" => Some(0),
            "slow" => Some(1),
            _ => None,
        }
    }

    #[test]
    fn pages_are_read_per_model_and_in_total() {
        let page = parse(PAGE, slots);
        let sample = |pending, queue_us, compute_us| Sample {
            pending,
            queue_us,
            compute_us,
        };
        assert_eq!(page.models[&1], sample(6.0, 700_000.0, 100_000.0));
        assert_eq!(page.models[&0], sample(1.0, 25.0, 50.0), "versions summed");
        assert_eq!(page.total, sample(7.0, 700_025.0, 100_050.0));
        assert_eq!(
            parse("garbage\nnv_inference_pending_request_count{", slots),
            Page::default()
        );
    }

    #[test]
    fn labels_with_escapes() {
        assert_eq!(
            label(r#"model="a\"b",version="1""#, "version").as_deref(),
            Some("1")
        );
        assert_eq!(
            label(r#"model="a\"b",version="1""#, "model").as_deref(),
            Some("a\"b")
        );
        assert_eq!(label(r#"model="a"#, "model"), None);
    }

    #[test]
    fn waiting_is_the_larger_of_pending_and_queued_per_computed_time() {
        let at = |pending, queue_us, compute_us| Sample {
            pending,
            queue_us,
            compute_us,
        };
        let before = at(0.0, 1_000.0, 1_000.0);
        // 10 ms computed, 70 ms queued since: seven service times waited.
        assert_eq!(
            waiting_milli(Some(&before), &at(2.0, 71_000.0, 11_000.0)),
            7_000
        );
        assert_eq!(
            waiting_milli(Some(&before), &at(9.0, 71_000.0, 11_000.0)),
            9_000
        );
        assert_eq!(
            waiting_milli(None, &at(2.5, 9e9, 1.0)),
            2_500,
            "first page: pending only"
        );
        assert_eq!(
            waiting_milli(Some(&before), &at(1.0, 10.0, 10.0)),
            1_000,
            "counters went back (a restart): pending only"
        );
        assert_eq!(
            waiting_milli(Some(&before), &before),
            0,
            "nothing computed since"
        );
    }
}
