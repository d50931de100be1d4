//! Command-line interface: `tensorgate [serve]`, `check-config`,
//! `demo-backend`, the debugging subcommands, and what the gateway prints
//! when it starts (`banner`).

use std::net::SocketAddr;
use std::path::PathBuf;

pub mod banner;
pub mod debug;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// A streaming gateway for KServe / Triton V2 inference servers: translates
/// JSON <-> binary tensor data per route, enforces tensor rules, exports
/// Prometheus metrics.
///
/// With no arguments it runs a demo: the gateway on 127.0.0.1:8000 in front
/// of a small V2 backend built into the binary.
#[derive(Debug, Parser)]
#[command(name = "tensorgate", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the gateway (the default command).
    Serve(ServeArgs),
    /// Validate a configuration file: prints every problem with its key and
    /// exits non-zero if there is any.
    CheckConfig {
        /// The TOML configuration file.
        file: PathBuf,
    },
    /// Run only the embedded demo V2 backend (models simple, identity,
    /// repeat, ramp, rowsum): a backend for load runs and experiments.
    DemoBackend {
        /// Address to listen on (HTTP/1.1 and h2c).
        #[arg(long, default_value = "127.0.0.1:8001", value_name = "ADDR")]
        listen: SocketAddr,
        /// Also serve gRPC (inference.GRPCInferenceService and
        /// grpc.health.v1.Health) on this address.
        #[arg(long, value_name = "ADDR")]
        grpc_listen: Option<SocketAddr>,
    },
    /// Decode or encode Decthings tensors (debugging).
    #[command(subcommand)]
    Tensor(debug::TensorCommand),
    /// Convert a V2 request or response between JSON and the binary tensor
    /// extension (debugging).
    #[command(subcommand)]
    Request(debug::RequestCommand),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Pretty,
    /// One JSON object per event.
    Json,
}

#[derive(Clone, Debug, Default, Args)]
pub struct ServeArgs {
    /// Configuration file (TOML). Without it (and without --backend) the
    /// embedded demo backend is served.
    #[arg(long, short = 'c', env = "TENSORGATE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Data port address; overrides `server.listen`.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Admin port address (/healthz, /readyz, /metrics); overrides
    /// `server.admin_listen`.
    #[arg(long, value_name = "ADDR")]
    pub admin_listen: Option<SocketAddr>,
    /// Without a configuration file: one default route, binary backend
    /// format, to this V2 server (e.g. http://127.0.0.1:8001). The quickest
    /// way to put tensorgate in front of an existing Triton. Give it several
    /// times for the replicas of one backend (balanced by load, with health
    /// checks).
    #[arg(long, value_name = "URL", conflicts_with = "config")]
    pub backend: Vec<String>,
    /// TLS on the data port with this certificate chain (PEM, leaf first);
    /// overrides `server.tls.cert_file`. Needs --tls-key. Reloaded when
    /// the file changes.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM); overrides `server.tls.key_file`.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Send OpenTelemetry traces over OTLP/HTTP (protobuf) to this
    /// receiver: spans go to URL/v1/traces (e.g. http://127.0.0.1:4318,
    /// an OpenTelemetry Collector, Jaeger or Tempo). Overrides
    /// `[tracing] endpoint` and turns tracing on; without a `[tracing]`
    /// table, sampling follows the caller's `traceparent` and records
    /// every new trace (ratio 1.0).
    #[arg(long, value_name = "URL", env = "TENSORGATE_OTEL_ENDPOINT", value_parser = crate::config::tracing::parse_endpoint)]
    pub otel_endpoint: Option<http::Uri>,
    /// The share of new traces recorded, from 0 to 1; overrides
    /// `[tracing] sample_ratio` (a caller's sampled `traceparent` is
    /// still followed while `parent_based` is on).
    #[arg(long, value_name = "RATIO", value_parser = sample_ratio)]
    pub otel_sample_ratio: Option<f64>,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Pretty, env = "TENSORGATE_LOG_FORMAT")]
    pub log_format: LogFormat,
}

/// `--otel-sample-ratio`: a number from 0 to 1.
fn sample_ratio(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(format!("{text:?} is not a number from 0 to 1")),
    }
}
