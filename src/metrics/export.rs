//! The series of the trace exporter (`[tracing]`): the export requests to
//! the collector that failed, by why. Without them a collector answering
//! 500, hanging or never reading loses every span with nothing to show.

use prometheus::{IntCounterVec, Registry};

/// Why an export request to the collector failed: the `reason` label of
/// `tensorgate_trace_export_failures_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFailure {
    /// No connection: refused, unreachable, the TLS handshake failed.
    Connect,
    /// No whole answer within `export_timeout` (a collector that hangs or
    /// never reads).
    Timeout,
    /// The collector answered with a status other than 2xx.
    Status,
    /// The exchange broke after connecting (a reset, a reply that could
    /// not be read or was larger than allowed).
    Io,
}

impl ExportFailure {
    pub const ALL: [ExportFailure; 4] = [
        ExportFailure::Connect,
        ExportFailure::Timeout,
        ExportFailure::Status,
        ExportFailure::Io,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            ExportFailure::Connect => "connect",
            ExportFailure::Timeout => "timeout",
            ExportFailure::Status => "status",
            ExportFailure::Io => "io",
        }
    }
}

/// The metric families; cheap to clone.
#[derive(Clone, Debug)]
pub struct ExportFamilies {
    failures: IntCounterVec,
}

impl ExportFamilies {
    /// Registers the families, every `reason` at 0.
    pub fn register(r: &Registry) -> prometheus::Result<ExportFamilies> {
        let failures = super::counter(
            r,
            "tensorgate_trace_export_failures_total",
            "Span export requests to the OpenTelemetry collector that failed, by reason: connect, timeout (no answer within tracing.export_timeout), status (not 2xx) or io (broken after connecting). The spans of a failed export are dropped.",
            &["reason"],
        )?;
        for reason in ExportFailure::ALL {
            failures.with_label_values(&[reason.label()]);
        }
        Ok(ExportFamilies { failures })
    }

    /// Counts one failed export request.
    pub fn failed(&self, reason: ExportFailure) {
        self.failures.with_label_values(&[reason.label()]).inc();
    }
}
