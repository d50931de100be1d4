//! The `process_*` metrics: the prometheus crate's process collector (file
//! descriptors, memory, threads, start time) with its CPU counter replaced.
//! That counter is an integer of whole seconds (`(utime + stime) /
//! ticks_per_second` in integer arithmetic), so a gateway using 0.3 s of CPU
//! a minute shows a flat line, then a step. Here `process_cpu_seconds_total`
//! is the same ticks as a float: it moves by the kernel's clock tick
//! (10 ms at the usual 100 Hz).
//!
//! Reads /proc on each scrape only; never touches the request path.

use prometheus::core::{Collector, Desc};
use prometheus::process_collector::ProcessCollector;
use prometheus::proto::MetricFamily;
use prometheus::{Counter, Opts};

/// The name the crate's collector and this one share.
const CPU: &str = "process_cpu_seconds_total";

/// The process collector with a CPU counter to the tick.
#[derive(Debug)]
pub(super) struct ProcessMetrics {
    inner: ProcessCollector,
    cpu: Counter,
    descs: Vec<Desc>,
}

impl ProcessMetrics {
    /// For the running process.
    pub(super) fn for_self() -> prometheus::Result<ProcessMetrics> {
        let inner = ProcessCollector::for_self();
        let cpu = Counter::with_opts(Opts::new(
            CPU,
            "Total user and system CPU time spent in seconds.",
        ))?;
        let descs = inner.desc().into_iter().cloned().collect();
        Ok(ProcessMetrics { inner, cpu, descs })
    }

    /// Moves the counter up to `seconds` (never down: two scrapes at once
    /// may read in either order).
    fn advance_to(&self, seconds: f64) {
        let past = self.cpu.get();
        if seconds > past {
            self.cpu.inc_by(seconds - past);
        }
    }
}

/// User plus system CPU time of this process from /proc/self/stat, in
/// seconds to the clock tick.
fn cpu_seconds() -> Option<f64> {
    let stat = procfs::process::Process::myself().ok()?.stat().ok()?;
    let ticks = procfs::ticks_per_second();
    (ticks > 0).then(|| ticks_to_seconds(stat.utime + stat.stime, ticks))
}

fn ticks_to_seconds(ticks: u64, per_second: u64) -> f64 {
    ticks as f64 / per_second as f64
}

impl Collector for ProcessMetrics {
    fn desc(&self) -> Vec<&Desc> {
        // The crate's descriptions include the CPU counter's, same name,
        // help and type as ours.
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let mut families: Vec<MetricFamily> = self
            .inner
            .collect()
            .into_iter()
            .filter(|f| f.name() != CPU)
            .collect();
        if let Some(seconds) = cpu_seconds() {
            self.advance_to(seconds);
            families.extend(self.cpu.collect());
        }
        families
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `process_cpu_seconds_total` in a scrape of a registry holding `p`.
    fn scraped_cpu(registry: &prometheus::Registry) -> f64 {
        let mut out = Vec::new();
        prometheus::Encoder::encode(
            &prometheus::TextEncoder::new(),
            &registry.gather(),
            &mut out,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text.matches("# TYPE process_cpu_seconds_total counter")
                .count(),
            1,
            "{text}"
        );
        for name in [
            "process_open_fds",
            "process_resident_memory_bytes",
            "process_threads",
        ] {
            assert!(
                text.contains(&format!("\n{name} ")),
                "{name} missing: {text}"
            );
        }
        let line = text
            .lines()
            .find(|l| l.starts_with("process_cpu_seconds_total "))
            .expect("a CPU sample");
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn ticks_become_fractional_seconds() {
        assert_eq!(ticks_to_seconds(37, 100), 0.37);
        assert_eq!(ticks_to_seconds(250, 100), 2.5);
        assert_eq!(ticks_to_seconds(1, 1000), 0.001);
    }

    #[test]
    fn counter_never_goes_back() {
        let p = ProcessMetrics::for_self().unwrap();
        p.advance_to(0.5);
        p.advance_to(0.3);
        assert_eq!(p.cpu.get(), 0.5);
        p.advance_to(0.75);
        assert_eq!(p.cpu.get(), 0.75);
    }

    /// Two scrapes around 50 ms of CPU differ by that much: the crate's
    /// collector would show 0 or a whole second.
    #[test]
    fn cpu_counter_moves_below_a_second() {
        let registry = prometheus::Registry::new();
        registry
            .register(Box::new(ProcessMetrics::for_self().unwrap()))
            .unwrap();
        let first = scraped_cpu(&registry);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut x = 0u64;
        while cpu_seconds().unwrap() < first + 0.05 && std::time::Instant::now() < deadline {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        let moved = scraped_cpu(&registry) - first;
        // Both readings are whole clock ticks as f64: their difference may
        // land a rounding error below 0.05 (0.04999999999999999).
        assert!((0.05 - 1e-9..1.0).contains(&moved), "moved {moved} s");
    }
}
